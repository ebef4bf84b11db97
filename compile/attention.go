package compile

import (
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Attention recognises scaled dot-product attention written out as
// primitives, as ONNX exporters write it, and replaces it with the fused
// attention kernel (ops.ScaledDotProductAttentionPrim), which never
// materialises the L×S weights:
//
//	MatMul(Softmax(scale(MatMul(scale(q), kᵀ))), v)  →  SDPA(q, k, v){scale}
//
// where Softmax is the chain ops.Softmax traces (ReduceMax, Sub, Exp,
// ReduceSum, Div over the last axis), each scale is an optional Div or Mul
// by a scalar constant (before the product on q, after it on the scores,
// or both), and kᵀ is either a MatMul with TransB, a Transpose whose last
// two axes are swapped back into k's (so Transpose(x, p) becomes one
// Transpose of x), or any [..., E, S] operand, transposed explicitly.
// q, k and v must share their batch axes exactly (no broadcasting) and be
// float32 or float64; the intermediate values must have no other users.
//
// The fused kernel computes the same softmax with a different summation
// order and an online maximum, so results agree with the unfused plan
// within float rounding (about 1e-6 relative in float32), not bit for bit.
// One case differs beyond rounding: a query whose scores are all −Inf (an
// infinite q or k) gets NaN from the written-out softmax and a zero row
// from the fused kernel, which treats it as a query with nothing to attend.
func Attention(g *graph.Graph) {
	g.CountUses()
	// Match first, rewrite after: the rewrite inserts values into
	// g.Values, which must not shift under the walk.
	var found []*attentionMatch
	for _, v := range g.Values {
		if m := matchAttention(v); m != nil {
			m.out = v
			found = append(found, m)
		}
	}
	// A match may read another's result (attention over attention's
	// output): its operands follow the replacements made before it.
	repl := map[*graph.Value]*graph.Value{}
	get := func(v *graph.Value) *graph.Value {
		if w, ok := repl[v]; ok {
			return w
		}
		return v
	}
	var users map[*graph.Value][]*graph.Value
	if len(found) > 0 {
		users = map[*graph.Value][]*graph.Value{}
		for _, u := range g.Values {
			for _, a := range u.Args {
				users[a] = append(users[a], u)
			}
		}
	}
	for _, m := range found {
		v := m.out
		// A packed match's operands are the thirds of one projection,
		// which no other match rewrites.
		if p := matchPacked(g, m, users); p != nil {
			repl[p.back] = rewritePacked(g, m, p)
			continue
		}
		n := len(g.Values)
		k := get(m.k)
		if m.kPerm != nil {
			k = g.Op(ops.TransposePrim, withPerm(m.kPerm), k)
		}
		a := ops.AttentionAttrs{Scale: m.scale}
		metas := []tensor.Meta{v.Meta, {Shape: v.Meta.Shape[:len(v.Meta.Shape)-1].Clone(), DType: v.Meta.DType}}
		outs := g.OpN(ops.ScaledDotProductAttentionPrim, a, metas, get(m.q), k, get(m.v))
		moveTailBefore(g, n, v)
		g.Replace(v, outs[0])
		repl[v] = outs[0]
	}
	if len(found) > 0 {
		g.CountUses()
	}
}

// attentionMatch is one recognised attention: the MatMul it replaces, q,
// k (or the value whose transpose by kPerm is k), v and the combined scale.
type attentionMatch struct {
	out, q, k, v *graph.Value
	kPerm        []int
	scale        float64
}

// matchAttention matches the chain ending in v = MatMul(P, v), or returns nil.
func matchAttention(out *graph.Value) *attentionMatch {
	if !isOp(out, ops.MatMulPrim) || matmulAttrs(out) != (ops.MatMulAttrs{}) {
		return nil
	}
	dt := out.Meta.DType
	if dt != tensor.Float32 && dt != tensor.Float64 {
		return nil
	}
	p, vv := out.Args[0], out.Args[1]
	r := len(p.Meta.Shape)
	if r < 2 || p.Uses != 1 {
		return nil
	}
	// P = Div(e, ReduceSum(e)), e = Exp(Sub(s, ReduceMax(s))).
	if !isOp(p, ops.DivPrim) {
		return nil
	}
	e, sum := p.Args[0], p.Args[1]
	if !isOp(sum, ops.SumPrim) || sum.Args[0] != e || !lastAxisKeep(sum, r) || sum.Uses != 1 {
		return nil
	}
	if !isOp(e, ops.ExpPrim) || e.Uses != 2 {
		return nil
	}
	sub := e.Args[0]
	if !isOp(sub, ops.SubPrim) || sub.Uses != 1 {
		return nil
	}
	s, mx := sub.Args[0], sub.Args[1]
	if !isOp(mx, ops.MaxPrim) || mx.Args[0] != s || !lastAxisKeep(mx, r) || mx.Uses != 1 || s.Uses != 2 {
		return nil
	}
	scale := 1.0
	// An optional scale of the scores.
	if c, x, ok := scaleOf(s); ok {
		if x.Uses != 1 {
			return nil
		}
		scale *= c
		s = x
	}
	if !isOp(s, ops.MatMulPrim) || !sameMeta(s.Meta, p.Meta) {
		return nil
	}
	at := matmulAttrs(s)
	if at.TransA {
		return nil
	}
	q, kop := s.Args[0], s.Args[1]
	// An optional scale of the queries.
	if c, x, ok := scaleOf(q); ok && q.Uses == 1 {
		scale *= c
		q = x
	}
	m := &attentionMatch{q: q, k: kop, v: vv, scale: scale}
	if !at.TransB {
		// kop is kᵀ [..., E, S]: k is its last two axes swapped, folded
		// into the Transpose that made kop when there is one.
		perm := make([]int, r)
		for i := range perm {
			perm[i] = i
		}
		perm[r-2], perm[r-1] = r-1, r-2
		if pp, ok := permOf(kop.Attrs); ok && isOp(kop, ops.TransposePrim) && len(pp) == r {
			comp := make([]int, r)
			for i := range comp {
				comp[i] = pp[perm[i]]
			}
			m.k, perm = kop.Args[0], comp
		}
		if !isIdentityPerm(perm) {
			m.kPerm = perm
		}
	}
	// The fused kernel wants q [B..., L, E], k [B..., S, E], v [B..., S, Ev]
	// with one batch shape, and a scale it can hold.
	qs, vs := m.q.Meta.Shape, m.v.Meta.Shape
	if len(qs) != r || len(vs) != r || m.q.Meta.DType != dt || m.v.Meta.DType != dt {
		return nil
	}
	ks := m.k.Meta.Shape
	if m.kPerm != nil {
		ks = permuted(ks, m.kPerm)
	}
	if len(ks) != r || !qs[:r-2].Equal(ks[:r-2]) || !qs[:r-2].Equal(vs[:r-2]) || ks[r-1] != qs[r-1] || vs[r-2] != ks[r-2] {
		return nil
	}
	return m
}

// lastAxisKeep reports whether reduction v folds exactly the last of r
// axes, keeping it.
func lastAxisKeep(v *graph.Value, r int) bool {
	a, ok := v.Attrs.(ops.ReduceAttrs)
	return ok && a.KeepDims && len(a.Axes) == 1 && a.Axes[0] == r-1
}

// scaleOf reports whether v = Div(x, c) or Mul(x, c) (or Mul(c, x)) for a
// finite, nonzero scalar constant c, and returns the factor it applies.
func scaleOf(v *graph.Value) (float64, *graph.Value, bool) {
	if v.Kind != graph.KindOp || len(v.Args) != 2 {
		return 0, nil, false
	}
	x, c := v.Args[0], v.Args[1]
	switch {
	case isOp(v, ops.DivPrim):
		if f, ok := scalarValue(c); ok && f != 0 && sameMeta(x.Meta, v.Meta) {
			return 1 / f, x, true
		}
	case isOp(v, ops.MulPrim):
		if f, ok := scalarValue(c); ok && sameMeta(x.Meta, v.Meta) {
			return f, x, true
		}
		if f, ok := scalarValue(x); ok && sameMeta(c.Meta, v.Meta) {
			return f, c, true
		}
	}
	return 0, nil, false
}

// scalarValue returns the value of a one-element float constant.
func scalarValue(v *graph.Value) (float64, bool) {
	if v.Kind != graph.KindConst || v.Tensor.Size() != 1 {
		return 0, false
	}
	switch d := v.Tensor.Data().(type) {
	case []float32:
		return float64(d[0]), !isNonFinite(float64(d[0]))
	case []float64:
		return d[0], !isNonFinite(d[0])
	}
	return 0, false
}

func isNonFinite(x float64) bool { return x != x || x-x != 0 }

// permuted returns shape s transposed by perm.
func permuted(s tensor.Shape, perm []int) tensor.Shape {
	out := make(tensor.Shape, len(perm))
	for i, p := range perm {
		out[i] = s[p]
	}
	return out
}

// moveTailBefore moves the values appended from index n on to sit right
// before anchor, in their order: their args all precede anchor, so the
// order stays topological.
func moveTailBefore(g *graph.Graph, n int, anchor *graph.Value) {
	tail := append([]*graph.Value(nil), g.Values[n:]...)
	pos := -1
	for i, x := range g.Values[:n] {
		if x == anchor {
			pos = i
			break
		}
	}
	if pos < 0 {
		return
	}
	copy(g.Values[pos+len(tail):], g.Values[pos:n])
	copy(g.Values[pos:], tail)
}
