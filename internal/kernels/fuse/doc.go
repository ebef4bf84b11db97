// Package fuse runs a fused chain of elementwise ops in one pass over memory.
//
// The graph compiler's elementwise loop fusion turns a group of elementwise
// nodes into a Program: a straight-line list of instructions over a small
// register file. Registers [0, NumInputs) are the inputs, each read through
// an Input that says how it broadcasts (Full, Scalar, Row, Col); the others
// are scratch. Run evaluates the program BlockSize (2048) output elements at a
// time: every register is an 8 KiB block buffer that stays in L1, so
// intermediates never reach main memory, and each instruction runs the
// vectorised kernel from package vec over the block. Full inputs are read in
// place, without a copy. A program may have several outputs (a fused group
// with more than one live-out value), which are all written in the same pass.
//
// Run allocates nothing in steady state (register files come from a
// sync.Pool), splits large outputs over the parallel package's workers by
// whole blocks, and may be called concurrently on the same Program. Results
// are bit-for-bit those of running the same ops one at a time over whole
// slices (Eval): blocking never changes an elementwise result.
//
// Measured on the 2-core AVX-512 machine (BenchmarkChain5Ratio, best of 2000
// interleaved runs, one thread): the 5-op chain ((relu(x + bias)·0.5) - y)²
// runs 1.3× faster fused than as five vec calls on 1024×1024, where the
// unfused temporaries stream through memory, but only break-even (1.04×) on
// 64×512, where everything already fits in L2 and each instruction's dispatch
// (~15 ns per block) shows. A block interpreter in assembly, or generated
// straight-line code per program keeping values in vector registers, would
// remove both the dispatch and the L1 round trips between instructions; that
// is the next step if elementwise chains show up in profiles.
package fuse
