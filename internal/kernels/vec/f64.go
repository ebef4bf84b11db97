package vec

import "math"

// The float64 kernels serve gradient checks and reference computations, where
// accuracy matters more than speed: they are plain Go and use the math
// package for the transcendental functions.

// AddF64 sets dst[i] = a[i] + b[i].
func AddF64(dst, a, b []float64) { checkLen("AddF64", len(dst), len(a), len(b)); addGo(dst, a, b) }

// SubF64 sets dst[i] = a[i] - b[i].
func SubF64(dst, a, b []float64) { checkLen("SubF64", len(dst), len(a), len(b)); subGo(dst, a, b) }

// MulF64 sets dst[i] = a[i] * b[i].
func MulF64(dst, a, b []float64) { checkLen("MulF64", len(dst), len(a), len(b)); mulGo(dst, a, b) }

// DivF64 sets dst[i] = a[i] / b[i].
func DivF64(dst, a, b []float64) { checkLen("DivF64", len(dst), len(a), len(b)); divGo(dst, a, b) }

// AddScalarF64 sets dst[i] = a[i] + s.
func AddScalarF64(dst, a []float64, s float64) {
	checkLen("AddScalarF64", len(dst), len(a))
	addScalarGo(dst, a, s)
}

// MulScalarF64 sets dst[i] = a[i] * s.
func MulScalarF64(dst, a []float64, s float64) {
	checkLen("MulScalarF64", len(dst), len(a))
	mulScalarGo(dst, a, s)
}

// AddRowF64 is AddRow for float64.
func AddRowF64(dst, a, row []float64) {
	n := len(row)
	checkLen("AddRowF64", len(dst), len(a))
	if n == 0 || len(dst)%n != 0 {
		if len(dst) == 0 {
			return
		}
		panic("vec.AddRowF64: len(dst) is not a multiple of len(row)")
	}
	for i := 0; i < len(dst); i += n {
		addGo(dst[i:i+n], a[i:i+n], row)
	}
}

// ReluF64 is Relu for float64 (NaN propagates).
func ReluF64(dst, x []float64) { checkLen("ReluF64", len(dst), len(x)); reluGo(dst, x) }

// ReluGradF64 is ReluGrad for float64.
func ReluGradF64(dst, x, g []float64) {
	checkLen("ReluGradF64", len(dst), len(x), len(g))
	reluGradGo(dst, x, g)
}

func map64(op string, dst, x []float64, f func(float64) float64) {
	checkLen(op, len(dst), len(x))
	x = x[:len(dst)]
	for i, v := range x {
		dst[i] = f(v)
	}
}

// ExpF64 sets dst[i] = math.Exp(x[i]).
func ExpF64(dst, x []float64) { map64("ExpF64", dst, x, math.Exp) }

// TanhF64 sets dst[i] = math.Tanh(x[i]).
func TanhF64(dst, x []float64) { map64("TanhF64", dst, x, math.Tanh) }

// SigmoidF64 sets dst[i] = 1/(1+e^-x[i]), computed without cancellation for
// negative x.
func SigmoidF64(dst, x []float64) { map64("SigmoidF64", dst, x, sigmoid64) }

func sigmoid64(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// GeluF64 sets dst[i] = x/2·erfc(-x/√2) = x·Φ(x).
func GeluF64(dst, x []float64) { map64("GeluF64", dst, x, gelu64) }

func gelu64(x float64) float64 { return 0.5 * x * math.Erfc(-x/math.Sqrt2) }

// SumF64 returns the pairwise sum of x.
func SumF64(x []float64) float64 { return pairwise(x, sumLeafGo[float64]) }

// DotF64 returns Σ a[i]·b[i], accumulated pairwise.
func DotF64(a, b []float64) float64 {
	checkLen("DotF64", len(a), len(b))
	return dotPairwise(a, b[:len(a)], dotLeafGo[float64])
}

// MaxF64 returns the largest element of x; NaN if any is NaN; -Inf if empty.
func MaxF64(x []float64) float64 { return maxGo(x) }

// SoftmaxRowsF64 is SoftmaxRows for float64; dst may alias x.
func SoftmaxRowsF64(dst, x []float64, rows, cols int) {
	n := rows * cols
	checkLen("SoftmaxRowsF64", n, len(dst), len(x))
	for i := 0; i < n; i += cols {
		d, r := dst[i:i+cols], x[i:i+cols]
		m := maxGo(r)
		var s float64
		for j, v := range r {
			e := math.Exp(v - m)
			d[j] = e
			s += e
		}
		mulScalarGo(d, d, 1/s)
	}
}

// LogSoftmaxRowsF64 is LogSoftmaxRows for float64; dst may alias x.
func LogSoftmaxRowsF64(dst, x []float64, rows, cols int) {
	n := rows * cols
	checkLen("LogSoftmaxRowsF64", n, len(dst), len(x))
	for i := 0; i < n; i += cols {
		d, r := dst[i:i+cols], x[i:i+cols]
		m := maxGo(r)
		var s float64
		for _, v := range r {
			s += math.Exp(v - m)
		}
		addScalarGo(d, r, -(m + math.Log(s)))
	}
}
