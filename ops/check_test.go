package ops_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Helpers shared by the ops tests: value comparison (on testkit's rule)
// and finite-difference gradient checks in float64. Expected panics are
// testkit.MustPanic.

// f64 builds a float64 tensor.
func f64(data []float64, shape ...int) *tensor.Tensor { return tensor.FromSlice(data, shape...) }

// f32 builds a float32 tensor.
func f32(data []float32, shape ...int) *tensor.Tensor { return tensor.FromSlice(data, shape...) }

// randT returns a float64 tensor of uniform values in [lo, hi) from a
// generator seeded by seed, independent of the framework seed.
func randT(seed uint64, lo, hi float64, shape ...int) *tensor.Tensor {
	r := rand.New(rand.NewPCG(seed, 7))
	n := tensor.Shape(shape).Size()
	d := make([]float64, n)
	for i := range d {
		d[i] = lo + (hi-lo)*r.Float64()
	}
	return tensor.FromSlice(d, shape...)
}

// assertClose fails unless got has the given shape and its values are
// testkit.Close to want, which the ops tests write out in line.
func assertClose(t *testing.T, what string, got *tensor.Tensor, shape []int, want []float64, tol float64) {
	t.Helper()
	if !got.Shape().Equal(shape) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape(), tensor.Shape(shape))
	}
	testkit.Near(t, what, got.Float64s(), tol, want...)
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// projected turns f into a scalar function L(xs) = Σ f(xs)·w with a fixed
// random weight w, so that every output element takes part in the check.
func projected(f func(...*tensor.Tensor) *tensor.Tensor, xs []*tensor.Tensor) func(...*tensor.Tensor) *tensor.Tensor {
	y := f(xs...)
	w := randT(99, 0.5, 1.5, y.Shape()...)
	if y.DType() != tensor.Float64 {
		panic(fmt.Sprintf("gradient checks run in float64, got %v", y.DType()))
	}
	return func(xs ...*tensor.Tensor) *tensor.Tensor { return ops.Sum(ops.Mul(f(xs...), w)) }
}

// numGrad is the central finite difference of scalar L with respect to
// input i.
func numGrad(L func(...*tensor.Tensor) *tensor.Tensor, xs []*tensor.Tensor, i int, eps float64) []float64 {
	base := xs[i].Float64s()
	out := make([]float64, len(base))
	for j := range base {
		at := func(d float64) float64 {
			v := append([]float64(nil), base...)
			v[j] += d
			args := append([]*tensor.Tensor(nil), xs...)
			args[i] = tensor.FromSlice(v, xs[i].Shape()...)
			return L(args...).Item()
		}
		out[j] = (at(eps) - at(-eps)) / (2 * eps)
	}
	return out
}

// checkGrad compares the autodiff gradient of f at xs (float64 inputs) with
// central finite differences, for every float input.
func checkGrad(t *testing.T, name string, f func(...*tensor.Tensor) *tensor.Tensor, xs ...*tensor.Tensor) {
	t.Helper()
	L := projected(f, xs)
	checkScalarGrad(t, name, L, xs)
}

func checkScalarGrad(t *testing.T, name string, L func(...*tensor.Tensor) *tensor.Tensor, xs []*tensor.Tensor) {
	t.Helper()
	var pos []int
	for i, x := range xs {
		if x.DType() == tensor.Float64 {
			pos = append(pos, i)
		}
	}
	grads := spore.Grad(L, spore.GradPosition(pos...))(xs...)
	for k, i := range pos {
		want := numGrad(L, xs, i, 1e-6)
		got := grads[k]
		if !got.Shape().Equal(xs[i].Shape()) {
			t.Fatalf("%s: gradient %d has shape %v, want %v", name, i, got.Shape(), xs[i].Shape())
		}
		g := got.Float64s()
		for j := range want {
			if math.Abs(g[j]-want[j]) > 1e-5*(1+math.Abs(want[j])) {
				t.Fatalf("%s: d/dx%d[%d] = %.9g, finite difference %.9g\nautodiff: %v\nnumeric:  %v", name, i, j, g[j], want[j], g, want)
			}
		}
	}
}

// checkGrad2 checks second derivatives: the gradient of v·∇L (a
// Hessian-vector product) against finite differences of the first
// gradient.
func checkGrad2(t *testing.T, name string, f func(...*tensor.Tensor) *tensor.Tensor, xs ...*tensor.Tensor) {
	t.Helper()
	L := projected(f, xs)
	pos := make([]int, len(xs))
	vs := make([]*tensor.Tensor, len(xs))
	for i := range xs {
		pos[i] = i
		vs[i] = randT(uint64(40+i), -1, 1, xs[i].Shape()...)
	}
	gradL := spore.Grad(L, spore.GradPosition(pos...))
	hv := func(xs ...*tensor.Tensor) *tensor.Tensor {
		gs := gradL(xs...)
		acc := ops.Sum(ops.Mul(gs[0], vs[0]))
		for i := 1; i < len(gs); i++ {
			acc = ops.Add(acc, ops.Sum(ops.Mul(gs[i], vs[i])))
		}
		return acc
	}
	checkScalarGrad(t, name+" (second order)", hv, xs)
}
