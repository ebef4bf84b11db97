package compile

import (
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/ops"
)

// TransposeFold folds transposes of the last two axes into MatMul's
// transpose flags, which the GEMM reads for free (it packs its operands
// anyway), instead of materialising the transposed copy:
//
//	MatMul(Transpose(a, swap), b)   →  MatMul(a, b) with TransA flipped
//	MatMul(a, Transpose(b, swap))   →  MatMul(a, b) with TransB flipped
//	Transpose(MatMul(a, b), swap)   →  MatMul(b, a) with flags (¬tb, ¬ta)
//
// where swap exchanges the last two axes and keeps the batch axes. The last
// rule uses (AB)ᵀ = BᵀAᵀ and applies only when the MatMul has no other
// user, so no product is computed twice. Orphaned transposes are left to
// DCE.
func TransposeFold(g *graph.Graph) {
	g.CountUses()
	for _, v := range g.Values {
		switch {
		case isOp(v, ops.MatMulPrim):
			at := matmulAttrs(v)
			a, b := v.Args[0], v.Args[1]
			if x, ok := swapOf(a); ok {
				a, at.TransA = x, !at.TransA
				x.Uses++
			}
			if x, ok := swapOf(b); ok {
				b, at.TransB = x, !at.TransB
				x.Uses++
			}
			if a != v.Args[0] || b != v.Args[1] {
				v.Args[0].Uses--
				v.Args[1].Uses--
				v.Args = []*graph.Value{a, b}
				v.Attrs = at
			}
		case isOp(v, ops.TransposePrim):
			mm := v.Args[0]
			p, ok := permOf(v.Attrs)
			if !ok || !isLastTwoSwap(p) || !isOp(mm, ops.MatMulPrim) || mm.Uses != 1 {
				continue
			}
			at := matmulAttrs(mm)
			v.Prim = mm.Prim
			v.Attrs = ops.MatMulAttrs{TransA: !at.TransB, TransB: !at.TransA}
			v.Args = []*graph.Value{mm.Args[1], mm.Args[0]}
			mm.Uses--
		}
	}
}

// swapOf returns x when v = Transpose(x) swaps the last two axes.
func swapOf(v *graph.Value) (*graph.Value, bool) {
	if !isOp(v, ops.TransposePrim) {
		return nil, false
	}
	p, ok := permOf(v.Attrs)
	if !ok || !isLastTwoSwap(p) {
		return nil, false
	}
	return v.Args[0], true
}
