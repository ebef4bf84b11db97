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
	vals := make(map[*Value]*tensor.Tensor, len(g.Values))
	multi := map[*Value][]*tensor.Tensor{}
	for _, v := range g.Values {
		switch v.Kind {
		case KindInput:
			vals[v] = inputs[v.Index]
		case KindParam:
			vals[v] = v.Tensor
			if sub, ok := params[v.Tensor]; ok {
				vals[v] = sub
			}
		case KindConst:
			vals[v] = v.Tensor
		case KindProj:
			vals[v] = multi[v.Args[0]][v.Index]
		case KindOp:
			args := make([]*tensor.Tensor, len(v.Args))
			for i, a := range v.Args {
				args[i] = vals[a]
			}
			if v.IsMulti() {
				multi[v] = core.ApplyN(v.Prim, v.Attrs, args...)
				if len(multi[v]) > 0 {
					keepLoc(multi[v][0], v.Loc, true)
				}
			} else {
				vals[v] = core.Apply(v.Prim, v.Attrs, args...)
				keepLoc(vals[v], v.Loc, false)
			}
		}
	}
	outs := make([]*tensor.Tensor, len(g.Outputs))
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
