// Package fuse runs a fused chain of elementwise ops in one pass over memory.
//
// The graph compiler's elementwise loop fusion turns a group of elementwise
// nodes into a Program: a straight-line list of instructions over a small
// register file. Registers [0, NumInputs) are the inputs, each read through
// an Input that says how it broadcasts (Full, Scalar, Row, Col, or Chan: a
// value per channel of an NCHW tensor); the others
// are scratch. Run evaluates the program BlockSize (2048) output elements at a
// time: every register is a block buffer that stays in L1, so intermediates
// never reach main memory. Full inputs are read in place, without a copy. A
// program may have several outputs, which are all written in the same pass.
//
// RunRange and RunRows run a program on part of its output only — a range,
// or a 2-D tile of rows at a stride — with every operand indexed by the
// element's position in the whole output: the compiler's anchors (a GEMM
// or a convolution with an elementwise epilogue) run their epilogue on
// each tile of the output as soon as it is computed, while it is in cache.
//
// The package knows no op. An instruction runs a body: a block function
// over equal-length slices, such as func(d, a, b []float32), that the op's
// definition declares (core.Elementwise in package ops) and that the op's
// eager kernel runs too, so a fused result is bit for bit the unfused one.
// Bind wraps a body once, when a program is built, into a call over raw
// blocks; the element types are float32, float64, int32, int64, uint8 and
// bool, and a register holds whichever type its last instruction wrote, so
// a program may compare floats, select on the result and convert between
// types. Check verifies that every instruction reads registers of the
// types its body reads.
//
// Run allocates nothing in steady state (register files come from a
// a free list), splits large outputs over the parallel package's workers by
// whole blocks, and may be called concurrently on the same Program.
// Blocking never changes an elementwise result.
//
// Measured on the 2-core AVX-512 machine (BenchmarkChain5Ratio, best of
// 200 interleaved runs, one thread, 2026-11-30): the 5-op chain
// ((relu(x + bias)·0.5) - y)² runs 1.9–2.3× faster fused than as five vec
// calls on 1024×1024, where the unfused temporaries stream through memory,
// and 1.8–2.0× on 64×512. Each instruction still costs a dispatch per block
// and an L1 round trip; a block interpreter in assembly, or generated
// straight-line code per program keeping values in vector registers, would
// remove both the dispatch and the L1 round trips between instructions; that
// is the next step if elementwise chains show up in profiles.
package fuse
