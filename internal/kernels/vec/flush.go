package vec

import "math"

// FlushSubnormal sets dst[i] to x[i], except that a subnormal x[i] (one
// below the smallest normal float32, 2⁻¹²⁶, in magnitude, and not zero)
// becomes a zero of its sign — what a CPU's flush-to-zero mode does to a
// result, and PyTorch's set_flush_denormal. Optimiser state that decays
// geometrically (momentum, Adam's moments) otherwise drifts into subnormal
// numbers, on which x86 multiplication runs some thirty times slower. The
// AVX-512 kernel and the pure-Go twin agree bit for bit. x may alias dst.
func FlushSubnormal(dst, x []float32) {
	checkLen("FlushSubnormal", len(dst), len(x))
	flushSubnormal(dst, x)
}

// FlushSubnormalF64 is FlushSubnormal for float64 (subnormal: below
// 2⁻¹⁰²² in magnitude).
func FlushSubnormalF64(dst, x []float64) {
	checkLen("FlushSubnormalF64", len(dst), len(x))
	x = x[:len(dst)]
	for i, v := range x {
		b := math.Float64bits(v)
		if b&(0x7ff<<52) == 0 {
			b &= 1 << 63
		}
		dst[i] = math.Float64frombits(b)
	}
}

// flushSubnormalGo is the pure-Go twin of the AVX-512 kernel: a number
// whose exponent field is zero keeps only its sign bit.
func flushSubnormalGo(dst, x []float32) {
	x = x[:len(dst)]
	for i, v := range x {
		b := math.Float32bits(v)
		if b&(0xff<<23) == 0 {
			b &= 1 << 31
		}
		dst[i] = math.Float32frombits(b)
	}
}
