package ops_test

import (
	"math"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

func TestHardswish(t *testing.T) {
	x := []float64{-5, -3, -1.5, 0, 0.75, 3, 4, math.Inf(-1), math.Inf(1)}
	// x·min(max(x+3, 0), 6)/6, and its derivative, by hand.
	want := []float64{0, 0, -0.375, 0, 0.46875, 3, 4, 0, math.Inf(1)}
	wantGrad := []float64{0, -0.5, 0, 0.5, 0.75, 1.5, 1, 0, 1}
	grad := spore.Grad(func(x *spore.Tensor) *spore.Tensor { return ops.Sum(ops.Hardswish(x)) })
	modes := []struct {
		name string
		f    func(*spore.Tensor) *spore.Tensor
		g    func(*spore.Tensor) *spore.Tensor
	}{
		{"PyNative", ops.Hardswish, func(x *spore.Tensor) *spore.Tensor { return grad(x)[0] }},
		{"Graph", spore.Jit(ops.Hardswish), spore.Jit(func(x *spore.Tensor) *spore.Tensor { return grad(x)[0] })},
	}
	for _, m := range modes {
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
			in := ops.Cast(tensor.FromSlice(x, len(x)), dt)
			got := m.f(in).Float64s()
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("%s %v: Hardswish(%v) = %v, want %v", m.name, dt, x[i], got[i], want[i])
				}
			}
			gg := m.g(in).Float64s()
			for i := range wantGrad {
				if gg[i] != wantGrad[i] {
					t.Errorf("%s %v: Hardswish'(%v) = %v, want %v", m.name, dt, x[i], gg[i], wantGrad[i])
				}
			}
		}
	}
	if y := ops.Hardswish(tensor.FromSlice([]float32{float32(math.NaN())}, 1)).Float32s()[0]; y == y {
		t.Errorf("Hardswish(NaN) = %v, want NaN", y)
	}
}
