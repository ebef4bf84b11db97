package vec

import (
	"flag"
	"math"
	"math/rand/v2"
	"testing"
)

// sizes covers the empty slice, every tail length of the 16-lane and 64-lane
// loops, and sizes around the pairwise-summation block.
var sizes = func() []int {
	s := []int{}
	for n := 0; n <= 70; n++ {
		s = append(s, n)
	}
	return append(s, 127, 128, 129, 1000, 2047, 2048, 2049, 5000, 1<<14+3)
}()

func randSlice(r *rand.Rand, n int, lo, hi float32) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = lo + (hi-lo)*r.Float32()
	}
	return x
}

// same reports whether a and b are equal, treating NaNs as equal and ±0 as
// equal.
func same(a, b float32) bool { return a == b || (a != a && b != b) }

func TestBinary(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name string
		f    func(dst, a, b []float32)
		ref  func(a, b float32) float32
	}{
		{"Add", Add, func(a, b float32) float32 { return a + b }},
		{"Sub", Sub, func(a, b float32) float32 { return a - b }},
		{"Mul", Mul, func(a, b float32) float32 { return a * b }},
		{"Div", Div, func(a, b float32) float32 { return a / b }},
		{"AddScalar", func(d, a, b []float32) { AddScalar(d, a, 1.25) }, func(a, b float32) float32 { return a + 1.25 }},
		{"MulScalar", func(d, a, b []float32) { MulScalar(d, a, -3.5) }, func(a, b float32) float32 { return a * -3.5 }},
		{"Relu", func(d, a, b []float32) { Relu(d, a) }, func(a, b float32) float32 {
			if a > 0 || a != a {
				return a
			}
			return 0
		}},
		{"ReluGrad", ReluGrad, func(a, b float32) float32 {
			if a > 0 {
				return b
			}
			return 0
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, n := range sizes {
				a, b := randSlice(r, n, -4, 4), randSlice(r, n, -4, 4)
				if n > 3 {
					a[1], a[2], b[3] = float32(math.NaN()), float32(math.Inf(-1)), 0
				}
				// One element past the end must stay untouched: the masked
				// tail must not write beyond n.
				buf := make([]float32, n+1)
				buf[n] = 42
				dst := buf[:n]
				tc.f(dst, a, b)
				for i := range dst {
					if want := tc.ref(a[i], b[i]); !same(dst[i], want) {
						t.Fatalf("n=%d i=%d: f(%v, %v) = %v, want %v", n, i, a[i], b[i], dst[i], want)
					}
				}
				if buf[n] != 42 {
					t.Fatalf("n=%d: wrote past the end", n)
				}
				// In place.
				c := append([]float32(nil), a...)
				tc.f(c, c, b)
				for i := range c {
					if !same(c[i], dst[i]) {
						t.Fatalf("n=%d in place: element %d = %v, want %v", n, i, c[i], dst[i])
					}
				}
			}
		})
	}
}

func TestAxpy(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, n := range sizes {
		x, y := randSlice(r, n, -1, 1), randSlice(r, n+1, -1, 1)
		y[n] = 42
		want := append([]float32(nil), y...)
		axpyGo(want[:n], x, 0.75)
		Axpy(y[:n], x, 0.75)
		for i := range y {
			if math.Abs(float64(y[i]-want[i])) > 1e-7 {
				t.Fatalf("n=%d i=%d: %v, want %v", n, i, y[i], want[i])
			}
		}
	}
}

func TestAddRow(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, shape := range [][2]int{{0, 3}, {1, 1}, {3, 17}, {64, 512}, {5, 10}} {
		rows, cols := shape[0], shape[1]
		a, row := randSlice(r, rows*cols, -1, 1), randSlice(r, cols, -1, 1)
		dst := make([]float32, rows*cols)
		AddRow(dst, a, row)
		for i := range dst {
			if dst[i] != a[i]+row[i%cols] {
				t.Fatalf("%v: element %d = %v, want %v", shape, i, dst[i], a[i]+row[i%cols])
			}
		}
	}
}

func TestReductions(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range append(sizes, 1<<20+5) {
		x, y := randSlice(r, n, -1, 1), randSlice(r, n, -1, 1)
		var s, d float64
		m := float32(math.Inf(-1))
		for i := range x {
			s += float64(x[i])
			d += float64(x[i]) * float64(y[i])
			m = max(m, x[i])
		}
		// The pairwise scheme keeps the error near a few ulps of the sum
		// of magnitudes even at a million elements.
		tol := 1e-6 * (float64(n)/16 + 1)
		if n > 4096 {
			tol = 1e-6 * math.Log2(float64(n)) * 16
		}
		if got := Sum(x); !(math.Abs(float64(got)-s) <= tol) {
			t.Errorf("Sum n=%d: %v, want %v", n, got, s)
		}
		if got := sumLeafGo(x[:min(n, sumBlock)]); n <= sumBlock && math.Abs(float64(got)-s) > tol {
			t.Errorf("sumLeafGo n=%d: %v, want %v", n, got, s)
		}
		if got := Dot(x, y); !(math.Abs(float64(got)-d) <= tol) {
			t.Errorf("Dot n=%d: %v, want %v", n, got, d)
		}
		// What follows either operand is never read: NaN after both (the
		// masked tail once loaded all 16 lanes of the second).
		xp := append(append([]float32(nil), x...), nanLanes[:]...)[:n]
		yp := append(append([]float32(nil), y...), nanLanes[:]...)[:n]
		if got := Dot(xp, yp); !(math.Abs(float64(got)-d) <= tol) { // NaN fails too
			t.Errorf("Dot n=%d, NaN after the operands: %v, want %v", n, got, d)
		}
		if got := Max(x); got != m {
			t.Errorf("Max n=%d: %v, want %v", n, got, m)
		}
		if got := maxGo(x); got != m {
			t.Errorf("maxGo n=%d: %v, want %v", n, got, m)
		}
		if n > 0 {
			// NaN anywhere, including in the masked tail, wins.
			x[n-1] = float32(math.NaN())
			if got := Max(x); got == got {
				t.Errorf("Max n=%d with NaN = %v", n, got)
			}
			x[n-1] = 0
		}
	}
	if got := Max(nil); !math.IsInf(float64(got), -1) {
		t.Errorf("Max(nil) = %v", got)
	}
	if Sum(nil) != 0 || Dot(nil, nil) != 0 {
		t.Error("empty Sum/Dot not 0")
	}
}

// ulps measures the error of got against the exact value want in units of
// the float32 spacing at want (2^-149 in the denormal range). A result that
// should overflow must be +Inf; NaN must meet NaN.
func ulps(got float32, want float64) float64 {
	switch {
	case math.IsNaN(want) || got != got:
		if math.IsNaN(want) && got != got {
			return 0
		}
		return math.Inf(1)
	case math.IsInf(float64(float32(want)), 0) || math.IsInf(float64(got), 0):
		if float64(got) == float64(float32(want)) {
			return 0
		}
		return math.Inf(1)
	}
	_, e := math.Frexp(want)
	sp := math.Ldexp(1, max(e-24, -149))
	return math.Abs(float64(got)-want) / sp
}

// sweep returns a dense set of float32 inputs: every 2^k-th bit pattern of
// both signs (so every binade is covered), plus specials and range edges.
func sweep(stride uint32) []float32 {
	var xs []float32
	for b := uint64(0); b < 1<<32; b += uint64(stride) {
		xs = append(xs, math.Float32frombits(uint32(b)))
	}
	return append(xs, 0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32,
		88.72283, 88.72284, -87.33654, -103.97, -103.98, 0.625, -0.625, 9.1, 1e-30, -13, -14, 10, -20)
}

var transcendental = []struct {
	name   string
	asm    func(dst, x []float32)
	twin   func(dst, x []float32)
	ref    func(float64) float64
	maxUlp float64 // allowed error where the result is normal
	maxDen float64 // allowed error in units of 2^-149 where it is denormal
}{
	{"Exp", Exp, expGo, math.Exp, 1.01, 1},
	{"Tanh", Tanh, tanhGo, math.Tanh, 2, 1},
	{"Sigmoid", Sigmoid, sigmoidGo, func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }, 2.5, 1},
	{"Gelu", Gelu, geluGo, func(x float64) float64 {
		if math.IsInf(x, -1) {
			return math.Copysign(0, -1)
		}
		return 0.5 * x * math.Erfc(-x/math.Sqrt2)
	}, 7, 6},
	{"Erf", Erf, erfGo, math.Erf, 2.5, 1},
}

// The accuracy figures in the doc comments were measured with -vec.stride=257
// (16.7 million inputs, about 8 s); the default keeps the package test fast.
var sweepStride = flag.Uint("vec.stride", 1021, "bit-pattern stride of the transcendental accuracy sweep")

func TestTranscendentalAccuracy(t *testing.T) {
	stride := uint32(*sweepStride)
	if testing.Short() {
		stride = 4099
	}
	xs := sweep(stride)
	got, twin := make([]float32, len(xs)), make([]float32, len(xs))
	for _, f := range transcendental {
		t.Run(f.name, func(t *testing.T) {
			f.asm(got, xs)
			f.twin(twin, xs)
			var worst, worstTwin, worstDiff float64
			var worstX float32
			for i, x := range xs {
				want := f.ref(float64(x))
				if x != x {
					want = math.NaN()
				}
				tol := f.maxUlp
				if math.Abs(want) < 0x1p-126 {
					tol = f.maxDen
				}
				e, et := ulps(got[i], want), ulps(twin[i], want)
				if e > tol || et > tol {
					t.Errorf("%s(%v): asm %v (%.2f ulp), Go %v (%.2f ulp), want %v", f.name, x, got[i], e, twin[i], et, want)
					if t.Failed() && i > 0 && worst > 1e6 {
						return
					}
				}
				if e > worst {
					worst, worstX = e, x
				}
				worstTwin = max(worstTwin, et)
				worstDiff = max(worstDiff, ulps(got[i], float64(twin[i])))
			}
			t.Logf("%s (%s): max error %.3f ulp at x=%v; Go twin %.3f ulp; asm vs twin %.0f ulp; %d inputs",
				f.name, Impl(), worst, worstX, worstTwin, worstDiff, len(xs))
		})
	}
}

func TestSoftmaxRows(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, shape := range [][2]int{{1, 1}, {3, 10}, {64, 512}, {2, 33}, {4, 1000}} {
		rows, cols := shape[0], shape[1]
		x := randSlice(r, rows*cols, -30, 30)
		sm, lsm := make([]float32, len(x)), make([]float32, len(x))
		SoftmaxRows(sm, x, rows, cols)
		LogSoftmaxRows(lsm, x, rows, cols)
		inplace := append([]float32(nil), x...)
		LogSoftmaxRows(inplace, inplace, rows, cols)
		inplaceSm := append([]float32(nil), x...)
		SoftmaxRows(inplaceSm, inplaceSm, rows, cols)
		for i := 0; i < rows; i++ {
			row := x[i*cols : (i+1)*cols]
			m := math.Inf(-1)
			for _, v := range row {
				m = math.Max(m, float64(v))
			}
			var s float64
			for _, v := range row {
				s += math.Exp(float64(v) - m)
			}
			for j, v := range row {
				k := i*cols + j
				wantL := float64(v) - m - math.Log(s)
				want := math.Exp(wantL)
				if math.Abs(float64(sm[k])-want) > 1e-6*want*(1+math.Abs(wantL))+1e-38 {
					t.Fatalf("%v softmax[%d,%d] = %v, want %v", shape, i, j, sm[k], want)
				}
				if math.Abs(float64(lsm[k])-wantL) > 1e-5*(1+math.Abs(wantL)) {
					t.Fatalf("%v logsoftmax[%d,%d] = %v, want %v", shape, i, j, lsm[k], wantL)
				}
				// In place, the sum is formed in a different order.
				if math.Abs(float64(inplace[k]-lsm[k])) > 1e-6*(1+math.Abs(wantL)) || inplaceSm[k] != sm[k] {
					t.Fatalf("%v in place differs at %d: %v %v vs %v %v", shape, k, inplace[k], inplaceSm[k], lsm[k], sm[k])
				}
			}
		}
	}
}

// TestTwins compares the dispatching kernels with their Go twins directly on
// random data (on machines without AVX-512 this compares Go with itself).
func TestTwins(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, n := range sizes {
		x := randSlice(r, n, -1, 1)
		if a, b := Sum(x), pairwise(x, sumLeafGo[float32]); math.Abs(float64(a-b)) > 1e-5*float64(n/100+1) {
			t.Errorf("Sum n=%d: %v vs Go %v", n, a, b)
		}
		d1, d2 := make([]float32, n), make([]float32, n)
		s1, s2 := expShiftSum(d1, x, -0.5), expShiftSumGo(d2, x, -0.5)
		if math.Abs(float64(s1-s2)) > 1e-5*float64(n+1) {
			t.Errorf("expShiftSum n=%d: %v vs Go %v", n, s1, s2)
		}
		for i := range d1 {
			if ulps(d1[i], float64(d2[i])) > 1 {
				t.Fatalf("expShiftSum n=%d i=%d: %v vs Go %v", n, i, d1[i], d2[i])
			}
		}
	}
}

func TestF64(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	a64, b64 := make([]float64, 100), make([]float64, 100)
	for i := range a64 {
		a64[i], b64[i] = r.NormFloat64(), r.NormFloat64()
	}
	d := make([]float64, 100)
	for _, tc := range []struct {
		name string
		f    func()
		ref  func(a, b float64) float64
	}{
		{"AddF64", func() { AddF64(d, a64, b64) }, func(a, b float64) float64 { return a + b }},
		{"SubF64", func() { SubF64(d, a64, b64) }, func(a, b float64) float64 { return a - b }},
		{"MulF64", func() { MulF64(d, a64, b64) }, func(a, b float64) float64 { return a * b }},
		{"DivF64", func() { DivF64(d, a64, b64) }, func(a, b float64) float64 { return a / b }},
		{"AddScalarF64", func() { AddScalarF64(d, a64, 2) }, func(a, b float64) float64 { return a + 2 }},
		{"MulScalarF64", func() { MulScalarF64(d, a64, 2) }, func(a, b float64) float64 { return a * 2 }},
		{"ReluF64", func() { ReluF64(d, a64) }, func(a, b float64) float64 { return math.Max(a, 0) }},
		{"ReluGradF64", func() { ReluGradF64(d, a64, b64) }, func(a, b float64) float64 {
			if a > 0 {
				return b
			}
			return 0
		}},
		{"ExpF64", func() { ExpF64(d, a64) }, unary64(math.Exp)},
		{"TanhF64", func() { TanhF64(d, a64) }, unary64(math.Tanh)},
		{"SigmoidF64", func() { SigmoidF64(d, a64) }, func(a, b float64) float64 { return 1 / (1 + math.Exp(-a)) }},
		{"GeluF64", func() { GeluF64(d, a64) }, func(a, b float64) float64 { return 0.5 * a * math.Erfc(-a/math.Sqrt2) }},
	} {
		tc.f()
		for i := range d {
			if want := tc.ref(a64[i], b64[i]); math.Abs(d[i]-want) > 1e-15*math.Max(1, math.Abs(want)) {
				t.Errorf("%s[%d] = %v, want %v", tc.name, i, d[i], want)
			}
		}
	}
	var s, dd float64
	m := math.Inf(-1)
	for i := range a64 {
		s += a64[i]
		dd += a64[i] * b64[i]
		m = math.Max(m, a64[i])
	}
	if math.Abs(SumF64(a64)-s) > 1e-12 || math.Abs(DotF64(a64, b64)-dd) > 1e-12 || MaxF64(a64) != m {
		t.Errorf("SumF64/DotF64/MaxF64 wrong")
	}
	sm := make([]float64, 100)
	SoftmaxRowsF64(sm, a64, 10, 10)
	LogSoftmaxRowsF64(d, a64, 10, 10)
	for i := range sm {
		if math.Abs(math.Exp(d[i])-sm[i]) > 1e-14 {
			t.Fatalf("softmax/logsoftmax F64 disagree at %d: %v vs %v", i, sm[i], math.Exp(d[i]))
		}
	}
}

func unary64(f func(float64) float64) func(a, b float64) float64 {
	return func(a, b float64) float64 { return f(a) }
}

// nanLanes is a vector's worth of NaN, placed after operands to check that
// kernels read nothing past their length.
var nanLanes = func() (v [16]float32) {
	for i := range v {
		v[i] = float32(math.NaN())
	}
	return v
}()
