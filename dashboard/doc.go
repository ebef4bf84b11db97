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
//   - the compiler at work, pass by pass: the IR before and after each
//     pass side by side, the changed lines highlighted, and the nodes the
//     pass removed and added.
//
// Everything the page needs, the layout engine included (its licence in
// web/vendor), is embedded in the binary, so it works offline. The
// server binds to 127.0.0.1:6006 unless given another address, re-reads
// the log dir only when a file in it changed, and serves nothing under
// the log dir but the graph records its runs list.
//
// A log dir that does not exist yet, is empty, or holds no event files
// is not an error: the page and [Server.Status] say which, so that a
// dashboard can be started before the training that fills it.
//
// The endpoints, all GET and all answering JSON ({"error": "..."} with a
// 4xx status for a bad request):
//
//	/api/runs                       the log dir's status and runs
//	/api/scalars?tag=T[&run=R]      a scalar tag's [step, wall time, value] points per run
//	/api/histograms?run=R&tag=T     a histogram tag's histograms in step order
//	/api/graph?run=R&file=F         a compiled function's record, F as /api/runs lists it
package dashboard
