package core

// Node records one primitive application on the autodiff tape: the tape is
// the graph of Nodes reachable from a tracked tensor, and reverse-mode
// differentiation walks it backwards calling each Prim's VJP. A leaf (an
// input being differentiated) has a nil Prim.
type Node struct {
	Prim   *Prim
	Attrs  any
	Inputs []*Tensor
	// Out is the result of a single-result primitive or leaf; Outs are the
	// results of a multi-result one (Prim.VJPN), and Out is then nil.
	Out  *Tensor
	Outs []*Tensor
}

// NodeOf returns t's autodiff record, or nil if t is not tracked.
func NodeOf(t *Tensor) *Node { return t.node }

// IsTracked reports whether ops on t are being recorded for autodiff.
func IsTracked(t *Tensor) bool { return t.node != nil }

// TrackLeaf returns a tensor that shares x's value (and symbol) but is a
// fresh autodiff leaf, the start of a new differentiation. If x is itself
// tracked (a gradient of a gradient), the leaf stays connected to x's
// history through an identity step, so outer derivatives still flow.
func TrackLeaf(x *Tensor) *Tensor {
	t := &Tensor{shape: x.shape, dtype: x.dtype, buf: x.buf, sym: x.sym}
	if x.node != nil {
		t.node = &Node{Prim: identityPrim, Inputs: []*Tensor{x}, Out: t}
	} else {
		t.node = &Node{Out: t}
	}
	return t
}

// Untracked returns t without its autodiff record: t itself when it is not
// tracked, else a tensor sharing t's value (and symbol) that ops do not
// record. A reverse pass that nothing will differentiate again runs its
// gradient rules on untracked tensors, so that it builds no tape of its own.
// The result of a parameter is a plain tensor sharing its buffer, so use
// Untracked only for eager work: under a trace a parameter's identity is
// what keeps it from being baked in as a constant.
func Untracked(t *Tensor) *Tensor {
	if t == nil || t.node == nil {
		return t
	}
	return &Tensor{shape: t.shape, dtype: t.dtype, buf: t.buf, sym: t.sym, needsGrad: true}
}

// NeedsGrad reports whether a gradient with respect to t is wanted: t is
// tracked, or is the untracked stand-in of a tracked tensor in a reverse
// pass. Gradient rules use it to skip work for inputs nobody
// differentiates.
func NeedsGrad(t *Tensor) bool { return t.node != nil || t.needsGrad }

// TrackParam starts recording ops on parameter p for differentiation and
// returns the function that stops it. If p is already tracked (an outer
// differentiation), it stays as it is and stop does nothing.
func TrackParam(p *Tensor) (stop func()) {
	if p.node != nil {
		return func() {}
	}
	p.node = &Node{Out: p}
	return func() { p.node = nil }
}

// identityPrim links a leaf to the tracked tensor it was made from.
var identityPrim = &Prim{
	Name:  "Identity",
	Infer: func(_ any, in []*Tensor) Meta { return in[0].Meta() },
	Kernel: func(_ any, in []*Tensor, out *Tensor) {
		copyBuf(out.buf, in[0].buf)
	},
	VJP: func(_ any, _ []*Tensor, _, g *Tensor) []*Tensor { return []*Tensor{g} },
}

// IdentityPrim is the primitive that copies its input unchanged.
func IdentityPrim() *Prim { return identityPrim }
