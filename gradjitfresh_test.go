package spore_test

import (
	"math"
	"testing"

	spore "github.com/sporeml/spore"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// The gradient of a function with dropout must use the masks its forward
// pass drew. For f(x) = Σ dropout(x), df/dx is the mask, so f(x) = Σ x·df/dx
// holds exactly when the two agree and fails (by about √n) when the
// backward pass draws masks of its own. Both ways of composing Jit with
// differentiation must keep it. (Not covered: a compiled gradient of a
// control-flow body replays the body and draws new masks, as RandomMask's
// doc says.)
func TestGradientsUseTheForwardsDropoutMasks(t *testing.T) {
	const n = 2000
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = 1 + float32(i%7)/8
	}
	x := tensor.FromSlice(xs, n)
	drop := func(x *spore.Tensor) *spore.Tensor { return ops.Sum(ops.Dropout(x, 0.5, true)) }
	inCond := func(x *spore.Tensor) *spore.Tensor {
		pred := tensor.FromSlice([]bool{true}, 1)
		return spore.Cond(pred,
			func(a ...*spore.Tensor) []*spore.Tensor { return []*spore.Tensor{drop(a[0])} },
			func(a ...*spore.Tensor) []*spore.Tensor { return []*spore.Tensor{ops.Sum(a[0])} },
			x)[0]
	}
	valueAndGrad := func(f func(*spore.Tensor) *spore.Tensor) func(*spore.Tensor) (*spore.Tensor, *spore.Tensor) {
		vg := spore.ValueAndGrad(f)
		return func(x *spore.Tensor) (*spore.Tensor, *spore.Tensor) {
			v, g := vg(x)
			return v, g[0]
		}
	}
	cases := []struct {
		name string
		vg   func(*spore.Tensor) (*spore.Tensor, *spore.Tensor)
	}{
		{"PyNative", valueAndGrad(drop)},
		{"ValueAndGrad(Jit(f))", valueAndGrad(spore.Jit(drop))},
		{"Jit(ValueAndGrad(f))", spore.Jit(valueAndGrad(drop))},
		{"ValueAndGrad(Jit(f)) with Cond", valueAndGrad(spore.Jit(inCond))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for call := 0; call < 3; call++ {
				v, g := c.vg(x)
				got := float64(v.Float32s()[0])
				want := float64(ops.Sum(ops.Mul(x, g)).Float32s()[0])
				if math.Abs(got-want) > 1e-3*math.Abs(want) {
					t.Fatalf("call %d: f(x) = %v but Σ x·f'(x) = %v: the gradient used other masks", call, got, want)
				}
			}
		})
	}
}
