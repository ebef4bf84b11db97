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
// Composite ops (Softmax, LogSoftmax, LogSumExp, CrossEntropy, MSE,
// LayerNorm, BatchNorm) are plain Go functions over the primitives.
//
// Misuse panics with a *tensor.Error naming the op, the offending shapes or
// dtypes, and the caller's line:
//
//	spore: MatMul: inner dimensions differ: [64 784] x [512 10] (at main.go:31)
package ops
