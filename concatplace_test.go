package spore_test

import (
	"math"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/ops"
)

// TestConcatPlacedInControlFlow runs Concats whose producers a plan
// writes straight into the Concat's buffer inside control-flow bodies (a
// While loop's carry, both branches of a Cond) and checks Graph mode
// against PyNative mode bit for bit, over inputs that take each branch.
func TestConcatPlacedInControlFlow(t *testing.T) {
	f := func(x *spore.Tensor) *spore.Tensor {
		// x is [1 4]: each iteration halves the carry's halves and joins
		// them along axis 1, the batch of 1 before it.
		w := spore.While(func(xs ...*spore.Tensor) *spore.Tensor {
			return ops.Less(xs[1], ops.ScalarLike(xs[1], 3))
		}, func(xs ...*spore.Tensor) []*spore.Tensor {
			h := ops.Split(xs[0], 1, 2, 2)
			// Products, not elementwise ops: an elementwise result may
			// take its operand's buffer in place, and such a buffer is
			// left where it is.
			m := spore.FromSlice([]float32{0.5, -0.25, 0.75, 1}, 2, 2)
			c := ops.Concat(1, ops.MatMul(h[1], m), ops.MatMul(ops.Tanh(h[0]), m))
			return []*spore.Tensor{c, ops.AddScalar(xs[1], 1)}
		}, x, ops.ScalarLike(x, 0))
		pred := ops.Greater(ops.Sum(w[0]), ops.ScalarLike(x, 4))
		return spore.Cond(pred,
			func(xs ...*spore.Tensor) []*spore.Tensor {
				return []*spore.Tensor{ops.Concat(0, ops.Neg(xs[0]), ops.Exp(xs[0]))}
			},
			func(xs ...*spore.Tensor) []*spore.Tensor {
				return []*spore.Tensor{ops.Concat(0, ops.Sin(xs[0]), xs[0])}
			}, w[0])[0]
	}
	jf := spore.Jit(f)
	for _, v := range [][]float32{{1, 2, 3, 4}, {-3, -2, -1, -0.5}, {0.1, -0.2, 0.3, 7}} {
		x := spore.FromSlice(v, 1, 4)
		want, got := f(x), jf(x)
		a, b := got.Float32s(), want.Float32s()
		if !got.Shape().Equal(want.Shape()) {
			t.Fatalf("%v: shape %v, want %v", v, got.Shape(), want.Shape())
		}
		for i := range b {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				t.Fatalf("%v: element %d is %v in Graph mode, %v in PyNative", v, i, a[i], b[i])
			}
		}
	}
}
