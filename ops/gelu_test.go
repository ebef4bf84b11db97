package ops_test

import (
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// TestGELUTanh checks the tanh form of GELU, its first derivative and both
// modes against reference values from PyTorch 1.13's
// gelu(x, approximate='tanh') in float64.
func TestGELUTanh(t *testing.T) {
	xs := []float64{-3, -1, -0.5, 0, 0.5, 1, 1.5, 3}
	wantY := []float64{-0.0036373920817729943, -0.1588080093917233, -0.15428599017485606, 0,
		0.34571400982514394, 0.8411919906082768, 1.3995715769802328, 2.996362607918227}
	wantDY := []float64{-0.011584166630969648, -0.08296408384578258, 0.13263009646535764, 0.5,
		0.8673699035346424, 1.0829640838457826, 1.127710793151433, 1.0115841666309695}
	n := len(xs)
	grad := func(x *spore.Tensor) *spore.Tensor {
		return spore.Grad(func(x *spore.Tensor) *spore.Tensor { return ops.Sum(ops.GELUTanh(x)) })(x)[0]
	}
	cases := []struct {
		name string
		f    func(*spore.Tensor) *spore.Tensor
		want []float64
	}{
		{"PyNative", ops.GELUTanh, wantY},
		{"Graph", spore.Jit(ops.GELUTanh), wantY},
		{"PyNative gradient", grad, wantDY},
		{"Graph gradient", spore.Jit(grad), wantDY},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assertClose(t, "float64", c.f(f64(xs, n)), []int{n}, c.want, 1e-14)
			x32 := make([]float32, n)
			for i, v := range xs {
				x32[i] = float32(v)
			}
			got := c.f(f32(x32, n))
			if got.DType() != tensor.Float32 {
				t.Fatalf("float32 input gave %v", got.DType())
			}
			assertClose(t, "float32", got, []int{n}, c.want, 1e-6)
		})
	}
}

// TestGELUTanhGradients checks first and second derivatives against finite
// differences, and that the approximation stays close to the exact GELU.
func TestGELUTanhGradients(t *testing.T) {
	f := func(v ...*tensor.Tensor) *tensor.Tensor { return ops.GELUTanh(v[0]) }
	x := randT(70, -4, 4, 3, 5)
	checkGrad(t, "GELUTanh", f, x)
	checkGrad2(t, "GELUTanh", f, x)

	// The tanh form is within 5e-4 of x·Φ(x) everywhere (PyTorch's docs
	// and Hendrycks & Gimpel); a wrong constant would break that.
	exact, approx := ops.GELU(x).Float64s(), ops.GELUTanh(x).Float64s()
	for i := range exact {
		if d := exact[i] - approx[i]; d > 5e-4 || d < -5e-4 {
			t.Fatalf("element %d: exact %v, tanh form %v", i, exact[i], approx[i])
		}
	}
}

// TestGELUTanhDType checks that integer input is refused under the op's
// name rather than computed with truncated constants.
func TestGELUTanhDType(t *testing.T) {
	testkit.MustPanic(t, func() { ops.GELUTanh(tensor.FromSlice([]int32{1, 2}, 2)) }, "GELUTanh", "Int32")
}
