package ops_test

import (
	"slices"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Index ops have a kernel per value and index dtype (their IndexInput):
// Int32 and Int64 indices give the same result, eagerly and compiled,
// forward and backward.
func TestIndexOpsByIndexDType(t *testing.T) {
	x := tensor.FromSlice([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	cases := []struct {
		name string
		f    func(x, i *spore.Tensor) *spore.Tensor
		idx  []int64
		ish  []int
		want []float64
		grad []float64
	}{
		{"Gather", func(x, i *spore.Tensor) *spore.Tensor { return ops.Gather(x, i, 1) },
			[]int64{2, 0, 2}, []int{3}, []float64{3, 1, 3, 6, 4, 6}, []float64{1, 0, 2, 1, 0, 2}},
		{"TakeAlongAxis", func(x, i *spore.Tensor) *spore.Tensor { return ops.TakeAlongAxis(x, i, 1) },
			[]int64{1, 1, 0, 2}, []int{2, 2}, []float64{2, 2, 4, 6}, []float64{0, 2, 0, 1, 0, 1}},
	}
	for _, c := range cases {
		i64 := tensor.FromSlice(c.idx, c.ish...)
		for _, idx := range []*spore.Tensor{i64, ops.Cast(i64, tensor.Int32)} {
			loss := func(x *spore.Tensor) *spore.Tensor { return ops.Sum(c.f(x, idx)) }
			grad := spore.Grad(loss)
			for _, mode := range []string{"PyNative", "Graph"} {
				f := func(x *spore.Tensor) *spore.Tensor { return c.f(x, idx) }
				g := func(x *spore.Tensor) *spore.Tensor { return grad(x)[0] }
				if mode == "Graph" {
					f, g = spore.Jit(f), spore.Jit(g)
				}
				if got := f(x).Float64s(); !slices.Equal(got, c.want) {
					t.Errorf("%s %s %v indices: %v, want %v", c.name, mode, idx.DType(), got, c.want)
				}
				if got := g(x).Float64s(); !slices.Equal(got, c.grad) {
					t.Errorf("%s %s %v indices: gradient %v, want %v", c.name, mode, idx.DType(), got, c.grad)
				}
			}
		}
	}
}
