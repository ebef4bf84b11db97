package ops_test

import (
	"math"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// roundHalf rounds v to the 16-bit float type dt, as float32.
func roundHalf(dt tensor.DType, v float32) float32 {
	if dt == tensor.BFloat16 {
		return tensor.BF16From(v).Float32()
	}
	return tensor.F16From(v).Float32()
}

// same reports whether a and b are equal as float32 values, NaN equal to
// NaN and zeros told apart by sign.
func same(a, b float32) bool {
	if a != a || b != b {
		return a != a && b != b
	}
	return math.Float32bits(a) == math.Float32bits(b)
}

// Cast to and from BFloat16 and Float16 agrees with rounding each value
// through float32 (round to nearest even), in PyNative and Graph mode
// alike, from and to every dtype.
func TestCastHalf(t *testing.T) {
	vals := []float64{0.1, 1, -2.5, 3.0000001, 255, 300, 65504, 65520, 1e6, 3e-8, -0.0, math.Inf(-1)}
	srcs := []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Bool, tensor.BFloat16, tensor.Float16}
	for _, to := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
		for _, from := range srcs {
			x := ops.Cast(tensor.FromSlice(vals), from)
			// What the source holds, as float32, is the reference's input.
			src := x.Float32s()
			want := make([]float32, len(src))
			for i, v := range src {
				want[i] = roundHalf(to, v)
			}
			f := func(x *tensor.Tensor) *tensor.Tensor { return ops.Cast(x, to) }
			for mode, y := range map[string]*tensor.Tensor{"PyNative": f(x), "Graph": spore.Jit(f)(x)} {
				if y.DType() != to {
					t.Fatalf("%s: Cast(%v -> %v) has dtype %v", mode, from, to, y.DType())
				}
				for i, g := range y.Float32s() {
					if !same(g, want[i]) {
						t.Errorf("%s: Cast(%v %v -> %v) = %v, want %v", mode, from, src[i], to, g, want[i])
					}
				}
			}
			// And back: from the 16-bit type to the source's dtype is
			// Cast of the float32 value.
			h := f(x)
			back := func(h *tensor.Tensor) *tensor.Tensor { return ops.Cast(h, from) }
			ref := ops.Cast(tensor.FromSlice(want), from)
			for mode, y := range map[string]*tensor.Tensor{"PyNative": back(h), "Graph": spore.Jit(back)(h)} {
				if y.DType() != from {
					t.Fatalf("%s: Cast(%v -> %v) has dtype %v", mode, to, from, y.DType())
				}
				got, exp := y.Float64s(), ref.Float64s()
				for i := range got {
					if !same(float32(got[i]), float32(exp[i])) {
						t.Errorf("%s: Cast(%v %v -> %v) = %v, want %v", mode, to, want[i], from, got[i], exp[i])
					}
				}
			}
		}
	}
}

// The gradient of a cast is the cotangent cast back: a float32 input cast
// to a 16-bit float and back gets a float32 gradient, the cotangent
// rounded to the 16-bit type, in both modes.
func TestCastHalfGrad(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
		c := tensor.FromSlice([]float32{0.1, -3, 1000.5})
		loss := func(x *tensor.Tensor) *tensor.Tensor {
			return ops.Sum(ops.Mul(ops.Cast(ops.Cast(x, dt), tensor.Float32), c))
		}
		x := tensor.FromSlice([]float32{1, 2, 3})
		grad := spore.Grad(loss)
		for mode, g := range map[string]*tensor.Tensor{"PyNative": grad(x)[0], "Graph": spore.Jit(grad)(x)[0]} {
			if g.DType() != tensor.Float32 {
				t.Fatalf("%s %v: gradient dtype %v, want Float32", mode, dt, g.DType())
			}
			for i, v := range g.Float32s() {
				if want := roundHalf(dt, c.Float32s()[i]); v != want {
					t.Errorf("%s %v: gradient[%d] = %v, want %v", mode, dt, i, v, want)
				}
			}
		}
	}
}
