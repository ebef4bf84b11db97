package nn_test

import (
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// TestAvgPool2dCountIncludePad checks nn.AvgPool2d's padding and
// count_include_pad settings against hand-computed values on
//
//	1  2  3  4
//	5  6  7  8
//	9 10 11 12
//
// in PyNative and Graph mode, and their gradients by finite differences.
func TestAvgPool2dCountIncludePad(t *testing.T) {
	pad1 := [4]int{1, 1, 1, 1}
	cases := []struct {
		name   string
		cell   *nn.AvgPool2d
		shape  []int
		values []float64
	}{
		// Kernel 3, stride 2, pad 1: sums 14, 30, 30, 54 over windows of
		// 4, 6, 4, 6 real cells; MindSpore's default divides by 9.
		{"pad default", nn.NewAvgPool2d(3, 2, "pad", nn.AvgPool2dConfig{Padding: pad1}), []int{1, 1, 2, 2},
			[]float64{14.0 / 9, 30.0 / 9, 30.0 / 9, 54.0 / 9}},
		{"pad include", nn.NewAvgPool2d(3, 2, "pad", nn.AvgPool2dConfig{Padding: pad1, CountIncludePad: new(true)}), []int{1, 1, 2, 2},
			[]float64{14.0 / 9, 30.0 / 9, 30.0 / 9, 54.0 / 9}},
		{"pad exclude", nn.NewAvgPool2d(3, 2, "pad", nn.AvgPool2dConfig{Padding: pad1, CountIncludePad: new(false)}), []int{1, 1, 2, 2},
			[]float64{3.5, 5, 7.5, 9}},
		// Kernel 2, stride 2, "same": one padded row at the bottom, left
		// out by default as in MindSpore's "same" mode.
		{"same default", nn.NewAvgPool2d(2, 2, "same"), []int{1, 1, 2, 2}, []float64{3.5, 5.5, 9.5, 11.5}},
		{"same include", nn.NewAvgPool2d(2, 2, "same", nn.AvgPool2dConfig{CountIncludePad: new(true)}), []int{1, 1, 2, 2},
			[]float64{3.5, 5.5, 19.0 / 4, 23.0 / 4}},
		{"valid", nn.NewAvgPool2d(2, 2, "valid", nn.AvgPool2dConfig{CountIncludePad: new(false)}), []int{1, 1, 1, 2}, []float64{3.5, 5.5}},
	}
	x := tensor.FromSlice([]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, 1, 1, 3, 4)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := tensor.FromSlice(c.values, c.shape...)
			sameValues(t, "PyNative", c.cell.Call(x), want, 1e-12)
			sameValues(t, "Graph", nn.Jit(c.cell).Call(x), want, 1e-12)
			checkGrads(t, c.name, c.cell, func(xs ...*tensor.Tensor) *tensor.Tensor { return c.cell.Call(xs[0]) },
				randT(uint64(30+i), -1, 1, 2, 1, 5, 6))
		})
	}
}

// TestAvgPool2dConfigErrors checks that inconsistent settings are refused
// when the cell is built, naming the cell.
func TestAvgPool2dConfigErrors(t *testing.T) {
	cases := []struct {
		name  string
		build func()
		wants []string
	}{
		{"padding without pad mode", func() { nn.NewAvgPool2d(3, 1, "same", nn.AvgPool2dConfig{Padding: [4]int{1, 1, 1, 1}}) },
			[]string{"nn.AvgPool2d", "needs pad_mode \"pad\""}},
		{"negative padding", func() { nn.NewAvgPool2d(3, 1, "pad", nn.AvgPool2dConfig{Padding: [4]int{1, -1, 1, 1}}) },
			[]string{"nn.AvgPool2d", "negative padding"}},
		{"unknown mode", func() { nn.NewAvgPool2d(3, 1, "full") }, []string{"nn.AvgPool2d", `"full"`, "valid, same or pad"}},
		{"two configs", func() { nn.NewAvgPool2d(3, 1, "pad", nn.AvgPool2dConfig{}, nn.AvgPool2dConfig{}) },
			[]string{"nn.AvgPool2d", "at most one"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { testkit.MustPanic(t, c.build, c.wants...) })
	}
}

// TestGELUCellUsesOps checks that nn.GELU is ops.GELUTanh or ops.GELU,
// bit for bit, in both modes.
func TestGELUCellUsesOps(t *testing.T) {
	x := randT(40, -4, 4, 3, 7)
	cases := []struct {
		name string
		cell *nn.GELU
		op   func(*spore.Tensor) *spore.Tensor
	}{
		{"tanh", nn.NewGELU(true), ops.GELUTanh},
		{"exact", nn.NewGELU(false), ops.GELU},
		{"Activation(gelu)", nn.Activation("gelu").(*nn.GELU), ops.GELUTanh},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sameValues(t, "PyNative", c.cell.Call(x), c.op(x), 0)
			sameValues(t, "Graph", nn.Jit(c.cell).Call(x), spore.Jit(c.op)(x), 0)
		})
	}
}
