package vec

import "math"

// This file holds the pure-Go twins of every kernel. They are always compiled
// (not only under noasm) so that the tests can compare them with the assembly
// on machines that have it. The float32 transcendental twins follow the same
// algorithm, step by step, as the AVX-512 code: the only difference is that the
// assembly fuses some multiply-adds, which moves results by at most an ulp.

// float is the element constraint of the generic helpers shared by the
// float32 twins and the float64 kernels.
type float interface{ ~float32 | ~float64 }

func addGo[T float](dst, a, b []T) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] + b[i]
	}
}

func subGo[T float](dst, a, b []T) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] - b[i]
	}
}

func mulGo[T float](dst, a, b []T) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] * b[i]
	}
}

func divGo[T float](dst, a, b []T) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] / b[i]
	}
}

func addScalarGo[T float](dst, a []T, s T) {
	a = a[:len(dst)]
	for i := range dst {
		dst[i] = a[i] + s
	}
}

func mulScalarGo[T float](dst, a []T, s T) {
	a = a[:len(dst)]
	for i := range dst {
		dst[i] = a[i] * s
	}
}

// axpyGo adds a·x to dst. The product is rounded before the sum (the
// assembly fuses them), so the two differ by up to an ulp.
func axpyGo[T float](dst, x []T, a T) {
	x = x[:len(dst)]
	for i, v := range x {
		dst[i] += a * v
	}
}

// reluGo maps x to x when x > 0 or x is NaN and to +0 otherwise: NaN is
// propagated so that a diverging network stays visibly diverged. The builtin
// max is branch-free (a data-dependent branch costs 10 ns/element on random
// signs) and has exactly these semantics, max(-0, 0) = +0 included.
func reluGo[T float](dst, x []T) {
	x = x[:len(dst)]
	for i, v := range x {
		dst[i] = max(v, 0)
	}
}

// reluGradGo selects g where x > 0. Written as a multiply-free select that
// the compiler turns into a conditional move rather than a branch.
func reluGradGo[T float](dst, x, g []T) {
	x, g = x[:len(dst)], g[:len(dst)]
	for i := range dst {
		v := g[i]
		if !(x[i] > 0) {
			v = 0
		}
		dst[i] = v
	}
}

// sumBlock is the leaf size of the pairwise summation: blocks of this many
// elements are summed with independent accumulators, and block sums are then
// combined pairwise, which bounds the rounding error by O(log n) ulps instead
// of O(n) while keeping the leaf loop as fast as a plain loop.
const sumBlock = 2048

func sumLeafGo[T float](x []T) T {
	var s0, s1, s2, s3, s4, s5, s6, s7 T
	for len(x) >= 8 {
		s0 += x[0]
		s1 += x[1]
		s2 += x[2]
		s3 += x[3]
		s4 += x[4]
		s5 += x[5]
		s6 += x[6]
		s7 += x[7]
		x = x[8:]
	}
	for i, v := range x {
		switch i & 1 {
		case 0:
			s0 += v
		default:
			s1 += v
		}
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}

func pairwise[T float](x []T, leaf func([]T) T) T {
	if len(x) <= sumBlock {
		return leaf(x)
	}
	// Split on a multiple of the block size so that leaves stay full.
	h := (len(x)/2 + sumBlock - 1) / sumBlock * sumBlock
	return pairwise(x[:h], leaf) + pairwise(x[h:], leaf)
}

func dotLeafGo[T float](a, b []T) T {
	b = b[:len(a)]
	var s0, s1, s2, s3 T
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func dotPairwise[T float](a, b []T, leaf func(a, b []T) T) T {
	if len(a) <= sumBlock {
		return leaf(a, b)
	}
	h := (len(a)/2 + sumBlock - 1) / sumBlock * sumBlock
	return dotPairwise(a[:h], b[:h], leaf) + dotPairwise(a[h:], b[h:], leaf)
}

// maxGo returns the largest element, NaN if any element is NaN, and -Inf for
// an empty slice: the builtin max propagates NaN, and two accumulators halve
// the dependency chain.
func maxGo[T float](x []T) T {
	m0, m1 := T(math.Inf(-1)), T(math.Inf(-1))
	for len(x) >= 2 {
		m0 = max(m0, x[0])
		m1 = max(m1, x[1])
		x = x[2:]
	}
	if len(x) == 1 {
		m0 = max(m0, x[0])
	}
	return max(m0, m1)
}

// Constants of the float32 exponential. The reduction x = n·ln2 + r uses
// Cody–Waite splitting of ln2 into c1 (exact in 9 bits, so n·c1 is exact) and
// c2; e^r on |r| ≤ ln2/2 is the Cephes expf polynomial of degree 7.
const (
	expHi  = 89.0   // above: e^x overflows; clamping keeps n finite, the scaling then yields +Inf
	expLo  = -104.0 // below: e^x rounds to 0 even as a denormal
	log2e  = 1.44269504088896341
	expC1  = 0.693359375
	expC2  = -2.12194440e-4
	expP0  = 1.9875691500e-4
	expP1  = 1.3981999507e-3
	expP2  = 8.3334519073e-3
	expP3  = 4.1665795894e-2
	expP4  = 1.6666665459e-1
	expP5  = 5.0000001201e-1
	tanhSm = 0.625 // below this |x|, tanh uses its odd polynomial (no cancellation)
	tanhP0 = -5.70498872745e-3
	tanhP1 = 2.06390887954e-2
	tanhP2 = -5.37397155531e-2
	tanhP3 = 1.33314422036e-1
	tanhP4 = -3.33332819422e-1
)

// exp32 is the scalar twin of the vector exponential. The final scaling by
// 2^n is done in float64 and rounded once, which is exactly what VSCALEFPS
// does, so overflow to +Inf and gradual underflow into denormals are right.
func exp32(x float32) float32 {
	if x != x {
		return x
	}
	x = min(x, expHi)
	x = max(x, expLo)
	n := float32(math.RoundToEven(float64(x * log2e)))
	r := x - n*expC1
	r = r - n*expC2
	y := float32(expP0)
	y = y*r + expP1
	y = y*r + expP2
	y = y*r + expP3
	y = y*r + expP4
	y = y*r + expP5
	y = y*(r*r) + r
	y = y + 1
	return float32(float64(y) * math.Float64frombits(uint64(int64(n)+1023)<<52))
}

// tanh32: for |x| < 0.625 the Cephes odd polynomial, else
// 1 - 2/(e^{2|x|}+1), with the sign of x copied back.
func tanh32(x float32) float32 {
	a := float32(math.Abs(float64(x)))
	var t float32
	if a < tanhSm {
		z := a * a
		p := float32(tanhP0)
		p = p*z + tanhP1
		p = p*z + tanhP2
		p = p*z + tanhP3
		p = p*z + tanhP4
		t = (p*z)*a + a
	} else {
		e := exp32(a + a)
		t = 1 - 2/(e+1)
	}
	return float32(math.Copysign(float64(t), float64(x)))
}

// sigmoid32 evaluates 1/(1+e^{-|x|}) for x ≥ 0 and e^{-|x|}/(1+e^{-|x|})
// for x < 0: neither cancels, and the latter reaches the denormals correctly.
func sigmoid32(x float32) float32 {
	e := exp32(-float32(math.Abs(float64(x))))
	num := float32(1)
	if x < 0 {
		num = e
	}
	return num / (1 + e)
}

// Coefficients of the Numerical Recipes erfc approximation
// erfc(z) ≈ t·exp(-z² + q(t)), t = 1/(1+z/2), relative error < 1.2e-7 for z ≥ 0.
const (
	geluQ0   = -1.26551223
	geluQ1   = 1.00002368
	geluQ2   = 0.37409196
	geluQ3   = 0.09678418
	geluQ4   = -0.18628806
	geluQ5   = 0.27886807
	geluQ6   = -1.13520398
	geluQ7   = 1.48851587
	geluQ8   = -0.82215223
	geluQ9   = 0.17087277
	sqrtHalf = 0.70710678118654752
	geluSm   = 0.5 // below this |x|, gelu uses its Taylor series
	geluS0   = -9.444656259503615e-06
	geluS1   = 0.00011543468761615529
	geluS2   = -0.0011873282154804543
	geluS3   = 0.009973557010035819
	geluS4   = -0.06649038006690544
	geluS5   = 0.3989422804014327
	geluHi   = 10.0  // above: gelu(x) = x to float32 precision
	geluLo   = -20.0 // below: gelu(x) = -0 to float32 precision
)

// gelu32 computes x·Φ(x) as x - (x/2)·erfc(x/√2) for x > 0 and
// (x/2)·erfc(|x|/√2) otherwise, so neither branch cancels. Near zero, where
// the erfc approximation's 1.2e-7 relative error would cost 3–4 ulps, it
// uses the series x/2 + x²·S(x²) with S the Taylor series of erf(x/√2)/(2x)
// through x¹⁰ (truncation error < 1e-9 relative for |x| < 0.5). The exponent
// -x²/2 is carried as an exact hi+lo pair: rounding it once would cost up to
// 50 ulps at x = -10.
func gelu32(x float32) float32 {
	if x != x {
		return x
	}
	xc := max(min(x, geluHi), geluLo)
	h := xc * 0.5
	s := h * xc
	lo := float32(float64(h)*float64(xc) - float64(s))
	u := float32(math.Abs(float64(xc))) * sqrtHalf
	g := h * erfcCore(u, s, lo)
	if x > 0 {
		g = x - g
	}
	if float32(math.Abs(float64(x))) < geluSm {
		x2 := x * x
		p := float32(geluS0)
		p = p*x2 + geluS1
		p = p*x2 + geluS2
		p = p*x2 + geluS3
		p = p*x2 + geluS4
		p = p*x2 + geluS5
		g = x2*p + h
	}
	return g
}

// erfcCore is the one erfc of the package, shared by Erf and Gelu:
// erfc(u) for u ≥ 0 as t·exp(q(t) − u²), t = 1/(1+u/2), with q the
// Numerical Recipes polynomial (relative error < 1.2e-7). The caller passes
// u² as the unevaluated pair s + lo (s rounded, lo its exact rounding
// error), because it knows u² more exactly than u itself: Gelu's u = |x|/√2
// is rounded, but u² = x²/2 is exact as a pair. The rounding error of
// d = q − s, like lo, is folded in to first order, so the exponent is good
// to about one ulp of the result even where u² is near 100.
func erfcCore(u, s, lo float32) float32 {
	t := 1 / (1 + 0.5*u)
	q := float32(geluQ9)
	q = q*t + geluQ8
	q = q*t + geluQ7
	q = q*t + geluQ6
	q = q*t + geluQ5
	q = q*t + geluQ4
	q = q*t + geluQ3
	q = q*t + geluQ2
	q = q*t + geluQ1
	q = q*t + geluQ0
	// d = q - s rounds to the spacing of s (up to 2^-19 for s near 50,
	// i.e. 16 ulps of the result); its error, like lo, goes in to first order.
	d := q - s
	err := q - (d + s)
	e := exp32(d)
	e = e + e*(err-lo)
	return t * e
}

// Coefficients of erf's Taylor series erf(x) = x + x·E(x²) for |x| < erfSm:
// E(z) = (2/√π − 1) + Σ_{n≥1} 2/√π·(−1)ⁿ zⁿ/(n!(2n+1)), through z⁹
// (truncation below 1e-10 relative at |x| = 0.75). The series reaches to
// 0.75 because just above 0.5 the erfc form, 1 − erfc, passes erfc's 1.2e-7
// relative error on as up to 2.5 ulp of erf. Writing the leading term
// as x + x·(2/√π − 1) keeps the rounding of 2/√π out of the result's
// leading bits.
const (
	erfSm = 0.75                    // below this |x|, erf uses its Taylor series
	erfHi = 4.0                     // above: erf(x) = ±1 to float32 precision
	erfE0 = 0.12837916709551256     // 2/√π − 1
	erfE1 = -0.37612638903183754    // −2/√π/3
	erfE2 = 0.11283791670955126     // 2/√π/10
	erfE3 = -0.026866170645131252   // −2/√π/42
	erfE4 = 0.005223977625442188    // 2/√π/216
	erfE5 = -0.0008548327023450852  // −2/√π/1320
	erfE6 = 0.00012055332981789664  // 2/√π/9360
	erfE7 = -1.492565035840625e-05  // −2/√π/75600
	erfE8 = 1.6462114365889246e-06  // 2/√π/685440
	erfE9 = -1.6365844691234924e-07 // −2/√π/6894720
)

// erf32 is the scalar twin of the vector erf: x + x·E(x²) for |x| < 0.75,
// else ±(1 − erfc(|x|)) on erfcCore, with |x|² passed as an exact pair.
func erf32(x float32) float32 {
	if x != x {
		return x
	}
	a := float32(math.Abs(float64(x)))
	if a < erfSm {
		z := x * x
		p := float32(erfE9)
		p = p*z + erfE8
		p = p*z + erfE7
		p = p*z + erfE6
		p = p*z + erfE5
		p = p*z + erfE4
		p = p*z + erfE3
		p = p*z + erfE2
		p = p*z + erfE1
		p = p*z + erfE0
		return x*p + x
	}
	a = min(a, erfHi)
	s := a * a
	lo := float32(float64(a)*float64(a) - float64(s))
	r := 1 - erfcCore(a, s, lo)
	return float32(math.Copysign(float64(r), float64(x)))
}

func erfGo(dst, x []float32) {
	x = x[:len(dst)]
	for i, v := range x {
		dst[i] = erf32(v)
	}
}

func expGo(dst, x []float32) {
	x = x[:len(dst)]
	for i, v := range x {
		dst[i] = exp32(v)
	}
}

func tanhGo(dst, x []float32) {
	x = x[:len(dst)]
	for i, v := range x {
		dst[i] = tanh32(v)
	}
}

func sigmoidGo(dst, x []float32) {
	x = x[:len(dst)]
	for i, v := range x {
		dst[i] = sigmoid32(v)
	}
}

func geluGo(dst, x []float32) {
	x = x[:len(dst)]
	for i, v := range x {
		dst[i] = gelu32(v)
	}
}

// expShiftSumGo sets dst[i] = e^(x[i]+shift) and returns their sum (the
// softmax inner pass).
func expShiftSumGo(dst, x []float32, shift float32) float32 {
	x = x[:len(dst)]
	var s0, s1 float32
	i := 0
	for ; i+2 <= len(x); i += 2 {
		e0, e1 := exp32(x[i]+shift), exp32(x[i+1]+shift)
		dst[i], dst[i+1] = e0, e1
		s0 += e0
		s1 += e1
	}
	if i < len(x) {
		e := exp32(x[i] + shift)
		dst[i] = e
		s0 += e
	}
	return s0 + s1
}
