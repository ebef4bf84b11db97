package spore_test

import (
	"errors"
	"math"
	"sync"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

func vals(t *spore.Tensor) []float64 { return t.Float64s() }

// near checks values against want to the autodiff tests' tolerance, 1e-9
// relative to 1+|want| (testkit.Near).
func near(t *testing.T, what string, got []float64, want ...float64) {
	t.Helper()
	testkit.Near(t, what, got, 1e-9, want...)
}

func wantError(t *testing.T, f func(), wants ...string) {
	t.Helper()
	defer func() {
		t.Helper()
		var e *tensor.Error
		err, _ := recover().(error)
		if !errors.As(err, &e) {
			t.Fatalf("want a *tensor.Error panic, got %v", err)
		}
		for _, w := range wants {
			if !contains(e.Error(), w) {
				t.Fatalf("error %q does not mention %q", e.Error(), w)
			}
		}
	}()
	f()
}

func TestGradPositionsAndWeights(t *testing.T) {
	x := tensor.FromSlice([]float64{1, 2}, 2)
	y := tensor.FromSlice([]float64{3, 4}, 2)
	w := tensor.NewParameter("w", tensor.FromSlice([]float64{5, 6}, 2))
	frozen := tensor.NewParameter("frozen", tensor.FromSlice([]float64{7, 8}, 2))
	frozen.SetRequiresGrad(false)
	// f = Σ x·y·w + Σ frozen·x
	f := func(x, y *spore.Tensor) *spore.Tensor {
		return ops.Add(ops.Sum(ops.Mul(ops.Mul(x, y), w)), ops.Sum(ops.Mul(frozen, x)))
	}
	g := spore.Grad(f)(x, y) // default: position 0
	near(t, "df/dx", vals(g[0]), 3*5+7, 4*6+8)

	g = spore.Grad(f, spore.GradPosition(1, 0))(x, y)
	near(t, "df/dy", vals(g[0]), 5, 12)
	near(t, "df/dx", vals(g[1]), 22, 32)

	g = spore.Grad(f, spore.GradPosition(), spore.Weights(w, frozen))(x, y)
	if len(g) != 2 || g[1] != nil {
		t.Fatalf("frozen parameter got a gradient: %v", g)
	}
	near(t, "df/dw", vals(g[0]), 3, 8)

	v, g := spore.ValueAndGrad(f, spore.GradPosition(0), spore.Weights(w))(x, y)
	near(t, "value", vals(v), 3*5+8*6+7+16)
	if len(g) != 2 {
		t.Fatalf("want positional then weight gradients, got %d", len(g))
	}
	near(t, "df/dw", vals(g[1]), 3, 8)
}

func TestGradSensitivityAndErrors(t *testing.T) {
	x := tensor.FromSlice([]float64{1, 2, 3}, 3)
	square := func(x *spore.Tensor) *spore.Tensor { return ops.Mul(x, x) }
	wantError(t, func() { spore.Grad(square)(x) }, "not a scalar", "WithSens", "grad_test.go")

	sens := tensor.FromSlice([]float64{1, 10, 100}, 3)
	g := spore.Grad(square, spore.WithSens())(x, sens)
	near(t, "VJP with a sensitivity", vals(g[0]), 2, 40, 600)

	wantError(t, func() { spore.Grad(square, spore.WithSens())(x, tensor.Ones(spore.Float64, 2)) }, "sensitivity")
	wantError(t, func() { spore.Grad(square, spore.GradPosition(3))(x) }, "grad position 3")
	wantError(t, func() { spore.Grad(square, spore.Weights(x))(x) }, "not a parameter")
}

func TestGradAux(t *testing.T) {
	x := tensor.FromSlice([]float64{1, 2}, 2)
	f := func(xs ...*spore.Tensor) (*spore.Tensor, []*spore.Tensor) {
		y := ops.Mul(xs[0], xs[0])
		// The auxiliary output depends on x but contributes no gradient.
		return ops.Sum(y), []*spore.Tensor{ops.Exp(y)}
	}
	v, aux, g := spore.ValueAndGradAux(f)(x)
	near(t, "value", vals(v), 5)
	near(t, "aux", vals(aux[0]), math.Exp(1), math.Exp(4))
	near(t, "grad", vals(g[0]), 2, 4)
}

func TestHigherOrderAndUnused(t *testing.T) {
	cube := func(x *spore.Tensor) *spore.Tensor { return ops.Sum(ops.Mul(x, ops.Mul(x, x))) }
	d1 := spore.Grad(cube)
	d2 := spore.Grad(func(x *spore.Tensor) *spore.Tensor { return ops.Sum(d1(x)[0]) })
	d3 := spore.Grad(func(x *spore.Tensor) *spore.Tensor { return ops.Sum(d2(x)[0]) })
	x := tensor.FromSlice([]float64{1, -2}, 2)
	near(t, "3x²", vals(d1(x)[0]), 3, 12)
	near(t, "6x", vals(d2(x)[0]), 6, -12)
	near(t, "6", vals(d3(x)[0]), 6, 6)

	// An input the output does not depend on gets zeros, not nil.
	g := spore.Grad(func(a, b *spore.Tensor) *spore.Tensor { return ops.Sum(a) }, spore.GradPosition(0, 1))(x, x)
	near(t, "unused input", vals(g[1]), 0, 0)

	// A gradient taken inside another's function, w.r.t. a captured
	// variable of the outer one (d/dy of (d/dx x·y) = 1).
	y := tensor.FromSlice([]float64{3}, 1)
	outer := spore.Grad(func(y *spore.Tensor) *spore.Tensor {
		inner := spore.Grad(func(x *spore.Tensor) *spore.Tensor { return ops.Sum(ops.Mul(x, y)) })
		return ops.Sum(inner(tensor.FromSlice([]float64{2}, 1))[0])
	})
	near(t, "mixed second derivative", vals(outer(y)[0]), 1)
}

// Eager differentiations over the same parameters from several goroutines
// must not see each other's tape: each gets the gradient of its own input.
// Under -race this also checks that nothing about a differentiation is
// written to the shared parameters.
func TestGradConcurrentWeights(t *testing.T) {
	w := tensor.NewParameter("w", tensor.FromSlice([]float64{0.5, -1, 2, 0.25}, 2, 2))
	b := tensor.NewParameter("b", tensor.FromSlice([]float64{0.1, -0.2}, 2))
	loss := func(x *spore.Tensor) *spore.Tensor {
		return ops.Sum(ops.Tanh(ops.Add(ops.MatMul(x, w), b)))
	}
	grad := spore.ValueAndGrad(loss, spore.GradPosition(0), spore.Weights(w, b))
	const workers = 8
	inputs := make([]*spore.Tensor, workers)
	want := make([][][]float64, workers)
	for i := range inputs {
		f := float64(i + 1)
		inputs[i] = tensor.FromSlice([]float64{f, -f / 2, f / 3, 1 / f, -f, f * f / 10}, 3, 2)
		_, g := grad(inputs[i])
		want[i] = [][]float64{vals(g[0]), vals(g[1]), vals(g[2])}
	}
	got := make([][][]float64, workers)
	var wg sync.WaitGroup
	for i := range inputs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				_, g := grad(inputs[i])
				got[i] = [][]float64{vals(g[0]), vals(g[1]), vals(g[2])}
				for k := range g {
					for j, v := range got[i][k] {
						if v != want[i][k][j] {
							got[i] = nil // reported below, off this goroutine
							return
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	for i := range got {
		if got[i] == nil {
			t.Errorf("goroutine %d: gradients differ from the same call made alone", i)
		}
	}
}

func TestGradRefusesBadInputs(t *testing.T) {
	x := tensor.FromSlice([]float64{1, 2, 3}, 3)
	square := func(x *spore.Tensor) *spore.Tensor { return ops.Mul(x, x) }
	sum := func(x *spore.Tensor) *spore.Tensor { return ops.Sum(ops.Mul(x, x)) }
	cases := []struct {
		name string
		call func()
		want []string
	}{
		{"integer input", func() { spore.Grad(sum)(tensor.FromSlice([]int32{1, 2}, 2)) }, []string{"Grad", "input 0", "Int32", "floating-point"}},
		{"integer position 1", func() {
			spore.Grad(func(a, b *spore.Tensor) *spore.Tensor { return ops.Sum(ops.Mul(a, ops.Cast(b, spore.Float64))) }, spore.GradPosition(1))(x, tensor.FromSlice([]int64{1, 2, 3}, 3))
		}, []string{"input 1", "Int64"}},
		{"integer weight", func() {
			p := tensor.NewParameter("steps", tensor.FromSlice([]int32{1}, 1))
			spore.Grad(sum, spore.Weights(p))(x)
		}, []string{"Weights", "steps", "Int32"}},
		{"missing sensitivity", func() { spore.Grad(square, spore.WithSens())(x) }, []string{"WithSens", "sensitivity", "missing"}},
		{"nil input", func() { spore.Grad(sum)(nil) }, []string{"Grad", "input 0", "nil"}},
		{"nil weight", func() { spore.Grad(sum, spore.Weights(nil))(x) }, []string{"Weights", "nil"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { wantError(t, c.call, c.want...) })
	}
}
