// Package parallel runs loops on a fixed pool of worker goroutines.
//
// The pool holds one worker per thread beyond the calling goroutine
// (Workers()-1 of them) and is started lazily on first use, so importing the
// package costs nothing. [For] splits an index range [0,n) into a few chunks
// per thread, each of at least grain items, offers them to idle workers and
// works on them itself; it returns when every chunk has run.
//
// The design goals, in order:
//
//   - No goroutine is started per call, and a call allocates nothing in steady
//     state (the closure passed in may be heap allocated by the caller if it
//     captures variables, because it is shared with the workers; hot callers
//     keep a prebuilt func value).
//   - Small loops (n <= grain) and single-thread settings run inline on the
//     caller, with no hand-off at all.
//   - Chunks are claimed with an atomic counter, and only workers that are
//     idle at the moment of the call are asked to help. A busy pool therefore
//     never blocks a caller: the caller simply runs the remaining chunks
//     itself. This also makes nested and concurrent calls safe.
//   - The caller always runs the first chunk itself, helpers take the
//     others. A kernel that makes one chunk per thread and runs again and
//     again (the layers of a network, call after call) thus hands each
//     thread the same share every time, and the data of that share stays
//     in that core's cache.
//   - Waking a sleeping thread costs tens of microseconds on a virtual
//     machine, as much as a whole batch-64 GEMM. An idle worker therefore
//     polls for new work for a short while (workerSpin) before it parks,
//     and a caller polls for its helpers before it blocks, so back-to-back
//     parallel kernels hand work over without sleeping.
//
// Kernels (for example the GEMM in package gemm) use [For] to spread panels of
// a matrix product over the cores; benchmarks use [SetWorkers] to compare one
// and two threads.
package parallel
