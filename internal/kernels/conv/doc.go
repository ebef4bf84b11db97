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
// Stride-1 convolutions (any padding, dilation and groups) use the pitched
// variants instead: PadPlanes copies an image into zero-padded planes of
// row pitch wp, and each row of the column matrix (Im2ColPitched) is then
// one contiguous run of outH·wp elements; the GEMM computes wp − outW
// thrown-away columns per output row, which UnpitchRows drops. The
// gradients use the same layout (PitchRows, Col2ImPitched, CropPlanes).
// Strided convolutions keep Im2Col.
//
// In float32 the stride-1 gradients build no column matrix at all. The
// row of the column matrix for tap (ci, ki, kj) is the padded plane ci
// from offset ki·dilH·wp + kj·dilW on, so DotRows takes the filter
// gradient as dot products of the pitched output gradient's rows with
// such runs read in place, summed in 16-lane partials that ReduceLanes
// adds up once for the whole batch; TapRows takes the input gradient by
// summing, per 16 elements, each tap's weighted output-gradient rows in
// registers and adding them into the padded planes (up to 16 output
// channels a group; beyond, a GEMM and Col2ImPitchedF32). When a ReLU and
// a non-overlapping max pooling follow the convolution,
// MaxPoolReLUGradPitched builds each image's pitched output gradient
// straight from the pooled gradient. Each has AVX-512 kernels (generated
// by backward_asmgen.go, or hand-written in backward_*_amd64.s) and a
// pure-Go twin that the noasm tag and CPUs without AVX-512 run.
//
// Conv2DDirect is a stride-1 float32 convolution without im2col (one
// vec.Axpy per tap over a padded plane). The framework no longer calls it:
// side by side in one run (BenchmarkLeNet in package models, CPU time at
// one thread, batch 64), LeNet-5 inference took 1.98 ms with the pitched
// path on its 1-channel first layer against 2.43 ms with this kernel there.
//
// MaxPoolValid and MaxPoolValidBackward are max pooling for the common
// case of windows inside the plane (no padding): no clipping, no argmax
// array (the gradient recomputes the winner), and no data-dependent
// branches in the 2×2 stride-2 case. MaxPoolValidBackwardReLU folds the
// gradient of a ReLU before the pooling into the same pass. The compiler's
// convolution epilogue (package compile, ConvEpilogue) runs the bias, an
// inference BatchNorm's scale and shift and the ReLU (AffineReLU, one pass
// per plane), then MaxPoolValid or AvgPoolValid, on each group's pitched
// GEMM result while it is in cache; the pooling reads the pitched planes
// as planes wp wide.
//
// AvgPoolValid is the same for average pooling. Both take a vector kernel
// for 2×2 windows at stride 2 (AVX-512, pool2x2_amd64.s, with Go twins
// that give the same bits under the noasm tag): side by side in one run
// (BenchmarkPool2x2, 512 planes of 28×28) the kernels took 75 µs (max)
// and 63 µs (mean) against the Go loops' 638 and 493 µs.
//
// Conv2DWinograd is Winograd's F(2×2, 3×3) for stride-1 3×3 windows: 16
// batched GEMMs between transforms that run as vector operations over all
// of an image's tiles (the input split by row and column parity, so that
// every patch element is a shifted phase), tested against Conv2DDirect;
// Conv2DWinogradTransformed takes filters transformed once
// (WinogradFilters). The framework does not select it: side by side in
// one run (BenchmarkConv3x3, one thread, fastest of 40 interleaved calls,
// on a loaded machine, so ratios only), with the filters held it took 4.0×
// as long as the pitched im2col + GEMM path on the CNN fixture's
// 1→8-channel layer, 1.8× on its 8→16 layer and 1.14× on a 64→64 layer at
// 14×14 (pitched: 269, 466 and 1101 µs at batch 64, 64 and 8). At these
// channel counts the transforms and the 16 short GEMMs cost more than the
// 2.25× fewer multiplies save; wider layers are where it would start to
// pay.
//
// Not here yet: NCHWc blocked layouts. They cut the cost of the GEMM's
// packing, which pays where channel counts are large; LeNet-5 (1→6 and
// 6→16 channels, 5×5 windows) spent about 60% of its batch-64 inference in
// the column copies and the pooling and 25% in the GEMMs (CPU profile, one
// thread), and the CNN fixture's 1→8 and 8→16 channels are as narrow, so
// it was not the next thing to build for them.
//
// Kernels know nothing of tensors: flat slices plus sizes, panicking if a
// slice is too short for the sizes given.
package conv
