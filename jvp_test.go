package spore_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/optest"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// dot returns Σ a·b over every element, in float64.
func dot(a, b *tensor.Tensor) float64 {
	x, y := a.Float64s(), b.Float64s()
	s := 0.0
	for i := range x {
		s += x[i] * y[i]
	}
	return s
}

// dotScale is the magnitude the rounding error of dot(a, b) scales with.
func dotScale(a, b *tensor.Tensor) float64 {
	x, y := a.Float64s(), b.Float64s()
	s := 0.0
	for i := range x {
		s += math.Abs(x[i] * y[i])
	}
	return s
}

// jvpVJP computes, for f at primals, the result's tangent along tangents
// and the gradients for cotangent cot: [tangent, grad₀, grad₁, ...].
func jvpVJP(f func(...*tensor.Tensor) *tensor.Tensor, n int) func(...*tensor.Tensor) []*tensor.Tensor {
	pos := make([]int, n)
	for i := range pos {
		pos[i] = i
	}
	grad := spore.Grad(f, spore.GradPosition(pos...), spore.WithSens())
	return func(a ...*tensor.Tensor) []*tensor.Tensor {
		primals, tangents, cot := a[:n], a[n:2*n], a[2*n]
		_, t := spore.JVP(f, primals, tangents)
		return append([]*tensor.Tensor{t}, grad(append(append([]*tensor.Tensor(nil), primals...), cot)...)...)
	}
}

// TestJVPDotProduct checks forward mode against reverse mode for every
// differentiable primitive of the catalogue: ⟨JVP(x; t), c⟩ = ⟨t, VJP(x; c)⟩
// in float64 to 1e-10 relative, eagerly and inside Jit. A primitive with a
// gradient but no JVP rule fails by name.
func TestJVPDotProduct(t *testing.T) {
	checked := map[*core.Prim]bool{}
	for _, c := range optest.Cases() {
		if !c.Differentiable {
			continue
		}
		if c.Prim.JVP == nil && c.Prim.JVPN == nil {
			t.Errorf("%s: primitive %s has a VJP but no JVP rule", c.Name, c.Prim.Name)
			continue
		}
		xs := c.Inputs(tensor.Float64)
		f := func(d ...*tensor.Tensor) *tensor.Tensor {
			full := append([]*tensor.Tensor(nil), xs...)
			for k, i := range c.Diff {
				full[i] = d[k]
			}
			return c.Fn(full...)
		}
		n := len(c.Diff)
		args := make([]*tensor.Tensor, 0, 2*n+1)
		for _, i := range c.Diff {
			args = append(args, xs[i])
		}
		for k, i := range c.Diff {
			args = append(args, optest.Vals(tensor.Float64, -1, 1, 101+17*k, xs[i].Shape()...))
		}
		y := c.Fn(xs...)
		args = append(args, optest.Vals(tensor.Float64, -1, 1, 53, y.Shape()...))
		modes := []struct {
			name string
			run  func(...*tensor.Tensor) []*tensor.Tensor
		}{
			{"PyNative", jvpVJP(f, n)},
			{"Graph", spore.Jit(jvpVJP(f, n), spore.JitConfig{Name: "jvpvjp." + c.Name})},
		}
		for _, m := range modes {
			t.Run(c.Name+"/"+m.name, func(t *testing.T) {
				res := m.run(args...)
				tan, grads := res[0], res[1:]
				cot := args[2*n]
				lhs, scale := dot(tan, cot), dotScale(tan, cot)
				rhs := 0.0
				for k := range n {
					rhs += dot(args[n+k], grads[k])
					scale += dotScale(args[n+k], grads[k])
				}
				if d := math.Abs(lhs - rhs); d > 1e-10*math.Max(scale, 1e-300) || math.IsNaN(d) {
					t.Errorf("⟨JVP, c⟩ = %.17g, ⟨t, VJP⟩ = %.17g (difference %.3g, scale %.3g)", lhs, rhs, d, scale)
				}
				if scale == 0 && !isPiecewiseConstant(c.Prim) {
					t.Errorf("both products are exactly zero: the test checks nothing")
				}
			})
		}
		checked[c.Prim] = true
	}
	// Every differentiable primitive of package ops went through the test.
	for _, p := range core.Prims() {
		if (p.VJP != nil || p.VJPN != nil) && !checked[p] && !isControlFlow(p) {
			t.Errorf("primitive %s is differentiable but has no differentiable case in optest", p.Name)
		}
	}
}

// isPiecewiseConstant reports the primitives whose derivative is zero
// wherever it exists: both sides of the dot-product test are exactly 0.
func isPiecewiseConstant(p *core.Prim) bool {
	switch p {
	case ops.FloorPrim, ops.CeilPrim, ops.RoundPrim, ops.TruncPrim, ops.FloorDivPrim:
		return true
	}
	return false
}

// isControlFlow reports the root package's primitives, tested below.
func isControlFlow(p *core.Prim) bool {
	switch p.Name {
	case "Cond", "While", "Scan", "Print":
		return true
	}
	return len(p.Name) > 5 && p.Name[:5] == "Call["
}

// TestJVPControlFlowDotProduct runs the dot-product test through Scan
// (forward and reverse) and Cond (both branches), eagerly and in Graph
// mode, where they are control-flow nodes with their own JVP rules.
func TestJVPControlFlowDotProduct(t *testing.T) {
	w := optest.Vals(tensor.Float64, -1, 1, 3, 3)
	fns := []struct {
		name string
		f    func(...*tensor.Tensor) *tensor.Tensor
		in   []*tensor.Tensor
	}{
		{"Scan", func(a ...*tensor.Tensor) *tensor.Tensor {
			c, ys := spore.Scan(func(c, x []*tensor.Tensor) ([]*tensor.Tensor, []*tensor.Tensor) {
				h := ops.Tanh(ops.Add(ops.Mul(c[0], a[1]), ops.Mul(x[0], w)))
				return []*tensor.Tensor{h}, []*tensor.Tensor{ops.Sin(h)}
			}, []*tensor.Tensor{a[1]}, []*tensor.Tensor{a[0]})
			return ops.Add(ops.Sum(ys[0], 0), ops.Square(c[0]))
		}, []*tensor.Tensor{optest.Vals(tensor.Float64, -1, 1, 0, 4, 3), optest.Vals(tensor.Float64, -1, 1, 9, 3)}},
		{"ScanReverse", func(a ...*tensor.Tensor) *tensor.Tensor {
			c, _ := spore.ScanReverse(func(c, x []*tensor.Tensor) ([]*tensor.Tensor, []*tensor.Tensor) {
				return []*tensor.Tensor{ops.Add(ops.Mul(c[0], x[0]), a[1])}, nil
			}, []*tensor.Tensor{a[1]}, []*tensor.Tensor{a[0]})
			return c[0]
		}, []*tensor.Tensor{optest.Vals(tensor.Float64, -1, 1, 0, 5, 3), optest.Vals(tensor.Float64, -1, 1, 9, 3)}},
		{"Cond", func(a ...*tensor.Tensor) *tensor.Tensor {
			var out *tensor.Tensor
			for _, pred := range []bool{true, false} {
				r := spore.Cond(tensor.Scalar(pred),
					func(b ...*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{ops.Mul(ops.Exp(b[0]), a[1])} },
					func(b ...*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{ops.Sub(b[0], ops.Square(b[1]))} },
					a[0], a[1])[0]
				if out == nil {
					out = r
				} else {
					out = ops.Add(out, ops.Mul(r, r))
				}
			}
			return out
		}, []*tensor.Tensor{optest.Vals(tensor.Float64, -1, 1, 0, 2, 3), optest.Vals(tensor.Float64, -1, 1, 7, 2, 3)}},
	}
	for _, fc := range fns {
		n := len(fc.in)
		args := append([]*tensor.Tensor(nil), fc.in...)
		for k, x := range fc.in {
			args = append(args, optest.Vals(tensor.Float64, -1, 1, 31+k, x.Shape()...))
		}
		y := fc.f(fc.in...)
		args = append(args, optest.Vals(tensor.Float64, -1, 1, 77, y.Shape()...))
		for _, m := range []struct {
			name string
			run  func(...*tensor.Tensor) []*tensor.Tensor
		}{
			{"PyNative", jvpVJP(fc.f, n)},
			{"Graph", spore.Jit(jvpVJP(fc.f, n), spore.JitConfig{Name: "cf." + fc.name})},
		} {
			t.Run(fc.name+"/"+m.name, func(t *testing.T) {
				res := m.run(args...)
				lhs, scale := dot(res[0], args[2*n]), dotScale(res[0], args[2*n])
				rhs := 0.0
				for k := range n {
					rhs += dot(args[n+k], res[1+k])
					scale += dotScale(args[n+k], res[1+k])
				}
				if d := math.Abs(lhs - rhs); d > 1e-10*scale || scale == 0 {
					t.Errorf("⟨JVP, c⟩ = %.17g, ⟨t, VJP⟩ = %.17g (difference %.3g, scale %.3g)", lhs, rhs, d, scale)
				}
			})
		}
	}
}

// TestJVPThroughJit differentiates a compiled function in forward mode
// from outside: the jitted call is one node on the tape whose JVP is
// compiled too, and it must agree with the uncompiled function.
func TestJVPThroughJit(t *testing.T) {
	w := tensor.NewParameter("w", optest.Vals(tensor.Float64, -1, 1, 4, 3, 2))
	f := func(x *tensor.Tensor) *tensor.Tensor { return ops.Sum(ops.Tanh(ops.MatMul(x, w)), 1) }
	jf := spore.Jit(f, spore.JitConfig{Name: "jvp.jitted"})
	x := optest.Vals(tensor.Float64, -1, 1, 0, 2, 3)
	tx := optest.Vals(tensor.Float64, -1, 1, 5, 2, 3)
	y0, t0 := spore.JVP(f, []*tensor.Tensor{x}, []*tensor.Tensor{tx})
	y1, t1 := spore.JVP(jf, []*tensor.Tensor{x}, []*tensor.Tensor{tx})
	testkit.AssertClose(t, "value", y1, y0, 1e-12)
	testkit.AssertClose(t, "tangent", t1, t0, 1e-12)
}

// TestJVPErrors checks that bad tangents are refused with errors naming
// JVP.
func TestJVPErrors(t *testing.T) {
	x := optest.Vals(tensor.Float64, -1, 1, 0, 2, 3)
	f := func(x *tensor.Tensor) *tensor.Tensor { return ops.Exp(x) }
	cases := []struct {
		name     string
		primals  []*tensor.Tensor
		tangents []*tensor.Tensor
	}{
		{"count", []*tensor.Tensor{x}, nil},
		{"shape", []*tensor.Tensor{x}, []*tensor.Tensor{optest.Vals(tensor.Float64, 0, 1, 0, 3, 2)}},
		{"dtype", []*tensor.Tensor{x}, []*tensor.Tensor{optest.Vals(tensor.Float32, 0, 1, 0, 2, 3)}},
		{"integer primal", []*tensor.Tensor{tensor.FromSlice([]int32{1, 2})}, []*tensor.Tensor{nil}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil || !containsStr(fmt.Sprint(r), "JVP") {
					t.Errorf("got %v, want an error naming JVP", r)
				}
			}()
			spore.JVP(f, c.primals, c.tangents)
		})
	}
	t.Run("not a function of tensors", func(t *testing.T) {
		defer func() {
			if r := recover(); r == nil || !containsStr(fmt.Sprint(r), "JVP") {
				t.Errorf("got %v, want an error naming JVP", r)
			}
		}()
		spore.JVP(func(x float64) *tensor.Tensor { return nil }, []*tensor.Tensor{x}, []*tensor.Tensor{x})
	})
}

func containsStr(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
