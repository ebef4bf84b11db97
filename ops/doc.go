// Package ops is spore's functional op set, mirroring mindspore.ops.
//
// Every primitive — elementwise math with NumPy broadcasting, comparisons,
// reductions, matmul, shape and indexing ops, convolution and pooling,
// dropout — is defined once, as a core.Prim with its shape inference, CPU
// kernels (float32 and float64, integers where meaningful), gradient rule
// and compiler traits. The functions here apply them through core.Apply,
// so the same call runs eagerly in PyNative mode, records into the graph
// under Jit, and is recorded on the autodiff tape when its inputs are being
// differentiated. Gradient rules are written with these same functions, so
// gradients of gradients work.
//
// BFloat16 and Float16 operands are served by registration, not by each
// op: ops that move elements move the 2-byte values, and every other
// primitive widens them to float32, runs its float32 kernel and rounds the
// result back (widen.go), so a 16-bit op is within the type's unit
// roundoff (2^-8 for BFloat16, 2^-11 for Float16) of its float32 twin on
// the same inputs. A binary elementwise op meeting a 16-bit float and
// another float type computes in Float32 (Float64 with a Float64), as
// PyTorch does; no other dtypes are promoted.
//
// The integer dtypes (Int8 through Uint64) are served alike: an op's
// integer arithmetic is one generic function (intarith.go) instantiated at
// every integer type, and the lists of types kernels are registered for
// are written once (kernreg.go). Integer arithmetic wraps around as C's
// does; Div truncates toward zero, FloorDiv and Mod floor; an integer
// division by zero panics. Cast converts between every pair of dtypes.
//
// Composite ops (Softmax, LogSoftmax, LogSumExp, CrossEntropy, MSE,
// BatchNorm) are plain Go functions over the primitives. LayerNorm is a
// primitive of its own (layernorm.go), with a gradient primitive that
// recomputes the statistics, so that each direction is one pass over the
// activation (package norm's kernels) rather than the composition's
// eight or so.
//
// Misuse panics with a *tensor.Error naming the op, the offending shapes or
// dtypes, and the caller's line:
//
//	spore: MatMul: inner dimensions differ: [64 784] x [512 10] (at main.go:31)
package ops
