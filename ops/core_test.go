package ops_test

import (
	"testing"

	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

func TestArithmeticValues(t *testing.T) {
	a := f64([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	row := f64([]float64{10, 20, 30}, 3)
	col := f64([]float64{-1, 1}, 2, 1)
	cases := []struct {
		name  string
		got   *tensor.Tensor
		shape []int
		want  []float64
	}{
		{"add same", ops.Add(a, a), []int{2, 3}, []float64{2, 4, 6, 8, 10, 12}},
		{"add row", ops.Add(a, row), []int{2, 3}, []float64{11, 22, 33, 14, 25, 36}},
		{"add col", ops.Add(a, col), []int{2, 3}, []float64{0, 1, 2, 5, 6, 7}},
		{"sub scalar", ops.Sub(a, ops.ScalarLike(a, 1)), []int{2, 3}, []float64{0, 1, 2, 3, 4, 5}},
		{"scalar sub", ops.Sub(ops.ScalarLike(a, 1), a), []int{2, 3}, []float64{0, -1, -2, -3, -4, -5}},
		{"mul outer", ops.Mul(col, row), []int{2, 3}, []float64{-10, -20, -30, 10, 20, 30}},
		{"div", ops.Div(a, row), []int{2, 3}, []float64{0.1, 0.1, 0.1, 0.4, 0.25, 0.2}},
		{"neg", ops.Neg(a), []int{2, 3}, []float64{-1, -2, -3, -4, -5, -6}},
		{"relu", ops.ReLU(ops.Add(a, ops.ScalarLike(a, -3))), []int{2, 3}, []float64{0, 0, 0, 1, 2, 3}},
		{"empty", ops.Add(tensor.Zeros(tensor.Float64, 0, 3), row), []int{0, 3}, nil},
		{"rank3 bcast", ops.Add(tensor.Ones(tensor.Float64, 2, 1, 3), tensor.Ones(tensor.Float64, 2, 1)), []int{2, 2, 3}, []float64{2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { assertClose(t, c.name, c.got, c.shape, c.want, 1e-12) })
	}
}

func TestArithmeticErrors(t *testing.T) {
	testkit.MustPanic(t, func() { ops.Add(tensor.Ones(tensor.Float32, 2, 3), tensor.Ones(tensor.Float32, 3, 2)) }, "Add", "[2 3]", "[3 2]", "core_test.go")
	testkit.MustPanic(t, func() { ops.Add(tensor.Ones(tensor.Float32, 2), tensor.Ones(tensor.Float64, 2)) }, "dtypes differ")
	testkit.MustPanic(t, func() { ops.Div(tensor.Ones(tensor.Bool, 2), tensor.Ones(tensor.Bool, 2)) }, "Div", "Bool")
	testkit.MustPanic(t, func() { ops.Div(tensor.Ones(tensor.Int32, 2), tensor.Zeros(tensor.Int32, 2)) }, "Div", "division by zero")
}

func TestMatMul(t *testing.T) {
	a := f64([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	b := f64([]float64{7, 8, 9, 10, 11, 12}, 3, 2)
	assertClose(t, "2d", ops.MatMul(a, b), []int{2, 2}, []float64{58, 64, 139, 154}, 1e-12)
	assertClose(t, "ta", ops.MatMulT(b, b, true, false), []int{2, 2}, []float64{49 + 81 + 121, 56 + 90 + 132, 56 + 90 + 132, 64 + 100 + 144}, 1e-12)
	assertClose(t, "tb", ops.MatMulT(a, a, false, true), []int{2, 2}, []float64{14, 32, 32, 77}, 1e-12)
	batch := ops.MatMul(ops.BroadcastTo(a, 4, 2, 3), b)
	if !batch.Shape().Equal(tensor.Shape{4, 2, 2}) || batch.At(3, 1, 1) != 154 {
		t.Fatalf("batched matmul: %v %v", batch.Shape(), batch.Float64s())
	}
	e := testkit.MustPanic(t, func() { ops.MatMul(tensor.Ones(tensor.Float32, 64, 784), tensor.Ones(tensor.Float32, 512, 10)) }, "MatMul: inner dimensions differ: [64 784] x [512 10]")
	if e.Loc == "" {
		t.Fatal("error has no location")
	}
}

func TestGradients(t *testing.T) {
	x := randT(1, -2, 2, 3, 4)
	y := randT(2, 0.5, 2, 3, 4)
	row := randT(3, 0.5, 2, 4)
	m := randT(4, -1, 1, 4, 5)
	cases := []struct {
		name string
		f    func(...*tensor.Tensor) *tensor.Tensor
		xs   []*tensor.Tensor
		ord2 bool
	}{
		{"add", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Add(v[0], v[1]) }, []*tensor.Tensor{x, row}, false},
		{"sub", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Sub(v[0], v[1]) }, []*tensor.Tensor{row, x}, false},
		{"mul", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Mul(v[0], v[1]) }, []*tensor.Tensor{x, y}, true},
		{"div", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Div(v[0], v[1]) }, []*tensor.Tensor{x, y}, true},
		{"neg", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Neg(v[0]) }, []*tensor.Tensor{x}, false},
		{"exp", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Exp(v[0]) }, []*tensor.Tensor{x}, true},
		{"log", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Log(v[0]) }, []*tensor.Tensor{y}, true},
		{"tanh", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Tanh(v[0]) }, []*tensor.Tensor{x}, true},
		{"relu", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.ReLU(v[0]) }, []*tensor.Tensor{x}, false},
		{"sum axes", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Sum(v[0], -1) }, []*tensor.Tensor{x}, false},
		{"sum keep", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.SumKeepDims(v[0], 0) }, []*tensor.Tensor{x}, false},
		{"matmul", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.MatMul(v[0], v[1]) }, []*tensor.Tensor{x, m}, true},
		{"matmul ta tb", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.MatMulT(v[0], v[1], true, true) }, []*tensor.Tensor{randT(5, -1, 1, 4, 3), randT(6, -1, 1, 2, 4)}, true},
		{"matmul batched bcast", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.MatMul(v[0], v[1]) }, []*tensor.Tensor{randT(7, -1, 1, 2, 3, 4), m}, false},
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
