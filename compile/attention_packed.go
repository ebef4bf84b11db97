package compile

import (
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// packedMatch is a recognised attention whose q, k and v are the three
// thirds of one sequence-first projection x [L, N, 3·H·D], split into
// heads the way multi-head attention exports do,
//
//	q = Transpose(Reshape(StridedSlice(x, 0:HD), [L, N·H, D]), [1 0 2])
//
// (k and v likewise at HD and 2·HD), and whose output [N·H, L, D] has one
// user, the Transpose back to [L, N·H, D]. The fused kernel then reads the
// heads from x in place and writes them interleaved ([L, N, H·D]), so the
// three slices, the three head transposes and the output transpose are
// never copied.
type packedMatch struct {
	x     *graph.Value
	heads int
	back  *graph.Value // the Transpose of the output, replaced
}

// matchPacked extends an attention match to the packed form, or returns
// nil. The plain match has already checked the shapes of q, k and v.
func matchPacked(g *graph.Graph, m *attentionMatch, users map[*graph.Value][]*graph.Value) *packedMatch {
	swap := []int{1, 0, 2}
	if len(m.q.Meta.Shape) != 3 || m.out.Uses != 1 {
		return nil
	}
	back := users[m.out]
	if len(back) != 1 || !isTranspose(back[0], swap) {
		return nil
	}
	split := func(v *graph.Value, viaTranspose bool) (*graph.Value, int) {
		if viaTranspose {
			if !isTranspose(v, swap) || v.Uses != 1 {
				return nil, 0
			}
			v = v.Args[0]
		}
		// The Reshape to [L, N·H, D] is gone where it changed nothing
		// (one head): simplification drops it.
		sl := v
		if isOp(v, ops.ReshapePrim) {
			if v.Uses != 1 {
				return nil, 0
			}
			sl = v.Args[0]
		}
		a, ok := sl.Attrs.(ops.SliceAttrs)
		if !isOp(sl, ops.StridedSlicePrim) || !ok || sl.Uses != 1 || len(a.Begin) != 3 || len(a.Strides) != 3 {
			return nil, 0
		}
		for i := range 3 {
			if a.Strides[i] != 1 || (i < 2 && a.Begin[i] != 0) {
				return nil, 0
			}
		}
		x := sl.Args[0]
		xs, ss, rs := x.Meta.Shape, sl.Meta.Shape, v.Meta.Shape
		if len(xs) != 3 || !ss.Equal(tensor.Shape{xs[0], xs[1], xs[2] / 3}) || xs[2]%3 != 0 || len(rs) != 3 || rs[0] != xs[0] {
			return nil, 0
		}
		return x, a.Begin[2]
	}
	// k is either given through kPerm = swap (the exported Transpose(k,
	// [1 2 0]) folded by the plain match) or as a transposed operand.
	var kx *graph.Value
	var kOff int
	switch {
	case m.kPerm != nil && equalInts(m.kPerm, swap):
		kx, kOff = split(m.k, false)
	case m.kPerm == nil:
		kx, kOff = split(m.k, true)
	}
	qx, qOff := split(m.q, true)
	vx, vOff := split(m.v, true)
	if qx == nil || qx != kx || qx != vx {
		return nil
	}
	xs := qx.Meta.Shape
	hd := xs[2] / 3
	d := m.q.Meta.Shape[2]
	if d == 0 || hd%d != 0 || qOff != 0 || kOff != hd || vOff != 2*hd {
		return nil
	}
	h := hd / d
	if m.q.Meta.Shape[0] != xs[1]*h {
		return nil
	}
	return &packedMatch{x: qx, heads: h, back: back[0]}
}

// rewritePacked replaces the packed match's output transpose with a
// Reshape of the packed fused attention's [L, N, H·D] result, which it
// returns.
func rewritePacked(g *graph.Graph, m *attentionMatch, p *packedMatch) *graph.Value {
	n := len(g.Values)
	a := ops.AttentionAttrs{Scale: m.scale, Packed: p.heads, SeqFirst: true}
	xs := p.x.Meta.Shape
	l, nb, hd := xs[0], xs[1], xs[2]/3
	dt := p.x.Meta.DType
	metas := []tensor.Meta{{Shape: tensor.Shape{l, nb, hd}, DType: dt}, {Shape: tensor.Shape{nb, p.heads, l}, DType: dt}}
	outs := g.OpN(ops.ScaledDotProductAttentionPrim, a, metas, p.x)
	r := g.Op(ops.ReshapePrim, ops.ShapeAttr{Shape: p.back.Meta.Shape.Clone()}, outs[0])
	moveTailBefore(g, n, p.back)
	g.Replace(p.back, r)
	return r
}

// isTranspose reports whether v transposes by perm.
func isTranspose(v *graph.Value, perm []int) bool {
	p, ok := permOf(v.Attrs)
	return isOp(v, ops.TransposePrim) && ok && equalInts(p, perm)
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
