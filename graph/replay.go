package graph

import (
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// Replay evaluates g on inputs by applying each value's primitive through
// core.Apply, as if the traced function ran again: eagerly on concrete
// tensors, into a trace on symbolic ones, and on the autodiff tape when
// inputs are tracked. Control-flow gradients use it to differentiate a
// body that was traced once, with its captured values as explicit inputs.
// Parameters and constants are read from the graph.
func Replay(g *Graph, inputs []*tensor.Tensor) []*tensor.Tensor {
	return ReplayWith(g, inputs, nil)
}

// ReplayWith is Replay reading the parameters listed in params from the
// given tensors instead (gradients with respect to a parameter's value
// substitute a tracked stand-in for it).
func ReplayWith(g *Graph, inputs []*tensor.Tensor, params map[*tensor.Tensor]*tensor.Tensor) []*tensor.Tensor {
	return Evaluate(g, func(v *Value) *tensor.Tensor {
		switch v.Kind {
		case KindInput:
			return inputs[v.Index]
		case KindParam:
			if sub, ok := params[v.Tensor]; ok {
				return sub
			}
		}
		return v.Tensor
	}, func(v *Value, args []*tensor.Tensor) *tensor.Tensor {
		t := core.Apply(v.Prim, v.Attrs, args...)
		keepLoc(t, v.Loc, false)
		return t
	}, func(v *Value, args []*tensor.Tensor) []*tensor.Tensor {
		ts := core.ApplyN(v.Prim, v.Attrs, args...)
		if len(ts) > 0 {
			keepLoc(ts[0], v.Loc, true)
		}
		return ts
	})
}

// Evaluate walks g's values in order and returns its outputs, computing
// each value as a T: leaf gives the inputs, parameters and constants, apply
// an op of one result from its arguments' values and applyN one of several
// (whose projections Evaluate picks out). Replay evaluates to tensors;
// Vmap evaluates to batched tensors with their batch axes.
func Evaluate[T any](g *Graph, leaf func(*Value) T, apply func(*Value, []T) T, applyN func(*Value, []T) []T) []T {
	vals := make(map[*Value]T, len(g.Values))
	multi := map[*Value][]T{}
	for _, v := range g.Values {
		switch v.Kind {
		case KindInput, KindParam, KindConst:
			vals[v] = leaf(v)
		case KindProj:
			vals[v] = multi[v.Args[0]][v.Index]
		case KindOp:
			args := make([]T, len(v.Args))
			for i, a := range v.Args {
				args[i] = vals[a]
			}
			if v.IsMulti() {
				multi[v] = applyN(v, args)
			} else {
				vals[v] = apply(v, args)
			}
		}
	}
	outs := make([]T, len(g.Outputs))
	for i, o := range g.Outputs {
		outs[i] = vals[o]
	}
	return outs
}

// Params returns the parameters g captures, in order of appearance.
func (g *Graph) Params() []*tensor.Tensor {
	var ps []*tensor.Tensor
	for _, v := range g.Values {
		if v.Kind == KindParam {
			ps = append(ps, v.Tensor)
		}
	}
	return ps
}

// keepLoc gives the op a replay traced (t's definition, or the multi-result
// op t is a projection of) the source line of the op it replays: the user
// wrote that line, not the replay.
func keepLoc(t *tensor.Tensor, loc string, proj bool) {
	tr, id, ok := core.SymbolOf(t)
	if !ok || loc == "" {
		return
	}
	if gt, ok := tr.(*Tracer); ok && id < len(gt.byID) && gt.byID[id] != nil {
		v := gt.byID[id]
		if proj && v.Kind == KindProj {
			v = v.Args[0]
		}
		v.Loc = loc
	}
}
