package ops_test

import (
	"math"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Float32 Erf, alone and inside the chain ONNX exports GELU as,
// x·0.5·(1 + Erf(x/√2)) (which Graph mode fuses into one loop that runs
// the same vec.Erf body), agrees with float64 math.Erf in both modes: Erf
// within 2.5 ulp of its rounded value, the chain within 1e-6 relative
// (four float32 roundings after erf's own), over sizes that are and are
// not multiples of the vector width.
func TestErfFloat32BothModes(t *testing.T) {
	erfChain := func(x *tensor.Tensor) *tensor.Tensor {
		inner := ops.Erf(ops.Div(x, ops.ScalarLike(x, math.Sqrt2)))
		return ops.Mul(ops.Mul(x, ops.AddScalar(inner, 1)), ops.ScalarLike(x, 0.5))
	}
	for _, n := range []int{1, 3, 7, 16, 17, 1001} {
		tensor.SetSeed(int64(n))
		x := ops.MulScalar(tensor.RandNormal(tensor.Float32, 0, 1, n), 2.5)
		xs := x.Data().([]float32)
		for _, c := range []struct {
			name string
			f    func(*tensor.Tensor) *tensor.Tensor
			ref  func(float64) float64
			tol  func(got float32, want float64) bool
		}{
			{"erf", ops.Erf, math.Erf, func(g float32, w float64) bool {
				_, e := math.Frexp(w)
				return math.Abs(float64(g)-w) <= 2.5*math.Ldexp(1, max(e-24, -149))
			}},
			{"gelu-chain", erfChain, func(v float64) float64 { return 0.5 * v * (1 + math.Erf(v/math.Sqrt2)) },
				func(g float32, w float64) bool { return math.Abs(float64(g)-w) <= 1e-6*math.Abs(w)+1e-7 }},
		} {
			for mode, f := range map[string]func(*tensor.Tensor) *tensor.Tensor{
				"pynative": c.f, "graph": spore.Jit(c.f, spore.JitConfig{Name: "erf." + c.name}),
			} {
				got := f(x).Data().([]float32)
				for i, v := range xs {
					if w := c.ref(float64(v)); !c.tol(got[i], w) {
						t.Fatalf("%s %s n=%d: f(%v) = %v, want %v", c.name, mode, n, v, got[i], w)
					}
				}
			}
		}
	}
}
