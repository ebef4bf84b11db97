package ops_test

import (
	"math"
	"testing"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

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
	testkit.MustPanic(t, func() { ops.CumSum(x, 2, false, false) }, "CumSum", "axis 2")
	testkit.MustPanic(t, func() { ops.CumSum(tensor.Scalar(1.0), 0, false, false) }, "CumSum", "scalar")
	testkit.MustPanic(t, func() { ops.CumSum(tensor.Ones(tensor.Bool, 3), 0, false, false) }, "CumSum", "Bool")
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
	testkit.MustPanic(t, func() { ops.CumProd(x, -3) }, "CumProd", "axis -3")
	testkit.MustPanic(t, func() { ops.CumProd(tensor.Ones(tensor.Bool, 3), 0) }, "CumProd", "Bool")
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
	testkit.MustPanic(t, func() { rec(0, false)(a, tensor.Ones(tensor.Float64, 2)) }, "LinearRecurrence", "[3]", "[2]")
	testkit.MustPanic(t, func() { rec(0, false)(tensor.Ones(tensor.Int32, 3), tensor.Ones(tensor.Int32, 3)) }, "LinearRecurrence", "Int32")
}
