package conv

import "math"

// NoAdd is the bias or shift that AffineReLU adds to skip the addition:
// x + (-0) is x exactly, for every x (+0, -0 and NaN included), where
// x + 0 would turn -0 into +0.
var NoAdd = float32(math.Copysign(0, -1))

// AffineReLU applies a convolution epilogue's per-channel steps to one
// output plane in place, in one pass:
//
//	x = (x + bias) · scale + shift,   then x = max(x, 0) if relu,
//
// rounding after every operation, as the unfused chain of Add, Mul, Add and
// ReLU does (no fused multiply-add). A step is skipped exactly by passing
// NoAdd for bias or shift and 1 for scale. The ReLU keeps x where 0 > x is
// false, NaN and -0 included (the vec.Relu kernel's rule on AVX-512).
//
// It replaces up to four passes over the plane by one: on AVX-512 an
// assembly kernel, elsewhere its Go twin, which gives the same bits.
func AffineReLU(dst []float32, bias, scale, shift float32, relu bool) {
	if len(dst) == 0 {
		return
	}
	floor := float32(math.Inf(-1))
	if relu {
		floor = 0
	}
	if useAsm {
		affineAVX512(&dst[0], len(dst), bias, scale, shift, floor)
		return
	}
	affineGo(dst, bias, scale, shift, floor)
}

// affineGo is AffineReLU's Go twin, with the ReLU as a lower bound floor
// (-Inf for none).
func affineGo(dst []float32, bias, scale, shift, floor float32) {
	for i, x := range dst {
		x += bias
		x *= scale
		x += shift
		if floor > x {
			x = floor
		}
		dst[i] = x
	}
}
