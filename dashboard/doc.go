// Package dashboard serves spore's training dashboard: a web page, with
// its JSON endpoints, over a log directory of summaries (TensorBoard
// event files and compiled-graph records, as package summary writes
// them).
//
// The page shows
//   - the scalar curves of one or several runs (loss, learning rate,
//     throughput, accuracy), overlaid, smoothed with TensorBoard's
//     debiased moving average, and updated live while a run writes;
//   - histograms of parameters and gradients over the steps;
//   - the compiled graph of every recorded function, laid out in the
//     browser by Graphviz compiled to WebAssembly, zoomable, with each
//     node's op, shape, dtype, attributes, source line and the compiler
//     pass that made or fused it a click away (parameter updates are
//     dashed edges; the bodies of control-flow nodes are named in their
//     node's details but not drawn);
//   - the profile of each compiled function beside its graph, when the
//     run recorded one (spore train --profile --summary-dir): its steps by
//     time, with op, shape, calls, share and GFLOP/s, each node of the
//     last pass shaded by its share of the time, and a click on a row
//     showing its node;
//   - the compiler at work, pass by pass: the IR before and after each
//     pass side by side, the changed lines highlighted, and the nodes the
//     pass removed and added.
//
// Everything the page needs, the layout engine included (its licence in
// web/vendor), is embedded in the binary, so it works offline. The
// server binds to 127.0.0.1:6006 unless given another address, and
// serves nothing under the log dir but the graph records its runs list
// and the profiles of their functions.
//
// Runs are looked for at most [MaxRunDepth] levels below the log dir. The
// walk that finds them is shared by all requests: it is redone when a
// directory it watches (the log dir, the runs', and, in a tree of up to
// a few hundred directories, all of them) gains or loses an entry, or
// after five seconds, and never sooner than ten times its own duration,
// so that a log dir of / costs a tenth of a core at most. The runs' event
// files are re-read whenever one of them changed.
//
// The server answers only requests addressed to a loopback name
// (localhost, 127.0.0.0/8, [::1]) or to the address it serves on, so that
// a web page elsewhere cannot read the log dir by pointing its own host
// name at this machine (DNS rebinding); others get 403. No answer may be
// framed by another page or sniffed as another content type. An error
// repeats at most about a hundred bytes of what the request sent.
//
// A log dir that does not exist yet, is empty, or holds no event files
// is not an error: the page and [Server.Status] say which, so that a
// dashboard can be started before the training that fills it.
//
// The endpoints, all GET and all answering JSON ({"error": "..."} with a
// 4xx status for a bad request; 422 for a graph record that is not of
// the shape the page draws, "malformed graph file" and why):
//
//	/api/runs                       the log dir's status and runs
//	/api/scalars?tag=T[&run=R]      a scalar tag's [step, wall time, value] points per run
//	/api/histograms?run=R&tag=T     a histogram tag's histograms in step order
//	/api/graph?run=R&file=F         a compiled function's record, F as /api/runs lists it
//	/api/profile?run=R&file=F       the profile of graph record F's function, and each step's node
package dashboard
