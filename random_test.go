package spore_test

import (
	"math/rand/v2"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/ops"
)

// Differential testing of the compiler: random programs of elementwise,
// broadcast, reduction, reshape and matmul ops, run eagerly and compiled at
// O1 (every pass), must agree — forward and gradient. A pass that fuses,
// folds, reuses a buffer in place or reorders wrongly shows up here as a
// mismatch on some seed.
func TestRandomProgramsAgree(t *testing.T) {
	for seed := range uint64(60) {
		prog := func(xs ...*spore.Tensor) *spore.Tensor { return randomProgram(rand.New(rand.NewPCG(seed, 5)), xs) }
		xs := []*spore.Tensor{rnd(seed, -1.5, 1.5, 4, 6), rnd(seed+100, 0.5, 2, 4, 6), rnd(seed+200, -1, 1, 6)}
		want := prog(xs...)
		loss := func(xs ...*spore.Tensor) *spore.Tensor { return ops.Sum(prog(xs...)) }
		grad := spore.Grad(loss, spore.GradPosition(0, 1, 2))
		wantG := grad(xs...)
		// O0 must be bitwise equal to PyNative; O1 within the tolerance.
		for _, l := range []struct {
			level     spore.Level
			tol, gtol float64
		}{{spore.O0, 0, 0}, {spore.O1, 1e-5, 1e-4}} {
			got := spore.Jit(prog, spore.JitConfig{Level: l.level})(xs...)
			if err := compare(got, want, l.tol); err != nil {
				t.Fatalf("seed %d %v forward: %v\n%s", seed, l.level, err, irOf(prog, xs))
			}
			gotG := spore.Jit(func(xs ...*spore.Tensor) []*spore.Tensor { return grad(xs...) }, spore.JitConfig{Level: l.level})(xs...)
			for k := range wantG {
				if err := compare(gotG[k], wantG[k], l.gtol); err != nil {
					t.Fatalf("seed %d %v gradient %d: %v", seed, l.level, k, err)
				}
			}
		}
	}
}

func irOf(f func(...*spore.Tensor) *spore.Tensor, xs []*spore.Tensor) string {
	args := make([]any, len(xs))
	for i, x := range xs {
		args[i] = x
	}
	ir, err := spore.IR(func(a, b, c *spore.Tensor) *spore.Tensor { return f(a, b, c) }, args)
	if err != nil {
		return err.Error()
	}
	return ir
}

// randomProgram builds 6–14 ops over a pool of [4,6] values (plus a [6]
// row), each op reading earlier values, so values get reused, broadcast,
// reduced and fed to matmuls in random patterns.
func randomProgram(r *rand.Rand, xs []*spore.Tensor) *spore.Tensor {
	pool := []*spore.Tensor{xs[0], xs[1]}
	row := xs[2]
	pick := func() *spore.Tensor { return pool[r.IntN(len(pool))] }
	n := 6 + r.IntN(9)
	for range n {
		a, b := pick(), pick()
		var v *spore.Tensor
		switch r.IntN(14) {
		case 0:
			v = ops.Add(a, b)
		case 1:
			v = ops.Mul(a, b)
		case 2:
			v = ops.Sub(a, row)
		case 3:
			v = ops.Tanh(a)
		case 4:
			v = ops.ReLU(ops.Sub(a, b))
		case 5:
			v = ops.Sigmoid(a)
		case 6:
			v = ops.Mul(a, ops.ScalarLike(a, 0.5+r.Float64()))
		case 7:
			v = ops.Add(a, ops.MeanKeepDims(b, -1))
		case 8:
			v = ops.Sub(a, ops.MaxKeepDims(b, 0))
		case 9:
			v = ops.Reshape(ops.Transpose(ops.Reshape(a, 6, 4)), 4, 6) // a layout round trip
		case 10:
			v = ops.MatMul(ops.MatMulT(a, b, false, true), a) // [4,4]·[4,6]
		case 11:
			v = ops.Softmax(a, -1)
		case 12:
			v = ops.Exp(ops.Neg(ops.Square(a)))
		default:
			v = ops.Select(ops.Greater(a, b), a, ops.Mul(b, b))
		}
		pool = append(pool, v)
	}
	// Use a few values so that some stay live past their last op.
	out := pool[len(pool)-1]
	for range 2 {
		out = ops.Add(out, pick())
	}
	return out
}
