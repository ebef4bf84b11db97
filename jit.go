package spore

import (
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/jit"
)

// JitConfig configures a compiled function, as MindSpore's JitConfig.
type JitConfig = jit.Config

// InputSpec is one tensor argument of a compiled function's input
// signature (JitConfig.Inputs), MindSpore's Cell.set_inputs with None
// dimensions: -1 marks a dynamic dimension, and one plan serves every size
// of it up to its bound in Max, without compiling.
type InputSpec = jit.InputSpec

// JitStats are a compiled function's cache statistics.
type JitStats = jit.Stats

// JitFunc is a compiled function with its statistics; Jit returns its Fn.
// Dropping every reference to it (and to its Fn) frees its plans.
type JitFunc[F any] = jit.Func[F]

// Jit compiles fn, MindSpore's ms.jit: the returned function has fn's type
// and, on each call, looks up a plan compiled for the arguments' shapes,
// dtypes and constant values, tracing and compiling fn on a miss. It runs
// compiled whatever the global mode. The decorator form is a package
// variable:
//
//	var run = spore.Jit(func(x *spore.Tensor) *spore.Tensor { ... })
//
// fn's arguments and results may be tensors, slices and arrays of tensors,
// structs whose exported fields are tensors (or further such values), and
// plain Go values (bool, integers, floats, strings), which are compile-time
// constants: a new value compiles a new plan. Inside fn, ordinary Go
// control flow runs once, at trace time; branch on tensor values with Cond,
// While and Scan.
//
// Called while another function is being traced, a jitted function is
// inlined into that trace. Called with arguments that are being
// differentiated, it is one node on the autodiff tape whose gradient is
// itself a compiled function (single-result functions; others run eagerly
// under differentiation).
//
// A plan keeps what fn read while it was traced. Parameters it read are
// captured by reference, so changes made in place — Assign, optimiser
// steps, BatchNorm statistics, a checkpoint loaded into the network — are
// seen by every later call, with no recompilation. Everything else is
// baked in: which Parameter a variable or cell field held, plain Go values
// read from variables rather than passed as arguments (a dropout rate, a
// flag), and the structure of the computation. After replacing a field or
// variable with a new Parameter (d.Weight = tensor.NewParameter(...)) or
// changing such a value, call Reset on the JitFunc (ResetJit on a function
// Jit returned; a cell's own plans have nn's Cell.ResetJit): otherwise
// calls keep using the old Parameter.
func Jit[F any](fn F, cfg ...JitConfig) F { return jit.Jit(fn, cfg...) }

// NewJit is Jit returning the JitFunc, for callers that want statistics
// without going through StatsOf.
func NewJit[F any](fn F, cfg ...JitConfig) *JitFunc[F] { return jit.New(fn, cfg...) }

// ResetJit is JitFunc.Reset for a function returned by Jit; it reports
// false if f did not come from Jit.
func ResetJit(f any) bool { return jit.Reset(f) }

// StatsOf returns the statistics of a function returned by Jit, and false
// if f did not come from Jit.
func StatsOf(f any) (JitStats, bool) { return jit.StatsOf(f) }

// IR returns the optimised IR of fn for the given arguments, as text
// (JAX's make_jaxpr, after the passes): it traces and compiles fn the way
// Jit would, without running it. args are what fn would be called with.
func IR(fn any, args []any, cfg ...JitConfig) (ir string, err error) { return jit.IR(fn, args, cfg...) }

// CompileRecord is what a watcher (WatchCompiles) hears of one
// compilation: the function, its signature and level, and the graph after
// each stage.
type CompileRecord = jit.CompileRecord

// PassDump is the graph after one stage of a compilation.
type PassDump = jit.PassDump

// GraphDoc is a graph as data; see graph.Doc, which says how node IDs stay
// stable across passes and how control-flow bodies nest.
type GraphDoc = graph.Doc

// GraphNode is one node of a GraphDoc.
type GraphNode = graph.DocNode

// WatchCompiles calls fn with the record of every compilation of a jitted
// function (Jit, NewJit, Graph-mode and nn.Jit cells, training steps,
// optimisers' compiled updates) that begins while fn is registered, once
// per compilation, after it finished, and returns stop, which unregisters
// fn. fn may run on several goroutines at once. Nothing is recorded while
// no watcher is registered.
func WatchCompiles(fn func(CompileRecord)) (stop func()) { return jit.WatchCompiles(fn) }
