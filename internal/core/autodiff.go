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

// NodeOf returns t's autodiff record, or nil if t is not tracked. A
// parameter's record is not stored on the parameter, which many goroutines
// may share, but on the tape of the differentiation that tracks it (see
// TrackParams), so only the goroutine running that differentiation sees it.
func NodeOf(t *Tensor) *Node {
	if t.node != nil {
		return t.node
	}
	if t.param != nil && tapes.active.Load() > 0 {
		return tapeNode(t)
	}
	return nil
}

// IsTracked reports whether ops on t are being recorded for autodiff.
func IsTracked(t *Tensor) bool { return NodeOf(t) != nil }

// TrackLeaf returns a tensor that shares x's value (and symbol) but is a
// fresh autodiff leaf, the start of a new differentiation. If x is itself
// tracked (a gradient of a gradient), the leaf stays connected to x's
// history through an identity step, so outer derivatives still flow.
func TrackLeaf(x *Tensor) *Tensor {
	t := &Tensor{shape: x.shape, dtype: x.dtype, buf: x.buf, sym: x.sym}
	if x.param != nil && x.sym == nil {
		// A parameter differentiated as an argument while this goroutine
		// traces: the leaf must read the parameter when the plan runs, not
		// its value now, or every later call would reuse today's weights
		// (the stale-parameter trap). Reading it through an Identity node
		// makes the trace capture the parameter as an input.
		if tr := CurrentTracer(); tr != nil {
			t.sym = tr.Emit(identityPrim, nil, []*Tensor{x}, x.Meta()).sym
			t.buf = nil
		}
	}
	if NodeOf(x) != nil {
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
// what keeps it from being baked in as a constant. nodeOf finds records
// (NodeOf, or a pass's cache of it: finding a parameter's costs a
// goroutine-id lookup).
func Untracked(t *Tensor, nodeOf func(*Tensor) *Node) *Tensor {
	if t == nil || nodeOf(t) == nil {
		return t
	}
	return &Tensor{shape: t.shape, dtype: t.dtype, buf: t.buf, sym: t.sym, needsGrad: true}
}

// NeedsGrad reports whether a gradient with respect to t is wanted: t is
// tracked, or is the untracked stand-in of a tracked tensor in a reverse
// pass. Gradient rules use it to skip work for inputs nobody
// differentiates.
func NeedsGrad(t *Tensor) bool { return t.needsGrad || NodeOf(t) != nil }

// TrackParams starts recording ops on the given parameters for
// differentiation, on a tape of the calling goroutine's own, and returns the
// function that ends it. Parameters that an outer differentiation on this
// goroutine already tracks stay with that one, so gradients of gradients
// flow through them. Nothing is written to the parameters themselves: other
// goroutines differentiating the same parameters at the same time each have
// their own tape and see none of this one.
func TrackParams(ps []*Tensor) (end func()) {
	tp := make(map[*Tensor]*Node, len(ps))
	// The tape is pushed before the lookups below, so that tapes.active is
	// already non-zero for them.
	st, end := tapes.push(tp)
	for _, p := range ps {
		if p.param == nil {
			end()
			Panicf("Grad", "Weights: tensor of shape %v is not a parameter", p.shape)
		}
		if p.node == nil && !tracks(st.s, p) {
			tp[p] = &Node{Out: p}
		}
	}
	return end
}

// tapes holds each goroutine's nested differentiations over parameters
// (goid.go): a parameter's record lives on the tape of the goroutine that
// tracks it. While no goroutine differentiates over parameters, looking
// up a parameter's record costs one atomic load.
var tapes goroutineStacks[map[*Tensor]*Node]

// tapeNode finds parameter p's record on the calling goroutine's tapes,
// innermost first.
func tapeNode(p *Tensor) *Node {
	st := tapes.mine()
	if st == nil {
		return nil
	}
	for i := len(st.s) - 1; i >= 0; i-- {
		if n := st.s[i][p]; n != nil {
			return n
		}
	}
	return nil
}

// tracks reports whether a tape of s below the innermost one (which
// TrackParams is filling) tracks p.
func tracks(s []map[*Tensor]*Node, p *Tensor) bool {
	for i := len(s) - 2; i >= 0; i-- {
		if s[i][p] != nil {
			return true
		}
	}
	return false
}

// identityPrim links a leaf to the tracked tensor it was made from.
var identityPrim = &Prim{
	Name:  "Identity",
	Infer: func(_ any, in []*Tensor) Meta { return in[0].Meta() },
	VJP:   func(_ any, _ []*Tensor, _, g *Tensor) []*Tensor { return []*Tensor{g} },
}

func init() {
	identityPrim.Register(Float32, CPU, copyKernel[float32])
	identityPrim.Register(Float64, CPU, copyKernel[float64])
	identityPrim.Register(Int32, CPU, copyKernel[int32])
	identityPrim.Register(Int64, CPU, copyKernel[int64])
	identityPrim.Register(Bool, CPU, copyKernel[bool])
	identityPrim.Register(Uint8, CPU, copyKernel[uint8])
	identityPrim.Register(BFloat16, CPU, copyKernel[BF16])
	identityPrim.Register(Float16, CPU, copyKernel[F16])
	identityPrim.Register(Int8, CPU, copyKernel[int8])
	identityPrim.Register(Int16, CPU, copyKernel[int16])
	identityPrim.Register(Uint16, CPU, copyKernel[uint16])
	identityPrim.Register(Uint32, CPU, copyKernel[uint32])
	identityPrim.Register(Uint64, CPU, copyKernel[uint64])
}

// copyKernel copies the operand's elements into the result, for one
// element type: Identity's kernel.
func copyKernel[T Elem](_ any, in []*Tensor, out *Tensor) {
	copy(out.buf.([]T), in[0].buf.([]T))
}

// IdentityPrim is the primitive that copies its input unchanged.
func IdentityPrim() *Prim { return identityPrim }
