package nn_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// randT returns a float64 tensor of uniform values in [lo, hi) from a
// generator seeded by seed, independent of the framework seed.
func randT(seed uint64, lo, hi float64, shape ...int) *tensor.Tensor {
	r := rand.New(rand.NewPCG(seed, 7))
	d := make([]float64, tensor.Shape(shape).Size())
	for i := range d {
		d[i] = lo + (hi-lo)*r.Float64()
	}
	return tensor.FromSlice(d, shape...)
}

// withMode runs f under a global mode and level, restoring the context.
func withMode(mode spore.Mode, level spore.Level, f func()) {
	old := spore.GetContext()
	spore.SetContext(spore.WithMode(mode), spore.WithJitLevel(level))
	defer spore.SetContext(spore.WithMode(old.Mode), spore.WithJitLevel(old.JitLevel))
	f()
}

func maxDiff(a, b *tensor.Tensor) float64 {
	x, y := a.Float64s(), b.Float64s()
	d := 0.0
	for i := range x {
		d = max(d, math.Abs(x[i]-y[i]))
	}
	return d
}

func sameValues(t *testing.T, what string, got, want *tensor.Tensor, tol float64) {
	t.Helper()
	if !got.Shape().Equal(want.Shape()) || got.DType() != want.DType() {
		t.Fatalf("%s: %v %v, want %v %v", what, got.Shape(), got.DType(), want.Shape(), want.DType())
	}
	g, w := got.Float64s(), want.Float64s()
	for i := range g {
		if tol == 0 && g[i] != w[i] || math.Abs(g[i]-w[i]) > tol*(1+math.Abs(w[i])) {
			t.Fatalf("%s: element %d = %.9g, want %.9g (max diff %g)", what, i, g[i], w[i], maxDiff(got, want))
		}
	}
}

// checkGrads compares, for the scalar L(xs) built from f by a fixed random
// projection, the autodiff gradients with respect to the float64 inputs
// and to every trainable parameter of cell with central finite
// differences.
func checkGrads(t *testing.T, name string, cell nn.Module, f func(xs ...*tensor.Tensor) *tensor.Tensor, xs ...*tensor.Tensor) {
	t.Helper()
	w := randT(99, 0.5, 1.5, f(xs...).Shape()...)
	L := func(xs ...*tensor.Tensor) *tensor.Tensor { return ops.Sum(ops.Mul(f(xs...), w)) }
	var pos []int
	for i, x := range xs {
		if x.DType() == tensor.Float64 {
			pos = append(pos, i)
		}
	}
	var params []*tensor.Tensor
	if cell != nil {
		params = cell.Base().TrainableParameters()
	}
	grads := spore.Grad(L, spore.GradPosition(pos...), spore.Weights(params...))(xs...)
	const eps = 1e-6
	check := func(what string, got *tensor.Tensor, buf []float64) {
		t.Helper()
		g := got.Float64s()
		if len(g) != len(buf) {
			t.Fatalf("%s: %s: gradient has %d elements, want %d", name, what, len(g), len(buf))
		}
		for j := range buf {
			v := buf[j]
			buf[j] = v + eps
			hi := L(xs...).Item()
			buf[j] = v - eps
			lo := L(xs...).Item()
			buf[j] = v
			num := (hi - lo) / (2 * eps)
			if math.Abs(g[j]-num) > 1e-5*(1+math.Abs(num)) {
				t.Fatalf("%s: d/d%s[%d] = %.9g, finite difference %.9g", name, what, j, g[j], num)
			}
		}
	}
	for k, i := range pos {
		check("x"+string(rune('0'+i)), grads[k], xs[i].Data().([]float64))
	}
	for k, p := range params {
		check(p.Name(), grads[len(pos)+k], p.Data().([]float64))
	}
}
