// Package norm holds fused layer-normalisation kernels, forward and
// backward, for float32 and float64.
//
// The composition of ops that defines layer normalisation — a mean, a
// subtraction, a second mean of squares, a reciprocal square root, a
// product, a scale and a shift, and twice as many ops in its gradient —
// passes over the whole activation about eight times forward and a dozen
// times backward. These kernels make one pass each: a row of the
// normalised axes stays in cache while its mean and variance are taken and
// it is normalised, scaled and shifted (Impl.LayerNorm), and the gradient
// recomputes the row's statistics from x instead of storing them
// (Impl.LayerNormGrad), so the forward pass keeps nothing for it.
//
// Rows are cut into a number of blocks fixed by the sizes alone and spread
// over the threads of package parallel. The backward pass sums the
// parameters' gradients per block and adds the blocks in order, so its
// result is the same bits however the blocks fall on threads.
//
// Like every kernel package it knows nothing of tensors: flat row-major
// slices plus sizes, panicking if a slice is too short for them.
package norm
