// Package summary writes and reads training summaries in TensorBoard's
// event-file format, as MindSpore's SummaryRecord and TensorBoard's
// EventFileWriter do: scalar series (loss, learning rate, throughput,
// accuracy) and histograms (parameters, gradients) that "tensorboard
// --logdir DIR" and "spore dashboard --logdir DIR" both show, plus the
// compiled graphs of a run as JSON.
//
// # Layout
//
// A log dir holds runs; a run is a directory holding event files (the log
// dir itself may be one, TensorBoard's rule). A Writer adds to a run
//
//	events.out.tfevents.<unix seconds>.<hostname>.<pid>.spore
//	graphs/<function name>-<n>.json
//
// The event file is a sequence of TFRecords (a length, a masked CRC-32C
// of the length, the data, a masked CRC-32C of the data), each holding
// one Event protobuf; the first says "brain.Event:2". Scalars are
// Summary values with simple_value, histograms HistogramProtos. Each
// graph file is one spore.CompileRecord: the IR after tracing and after
// every compiler pass.
//
// # Safety
//
// A Writer appends whole records in one write per flush (once a second
// and on Close), so a reader of a run in progress sees whole records and
// at most a torn last one. ReadLogdir and ReadEvents skip torn and damaged
// records and report each by file and offset; they never fail on a file's
// contents. Graph files are written to a temporary name and renamed.
package summary
