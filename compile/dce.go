package compile

import "github.com/sporeml/spore/graph"

// DCE removes values that no output or assignment needs. Impure ops (prints,
// random draws) are kept even when unused: removing them would change what
// the program does. Inputs always stay: they are the function's signature.
func DCE(g *graph.Graph) {
	live := make([]bool, g.NumIDs())
	var stack []*graph.Value
	mark := func(v *graph.Value) {
		if !live[v.ID] {
			live[v.ID] = true
			stack = append(stack, v)
		}
	}
	for _, o := range g.Outputs {
		mark(o)
	}
	for _, a := range g.Assigns {
		mark(a.Param)
		mark(a.Val)
	}
	for _, v := range g.Values {
		if v.Kind == graph.KindInput || (v.Kind == graph.KindOp && v.Prim.Traits.Impure) {
			mark(v)
		}
	}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, a := range v.Args {
			mark(a)
		}
	}
	kept := g.Values[:0]
	for _, v := range g.Values {
		if live[v.ID] {
			kept = append(kept, v)
		}
	}
	clear(g.Values[len(kept):])
	g.Values = kept
}
