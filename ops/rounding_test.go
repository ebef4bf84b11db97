package ops_test

import (
	"math"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

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
	testkit.MustPanic(t, func() { ops.Floor(tensor.Ones(tensor.Bool, 2)) }, "Floor", "Bool")
	testkit.MustPanic(t, func() { ops.Round(tensor.Ones(tensor.Bool, 2)) }, "Round", "Bool")
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
	testkit.MustPanic(t, func() { ops.FloorDiv(ai, tensor.Zeros(tensor.Int32, 7)) }, "FloorDiv", "division by zero")
	testkit.MustPanic(t, func() { ops.Mod(ai, tensor.Zeros(tensor.Int32, 1)) }, "FloorMod", "division by zero")
	testkit.MustPanic(t, func() { ops.Mod(a, ai) }, "FloorMod", "dtypes differ")
	testkit.MustPanic(t, func() { ops.FloorDiv(a, f64([]float64{1, 2}, 2)) }, "FloorDiv", "[11]", "[2]")
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
	testkit.MustPanic(t, func() { ops.Clip(x, nan, 1) }, "Clip", "NaN")
	testkit.MustPanic(t, func() { ops.Clip(tensor.Ones(tensor.Bool, 2), 0, 1) }, "Clip", "Bool")
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
	testkit.MustPanic(t, func() { ops.ClipTensor(x, tensor.Scalar(float32(0)), hi) }, "ClipTensor", "dtypes differ")
	testkit.MustPanic(t, func() { ops.ClipTensor(x, f64([]float64{1, 2}, 2), hi) }, "ClipTensor", "cannot be broadcast")
}
