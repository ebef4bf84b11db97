package vec

// Clamp sets dst[i] = min(max(x[i], lo), hi) with Go's builtin semantics,
// bit for bit: NaN stays NaN, max(-0, +0) is +0 and min(-0, +0) is -0, and
// when lo > hi every element that is not NaN becomes hi. lo and hi must not
// be NaN (Clip refuses NaN bounds before it gets here). x may alias dst.
func Clamp(dst, x []float32, lo, hi float32) {
	checkLen("Clamp", len(dst), len(x))
	clamp(dst, x, lo, hi)
}

// Hardswish sets dst[i] = x·ReLU6(x+3)/6 as the piecewise scalar form
// computes it, bit for bit: 0 where x ≤ -3, x where x ≥ 3, x·(x+3)/6
// (rounded after each operation, a true division by 6) in between; NaN
// stays NaN. x may alias dst.
func Hardswish(dst, x []float32) {
	checkLen("Hardswish", len(dst), len(x))
	hardswish(dst, x)
}

// clampGo is Clamp's pure-Go twin. The builtins compile to branch-free
// code; the comparisons an if-chain needs would each cost a mispredicted
// branch on data of random sign.
func clampGo(dst, x []float32, lo, hi float32) {
	x = x[:len(dst)]
	for i, v := range x {
		dst[i] = min(max(v, lo), hi)
	}
}

// hardswishGo is Hardswish's pure-Go twin.
func hardswishGo(dst, x []float32) {
	x = x[:len(dst)]
	for i, v := range x {
		switch {
		case v <= -3:
			dst[i] = 0
		case v >= 3:
			dst[i] = v
		default:
			dst[i] = v * (v + 3) / 6
		}
	}
}
