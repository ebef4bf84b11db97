package vec

import "math"

// checkLen panics when a slice is shorter than dst: kernels are called by the
// executor with buffers it sized itself, so a mismatch is a programming error.
func checkLen(op string, n int, xs ...int) {
	for _, m := range xs {
		if m < n {
			panic("vec." + op + ": input shorter than dst")
		}
	}
}

// Add sets dst[i] = a[i] + b[i] for i < len(dst). a and b may alias dst.
func Add(dst, a, b []float32) {
	checkLen("Add", len(dst), len(a), len(b))
	add(dst, a, b)
}

// Sub sets dst[i] = a[i] - b[i] for i < len(dst). a and b may alias dst.
func Sub(dst, a, b []float32) {
	checkLen("Sub", len(dst), len(a), len(b))
	sub(dst, a, b)
}

// Mul sets dst[i] = a[i] * b[i] for i < len(dst). a and b may alias dst.
func Mul(dst, a, b []float32) {
	checkLen("Mul", len(dst), len(a), len(b))
	mul(dst, a, b)
}

// Div sets dst[i] = a[i] / b[i] (IEEE division, correctly rounded) for
// i < len(dst). a and b may alias dst.
func Div(dst, a, b []float32) {
	checkLen("Div", len(dst), len(a), len(b))
	div(dst, a, b)
}

// AddScalar sets dst[i] = a[i] + s for i < len(dst).
func AddScalar(dst, a []float32, s float32) {
	checkLen("AddScalar", len(dst), len(a))
	addScalar(dst, a, s)
}

// MulScalar sets dst[i] = a[i] * s for i < len(dst).
func MulScalar(dst, a []float32, s float32) {
	checkLen("MulScalar", len(dst), len(a))
	mulScalar(dst, a, s)
}

// Axpy sets dst[i] += a·x[i] (BLAS saxpy). With AVX-512 the multiply-add is
// fused (one rounding); the Go twin rounds twice.
func Axpy(dst, x []float32, a float32) {
	checkLen("Axpy", len(dst), len(x))
	axpy(dst, x, a)
}

// AddRow adds row to every row of the row-major matrix a:
// dst[i*n+j] = a[i*n+j] + row[j] with n = len(row) — the bias add of a dense
// layer. len(dst) must be a multiple of len(row).
func AddRow(dst, a, row []float32) {
	n := len(row)
	checkLen("AddRow", len(dst), len(a))
	if n == 0 {
		if len(dst) != 0 {
			panic("vec.AddRow: empty row")
		}
		return
	}
	if len(dst)%n != 0 {
		panic("vec.AddRow: len(dst) is not a multiple of len(row)")
	}
	for i := 0; i < len(dst); i += n {
		add(dst[i:i+n], a[i:i+n], row)
	}
}

// Relu sets dst[i] = max(x[i], 0). NaN inputs are propagated (as in PyTorch)
// so that a diverging network stays visibly diverged; -0 may map to -0 or +0.
func Relu(dst, x []float32) {
	checkLen("Relu", len(dst), len(x))
	relu(dst, x)
}

// ReluGrad sets dst[i] = g[i] where x[i] > 0 and 0 elsewhere (including
// where x[i] is NaN): the backward pass of Relu given its input x.
func ReluGrad(dst, x, g []float32) {
	checkLen("ReluGrad", len(dst), len(x), len(g))
	reluGrad(dst, x, g)
}

// Exp sets dst[i] = e^x[i].
//
// Accuracy, measured against math.Exp computed in float64, over a dense
// sweep of every binade of float32 (every 257th bit pattern, 16.7 million
// inputs): at most 1.01 ulp for normal results; results in the denormal range
// (x < -87.3) are within 1 ulp of the denormal spacing. x ≥ 88.73 gives +Inf, x ≤ -103.98
// gives 0, ±Inf give +Inf and 0, NaN gives NaN.
func Exp(dst, x []float32) {
	checkLen("Exp", len(dst), len(x))
	exp(dst, x)
}

// Tanh sets dst[i] = tanh(x[i]).
//
// Accuracy against math.Tanh in float64, over the same sweep: at most 1.3 ulp (odd polynomial below |x| = 0.625, 1-2/(e^{2|x|}+1) above);
// exact ±1 for |x| ≥ 9.1, ±Inf give ±1, NaN gives NaN, tanh(±0) = ±0.
func Tanh(dst, x []float32) {
	checkLen("Tanh", len(dst), len(x))
	tanh(dst, x)
}

// Sigmoid sets dst[i] = 1/(1+e^-x[i]).
//
// Accuracy against float64 math, over the same sweep: at most 2.4 ulp
// wherever the result is a normal float32 (e^x/(1+e^x) for x < 0); for x < -87.3 the result is denormal and within 1 ulp
// of the denormal spacing; +Inf gives 1, -Inf gives 0, NaN gives NaN.
func Sigmoid(dst, x []float32) {
	checkLen("Sigmoid", len(dst), len(x))
	sigmoid(dst, x)
}

// Gelu sets dst[i] = x·Φ(x) = x/2·(1+erf(x/√2)), the exact (erf) form of GELU.
//
// It is computed as x - x/2·erfc(x/√2) for x > 0 and x/2·erfc(|x|/√2)
// otherwise, with a relative-error-bounded erfc (Numerical Recipes' erfcc,
// |rel. error| < 1.2e-7), so there is no cancellation for negative x, and by
// its Taylor series for |x| < 0.5. Accuracy against float64 math.Erfc,
// rounded, over a dense sweep of all float32: at most 6.5 ulp where the
// result is normal (worst near x = -1.34), within 6·2^-149 in the denormal
// tail (x < -13). +Inf gives +Inf, -Inf gives -0, NaN gives NaN.
func Gelu(dst, x []float32) {
	checkLen("Gelu", len(dst), len(x))
	gelu(dst, x)
}

// Erf sets dst[i] = erf(x[i]), the error function 2/√π ∫₀ˣ e^(-t²) dt.
//
// It is the package's one erf, whose erfc core Gelu shares: x + x·E(x²)
// with E erf's Taylor series through x¹⁸ for |x| < 0.75, else
// ±(1 − erfc(|x|)) with the relative-error-bounded erfc of Gelu (Numerical
// Recipes' erfcc, with the exponent −x² carried as an exact pair), and ±1
// beyond |x| = 4, where erf rounds to ±1. Accuracy against float64
// math.Erf over a dense sweep of all float32 (see TestTranscendentalAccuracy):
// at most 2.2 ulp, in the AVX-512 kernel and its pure-Go twin alike (16.7
// million inputs). ±Inf gives ±1, NaN gives NaN, and the sign of zero is kept.
func Erf(dst, x []float32) {
	checkLen("Erf", len(dst), len(x))
	erf(dst, x)
}

// Sum returns the sum of x, accumulated in float32 with many independent
// accumulators per block of 2048 elements and pairwise across blocks; the
// error grows as O(log n) rather than O(n). Sum of an empty slice is 0.
func Sum(x []float32) float32 {
	return pairwise(x, sumLeaf)
}

// Dot returns Σ a[i]·b[i] for i < len(a), accumulated like Sum.
func Dot(a, b []float32) float32 {
	checkLen("Dot", len(a), len(b))
	return dotPairwise(a, b[:len(a)], dotLeaf)
}

// Max returns the largest element of x; NaN if any element is NaN; -Inf if x
// is empty.
func Max(x []float32) float32 {
	return max32(x)
}

// SoftmaxRows applies a numerically stable softmax to each row of the
// row-major rows×cols matrix x: dst[i,j] = e^(x[i,j]-m_i) / Σ_k e^(x[i,k]-m_i)
// with m_i the row maximum. dst may alias x. A row that holds +Inf or NaN
// yields NaN.
func SoftmaxRows(dst, x []float32, rows, cols int) {
	n := rows * cols
	checkLen("SoftmaxRows", n, len(dst), len(x))
	for i := 0; i < n; i += cols {
		d, r := dst[i:i+cols], x[i:i+cols]
		m := max32(r)
		s := expShiftSum(d, r, -m)
		mulScalar(d, d, 1/s)
	}
}

// LogSoftmaxRows sets each row of dst to the log-softmax of the same row of
// x: dst[i,j] = x[i,j] - m_i - log Σ_k e^(x[i,k]-m_i), m_i the row maximum.
// dst may be x itself (in place) or must not overlap it.
func LogSoftmaxRows(dst, x []float32, rows, cols int) {
	n := rows * cols
	checkLen("LogSoftmaxRows", n, len(dst), len(x))
	for i := 0; i < n; i += cols {
		d, r := dst[i:i+cols], x[i:i+cols]
		m := max32(r)
		var s float32
		if &d[0] == &r[0] {
			// In place: the exponentials must not overwrite x, so sum them
			// block by block through a small stack buffer.
			var buf [256]float32
			for j := 0; j < cols; j += len(buf) {
				k := min(cols-j, len(buf))
				s += expShiftSum(buf[:k], r[j:j+k], -m)
			}
		} else {
			s = expShiftSum(d, r, -m)
		}
		// Two passes: (x - m) is exact for the elements that matter, while
		// folding m + log s into one float32 would round at the spacing of m.
		addScalar(d, r, -m)
		addScalar(d, d, -float32(math.Log(float64(s))))
	}
}

// Impl names the implementation the kernels run: "avx512" or "go".
func Impl() string {
	if useAsm {
		return "avx512"
	}
	return "go"
}

func nan() float64 { return math.NaN() }
