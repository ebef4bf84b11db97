// Package jit is Graph mode's machinery: the global context (mode,
// compilation level, SPORE_JIT, graph dumps), tracing a Go function into
// a graph once per input signature, flattening its arguments and results
// (tensors, slices, structs, constants), the cache of compiled plans with
// its statistics, IR access, and the records that WatchCompiles delivers.
//
// A function with an input signature (Config.Inputs) of dynamic
// dimensions has one more plan besides the per-shape cache: compiled at
// the bounds, fitted to sample traces at small sizes (exec's MakeDynamic),
// and run for every call whose sizes fit, without compiling; CompileSpec
// compiles and warms it ahead of any call.
//
// A compiled function's state hangs off the function: the registry that
// finds it from a bare func value (StatsOf, Reset) holds weak pointers, so
// a dropped function is collected with its plans.
//
// The root package spore re-exports it (Jit, NewJit, JitFunc, JitConfig,
// SetContext, ...) and documents it.
package jit
