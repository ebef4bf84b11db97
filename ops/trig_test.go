package ops_test

import (
	"math"
	"testing"

	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// TestTrigValues checks each op at points whose results are known in closed
// form (ln 2 makes the hyperbolic ones rational: sinh ln 2 = 3/4, cosh ln 2
// = 5/4), and its domain edges.
func TestTrigValues(t *testing.T) {
	v := func(xs ...float64) *tensor.Tensor { return f64(xs, len(xs)) }
	ln2, pi := math.Ln2, math.Pi
	runElemCases(t, []elemCase{
		{"tan", ops.Tan(v(0, pi/4, -pi/4, pi/3)), []int{4}, []float64{0, 1, -1, math.Sqrt(3)}},
		{"asin", ops.Asin(v(0, 0.5, -1, 1, 1.5)), []int{5}, []float64{0, pi / 6, -pi / 2, pi / 2, elemNaN}},
		{"acos", ops.Acos(v(1, 0.5, 0, -1, -2)), []int{5}, []float64{0, pi / 3, pi / 2, pi, elemNaN}},
		{"atan", ops.Atan(v(0, 1, -1, elemInf, elemNegInf)), []int{5}, []float64{0, pi / 4, -pi / 4, pi / 2, -pi / 2}},
		{"sinh", ops.Sinh(v(0, ln2, -ln2, elemInf)), []int{4}, []float64{0, 0.75, -0.75, elemInf}},
		{"cosh", ops.Cosh(v(0, ln2, -ln2, elemNegInf)), []int{4}, []float64{1, 1.25, 1.25, elemInf}},
		{"asinh", ops.Asinh(v(0, 0.75, -0.75)), []int{3}, []float64{0, ln2, -ln2}},
		{"acosh", ops.Acosh(v(1, 1.25, 0.5, elemInf)), []int{4}, []float64{0, ln2, elemNaN, elemInf}},
		{"atanh", ops.Atanh(v(0, 0.6, -0.6, 1, -1, 2)), []int{6}, []float64{0, ln2, -ln2, elemInf, elemNegInf, elemNaN}},
	}, 1e-14)
}

// TestTrigFloat32 checks that the float32 kernels agree with the float64
// ones to float32 precision and keep the dtype.
func TestTrigFloat32(t *testing.T) {
	unit := randT(41, -0.95, 0.95, 3, 4).Float64s()
	wide := randT(42, -3, 3, 3, 4).Float64s()
	big := randT(43, 1.05, 6, 3, 4).Float64s()
	cases := []struct {
		name string
		f    func(*tensor.Tensor) *tensor.Tensor
		in   []float64
	}{
		{"Tan", ops.Tan, unit}, {"Asin", ops.Asin, unit}, {"Acos", ops.Acos, unit},
		{"Atan", ops.Atan, wide}, {"Sinh", ops.Sinh, wide}, {"Cosh", ops.Cosh, wide},
		{"Asinh", ops.Asinh, wide}, {"Acosh", ops.Acosh, big}, {"Atanh", ops.Atanh, unit},
	}
	for _, c := range cases {
		in32 := make([]float32, len(c.in))
		in64 := make([]float64, len(c.in))
		for i, x := range c.in {
			in32[i] = float32(x)
			in64[i] = float64(in32[i])
		}
		got := c.f(f32(in32, 3, 4))
		if got.DType() != tensor.Float32 {
			t.Fatalf("%s: dtype %v, want Float32", c.name, got.DType())
		}
		want := c.f(f64(in64, 3, 4)).Float64s()
		g := got.Float64s()
		for i := range want {
			// Relative: Sinh and Cosh reach about 200 on [-3, 3].
			if d := math.Abs(g[i] - want[i]); d > 2e-7*math.Max(1, math.Abs(want[i])) {
				t.Fatalf("%s float32[%d] = %v, want %v", c.name, i, g[i], want[i])
			}
		}
	}
}

// TestTrigGrad checks first and second derivatives against central finite
// differences in float64, each op on a domain where it is smooth.
func TestTrigGrad(t *testing.T) {
	un := func(f func(*tensor.Tensor) *tensor.Tensor) func(...*tensor.Tensor) *tensor.Tensor {
		return func(v ...*tensor.Tensor) *tensor.Tensor { return f(v[0]) }
	}
	unit := randT(51, -0.8, 0.8, 3, 4)
	cases := []struct {
		name string
		f    func(*tensor.Tensor) *tensor.Tensor
		x    *tensor.Tensor
	}{
		{"tan", ops.Tan, randT(52, -1.2, 1.2, 3, 4)},
		{"asin", ops.Asin, unit},
		{"acos", ops.Acos, unit},
		{"atan", ops.Atan, randT(53, -3, 3, 3, 4)},
		{"sinh", ops.Sinh, randT(54, -2, 2, 3, 4)},
		{"cosh", ops.Cosh, randT(55, -2, 2, 3, 4)},
		{"asinh", ops.Asinh, randT(56, -3, 3, 3, 4)},
		{"acosh", ops.Acosh, randT(57, 1.2, 4, 3, 4)},
		{"atanh", ops.Atanh, unit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkGrad(t, c.name, un(c.f), c.x)
			checkGrad2(t, c.name, un(c.f), c.x)
		})
	}
}

// TestTrigRejectsIntegers checks that an integer input is refused with a
// panic naming the op, not computed through a silent conversion.
func TestTrigRejectsIntegers(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Asin of an Int64 tensor did not panic")
		}
	}()
	ops.Asin(tensor.FromSlice([]int64{0, 1}, 2))
}
