package ops_test

import (
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Table helpers shared by the ops tests.

// valueCase is one row of a value table: a result, its expected shape and
// its expected values (checked to 1e-12).
type valueCase struct {
	name  string
	got   *tensor.Tensor
	shape []int
	want  []float64
}

func runValueCases(t *testing.T, cases []valueCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { assertClose(t, c.name, c.got, c.shape, c.want, 1e-12) })
	}
}

// weightedGrad returns the gradient of Σ f(x)·w at x, w fixed weights.
func weightedGrad(f func(*tensor.Tensor) *tensor.Tensor, x, w *tensor.Tensor) *tensor.Tensor {
	return spore.Grad(func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Sum(ops.Mul(f(v[0]), w)) })(x)[0]
}

// gradCase is one row of a gradient table: f is checked at xs against
// finite differences, and its second derivatives too when ord2 is set.
type gradCase struct {
	name string
	f    func(...*tensor.Tensor) *tensor.Tensor
	xs   []*tensor.Tensor
	ord2 bool
}

// checkGradCases runs each gradient case as a subtest.
func checkGradCases(t *testing.T, cases []gradCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkGrad(t, c.name, c.f, c.xs...)
			if c.ord2 {
				checkGrad2(t, c.name, c.f, c.xs...)
			}
		})
	}
}
