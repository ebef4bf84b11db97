package spore_test

import (
	"testing"

	spore "github.com/sporeml/spore"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// A parameter handed to a transform as an ordinary argument, inside a
// compiled step that then updates it, must be read when the plan runs:
// every call of the compiled step sees the weights the previous call left.
// Baking its trace-time value into the plan (the stale-parameter trap)
// would repeat the first call's loss and gradient for ever.
func TestTransformsReadParameterArgumentsEachCall(t *testing.T) {
	sq := func(w *spore.Tensor) *spore.Tensor { return ops.Sum(ops.Mul(w, w)) }
	cube := func(w *spore.Tensor) *spore.Tensor { return ops.Mul(ops.Mul(w, w), w) }
	cases := []struct {
		name string
		// grad returns a value to report and the update direction for w.
		grad func(w *spore.Tensor) (*spore.Tensor, *spore.Tensor)
	}{
		{"ValueAndGrad", func(w *spore.Tensor) (*spore.Tensor, *spore.Tensor) {
			l, g := spore.ValueAndGrad(sq)(w)
			return l, g[0]
		}},
		{"Grad", func(w *spore.Tensor) (*spore.Tensor, *spore.Tensor) {
			g := spore.Grad(sq)(w)[0]
			return ops.Sum(g), g
		}},
		{"Jacrev", func(w *spore.Tensor) (*spore.Tensor, *spore.Tensor) {
			j := spore.Jacrev(cube)(w)[0]
			return ops.Sum(j), ops.Sum(j, 0)
		}},
		{"Jacfwd", func(w *spore.Tensor) (*spore.Tensor, *spore.Tensor) {
			j := spore.Jacfwd(cube)(w)[0]
			return ops.Sum(j), ops.Sum(j, 0)
		}},
		{"JVP", func(w *spore.Tensor) (*spore.Tensor, *spore.Tensor) {
			ones := tensor.FromSlice([]float32{1, 1}, 2)
			out, tan := spore.JVP(cube, []*spore.Tensor{w}, []*spore.Tensor{ones})
			return ops.Sum(out), tan
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := func(compiled bool) [][]float32 {
				w := spore.NewParameter("w", tensor.FromSlice([]float32{1, 2}, 2))
				lr := tensor.FromSlice([]float32{0.05}, 1)
				step := func(lr *spore.Tensor) *spore.Tensor {
					v, d := c.grad(w)
					w.Assign(ops.Sub(w, ops.Mul(d, lr)))
					return v
				}
				if compiled {
					step = spore.Jit(step)
				}
				var got [][]float32
				for i := 0; i < 4; i++ {
					v := step(lr).Float32s()
					got = append(got, append(v, w.Float32s()...))
				}
				return got
			}
			want, got := run(false), run(true)
			for i := range want {
				for j := range want[i] {
					if d := want[i][j] - got[i][j]; d > 1e-5 || d < -1e-5 {
						t.Fatalf("call %d: Graph mode %v, PyNative %v", i, got[i], want[i])
					}
				}
			}
			if want[0][0] == want[3][0] {
				t.Fatalf("the reported value did not change over the calls (%v): the case tests nothing", want)
			}
		})
	}
}
