package ad

import (
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
)

// JVP is spore.JVP, whose documentation is the reference.
func JVP[F any](fn F, primals, tangents []*Tensor) (out, tangentOut *Tensor) {
	f := asVariadicFor("JVP", fn)
	checkTangents("JVP", primals, tangents)
	lin, end := Linearize(func(xs []*Tensor) []*Tensor { return []*Tensor{f(xs...)} }, primals, nil, anyTracked(tangents))
	defer end()
	return lin.outs[0], lin.Push(tangents)[0]
}

// checkTangents refuses tangents that do not match their primals.
func checkTangents(op string, primals, tangents []*Tensor) {
	if len(tangents) != len(primals) {
		core.Panicf(op, "%d tangents for %d primals: give one tangent (or nil for zeros) per primal", len(tangents), len(primals))
	}
	for i, x := range primals {
		if x == nil {
			core.Panicf(op, "primal %d is nil", i)
		}
		if !x.DType().IsFloat() {
			core.Panicf(op, "primal %d is %v %v: derivatives are defined only for floating-point inputs", i, x.Shape(), x.DType())
		}
		if t := tangents[i]; t != nil && (!t.Shape().Equal(x.Shape()) || t.DType() != x.DType()) {
			core.Panicf(op, "tangent %d is %v %v but its primal is %v %v", i, t.Shape(), t.DType(), x.Shape(), x.DType())
		}
	}
}

func anyTracked(ts []*Tensor) bool {
	for _, t := range ts {
		if t != nil && core.IsTracked(t) {
			return true
		}
	}
	return false
}

// Linearization is a forward pass recorded on the tape, ready to push
// tangents through (JAX's linearize): Jacfwd pushes one tangent per input
// element through a single recorded pass.
type Linearization struct {
	outs     []*Tensor
	targets  []*Tensor // the tracked primals, then the tracked parameters
	order    []*core.Node
	isTarget map[*core.Node]bool
	nodeOf   func(*Tensor) *core.Node
	// record says whether the tangent computation must itself be recorded
	// on the tape: an outer differentiation or a trace is under way.
	record bool
}

// linearize runs f on tracked stand-ins of primals, with params tracked on
// a tape of their own, and returns the recorded pass; end must be called
// once tangents are pushed. nested forces the tangent computation onto the
// tape (its tangents are themselves being differentiated).
func Linearize(f func([]*Tensor) []*Tensor, primals, params []*Tensor, nested bool) (*Linearization, func()) {
	l := &Linearization{isTarget: map[*core.Node]bool{}}
	args := make([]*Tensor, len(primals))
	for i, x := range primals {
		nested = nested || core.IsTracked(x)
		args[i] = core.TrackLeaf(x)
	}
	end := func() {}
	var tracked []*Tensor
	for _, p := range params {
		nested = nested || core.IsTracked(p)
		tracked = append(tracked, p)
	}
	if len(tracked) > 0 {
		end = core.TrackParams(tracked)
	}
	l.outs = f(args)
	l.targets = append(args, tracked...)
	l.nodeOf = nodeFinder()
	for _, t := range l.targets {
		if n := l.nodeOf(t); n != nil {
			l.isTarget[n] = true
		}
	}
	// Nodes reached from several results are walked once: each result's
	// order is topological, and a node already placed only precedes.
	seen := map[*core.Node]bool{}
	foreign := false
	for _, o := range l.outs {
		order, fr := reachingOrder(l.nodeOf(o), l.isTarget, l.nodeOf)
		foreign = foreign || fr
		for _, n := range order {
			if !seen[n] {
				seen[n] = true
				l.order = append(l.order, n)
			}
		}
	}
	staged := core.CurrentTracer() != nil || core.AnySymbolic(l.outs)
	l.record = nested || foreign || staged
	return l, end
}

// push returns the tangent of each result given one tangent per target
// (nil for zeros). A result that does not depend on the targets gets zeros.
func (l *Linearization) Push(tangents []*Tensor) []*Tensor {
	detach := func(t *Tensor) *Tensor { return t }
	if !l.record {
		// Nothing will differentiate the tangent computation: run the
		// rules on untracked tensors so that they build no tape.
		detach = func(t *Tensor) *Tensor { return core.Untracked(t, l.nodeOf) }
	}
	detachAll := func(ts []*Tensor) []*Tensor {
		out := make([]*Tensor, len(ts))
		for i, t := range ts {
			if t != nil {
				out[i] = detach(t)
			}
		}
		return out
	}
	tan := make(map[*Tensor]*Tensor, len(l.order)+len(tangents))
	for i, t := range l.targets {
		if i < len(tangents) && tangents[i] != nil {
			tan[t] = tangents[i]
		}
	}
	identity := core.IdentityPrim()
	for _, n := range l.order {
		if l.isTarget[n] || n.Prim == nil {
			continue
		}
		ts := make([]*Tensor, len(n.Inputs))
		some := false
		for j, x := range n.Inputs {
			ts[j] = tan[x]
			some = some || ts[j] != nil
		}
		if !some {
			continue
		}
		if n.Outs != nil {
			if n.Prim.JVPN == nil {
				core.Panicf(n.Prim.Name, "no forward-mode (JVP) rule: JVP, Jacfwd and Hessian cannot differentiate through it")
			}
			touts := n.Prim.JVPN(n.Attrs, detachAll(n.Inputs), detachAll(ts), detachAll(n.Outs))
			for k, o := range n.Outs {
				if k < len(touts) && touts[k] != nil {
					checkTangent(n.Prim.Name, touts[k], o)
					tan[o] = touts[k]
				}
			}
			continue
		}
		var t *Tensor
		switch {
		case n.Prim == identity:
			t = ts[0]
		case n.Prim.JVP == nil:
			core.Panicf(n.Prim.Name, "no forward-mode (JVP) rule: JVP, Jacfwd and Hessian cannot differentiate through it")
		default:
			t = n.Prim.JVP(n.Attrs, detachAll(n.Inputs), detachAll(ts), detach(n.Out))
		}
		if t != nil {
			checkTangent(n.Prim.Name, t, n.Out)
			tan[n.Out] = t
		}
	}
	res := make([]*Tensor, len(l.outs))
	for i, o := range l.outs {
		if t := tan[o]; t != nil {
			res[i] = t
		} else {
			res[i] = ops.ZerosLike(o)
		}
	}
	return res
}

// checkTangent panics when a JVP rule returns a tangent whose shape or
// dtype is not its result's: a bug in the rule, named here rather than
// surfacing as a shape error somewhere downstream.
func checkTangent(op string, t, out *Tensor) {
	if !t.Shape().Equal(out.Shape()) || t.DType() != out.DType() {
		core.Panicf(op, "JVP rule returned a tangent %v %v for a result %v %v", t.Shape(), t.DType(), out.Shape(), out.DType())
	}
}

// JVPN is JVP for a function of several results given as a slice
// function, with tangents possibly nil; control-flow JVP rules use it on
// their bodies. It returns the results and their tangents.
func JVPN(f func([]*Tensor) []*Tensor, primals, tangents []*Tensor) (outs, touts []*Tensor) {
	lin, end := Linearize(f, primals, nil, anyTracked(tangents))
	defer end()
	return lin.outs, lin.Push(tangents)
}
