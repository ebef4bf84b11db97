package compile

import (
	"slices"

	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/ops"
)

// FastMath rewrites float arithmetic by identities that hold in real
// numbers but not bit for bit in floating point, so it runs only at O2:
//
//	x / c          →  x · (1/c)        for a constant c (a multiply is cheaper
//	                                   and fuses into a scalar immediate)
//	(x · c1) · c2  →  x · (c1·c2)      for one-element constants
//
// Each rewrite changes a result by at most about one ulp of the operation
// it replaces; the O2 tolerance (see the package doc) is 1e-5 relative.
func FastMath(g *graph.Graph) {
	g.CountUses()
	// A snapshot: the rewrites insert constants into g.Values.
	for _, v := range slices.Clone(g.Values) {
		if v.Kind != graph.KindOp || v.IsMulti() || !v.Meta.DType.IsFloat() {
			continue
		}
		switch {
		case isOp(v, ops.DivPrim) && v.Args[1].Kind == graph.KindConst:
			c := v.Args[1]
			recip := g.Const(ops.Reciprocal(c.Tensor))
			g.InsertBefore(recip, v)
			v.Prim, v.Attrs, v.Args = ops.MulPrim, nil, []*graph.Value{v.Args[0], recip}
		case isOp(v, ops.MulPrim):
			x, c2 := v.Args[0], v.Args[1]
			if oneElementConst(x) {
				x, c2 = c2, x
			}
			if !oneElementConst(c2) || !isOp(x, ops.MulPrim) || x.Uses != 1 {
				continue
			}
			inner, c1 := x.Args[0], x.Args[1]
			if oneElementConst(inner) {
				inner, c1 = c1, inner
			}
			if !oneElementConst(c1) || !sameMeta(inner.Meta, v.Meta) {
				continue
			}
			prod := ops.Mul(c1.Tensor, c2.Tensor)
			if !prod.Shape().Equal(c2.Tensor.Shape()) && !prod.Shape().Equal(c1.Tensor.Shape()) {
				continue
			}
			k := g.Const(prod)
			g.InsertBefore(k, v)
			v.Args = []*graph.Value{inner, k}
		}
	}
}

// oneElementConst reports whether v is a constant with a single element.
func oneElementConst(v *graph.Value) bool {
	return v.Kind == graph.KindConst && v.Tensor.Size() == 1
}
