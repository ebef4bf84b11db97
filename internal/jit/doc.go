// Package jit is Graph mode's machinery: the global context (mode,
// compilation level, SPORE_JIT, graph dumps), tracing a Go function into
// a graph once per input signature, flattening its arguments and results
// (tensors, slices, structs, constants), the cache of compiled plans with
// its statistics, IR access, and the records that WatchCompiles delivers.
//
// A compiled function's state hangs off the function: the registry that
// finds it from a bare func value (StatsOf, Reset) holds weak pointers, so
// a dropped function is collected with its plans.
//
// The root package spore re-exports it (Jit, NewJit, JitFunc, JitConfig,
// SetContext, ...) and documents it.
package jit
