// Package conv holds the data-movement and pooling kernels of 2-D
// convolution on NCHW tensors, generic over float32 and float64.
//
// A convolution is lowered to im2col + GEMM: Im2Col unrolls one image into a
// (c·kh·kw)×(outH·outW) column matrix, the GEMM package multiplies the
// [outC, c·kh·kw] weights by it (per group, on the group's slice of rows), and
// Col2Im — the adjoint, accumulating — carries the column-matrix gradient
// back to the image for the input gradient. The weight gradient is a GEMM of
// the output gradient with the same column matrix, so it needs no kernel
// here. Padding is given as top/left offsets; the bottom/right padding is
// implied by outH/outW (see OutSize), so asymmetric padding needs no extra
// parameter.
//
// MaxPool2D records, per output, the index of the winning input within its
// plane, which MaxPool2DBackward scatters the gradient to; AvgPool2D and
// AvgPool2DBackward take a countIncludePad flag with PyTorch's meaning.
// Backward kernels accumulate into dx.
//
// Conv2DDirect is a stride-1 float32 convolution without im2col, for tiny
// channel counts. Measured at batch 64 on the 2-core AVX-512 machine (one
// noisy run, BenchmarkLeNetDirect vs BenchmarkLeNetIm2Col): LeNet conv1
// (1→6, 28×28, 5×5, pad 2) takes 0.61 ms direct against 1.89 ms for
// im2col+gemm.Sgemm, of which 1.57 ms is Im2Col itself; conv2 (6→16, 14×14,
// 5×5) takes 8.2 ms direct against 4.9 ms im2col+Sgemm. So: direct for a
// single input channel, im2col+GEMM beyond.
//
// Kernels know nothing of tensors: flat slices plus sizes, panicking if a
// slice is too short for the sizes given.
package conv
