package compile

import (
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/tensor"
)

// Hoist moves loop-invariant work out of the bodies of loops (While,
// Scan): an op in a loop body whose arguments are all captured values,
// constants, parameters or other hoisted ops computes the same result on
// every iteration, so it moves to the enclosing graph, right before the
// loop, and the body reads its result as a new captured input. A MatMul of
// two captured matrices then runs once per call instead of once per step.
//
// Only pure, single-result ops without regions of their own move, and only
// those whose arguments and result are floating point: a loop may run zero
// times, and a hoisted op must then not raise an error the loop would not
// have raised (floating-point kernels do not fail on their data; integer
// division and indexing can). Bodies that assign parameters are left
// alone. Afterwards each body drops the captured inputs it no longer reads.
func Hoist(g *graph.Graph) {
	var owners []*graph.Value
	for _, v := range g.Values {
		if len(v.Regions) > 0 {
			owners = append(owners, v)
		}
	}
	for _, v := range owners {
		for _, r := range v.Regions {
			if r.Loop && len(r.Graph.Assigns) == 0 {
				hoistFrom(g, v, r)
			}
			pruneCaptures(r)
		}
	}
}

// hoistable reports whether a body value may be computed outside the loop,
// given which of its arguments are invariant.
func hoistable(v *graph.Value, inv map[*graph.Value]bool) bool {
	if v.Kind != graph.KindOp || v.IsMulti() || len(v.Regions) > 0 || v.Prim.Traits.Impure || !v.Meta.DType.IsFloat() {
		return false
	}
	for _, a := range v.Args {
		if !inv[a] || !a.Meta.DType.IsFloat() {
			return false
		}
	}
	return true
}

// hoistFrom moves the invariant ops of owner's loop region r into g.
func hoistFrom(g *graph.Graph, owner *graph.Value, r *graph.Region) {
	body := r.Graph
	// outer maps a body value to the enclosing graph's value that stands
	// for it; inv marks the invariant body values.
	outer := map[*graph.Value]*graph.Value{}
	inv := map[*graph.Value]bool{}
	for i := r.Lead; i < len(body.Inputs); i++ {
		outer[body.Inputs[i]] = owner.Args[r.Binds[i]]
		inv[body.Inputs[i]] = true
	}
	var moved []*graph.Value
	for _, v := range body.Values {
		switch {
		case v.Kind == graph.KindConst || v.Kind == graph.KindParam:
			inv[v] = true
		case hoistable(v, inv):
			inv[v] = true
			moved = append(moved, v)
		}
	}
	if len(moved) == 0 {
		return
	}
	params := map[*tensor.Tensor]*graph.Value{}
	for _, v := range g.Values {
		if v.Kind == graph.KindParam {
			params[v.Tensor] = v
		}
	}
	// outerOf returns (making if need be) the enclosing graph's value for
	// an invariant body value that is not itself moved.
	var outerOf func(a *graph.Value) *graph.Value
	outerOf = func(a *graph.Value) *graph.Value {
		if o, ok := outer[a]; ok {
			return o
		}
		var o *graph.Value
		switch a.Kind {
		case graph.KindConst:
			o = g.Const(a.Tensor)
		case graph.KindParam:
			if p, ok := params[a.Tensor]; ok {
				outer[a] = p
				return p
			}
			o = g.Param(a.Tensor)
			params[a.Tensor] = o
		default:
			panic("compile: hoisting reads a body value that is not invariant")
		}
		g.InsertBefore(o, owner)
		outer[a] = o
		return o
	}
	isMoved := map[*graph.Value]bool{}
	for _, v := range moved {
		args := make([]*graph.Value, len(v.Args))
		for i, a := range v.Args {
			args[i] = outerOf(a)
		}
		o := g.OpMeta(v.Prim, v.Attrs, v.Meta, args...)
		o.Loc = v.Loc
		g.InsertBefore(o, owner)
		outer[v] = o
		isMoved[v] = true
	}
	// The body reads each moved value still used inside it through a new
	// captured input.
	capture := map[*graph.Value]*graph.Value{}
	captureOf := func(v *graph.Value) *graph.Value {
		if c, ok := capture[v]; ok {
			return c
		}
		owner.Args = append(owner.Args, outer[v])
		c := r.AddCapture(owner, len(owner.Args)-1)
		capture[v] = c
		return c
	}
	for _, v := range body.Values {
		if isMoved[v] {
			continue
		}
		for i, a := range v.Args {
			if isMoved[a] {
				v.Args[i] = captureOf(a)
			}
		}
	}
	for i, o := range body.Outputs {
		if isMoved[o] {
			body.Outputs[i] = captureOf(o)
		}
	}
	kept := body.Values[:0]
	for _, v := range body.Values {
		if !isMoved[v] {
			kept = append(kept, v)
		}
	}
	clear(body.Values[len(kept):])
	body.Values = kept
	body.CountUses()
	g.CountUses()
}

// pruneCaptures drops the captured inputs of r's body that nothing reads
// (after hoisting, folding or dead-code elimination inside it), so the
// sub-plan binds only what the body uses.
func pruneCaptures(r *graph.Region) {
	body := r.Graph
	body.CountUses()
	for i := len(body.Inputs) - 1; i >= r.Lead; i-- {
		if body.Inputs[i].Uses == 0 {
			r.RemoveInput(i)
		}
	}
}
