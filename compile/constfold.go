package compile

import (
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// maxFoldSize bounds the constants folding creates (in elements): past it a
// folded constant costs more memory in every compiled plan than the op
// costs to run.
const maxFoldSize = 1 << 20

// ConstFold evaluates at compile time every pure op whose arguments are all
// constants, turning it into a constant. Parameters are never constants:
// their values change between runs. The op is rewritten in place (it keeps
// its ID and position), so nothing that uses it needs redirecting.
//
// Ops that would expand their input (BroadcastTo of a scalar, say) are left
// alone: a broadcast is cheaper to recompute than to store, and a scalar
// operand is what simplification and loop fusion look for.
func ConstFold(g *graph.Graph) {
	for _, v := range g.Values {
		if !plainOp(v) || len(v.Args) == 0 {
			continue
		}
		biggest := 0
		allConst := true
		for _, a := range v.Args {
			if a.Kind != graph.KindConst {
				allConst = false
				break
			}
			biggest = max(biggest, a.Meta.Shape.Size())
		}
		n := v.Meta.Shape.Size()
		if !allConst || n > maxFoldSize || (n > biggest && n > maxCSEConst) {
			continue
		}
		if t := evalConst(v); t != nil {
			v.Kind = graph.KindConst
			v.Tensor = t
			v.Prim, v.Attrs, v.Args = nil, nil, nil
		}
	}
}

// evalConst runs v's kernel on its constant arguments, returning nil if the
// kernel panics or there is none: the op then stays in the graph, where it
// will report its error with the same message eager mode gives.
func evalConst(v *graph.Value) (t *tensor.Tensor) {
	k, err := v.Prim.KernelForKey(kernelKey(v), core.CPU)
	if err != nil {
		return nil
	}
	defer func() {
		if recover() != nil {
			t = nil
		}
	}()
	in := make([]*tensor.Tensor, len(v.Args))
	for i, a := range v.Args {
		in[i] = a.Tensor
	}
	out := core.NewOf(tensor.Meta{Shape: v.Meta.Shape.Clone(), DType: v.Meta.DType})
	k(v.Attrs, in, out)
	return out
}
