package control

import (
	"strings"
	"testing"

	"github.com/sporeml/spore/internal/ad"
	"github.com/sporeml/spore/internal/jit"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// TestWhileRefusesDifferentiatedReads checks that a staged While whose
// body reads a parameter or an outer value being differentiated fails
// clearly instead of giving a zero gradient (the node has no VJP).
func TestWhileRefusesDifferentiatedReads(t *testing.T) {
	w := tensor.NewParameter("w", tensor.FromSlice([]float32{2}, 1))
	loop := func(x, y *Tensor) *Tensor {
		out := While(func(c ...*Tensor) *Tensor { return ops.Less(c[0], tensor.Scalar(int64(3))) },
			func(c ...*Tensor) []*Tensor {
				return []*Tensor{ops.Add(c[0], tensor.Scalar(int64(1))), ops.Mul(ops.Mul(c[1], w), y)}
			}, tensor.Scalar(int64(0)), x)
		return ops.Sum(out[1])
	}
	x := tensor.FromSlice([]float32{1.5}, 1)
	cases := []struct {
		name string
		grad func(x, y *Tensor) []*Tensor
	}{
		{"parameter", func(x, y *Tensor) []*Tensor { return ad.Grad(loop, ad.GradPosition(), ad.Weights(w))(x, y) }},
		{"captured input", func(x, y *Tensor) []*Tensor { return ad.Grad(loop, ad.GradPosition(1))(x, y) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if e, ok := r.(error); !ok || !strings.Contains(e.Error(), "While has no reverse-mode gradient") {
					t.Errorf("got %v, want While's refusal", r)
				}
			}()
			jit.Jit(c.grad)(x, tensor.FromSlice([]float32{0.5}, 1))
		})
	}
	// Not differentiated, the same loop runs: x·(w·y)³ = 1.5.
	got := jit.Jit(loop)(x, tensor.FromSlice([]float32{0.5}, 1))
	if v := got.Float64s()[0]; v != 1.5 {
		t.Errorf("loop = %v, want 1.5", v)
	}
}
