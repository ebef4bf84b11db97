package ops_test

import (
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// TestAvgPool2DCountIncludePad checks both divisor settings, and the
// MindSpore defaults, against values worked out by hand on
//
//	1  2  3  4
//	5  6  7  8
//	9 10 11 12
//
// in PyNative and Graph mode.
func TestAvgPool2DCountIncludePad(t *testing.T) {
	include, exclude := ops.CountIncludePad(true), ops.CountIncludePad(false)
	k2, s2, k3 := [2]int{2, 2}, [2]int{2, 2}, [2]int{3, 3}
	pad1 := ops.ExplicitPad(1, 1, 1, 1)
	cases := []struct {
		name           string
		kernel, stride [2]int
		opts           []ops.AvgPoolOption
		shape          []int
		want           []float64
	}{
		// Without padding the setting changes nothing.
		{"valid default", k2, s2, nil, []int{1, 1, 1, 2}, []float64{3.5, 5.5}},
		{"valid include", k2, s2, []ops.AvgPoolOption{include}, []int{1, 1, 1, 2}, []float64{3.5, 5.5}},
		{"valid exclude", k2, s2, []ops.AvgPoolOption{ops.ValidPad(), exclude}, []int{1, 1, 1, 2}, []float64{3.5, 5.5}},
		// Pad 1 all round, kernel 2, stride 2: rows {0}, {1,2}; columns
		// {0}, {1,2}, {3}. Including the padding divides every sum by 4.
		{"pad1 k2 s2 include", k2, s2, []ops.AvgPoolOption{pad1, include}, []int{1, 1, 2, 3},
			[]float64{1.0 / 4, 5.0 / 4, 4.0 / 4, 14.0 / 4, 34.0 / 4, 20.0 / 4}},
		{"pad1 k2 s2 default", k2, s2, []ops.AvgPoolOption{pad1}, []int{1, 1, 2, 3},
			[]float64{1.0 / 4, 5.0 / 4, 4.0 / 4, 14.0 / 4, 34.0 / 4, 20.0 / 4}},
		{"pad1 k2 s2 exclude", k2, s2, []ops.AvgPoolOption{exclude, pad1}, []int{1, 1, 2, 3},
			[]float64{1, 2.5, 4, 7, 8.5, 10}},
		// Pad 1, kernel 3, stride 2: rows {0,1}, {1,2}; columns {0,1},
		// {1,2,3}. Sums 14, 30, 30, 54 over 4, 6, 4, 6 real cells.
		{"pad1 k3 s2 include", k3, s2, []ops.AvgPoolOption{pad1, include}, []int{1, 1, 2, 2},
			[]float64{14.0 / 9, 30.0 / 9, 30.0 / 9, 54.0 / 9}},
		{"pad1 k3 s2 default", k3, s2, []ops.AvgPoolOption{pad1}, []int{1, 1, 2, 2},
			[]float64{14.0 / 9, 30.0 / 9, 30.0 / 9, 54.0 / 9}},
		{"pad1 k3 s2 exclude", k3, s2, []ops.AvgPoolOption{pad1, exclude}, []int{1, 1, 2, 2},
			[]float64{3.5, 5, 7.5, 9}},
		// Pad 1, kernel 3, stride 1 on the 3×4 input: the corner window
		// holds {1,2,5,6}, the middle one of the top row {1,2,3,5,6,7}.
		{"pad1 k3 s1 include", k3, [2]int{1, 1}, []ops.AvgPoolOption{pad1, include}, []int{1, 1, 3, 4},
			[]float64{14.0 / 9, 24.0 / 9, 30.0 / 9, 22.0 / 9, 33.0 / 9, 54.0 / 9, 63.0 / 9, 45.0 / 9, 30.0 / 9, 48.0 / 9, 54.0 / 9, 38.0 / 9}},
		{"pad1 k3 s1 exclude", k3, [2]int{1, 1}, []ops.AvgPoolOption{pad1, exclude}, []int{1, 1, 3, 4},
			[]float64{14.0 / 4, 24.0 / 6, 30.0 / 6, 22.0 / 4, 33.0 / 6, 54.0 / 9, 63.0 / 9, 45.0 / 6, 30.0 / 4, 48.0 / 6, 54.0 / 6, 38.0 / 4}},
		// "same", kernel 2, stride 2: one padded row at the bottom. MindSpore's
		// AvgPool leaves it out by default; asked to, it counts.
		{"same default", k2, s2, []ops.AvgPoolOption{ops.SamePad()}, []int{1, 1, 2, 2}, []float64{3.5, 5.5, 9.5, 11.5}},
		{"same exclude", k2, s2, []ops.AvgPoolOption{ops.SamePad(), exclude}, []int{1, 1, 2, 2}, []float64{3.5, 5.5, 9.5, 11.5}},
		{"same include", k2, s2, []ops.AvgPoolOption{ops.SamePad(), include}, []int{1, 1, 2, 2}, []float64{3.5, 5.5, 19.0 / 4, 23.0 / 4}},
	}
	x := f64([]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, 1, 1, 3, 4)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pool := func(x *spore.Tensor) *spore.Tensor { return ops.AvgPool2D(x, c.kernel, c.stride, c.opts...) }
			assertClose(t, "PyNative", pool(x), c.shape, c.want, 1e-12)
			assertClose(t, "Graph", spore.Jit(pool)(x), c.shape, c.want, 1e-12)
			x32 := tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, 1, 1, 3, 4)
			assertClose(t, "PyNative f32", pool(x32), c.shape, c.want, 1e-6)
			assertClose(t, "Graph f32", spore.Jit(pool)(x32), c.shape, c.want, 1e-6)
		})
	}
}

// TestAvgPool2DCountIncludePadGrad checks the gradient of both settings
// against finite differences, and the Graph-mode gradient against the
// PyNative one.
func TestAvgPool2DCountIncludePadGrad(t *testing.T) {
	cases := []struct {
		name           string
		kernel, stride [2]int
		opts           []ops.AvgPoolOption
		shape          []int
	}{
		{"pad1 k2 s2 include", [2]int{2, 2}, [2]int{2, 2}, []ops.AvgPoolOption{ops.ExplicitPad(1, 1, 1, 1), ops.CountIncludePad(true)}, []int{1, 2, 3, 4}},
		{"pad1 k2 s2 exclude", [2]int{2, 2}, [2]int{2, 2}, []ops.AvgPoolOption{ops.ExplicitPad(1, 1, 1, 1), ops.CountIncludePad(false)}, []int{1, 2, 3, 4}},
		{"asym k2x3 s1x2 include", [2]int{2, 3}, [2]int{1, 2}, []ops.AvgPoolOption{ops.ExplicitPad(1, 0, 2, 1), ops.CountIncludePad(true)}, []int{2, 1, 4, 5}},
		{"same k3 s1x2 include", [2]int{3, 3}, [2]int{1, 2}, []ops.AvgPoolOption{ops.SamePad(), ops.CountIncludePad(true)}, []int{1, 1, 5, 4}},
		{"same k3 s1x2 exclude", [2]int{3, 3}, [2]int{1, 2}, []ops.AvgPoolOption{ops.SamePad(), ops.CountIncludePad(false)}, []int{1, 1, 5, 4}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pool := func(v ...*tensor.Tensor) *tensor.Tensor { return ops.AvgPool2D(v[0], c.kernel, c.stride, c.opts...) }
			x := randT(uint64(60+i), -1, 1, c.shape...)
			checkGrad(t, c.name, pool, x)
			// Squared, so that the second derivative is not zero.
			checkGrad2(t, c.name, func(v ...*tensor.Tensor) *tensor.Tensor { y := pool(v...); return ops.Mul(y, y) }, x)

			w := randT(uint64(80+i), 0.5, 1.5, pool(x).Shape()...)
			L := func(x *spore.Tensor) *spore.Tensor { return ops.Sum(ops.Mul(pool(x), w)) }
			eager := spore.Grad(L)(x)[0]
			graph := spore.Jit(func(x *spore.Tensor) *spore.Tensor { return spore.Grad(L)(x)[0] })(x)
			assertClose(t, "Graph gradient", graph, c.shape, eager.Float64s(), 1e-12)
		})
	}
}

// TestAvgPool2DOptionErrors checks that misused options are refused with
// the op's name.
func TestAvgPool2DOptionErrors(t *testing.T) {
	x := tensor.Zeros(tensor.Float32, 1, 1, 4, 4)
	k, s := [2]int{2, 2}, [2]int{2, 2}
	cases := []struct {
		name  string
		opts  []ops.AvgPoolOption
		wants []string
	}{
		{"two counts", []ops.AvgPoolOption{ops.CountIncludePad(true), ops.CountIncludePad(false)}, []string{"AvgPool2D", "at most one CountIncludePad"}},
		{"two paddings", []ops.AvgPoolOption{ops.SamePad(), ops.ValidPad()}, []string{"AvgPool2D", "at most one Padding"}},
		{"nil option", []ops.AvgPoolOption{ops.SamePad(), nil}, []string{"AvgPool2D", "option 1", "want a Padding or a CountIncludePad"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			testkit.MustPanic(t, func() { ops.AvgPool2D(x, k, s, c.opts...) }, c.wants...)
		})
	}
}
