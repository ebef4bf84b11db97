package ops_test

import (
	"math"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

type valueCase struct {
	name  string
	got   *tensor.Tensor
	shape []int
	want  []float64
}

func runValueCases(t *testing.T, cases []valueCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { assertClose(t, c.name, c.got, c.shape, c.want, 1e-12) })
	}
}

// gradOf returns the gradient of Σ f(x)·w at x, w fixed weights.
func weightedGrad(f func(*tensor.Tensor) *tensor.Tensor, x, w *tensor.Tensor) *tensor.Tensor {
	return spore.Grad(func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Sum(ops.Mul(f(v[0]), w)) })(x)[0]
}

func TestRoundingValues(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	x := f64([]float64{-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.7, -2.7, nan, inf, -inf}, 11)
	tail := []float64{nan, inf, -inf}
	with := func(v ...float64) []float64 { return append(v, tail...) }
	x32 := f32([]float32{-2.5, 0.5, 1.5, 16777215.5 - 0.5, -0.49999997}, 5)
	ints := tensor.FromSlice([]int32{-3, 0, 7}, 3)
	runValueCases(t, []valueCase{
		{"floor", ops.Floor(x), []int{11}, with(-3, -2, -1, 0, 1, 2, 2, -3)},
		{"ceil", ops.Ceil(x), []int{11}, with(-2, -1, 0, 1, 2, 3, 3, -2)},
		{"round half even", ops.Round(x), []int{11}, with(-2, -2, 0, 0, 2, 2, 3, -3)},
		{"trunc", ops.Trunc(x), []int{11}, with(-2, -1, 0, 0, 1, 2, 2, -2)},
		{"round f32", ops.Round(x32), []int{5}, []float64{-2, 0, 2, 16777215, 0}},
		{"floor f32", ops.Floor(x32), []int{5}, []float64{-3, 0, 1, 16777215, -1}},
		{"floor int", ops.Floor(ints), []int{3}, []float64{-3, 0, 7}},
		{"round int64", ops.Round(tensor.FromSlice([]int64{-1 << 40, 5}, 2)), []int{2}, []float64{-1 << 40, 5}},
		{"trunc empty", ops.Trunc(tensor.Zeros(tensor.Float32, 0, 2)), []int{0, 2}, nil},
	})
	// NumPy keeps the sign of a zero result: round(-0.5) and ceil(-0.5)
	// are -0, trunc(-0.5) too.
	for _, y := range []*tensor.Tensor{ops.Round(x), ops.Ceil(x), ops.Trunc(x)} {
		if !math.Signbit(y.Float64s()[2]) {
			t.Errorf("rounding -0.5 gave +0, want -0: %v", y.Float64s())
		}
	}
	if d := ops.Round(x32).DType(); d != tensor.Float32 {
		t.Fatalf("Round keeps the dtype: %v", d)
	}
	mustPanic(t, func() { ops.Floor(tensor.Ones(tensor.Bool, 2)) }, "Floor", "Bool")
	mustPanic(t, func() { ops.Round(tensor.Ones(tensor.Uint8, 2)) }, "Round", "UInt8")
}

func TestRoundingGradientIsZero(t *testing.T) {
	x := randT(1, -3, 3, 2, 3)
	w := randT(2, 0.5, 1.5, 2, 3)
	for name, f := range map[string]func(*tensor.Tensor) *tensor.Tensor{
		"floor": ops.Floor, "ceil": ops.Ceil, "round": ops.Round, "trunc": ops.Trunc,
		"floordiv": func(v *tensor.Tensor) *tensor.Tensor { return ops.FloorDiv(v, ops.ScalarLike(v, 0.7)) },
	} {
		g := weightedGrad(f, x, w)
		assertClose(t, name, g, []int{2, 3}, make([]float64, 6), 0)
		// The zeros keep a chain flowing: d(floor(x)·x)/dx = floor(x).
		g = weightedGrad(func(v *tensor.Tensor) *tensor.Tensor { return ops.Mul(f(v), v) }, x, tensor.Ones(tensor.Float64, 2, 3))
		assertClose(t, name+" chain", g, []int{2, 3}, f(x).Float64s(), 1e-12)
	}
}

func TestFloorDivMod(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	a := f64([]float64{7, -7, 7, -7, 1, 5.5, -3, 3, inf, 6, -6}, 11)
	b := f64([]float64{2, 2, -2, -2, 0.1, 1.5, inf, inf, 2, 3, 3}, 11)
	ai := tensor.FromSlice([]int32{7, -7, 7, -7, 6, -6, 0}, 7)
	bi := tensor.FromSlice([]int32{2, 2, -2, -2, 3, 3, -5}, 7)
	m := f64([]float64{5, -5, 4, 9, -1, 0}, 2, 3)
	row := f64([]float64{3, -2, 4}, 3)
	runValueCases(t, []valueCase{
		// Python: 1 // 0.1 == 9.0 and 1 % 0.1 == 0.09999999999999995.
		{"floordiv f64", ops.FloorDiv(a, b), []int{11}, []float64{3, -4, -4, 3, 9, 3, -1, 0, nan, 2, -2}},
		{"mod f64", ops.Mod(a, b), []int{11}, []float64{1, 1, -1, -1, 0.09999999999999995, 1, inf, 3, nan, 0, 0}},
		{"floordiv f32", ops.FloorDiv(ops.Cast(a, tensor.Float32), ops.Cast(b, tensor.Float32)), []int{11}, []float64{3, -4, -4, 3, 9, 3, -1, 0, nan, 2, -2}},
		{"floordiv int32", ops.FloorDiv(ai, bi), []int{7}, []float64{3, -4, -4, 3, 2, -2, 0}},
		{"mod int32", ops.Mod(ai, bi), []int{7}, []float64{1, 1, -1, -1, 0, 0, 0}},
		{"mod int64", ops.Mod(ops.Cast(ai, tensor.Int64), ops.Cast(bi, tensor.Int64)), []int{7}, []float64{1, 1, -1, -1, 0, 0, 0}},
		{"floordiv bcast", ops.FloorDiv(m, row), []int{2, 3}, []float64{1, 2, 1, 3, 0, 0}},
		{"mod bcast", ops.Mod(m, row), []int{2, 3}, []float64{2, -1, 0, 0, -1, 0}},
		{"floordiv by zero", ops.FloorDiv(f64([]float64{1, -1, 0}, 3), ops.ScalarLike(a, 0)), []int{3}, []float64{inf, -inf, nan}},
		{"mod by zero", ops.Mod(f64([]float64{1, 0}, 2), ops.ScalarLike(a, 0)), []int{2}, []float64{nan, nan}},
		{"mod empty", ops.Mod(tensor.Zeros(tensor.Float64, 0, 3), row), []int{0, 3}, nil},
	})
	// A zero remainder takes the divisor's sign, as in Python.
	if z := ops.Mod(f64([]float64{4}, 1), f64([]float64{-2}, 1)).Float64s()[0]; z != 0 || !math.Signbit(z) {
		t.Fatalf("4 mod -2 = %v, want -0", z)
	}
	mustPanic(t, func() { ops.FloorDiv(ai, tensor.Zeros(tensor.Int32, 7)) }, "FloorDiv", "division by zero")
	mustPanic(t, func() { ops.Mod(ai, tensor.Zeros(tensor.Int32, 1)) }, "FloorMod", "division by zero")
	mustPanic(t, func() { ops.Mod(a, ai) }, "FloorMod", "dtypes differ")
	mustPanic(t, func() { ops.FloorDiv(a, f64([]float64{1, 2}, 2)) }, "FloorDiv", "[11]", "[2]")
}

func TestModGradient(t *testing.T) {
	// a/b stays away from integers, where Mod jumps.
	a := f64([]float64{0.3, 1.7, -2.6, 4.4, -0.7, 3.2}, 2, 3)
	b := f64([]float64{1.3, -0.9, 1.1, 1.9, 0.8, -1.4}, 2, 3)
	checkGrad(t, "mod", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Mod(v[0], v[1]) }, a, b)
	checkGrad(t, "mod bcast", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Mod(v[0], v[1]) }, a, f64([]float64{1.3, -0.9, 1.1}, 3))
	checkGrad2(t, "mod", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Mul(ops.Mod(v[0], v[1]), v[0]) }, a, b)
}

func TestClip(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	x := f64([]float64{-2, -1, 0, 1, 2, nan}, 6)
	xi := tensor.FromSlice([]int32{-5, -1, 0, 2, 5}, 5)
	runValueCases(t, []valueCase{
		{"clip", ops.Clip(x, -1, 1), []int{6}, []float64{-1, -1, 0, 1, 1, nan}},
		{"clip lo>hi", ops.Clip(x, 2, 1), []int{6}, []float64{1, 1, 1, 1, 1, nan}},
		{"clip no hi", ops.Clip(x, -0.5, inf), []int{6}, []float64{-0.5, -0.5, 0, 1, 2, nan}},
		{"clip f32", ops.Clip(f32([]float32{-3, 0.25, 3}, 3), -0.5, 0.5), []int{3}, []float64{-0.5, 0.25, 0.5}},
		{"clip int inward", ops.Clip(xi, -1.5, 2.5), []int{5}, []float64{-1, -1, 0, 2, 2}},
		{"clip int inf", ops.Clip(ops.Cast(xi, tensor.Int64), -inf, 1e300), []int{5}, []float64{-5, -1, 0, 2, 5}},
		{"clip int above range", ops.Clip(xi, 1e10, 2e10), []int{5}, []float64{math.MaxInt32, math.MaxInt32, math.MaxInt32, math.MaxInt32, math.MaxInt32}},
		{"clip empty", ops.Clip(tensor.Zeros(tensor.Float32, 2, 0), 0, 1), []int{2, 0}, nil},
		{"clip scalar", ops.Clip(tensor.Scalar(7.0), 0, 1), []int{}, []float64{1}},
	})
	// PyTorch's convention: the gradient passes at the bounds.
	g := weightedGrad(func(v *tensor.Tensor) *tensor.Tensor { return ops.Clip(v, -1, 1) }, f64([]float64{-1, 0.5, 1, 2, -3, nan}, 6), tensor.Ones(tensor.Float64, 6))
	assertClose(t, "clip grad", g, []int{6}, []float64{1, 1, 1, 0, 0, 0}, 0)
	checkGrad(t, "clip", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Clip(v[0], -0.5, 0.7) }, randT(3, -2, 2, 3, 4))
	mustPanic(t, func() { ops.Clip(x, nan, 1) }, "Clip", "NaN")
	mustPanic(t, func() { ops.Clip(tensor.Ones(tensor.Bool, 2), 0, 1) }, "Clip", "Bool")
}

func TestClipTensor(t *testing.T) {
	x := f64([]float64{-2, 0, 2, 5, 1, -1}, 2, 3)
	lo := f64([]float64{-1, 0.5, 1}, 3)
	hi := f64([]float64{1, 3}, 2, 1)
	runValueCases(t, []valueCase{
		{"bcast", ops.ClipTensor(x, lo, hi), []int{2, 3}, []float64{-1, 0.5, 1, 3, 1, 1}},
		{"scalar bounds", ops.ClipTensor(x, tensor.Scalar(0.0), tensor.Scalar(1.0)), []int{2, 3}, []float64{0, 0, 1, 1, 1, 0}},
		{"bounds widen", ops.ClipTensor(tensor.Scalar(4.0), lo, hi), []int{2, 3}, []float64{1, 1, 1, 3, 3, 3}},
		{"int", ops.ClipTensor(tensor.FromSlice([]int64{-3, 9}, 2), tensor.Scalar(int64(0)), tensor.Scalar(int64(5))), []int{2}, []float64{0, 5}},
	})
	// Routing: x inside (ties included) gets g, a bound that wins gets it,
	// hi gets it everywhere when lo > hi.
	xs := f64([]float64{0, 5, 2, 1, 5}, 5)
	los := f64([]float64{1, 1, 1, 1, 4}, 5)
	his := f64([]float64{3, 3, 3, 1, 3}, 5)
	L := func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Sum(ops.ClipTensor(v[0], v[1], v[2])) }
	gs := spore.Grad(L, spore.GradPosition(0, 1, 2))(xs, los, his)
	assertClose(t, "gx", gs[0], []int{5}, []float64{0, 0, 1, 1, 0}, 0)
	assertClose(t, "glo", gs[1], []int{5}, []float64{1, 0, 0, 0, 0}, 0)
	assertClose(t, "ghi", gs[2], []int{5}, []float64{0, 1, 0, 0, 1}, 0)
	checkGrad(t, "clip tensor", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.ClipTensor(v[0], v[1], v[2]) },
		randT(4, -2, 2, 3, 4), randT(5, -1.5, -0.5, 4), randT(6, 0.5, 1.5, 3, 1))
	mustPanic(t, func() { ops.ClipTensor(x, tensor.Scalar(float32(0)), hi) }, "ClipTensor", "dtypes differ")
	mustPanic(t, func() { ops.ClipTensor(x, f64([]float64{1, 2}, 2), hi) }, "ClipTensor", "cannot be broadcast")
}

func TestCumSum(t *testing.T) {
	nan := math.NaN()
	x := f64([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	x3 := ops.Reshape(tensor.Arange(tensor.Float64, 0, 12, 1), 2, 3, 2)
	runValueCases(t, []valueCase{
		{"axis 1", ops.CumSum(x, 1, false, false), []int{2, 3}, []float64{1, 3, 6, 4, 9, 15}},
		{"axis 0", ops.CumSum(x, 0, false, false), []int{2, 3}, []float64{1, 2, 3, 5, 7, 9}},
		{"exclusive", ops.CumSum(x, -1, true, false), []int{2, 3}, []float64{0, 1, 3, 0, 4, 9}},
		{"reverse", ops.CumSum(x, -1, false, true), []int{2, 3}, []float64{6, 5, 3, 15, 11, 6}},
		{"exclusive reverse", ops.CumSum(x, 1, true, true), []int{2, 3}, []float64{5, 3, 0, 11, 6, 0}},
		{"middle axis", ops.CumSum(x3, -2, false, false), []int{2, 3, 2}, []float64{0, 1, 2, 4, 6, 9, 6, 7, 14, 16, 24, 27}},
		{"int32", ops.CumSum(tensor.FromSlice([]int32{1, -2, 3}, 3), 0, false, false), []int{3}, []float64{1, -1, 2}},
		{"f32", ops.CumSum(f32([]float32{0.5, 0.25, 0.125}, 3), 0, true, true), []int{3}, []float64{0.375, 0.125, 0}},
		{"nan", ops.CumSum(f64([]float64{1, nan, 2}, 3), 0, false, false), []int{3}, []float64{1, nan, nan}},
		{"empty axis", ops.CumSum(tensor.Zeros(tensor.Float64, 2, 0), 1, true, false), []int{2, 0}, nil},
		{"empty other", ops.CumSum(tensor.Zeros(tensor.Float64, 0, 3), 1, false, false), []int{0, 3}, nil},
	})
	mustPanic(t, func() { ops.CumSum(x, 2, false, false) }, "CumSum", "axis 2")
	mustPanic(t, func() { ops.CumSum(tensor.Scalar(1.0), 0, false, false) }, "CumSum", "scalar")
	mustPanic(t, func() { ops.CumSum(tensor.Ones(tensor.Bool, 3), 0, false, false) }, "CumSum", "Bool")
	for _, ex := range []bool{false, true} {
		for _, rev := range []bool{false, true} {
			f := func(v ...*tensor.Tensor) *tensor.Tensor { return ops.CumSum(v[0], 1, ex, rev) }
			checkGrad(t, "cumsum", f, randT(7, -1, 1, 2, 4, 3))
		}
	}
	checkGrad2(t, "cumsum", func(v ...*tensor.Tensor) *tensor.Tensor {
		return ops.CumSum(ops.Square(v[0]), -1, false, true)
	}, randT(8, -1, 1, 3, 4))
}

func TestCumProd(t *testing.T) {
	nan := math.NaN()
	x := f64([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	runValueCases(t, []valueCase{
		{"axis 1", ops.CumProd(x, 1), []int{2, 3}, []float64{1, 2, 6, 4, 20, 120}},
		{"axis -2", ops.CumProd(x, -2), []int{2, 3}, []float64{1, 2, 3, 4, 10, 18}},
		{"zeros", ops.CumProd(f64([]float64{2, 0, 3, 4}, 4), 0), []int{4}, []float64{2, 0, 0, 0}},
		{"int64", ops.CumProd(tensor.FromSlice([]int64{-2, 3, 5}, 3), 0), []int{3}, []float64{-2, -6, -30}},
		{"nan", ops.CumProd(f32([]float32{2, float32(nan), 0}, 3), 0), []int{3}, []float64{2, nan, nan}},
		{"empty", ops.CumProd(tensor.Zeros(tensor.Float32, 3, 0), 1), []int{3, 0}, nil},
	})
	// With one zero, the elements before it see only the products up to
	// it; the zero itself sees the products around it; later ones get 0.
	ones := tensor.Ones(tensor.Float64, 4)
	g := weightedGrad(func(v *tensor.Tensor) *tensor.Tensor { return ops.CumProd(v, 0) }, f64([]float64{2, 0, 3, 0.5}, 4), ones)
	assertClose(t, "one zero", g, []int{4}, []float64{1, 11, 0, 0}, 1e-12)
	g = weightedGrad(func(v *tensor.Tensor) *tensor.Tensor { return ops.CumProd(v, 0) }, f64([]float64{2, 0, 3, 0}, 4), ones)
	assertClose(t, "two zeros", g, []int{4}, []float64{1, 8, 0, 0}, 1e-12)
	f := func(ax int) func(v ...*tensor.Tensor) *tensor.Tensor {
		return func(v ...*tensor.Tensor) *tensor.Tensor { return ops.CumProd(v[0], ax) }
	}
	// CumProd is affine in each element, so central differences are exact
	// at zeros too.
	withZeros := f64([]float64{0.5, 0, -1.5, 2, 0, 0.7, 1.2, -0.8, 0, 0, 1.1, 0.9}, 3, 4)
	checkGrad(t, "cumprod", f(-1), randT(9, -1.5, 1.5, 2, 3, 4))
	checkGrad(t, "cumprod middle", f(1), randT(10, -1.5, 1.5, 2, 3, 4))
	checkGrad(t, "cumprod zeros", f(1), withZeros)
	checkGrad2(t, "cumprod", f(0), randT(11, -1.5, 1.5, 4, 3))
	checkGrad2(t, "cumprod zeros", f(1), withZeros)
	mustPanic(t, func() { ops.CumProd(x, -3) }, "CumProd", "axis -3")
	mustPanic(t, func() { ops.CumProd(tensor.Ones(tensor.Uint8, 3), 0) }, "CumProd", "UInt8")
}

// TestLinearRecurrence checks the primitive behind CumProd's gradient
// directly, in both directions: its own gradient is used from the second
// order of CumProd on.
func TestLinearRecurrence(t *testing.T) {
	p := ops.LinearRecurrencePrim
	rec := func(ax int, rev bool) func(v ...*tensor.Tensor) *tensor.Tensor {
		return func(v ...*tensor.Tensor) *tensor.Tensor {
			return core.Apply(p, ops.RecurrenceAttrs{Axis: ax, Reverse: rev}, v[0], v[1])
		}
	}
	a := f64([]float64{2, 3, 4}, 3)
	b := f64([]float64{1, 1, 1}, 3)
	runValueCases(t, []valueCase{
		// sⱼ = aⱼsⱼ₋₁ + bⱼ: 1, 3·1+1, 4·4+1.
		{"forward", rec(0, false)(a, b), []int{3}, []float64{1, 4, 17}},
		// sⱼ = aⱼ₊₁sⱼ₊₁ + bⱼ: 3·5+1, 4·1+1, 1.
		{"reverse", rec(0, true)(a, b), []int{3}, []float64{16, 5, 1}},
		{"f32 middle", rec(1, false)(ops.Cast(ops.Reshape(a, 1, 3, 1), tensor.Float32), ops.Cast(ops.Reshape(b, 1, 3, 1), tensor.Float32)), []int{1, 3, 1}, []float64{1, 4, 17}},
		{"empty", rec(0, true)(tensor.Zeros(tensor.Float64, 0), tensor.Zeros(tensor.Float64, 0)), []int{0}, nil},
	})
	for _, rev := range []bool{false, true} {
		xs := []*tensor.Tensor{randT(20, -1.2, 1.2, 2, 4, 3), randT(21, -1, 1, 2, 4, 3)}
		checkGrad(t, "recurrence", rec(1, rev), xs...)
		checkGrad2(t, "recurrence", rec(1, rev), xs...)
	}
	mustPanic(t, func() { rec(0, false)(a, tensor.Ones(tensor.Float64, 2)) }, "LinearRecurrence", "[3]", "[2]")
	mustPanic(t, func() { rec(0, false)(tensor.Ones(tensor.Int32, 3), tensor.Ones(tensor.Int32, 3)) }, "LinearRecurrence", "Int32")
}

func TestSortArgSort(t *testing.T) {
	nan := math.NaN()
	x := f64([]float64{3, 1, 2, 1}, 4)
	m := f64([]float64{3, 1, 2, 0, 5, 2}, 2, 3)
	withNaN := f64([]float64{1, nan, 0, nan, -1}, 5)
	v, idx := ops.Sort(m, 0, false)
	vd, idxd := ops.Sort(m, -1, true)
	runValueCases(t, []valueCase{
		{"asc stable", ops.ArgSort(x, 0, false), []int{4}, []float64{1, 3, 2, 0}},
		{"desc stable", ops.ArgSort(x, -1, true), []int{4}, []float64{0, 2, 1, 3}},
		{"nan last asc", ops.ArgSort(withNaN, 0, false), []int{5}, []float64{4, 2, 0, 1, 3}},
		{"nan first desc", ops.ArgSort(withNaN, 0, true), []int{5}, []float64{1, 3, 0, 2, 4}},
		{"sort axis 0", v, []int{2, 3}, []float64{0, 1, 2, 3, 5, 2}},
		{"sort axis 0 idx", idx, []int{2, 3}, []float64{1, 0, 0, 0, 1, 1}},
		{"sort desc", vd, []int{2, 3}, []float64{3, 2, 1, 5, 2, 0}},
		{"sort desc idx", idxd, []int{2, 3}, []float64{0, 2, 1, 1, 2, 0}},
		{"int32", ops.ArgSort(tensor.FromSlice([]int32{5, -5, 0}, 3), 0, false), []int{3}, []float64{1, 2, 0}},
		{"uint8", ops.ArgSort(tensor.FromSlice([]uint8{200, 7, 255}, 3), 0, true), []int{3}, []float64{2, 0, 1}},
		{"empty axis", ops.ArgSort(tensor.Zeros(tensor.Float32, 2, 0), -1, false), []int{2, 0}, nil},
		{"empty other", ops.ArgSort(tensor.Zeros(tensor.Float32, 0, 3), -1, false), []int{0, 3}, nil},
	})
	if idx.DType() != tensor.Int64 || v.DType() != tensor.Float64 {
		t.Fatalf("Sort gives %v values and %v indices", v.DType(), idx.DType())
	}
	sorted, _ := ops.Sort(withNaN, 0, false)
	assertClose(t, "sort nan", sorted, []int{5}, []float64{-1, 0, 1, nan, nan}, 0)
	mustPanic(t, func() { ops.ArgSort(tensor.Ones(tensor.Bool, 2), 0, false) }, "ArgSort", "Bool")
	mustPanic(t, func() { ops.ArgSort(tensor.Scalar(1.0), 0, false) }, "ArgSort", "scalar")
	mustPanic(t, func() { ops.Sort(m, 2, false) }, "ArgSort", "axis 2")
	sortVals := func(ax int, desc bool) func(v ...*tensor.Tensor) *tensor.Tensor {
		return func(v ...*tensor.Tensor) *tensor.Tensor { s, _ := ops.Sort(v[0], ax, desc); return s }
	}
	checkGrad(t, "sort", sortVals(-1, false), randT(12, -1, 1, 3, 5))
	checkGrad(t, "sort desc axis 0", sortVals(0, true), randT(13, -1, 1, 4, 2, 3))
}

func TestTopK(t *testing.T) {
	nan := math.NaN()
	x := f64([]float64{1, 3, 3, 2, 5, 0, -1, 7, 7, 7}, 2, 5)
	v, idx := ops.TopK(x, 3)
	v0, idx0 := ops.TopK(x, 0)
	vn, _ := ops.TopK(f64([]float64{1, nan, 2}, 3), 2)
	// Many equal values take the heap path (k ≪ n): ties by position.
	flat := make([]float64, 40)
	flat[30] = 1
	_, tieIdx := ops.TopK(f64(flat, 40), 3)
	runValueCases(t, []valueCase{
		{"values", v, []int{2, 3}, []float64{5, 3, 3, 7, 7, 7}},
		{"indices", idx, []int{2, 3}, []float64{4, 1, 2, 2, 3, 4}},
		{"k=0", v0, []int{2, 0}, nil},
		{"k=0 idx", idx0, []int{2, 0}, nil},
		{"k=n", func() *tensor.Tensor { _, i := ops.TopK(x, 5); return i }(), []int{2, 5}, []float64{4, 1, 2, 3, 0, 2, 3, 4, 0, 1}},
		{"nan largest", vn, []int{2}, []float64{nan, 2}},
		{"heap ties", tieIdx, []int{3}, []float64{30, 0, 1}},
		{"int32", func() *tensor.Tensor { v, _ := ops.TopK(tensor.FromSlice([]int32{4, 9, -1}, 3), 2); return v }(), []int{2}, []float64{9, 4}},
		{"empty rows", func() *tensor.Tensor { v, _ := ops.TopK(tensor.Zeros(tensor.Float32, 0, 4), 2); return v }(), []int{0, 2}, nil},
	})
	// The heap path agrees with a full descending sort.
	big := randT(14, -1, 1, 3, 100)
	_, got := ops.TopK(big, 7)
	full := ops.ArgSort(big, -1, true)
	assertClose(t, "heap vs sort", got, []int{3, 7}, ops.Slice(full, []int{0, 0}, []int{3, 7}).Float64s(), 0)
	mustPanic(t, func() { ops.TopK(x, 6) }, "TopK", "k=6", "[2 5]")
	mustPanic(t, func() { ops.TopK(x, -1) }, "TopK", "k=-1")
	mustPanic(t, func() { ops.TopK(tensor.Scalar(1.0), 1) }, "TopK", "[]")
	mustPanic(t, func() { ops.TopK(tensor.Ones(tensor.Bool, 3), 1) }, "TopK", "Bool")
	// The gradient scatters back to the chosen positions; of two equal
	// values the first chosen is the one that gets it.
	g := weightedGrad(func(v *tensor.Tensor) *tensor.Tensor { r, _ := ops.TopK(v, 1); return r }, f64([]float64{1, 2, 2, 0}, 4), tensor.Ones(tensor.Float64, 1))
	assertClose(t, "tie grad", g, []int{4}, []float64{0, 1, 0, 0}, 0)
	topVals := func(k int) func(v ...*tensor.Tensor) *tensor.Tensor {
		return func(v ...*tensor.Tensor) *tensor.Tensor { r, _ := ops.TopK(v[0], k); return r }
	}
	checkGrad(t, "topk", topVals(3), randT(15, -1, 1, 2, 3, 6))
	checkGrad(t, "topk heap", topVals(2), randT(16, -1, 1, 2, 20))
}

// TestMoreKernelsDoNotAllocate runs the new kernels the way a compiled
// plan does, into a preallocated output (the sorts' scratch included).
func TestMoreKernelsDoNotAllocate(t *testing.T) {
	x := core.TrackLeaf(randT(17, -2, 2, 4, 30))
	y := core.TrackLeaf(randT(18, 0.5, 2, 4, 30))
	type run struct {
		p     *core.Prim
		attrs any
		in    []*tensor.Tensor
	}
	rec := func(y *tensor.Tensor) run { n := core.NodeOf(y); return run{n.Prim, n.Attrs, n.Inputs} }
	// Index results are not differentiable, so not recorded: their
	// primitives are named by handle.
	direct := func(p *core.Prim, attrs any) run {
		return run{p, attrs, []*tensor.Tensor{x}}
	}
	cases := []struct {
		name string
		r    run
	}{
		{"Floor", rec(ops.Floor(x))},
		{"Round", rec(ops.Round(x))},
		{"FloorMod", rec(ops.Mod(x, y))},
		{"FloorDiv", rec(ops.FloorDiv(x, y))},
		{"Clip", rec(ops.Clip(x, -1, 1))},
		{"ClipTensor", rec(ops.ClipTensor(x, ops.Neg(y), y))},
		{"CumSum", rec(ops.CumSum(x, 0, true, true))},
		{"CumProd", rec(ops.CumProd(x, 1))},
		{"ArgSort", direct(ops.ArgSortPrim, ops.SortAttrs{Axis: 0, Descending: true})},
		{"ArgSort last", direct(ops.ArgSortPrim, ops.SortAttrs{Axis: 1})},
		{"ArgTopK", direct(ops.ArgTopKPrim, ops.TopKAttrs{K: 3})},
		{"ArgTopK heap", direct(ops.ArgTopKPrim, ops.TopKAttrs{K: 2})},
	}
	for _, c := range cases {
		r := c.r
		if r.p == nil {
			t.Fatalf("%s: primitive not registered", c.name)
		}
		out := core.NewOf(r.p.Infer(r.attrs, r.in))
		k, err := r.p.KernelFor(core.KernelDType(r.in, out.DType()), core.CPU)
		if err != nil {
			t.Fatal(err)
		}
		a := testing.AllocsPerRun(50, func() { k(r.attrs, r.in, out) })
		if a != 0 {
			t.Errorf("%s kernel allocates %v times per call", c.name, a)
		}
	}
}
