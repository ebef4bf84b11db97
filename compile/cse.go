package compile

import (
	"fmt"
	"strings"

	"github.com/sporeml/spore/graph"
)

// maxCSEConst is the largest constant (in elements) CSE compares by value:
// small constants (scalars, shapes, biases of toy layers) are what traced
// code creates over and over, and comparing big ones would cost more than
// it saves.
const maxCSEConst = 64

// CSE eliminates common subexpressions: an op applying the same primitive
// to the same arguments with equal attributes as an earlier op is replaced
// by that op, and identical small constants are merged. The arguments of a
// commutative primitive are compared as a set, so Add(x, y) and Add(y, x)
// merge. Impure ops (random draws, prints) are never merged: two draws
// must differ. Attributes compare by type and printed form, which every
// attribute type of package ops prints completely.
func CSE(g *graph.Graph) {
	r := newRewriter(g)
	seen := map[string]*graph.Value{}
	var key strings.Builder
	for _, v := range g.Values {
		r.fix(v)
		key.Reset()
		switch {
		case v.Kind == graph.KindConst && v.Tensor.Size() <= maxCSEConst:
			fmt.Fprintf(&key, "const %v %v %v", v.Meta.DType, v.Meta.Shape, v.Tensor.Data())
		case plainOp(v):
			args := v.Args
			if v.Prim.Traits.Commutative && len(args) == 2 && args[0].ID > args[1].ID {
				args = []*graph.Value{args[1], args[0]}
			}
			fmt.Fprintf(&key, "%p", v.Prim)
			for _, a := range args {
				fmt.Fprintf(&key, " %d", a.ID)
			}
			fmt.Fprintf(&key, " %T %v", v.Attrs, v.Attrs)
			fmt.Fprintf(&key, " %s", graph.TypeString(v.Meta))
		default:
			continue
		}
		k := key.String()
		if prev, ok := seen[k]; ok {
			r.set(v, prev)
			continue
		}
		seen[k] = v
	}
	r.finish(g)
}
