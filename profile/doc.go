// Package profile times compiled functions step by step, as torch.profiler
// and MindSpore's Profiler time kernels: while a Session records, every
// run of every compiled plan (on any goroutine) is timed per step, and
// the Report says where the time went.
//
// A step is one kernel launch of a plan: an op, or a fused op with what
// it absorbed (compile.Absorbed; a convolution anchor's epilogue). Its
// shapes are those the plan was compiled for (the bounds, for a plan of
// dynamic dimensions), and its FLOPs and bytes moved are estimated from
// them (see FLOPs and Bytes).
//
// The report gives
//   - a table of the top N rows, one per op and shape over all functions
//     and runs: calls, total and mean time, share of the step time, and
//     GFLOP/s (Report.Table, Report.Rows);
//   - a trace in the Chrome trace event format, which chrome://tracing
//     and Perfetto (ui.perfetto.dev) open: a thread per compiled function
//     called from outside a plan, on it each run and inside it each step
//     (Report.WriteTraceFile);
//   - a record per function, written beside a run's compiled graphs for
//     the dashboard, which draws each profile beside its graph
//     (Report.Save, ReadRecords).
//
// Attribution. The clock is read once between two steps, so a run's steps
// tile it and the table's times add up to the runs' time. A control-flow
// step (Cond, While, Scan) runs its bodies as plans of their own: each is
// a Function whose Parent is the function running it, its steps counted
// once per iteration, and the control-flow step's Self time leaves them
// out, so that nothing is counted twice. A kernel that splits its work
// over the worker pool is timed from the caller's side: its wall time,
// not the sum of the workers'. Functions running at once on several
// goroutines (a data-parallel step's replicas, a server's requests) each
// get a thread of their own in the trace.
//
// Cost. Off, profiling costs a run one atomic load: no clock is read and
// nothing is allocated (the plan still allocates nothing per call). On,
// it reads the clock once per step (tens of nanoseconds) and appends one
// trace event per step, up to a limit (Start's maxEvents) past which
// events are counted, not kept.
package profile
