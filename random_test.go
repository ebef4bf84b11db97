package spore_test

import (
	"math/rand/v2"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
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
		// O0 must be bitwise equal to PyNative; O1 and O2 (fast math) within
		// the tolerance.
		for _, l := range []struct {
			level     spore.Level
			tol, gtol float64
		}{{spore.O0, 0, 0}, {spore.O1, 1e-5, 1e-4}, {spore.O2, 1e-5, 1e-4}} {
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
		switch r.IntN(15) {
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
		case 13:
			v = ops.Div(a, ops.ScalarLike(a, 1.5+r.Float64()))
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

// Random programs that read and assign parameters in between: reads after
// an assignment see the new value, the plan's in-place updates must never
// clobber a value still to be read, and the parameters end up the same in
// both modes.
func TestRandomAssignmentsAgree(t *testing.T) {
	for seed := range uint64(80) {
		mk := func() []*spore.Tensor {
			return []*spore.Tensor{
				tensor.NewParameter("p0", rnd(seed+1, -1, 1, 4, 6)),
				tensor.NewParameter("p1", rnd(seed+2, -1, 1, 4, 6)),
				tensor.NewParameter("p2", rnd(seed+3, -1, 1, 6, 6)),
			}
		}
		prog := func(ps []*spore.Tensor) func(x *spore.Tensor) *spore.Tensor {
			return func(x *spore.Tensor) *spore.Tensor {
				r := rand.New(rand.NewPCG(seed, 9))
				vals := []*spore.Tensor{x}
				pickVal := func() *spore.Tensor { return vals[r.IntN(len(vals))] }
				for range 4 + r.IntN(8) {
					p := ps[r.IntN(2)] // the [4,6] parameters
					switch r.IntN(6) {
					case 0:
						vals = append(vals, ops.Mul(p, pickVal()))
					case 1:
						vals = append(vals, ops.MatMul(pickVal(), ps[2]))
					case 2:
						p.Assign(ops.Sub(p, ops.Mul(pickVal(), ops.ScalarLike(p, 0.1))))
					case 3:
						ps[2].Assign(ops.Add(ps[2], ops.MatMulT(p, pickVal(), true, false)))
					case 4:
						// The SGD shape that becomes one accumulating GEMM at O1.
						ps[2].Assign(ops.Sub(ps[2], ops.Mul(ops.MatMulT(pickVal(), p, true, false), ops.ScalarLike(p, 0.05))))
					default:
						vals = append(vals, ops.Tanh(ops.Add(pickVal(), p)))
					}
				}
				return ops.Add(pickVal(), ps[0])
			}
		}
		x := rnd(seed+4, -1, 1, 4, 6)
		eagerPs, graphPs := mk(), mk()
		want := prog(eagerPs)(x)
		for _, level := range []spore.Level{spore.O0, spore.O1} {
			graphPs = mk()
			got := spore.Jit(prog(graphPs), spore.JitConfig{Level: level})(x)
			tol := map[spore.Level]float64{spore.O0: 0, spore.O1: 1e-5}[level]
			if err := compare(got, want, tol); err != nil {
				t.Fatalf("seed %d %v result: %v", seed, level, err)
			}
			for i := range eagerPs {
				if err := compare(graphPs[i], eagerPs[i], tol); err != nil {
					t.Fatalf("seed %d %v parameter %d: %v", seed, level, i, err)
				}
			}
		}
	}
}
