package optim_test

import (
	"math"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/tensor"
)

// Optimiser state that decays into the subnormal range is stored as
// zero (a zero of its sign), alike step by step and in a compiled step,
// while state still in the normal range is untouched: with zero
// gradients the momentum b of SGD and the moments of Adam decay by μ, β₁
// and β₂ each step, so entries that start at 2⁻¹²⁵ (normal) and 2⁻¹³⁰
// (subnormal) show both sides of the boundary.
func TestStateFlushesSubnormals(t *testing.T) {
	var gradTerm float64 // a variable, so that -0 + 0 is computed
	start := []float32{0x1p-125, -0x1p-125, 0x1p-130, -0x1p-130, 1, 0}
	cases := []struct {
		name string
		make func(p *tensor.Tensor) optim.Optimizer
		// decay is the factor each state slot is multiplied by per step
		// under zero gradients, in the order of State()[1:].
		decay []float64
	}{
		{"sgd momentum", func(p *tensor.Tensor) optim.Optimizer {
			return optim.NewSGD([]*tensor.Tensor{p}, optim.SGDConfig{Common: optim.Common{LR: optim.Constant(0.1)}, Momentum: 0.5})
		}, []float64{0.5}},
		{"adam", func(p *tensor.Tensor) optim.Optimizer {
			return optim.NewAdam([]*tensor.Tensor{p}, optim.AdamConfig{Common: optim.Common{LR: optim.Constant(0.1)}, Beta1: 0.5, Beta2: 0.25})
		}, []float64{0.5, 0.25}},
	}
	for _, c := range cases {
		for _, graph := range []bool{false, true} {
			name := c.name
			if graph {
				name += "/graph"
			}
			t.Run(name, func(t *testing.T) {
				p := tensor.NewParameter("w", tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}))
				opt := c.make(p)
				slots := opt.State()[1:]
				for _, s := range slots {
					s.Assign(tensor.FromSlice(append([]float32(nil), start...)))
				}
				zero := tensor.FromSlice(make([]float32, len(start)))
				step := func(g *tensor.Tensor) *tensor.Tensor { opt.Step([]*tensor.Tensor{g}); return ops.Sum(g) }
				j := spore.NewJit(step)
				want := make([][]float32, len(slots))
				for i := range slots {
					want[i] = append([]float32(nil), start...)
				}
				for k := range 3 {
					if graph {
						j.Fn(zero)
					} else {
						step(zero)
					}
					for i, s := range slots {
						for e, v := range want[i] {
							// The reference multiplies in float64 (exact
							// here: powers of two), adds the zero gradient's
							// term (+0, which turns -0 into +0) and flushes
							// by value.
							w := float64(v)*c.decay[i] + gradTerm
							if w != 0 && math.Abs(w) < 0x1p-126 {
								w = math.Copysign(0, w)
							}
							want[i][e] = float32(w)
						}
						got := s.Float32s()
						for e := range got {
							if math.Float32bits(got[e]) != math.Float32bits(want[i][e]) {
								t.Fatalf("step %d: %s[%d] = %g, want %g", k+1, s.Name(), e, got[e], want[i][e])
							}
						}
					}
				}
			})
		}
	}
}
