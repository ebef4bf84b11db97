package compile

import (
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/ops"
)

// Simplify applies algebraic identities that hold exactly in floating
// point, in one forward walk (values are in topological order, so a chain
// such as Neg(Neg(Neg(Neg(x)))) collapses in one run):
//
//	x + 0, 0 + x, x - 0, x · 1, 1 · x, x / 1  →  x
//	Neg(Neg(x))                              →  x
//	Reshape(Reshape(x))                      →  Reshape(x)
//	Reshape, BroadcastTo or Cast to x's own shape and dtype  →  x
//	Transpose(Transpose(x, p), q)            →  Transpose(x, p∘q), or x
//	ReLUGrad(x, g) where ReLU(x) exists      →  ReLUGrad(ReLU(x), g)
//
// The constant in the first row may have any shape whose broadcast leaves
// x's shape and dtype unchanged; when it would widen x, the op is a
// broadcast and stays. All of these are exact except that x + 0 turns a
// -0 in x into +0 (IEEE: -0 + +0 = +0), which compares equal and which no
// later op of the framework distinguishes except through division by it.
//
// The last rule is for training graphs: ReLU's VJP tests the sign of the
// pre-activation x, which keeps x alive for the backward pass and stops
// GEMM epilogue fusion from folding the bias add and ReLU into the matmul
// (x would have two users). ReLU(x) > 0 exactly when x > 0 (NaN included),
// so the test can read the activation instead.
func Simplify(g *graph.Graph) {
	r := newRewriter(g)
	reluOf := map[*graph.Value]*graph.Value{} // x -> ReLU(x)
	for _, v := range g.Values {
		r.fix(v)
		if !plainOp(v) {
			continue
		}
		if w := simplifyOne(v, reluOf); w != nil && w != v {
			r.set(v, w)
		}
		if isOp(v, ops.ReluPrim) {
			if _, ok := reluOf[v.Args[0]]; !ok {
				reluOf[v.Args[0]] = v
			}
		}
	}
	r.finish(g)
}

// simplifyOne returns the value v reduces to, or nil. Rewrites that keep v
// but change its operands or attributes are done in place.
func simplifyOne(v *graph.Value, reluOf map[*graph.Value]*graph.Value) *graph.Value {
	args := v.Args
	keep := func(x *graph.Value) *graph.Value {
		if sameMeta(x.Meta, v.Meta) {
			return x
		}
		return nil
	}
	switch {
	case isOp(v, ops.AddPrim):
		if constEquals(args[1], 0) {
			return keep(args[0])
		}
		if constEquals(args[0], 0) {
			return keep(args[1])
		}
	case isOp(v, ops.SubPrim):
		if constEquals(args[1], 0) {
			return keep(args[0])
		}
	case isOp(v, ops.MulPrim):
		if constEquals(args[1], 1) {
			return keep(args[0])
		}
		if constEquals(args[0], 1) {
			return keep(args[1])
		}
	case isOp(v, ops.DivPrim):
		if constEquals(args[1], 1) {
			return keep(args[0])
		}
	case isOp(v, ops.NegPrim):
		if isOp(args[0], ops.NegPrim) {
			return keep(args[0].Args[0])
		}
	case isOp(v, ops.ReshapePrim):
		if isOp(args[0], ops.ReshapePrim) {
			v.Args = []*graph.Value{args[0].Args[0]}
		}
		return keep(v.Args[0])
	case isOp(v, ops.BroadcastToPrim), isOp(v, ops.CastPrim):
		return keep(args[0])
	case isOp(v, ops.TransposePrim):
		p, ok := permOf(v.Attrs)
		if !ok {
			return nil
		}
		if in := args[0]; isOp(in, ops.TransposePrim) {
			if q, ok := permOf(in.Attrs); ok && len(q) == len(p) {
				// out[i] = mid[p[i]] = x[q[p[i]]].
				comp := make([]int, len(p))
				for i := range p {
					comp[i] = q[p[i]]
				}
				v.Args = []*graph.Value{in.Args[0]}
				v.Attrs = withPerm(comp)
				p = comp
			}
		}
		if isIdentityPerm(p) {
			return keep(v.Args[0])
		}
	case isOp(v, ops.ReluGradPrim):
		// reluOf holds only ReLUs met earlier in the walk, so y precedes v.
		if y, ok := reluOf[args[0]]; ok && sameMeta(y.Meta, args[0].Meta) {
			v.Args = []*graph.Value{y, args[1]}
		}
	}
	return nil
}

// matmulAttrs returns a MatMul's flags.
func matmulAttrs(v *graph.Value) ops.MatMulAttrs {
	a, _ := v.Attrs.(ops.MatMulAttrs)
	return a
}
