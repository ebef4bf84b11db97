package ops_test

import (
	"math"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

func TestReductionValues(t *testing.T) {
	x := f64([]float64{1, 5, 3, 4, 2, 6}, 2, 3)
	x3 := ops.Reshape(tensor.Arange(tensor.Float64, 0, 24, 1), 2, 3, 4)
	nan := math.NaN()
	empty := tensor.Zeros(tensor.Float64, 0, 3)
	cases := []struct {
		name  string
		got   *tensor.Tensor
		shape []int
		want  []float64
	}{
		{"mean all", ops.Mean(x), []int{}, []float64{3.5}},
		{"mean 0", ops.Mean(x, 0), []int{3}, []float64{2.5, 3.5, 4.5}},
		{"mean -1", ops.Mean(x, -1), []int{2}, []float64{3, 4}},
		{"mean keep", ops.MeanKeepDims(x, 1), []int{2, 1}, []float64{3, 4}},
		{"mean f32", ops.Mean(f32([]float32{1, 2, 4.5}, 3)), []int{}, []float64{2.5}},
		{"mean empty axis", ops.Mean(empty, 0), []int{3}, []float64{nan, nan, nan}},
		{"mean scalar", ops.Mean(tensor.Scalar(2.5)), []int{}, []float64{2.5}},
		{"max all", ops.Max(x), []int{}, []float64{6}},
		{"max 0", ops.Max(x, 0), []int{3}, []float64{4, 5, 6}},
		{"max -1", ops.Max(x, -1), []int{2}, []float64{5, 6}},
		{"max keep", ops.MaxKeepDims(x, 0), []int{1, 3}, []float64{4, 5, 6}},
		{"max middle", ops.Max(x3, 1), []int{2, 4}, []float64{8, 9, 10, 11, 20, 21, 22, 23}},
		{"max 0,2", ops.Max(x3, 0, -1), []int{3}, []float64{15, 19, 23}},
		{"max nan", ops.Max(f64([]float64{1, nan, 3}, 3)), []int{}, []float64{nan}},
		{"max f32 neg", ops.Max(f32([]float32{-3, -1, -2}, 3)), []int{}, []float64{-1}},
		{"max int32", ops.Max(tensor.FromSlice([]int32{1, 5, 3, 4, 2, 6}, 2, 3), 1), []int{2}, []float64{5, 6}},
		{"max of empty rows", ops.Max(empty, 1), []int{0}, nil},
		{"min 1", ops.Min(x, 1), []int{2}, []float64{1, 2}},
		{"min keep", ops.MinKeepDims(x), []int{1, 1}, []float64{1}},
		{"min uint8", ops.Min(tensor.FromSlice([]uint8{200, 7, 255}, 3)), []int{}, []float64{7}},
		{"min int64", ops.Min(tensor.FromSlice([]int64{-1 << 40, 3}, 2)), []int{}, []float64{-1 << 40}},
		{"prod 1", ops.Prod(x, 1), []int{2}, []float64{15, 48}},
		{"prod all", ops.Prod(x), []int{}, []float64{720}},
		{"prod keep", ops.ProdKeepDims(x, 0), []int{1, 3}, []float64{4, 10, 18}},
		{"prod empty", ops.Prod(empty, 0), []int{3}, []float64{1, 1, 1}},
		{"prod int64", ops.Prod(tensor.FromSlice([]int64{2, 3, 7}, 3)), []int{}, []float64{42}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { assertClose(t, c.name, c.got, c.shape, c.want, 1e-12) })
	}
	if d := ops.Max(tensor.FromSlice([]int32{1, 2}, 2)).DType(); d != tensor.Int32 {
		t.Fatalf("Max keeps the dtype: got %v", d)
	}
}

func TestArgMaxArgMin(t *testing.T) {
	x := f64([]float64{1, 5, 3, 4, 2, 6}, 2, 3)
	x3 := ops.Reshape(tensor.Arange(tensor.Float64, 0, 24, 1), 2, 3, 4)
	ties := f64([]float64{3, 1, 3, 1}, 4)
	nan := math.NaN()
	cases := []struct {
		name  string
		got   *tensor.Tensor
		shape []int
		want  []float64
	}{
		{"argmax 1", ops.ArgMax(x, 1), []int{2}, []float64{1, 2}},
		{"argmax 0", ops.ArgMax(x, 0), []int{3}, []float64{1, 0, 1}},
		{"argmax -1 keep", ops.ArgMaxKeepDims(x, -1), []int{2, 1}, []float64{1, 2}},
		{"argmin 1", ops.ArgMin(x, 1), []int{2}, []float64{0, 1}},
		{"argmin 0 keep", ops.ArgMinKeepDims(x, 0), []int{1, 3}, []float64{0, 1, 0}},
		{"argmax middle", ops.ArgMax(x3, 1), []int{2, 4}, []float64{2, 2, 2, 2, 2, 2, 2, 2}},
		{"argmin middle", ops.ArgMin(ops.Neg(x3), -2), []int{2, 4}, []float64{2, 2, 2, 2, 2, 2, 2, 2}},
		{"argmax ties first", ops.ArgMax(ties, 0), []int{}, []float64{0}},
		{"argmin ties first", ops.ArgMin(ties, 0), []int{}, []float64{1}},
		{"argmax nan first", ops.ArgMax(f64([]float64{1, nan, 5, nan}, 4), 0), []int{}, []float64{1}},
		{"argmin nan", ops.ArgMin(f64([]float64{1, 0, nan}, 3), 0), []int{}, []float64{2}},
		{"argmax int32", ops.ArgMax(tensor.FromSlice([]int32{-5, -2, -9}, 3), 0), []int{}, []float64{1}},
		{"argmax uint8", ops.ArgMax(tensor.FromSlice([]uint8{1, 250, 250}, 3), 0), []int{}, []float64{1}},
		{"argmax f32", ops.ArgMax(f32([]float32{0, 1, 0, 2, 0, 0}, 2, 3), 1), []int{2}, []float64{1, 0}},
		{"argmax empty rows", ops.ArgMax(tensor.Zeros(tensor.Float32, 0, 3), 1), []int{0}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.got.DType() != tensor.Int64 {
				t.Fatalf("dtype %v, want Int64", c.got.DType())
			}
			assertClose(t, c.name, c.got, c.shape, c.want, 0)
		})
	}
}

func TestAnyAll(t *testing.T) {
	b := tensor.FromSlice([]bool{true, false, false, false}, 2, 2)
	cases := []struct {
		name  string
		got   *tensor.Tensor
		shape []int
		want  []float64
	}{
		{"any 1", ops.Any(b, 1), []int{2}, []float64{1, 0}},
		{"any all", ops.Any(b), []int{}, []float64{1}},
		{"all 0", ops.All(b, 0), []int{2}, []float64{0, 0}},
		{"all keep", ops.AllKeepDims(ops.LogicalNot(b), -1), []int{2, 1}, []float64{0, 1}},
		{"any keep", ops.AnyKeepDims(b, 0), []int{1, 2}, []float64{1, 0}},
		{"all empty", ops.All(tensor.Zeros(tensor.Bool, 0)), []int{}, []float64{1}},
		{"any empty", ops.Any(tensor.Zeros(tensor.Bool, 0)), []int{}, []float64{0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { assertClose(t, c.name, c.got, c.shape, c.want, 0) })
	}
}

func TestReductionErrors(t *testing.T) {
	b := tensor.Zeros(tensor.Bool, 2, 3)
	empty := tensor.Zeros(tensor.Float64, 0, 3)
	testkit.MustPanic(t, func() { ops.Max(b) }, "ReduceMax", "Bool")
	testkit.MustPanic(t, func() { ops.Mean(tensor.Ones(tensor.Int32, 2)) }, "ReduceMean", "Int32")
	testkit.MustPanic(t, func() { ops.Max(empty, 0) }, "ReduceMax", "empty axis 0", "[0 3]")
	testkit.MustPanic(t, func() { ops.Min(empty) }, "ReduceMin", "empty axis")
	testkit.MustPanic(t, func() { ops.Max(tensor.Ones(tensor.Float32, 2, 3), 2) }, "ReduceMax", "axis 2")
	testkit.MustPanic(t, func() { ops.Min(tensor.Ones(tensor.Float32, 2, 3), 1, -1) }, "ReduceMin", "repeated axis")
	testkit.MustPanic(t, func() { ops.Prod(tensor.Ones(tensor.Bool, 2)) }, "ReduceProd", "Bool")
	testkit.MustPanic(t, func() { ops.ArgMax(tensor.Ones(tensor.Float32, 2, 3), -3) }, "ArgMax", "axis -3")
	testkit.MustPanic(t, func() { ops.ArgMin(empty, 0) }, "ArgMin", "empty axis")
	testkit.MustPanic(t, func() { ops.ArgMax(b, 0) }, "ArgMax", "Bool")
	testkit.MustPanic(t, func() { ops.Any(tensor.Ones(tensor.Float32, 2)) }, "ReduceAny", "Float32")
	testkit.MustPanic(t, func() { ops.All(tensor.Ones(tensor.Int64, 2)) }, "ReduceAll", "Int64")
}

func TestReductionGradValues(t *testing.T) {
	grad := func(f func(*tensor.Tensor) *tensor.Tensor, x *tensor.Tensor) *tensor.Tensor {
		return spore.Grad(func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Sum(f(v[0])) })(x)[0]
	}
	max := func(x *tensor.Tensor) *tensor.Tensor { return ops.Max(x, -1) }
	min := func(x *tensor.Tensor) *tensor.Tensor { return ops.Min(x) }
	prod := func(x *tensor.Tensor) *tensor.Tensor { return ops.Prod(x, 1) }
	cases := []struct {
		name  string
		got   *tensor.Tensor
		shape []int
		want  []float64
	}{
		{"max ties split", grad(max, f64([]float64{1, 3, 3, 2, 2, 2}, 2, 3)), []int{2, 3}, []float64{0, 0.5, 0.5, 1.0 / 3, 1.0 / 3, 1.0 / 3}},
		{"min one", grad(min, f64([]float64{4, -1, 2}, 3)), []int{3}, []float64{0, 1, 0}},
		// Rows: no zero, one zero, two zeros.
		{"prod zeros", grad(prod, f64([]float64{2, 3, 4, 2, 0, 3, 0, 5, 0}, 3, 3)), []int{3, 3}, []float64{12, 8, 6, 0, 6, 0, 0, 0, 0}},
		{"mean", grad(func(x *tensor.Tensor) *tensor.Tensor { return ops.Mean(x, 0) }, f64([]float64{1, 2, 3, 4}, 2, 2)), []int{2, 2}, []float64{0.5, 0.5, 0.5, 0.5}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { assertClose(t, c.name, c.got, c.shape, c.want, 1e-12) })
	}
}

func TestReductionGradients(t *testing.T) {
	x := randT(11, -2, 2, 3, 4)
	pos := randT(12, 0.5, 2, 3, 4)
	x3 := randT(13, -1, 1, 2, 3, 4)
	// Zeros at fixed places: one in row 0, two in row 1. Prod is linear in
	// each element, so finite differences are exact there too.
	zeros := f64([]float64{0.7, 0, -1.3, 0.9, 0, 1.1, 0, 0.6, 1.2, 0.8, -0.5, 1.4}, 3, 4)
	sq := func(v *tensor.Tensor) *tensor.Tensor { return ops.Mul(v, v) }
	cases := []struct {
		name string
		f    func(...*tensor.Tensor) *tensor.Tensor
		xs   []*tensor.Tensor
		ord2 bool
	}{
		{"mean all", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Mean(v[0]) }, []*tensor.Tensor{x}, false},
		{"mean -1", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Mean(sq(v[0]), -1) }, []*tensor.Tensor{x}, true},
		{"mean keep", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.MeanKeepDims(sq(v[0]), 0, 2) }, []*tensor.Tensor{x3}, true},
		{"max -1", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Max(v[0], -1) }, []*tensor.Tensor{x}, false},
		{"max all", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Max(v[0]) }, []*tensor.Tensor{x}, false},
		{"max sq", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Max(sq(v[0]), 1) }, []*tensor.Tensor{pos}, true},
		{"max keep middle", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.MaxKeepDims(v[0], 1) }, []*tensor.Tensor{x3}, false},
		{"min 0", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Min(v[0], 0) }, []*tensor.Tensor{x}, false},
		{"min sq", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Min(sq(v[0]), 0, 2) }, []*tensor.Tensor{x3}, true},
		{"prod -1", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Prod(v[0], -1) }, []*tensor.Tensor{pos}, true},
		{"prod 0 signed", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Prod(v[0], 0) }, []*tensor.Tensor{x}, true},
		{"prod keep", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.ProdKeepDims(v[0], 1) }, []*tensor.Tensor{x3}, false},
		{"prod zeros", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Prod(v[0], 1) }, []*tensor.Tensor{zeros}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkGrad(t, c.name, c.f, c.xs...)
			if c.ord2 {
				checkGrad2(t, c.name, c.f, c.xs...)
			}
		})
	}
}
