package graph

import "fmt"

// Region is a body of a control-flow value (Cond's branches, While's
// condition and body, Scan's body): a graph of its own, nested in the
// enclosing graph through the Value that owns it. The body reads nothing
// of the enclosing graph implicitly: every outer value it uses is an
// explicit input, bound to one of the owner's Args, so that a pass (or an
// exporter) sees every dependency of the control-flow value in its Args.
//
// Parameters are the exception that proves the rule: a body reads a
// parameter through a KindParam value of its own (by reference, like any
// graph), and the owner lists the parameter among its Args as well, so
// that orderings against assignments and gradients see the read.
type Region struct {
	// Graph is the body. Its Inputs are bound as Binds says.
	Graph *Graph
	// Binds[i] is the position in the owner's Args of the value that
	// input i of Graph reads. For the first Lead inputs, the owning op
	// decides what the bound arg means (a loop carry's initial value, the
	// sequence a Scan slices); the others are captures, which the body
	// reads unchanged every time it runs.
	Binds []int
	// Lead counts the leading inputs the owning op feeds itself; the
	// inputs past Lead are captures.
	Lead int
	// Loop reports that the body runs many times per run of its owner
	// (While, Scan): work in it that depends only on captures is loop
	// invariant and may be hoisted out.
	Loop bool
}

// RegionSource is implemented by the attributes of a control-flow
// primitive. When such an op is traced, the tracer gives the new value a
// copy of these regions: the attributes keep the bodies as traced (for
// differentiation and replay), and every graph that holds the op owns
// bodies it may rewrite.
type RegionSource interface {
	Regions() []*Region
}

// Clone returns a deep copy of the region.
func (r *Region) Clone() *Region {
	return &Region{Graph: r.Graph.Clone(), Binds: append([]int(nil), r.Binds...), Lead: r.Lead, Loop: r.Loop}
}

func cloneRegions(rs []*Region) []*Region {
	if rs == nil {
		return nil
	}
	out := make([]*Region, len(rs))
	for i, r := range rs {
		out[i] = r.Clone()
	}
	return out
}

// AddCapture gives r's body a new captured input, of the meta of the
// owner's argument at position arg and bound to it, and returns it. The
// input is placed first in the body's Values, so any value may use it.
func (r *Region) AddCapture(owner *Value, arg int) *Value {
	g := r.Graph
	v := g.Input(owner.Args[arg].Meta)
	copy(g.Values[1:], g.Values[:len(g.Values)-1])
	g.Values[0] = v
	r.Binds = append(r.Binds, arg)
	return v
}

// RemoveInput deletes the body's input i, which must be a capture (i >=
// Lead) that nothing uses, and its binding. The owner's argument stays.
func (r *Region) RemoveInput(i int) {
	g := r.Graph
	in := g.Inputs[i]
	for j, v := range g.Values {
		if v == in {
			g.Values = append(g.Values[:j], g.Values[j+1:]...)
			break
		}
	}
	g.Inputs = append(g.Inputs[:i], g.Inputs[i+1:]...)
	for j := i; j < len(g.Inputs); j++ {
		g.Inputs[j].Index = j
	}
	r.Binds = append(r.Binds[:i], r.Binds[i+1:]...)
}

// verifyRegions checks the regions of v: bindings within v's Args and of
// the bound values' types (captures exactly; the op's own leading inputs
// by dtype, since a Scan reads slices of what it is bound to), and each
// body recursively.
func verifyRegions(g *Graph, v *Value) error {
	for k, r := range v.Regions {
		if r == nil || r.Graph == nil {
			return fmt.Errorf("graph %s: %%%d = %s: region %d has no graph", g.Name, v.ID, v.Prim.Name, k)
		}
		sub := r.Graph
		if len(r.Binds) != len(sub.Inputs) {
			return fmt.Errorf("graph %s: %%%d = %s: region %d has %d inputs but %d bindings", g.Name, v.ID, v.Prim.Name, k, len(sub.Inputs), len(r.Binds))
		}
		if r.Lead < 0 || r.Lead > len(r.Binds) {
			return fmt.Errorf("graph %s: %%%d = %s: region %d leads with %d of %d inputs", g.Name, v.ID, v.Prim.Name, k, r.Lead, len(r.Binds))
		}
		for i, b := range r.Binds {
			if b < 0 || b >= len(v.Args) {
				return fmt.Errorf("graph %s: %%%d = %s: region %d input %d is bound to argument %d of %d", g.Name, v.ID, v.Prim.Name, k, i, b, len(v.Args))
			}
			in, a := sub.Inputs[i].Meta, v.Args[b].Meta
			if in.DType != a.DType || (i >= r.Lead && !in.Shape.Equal(a.Shape)) {
				return fmt.Errorf("graph %s: %%%d = %s: region %d input %d is %s but is bound to %%%d : %s", g.Name, v.ID, v.Prim.Name, k, i, TypeString(in), v.Args[b].ID, TypeString(a))
			}
		}
		if err := Verify(sub); err != nil {
			return fmt.Errorf("in region %d of %%%d = %s: %w", k, v.ID, v.Prim.Name, err)
		}
	}
	return nil
}

// Walk visits every value of g and of the regions nested in it, in
// program order and depth first: a control-flow value is visited, then
// the values of each of its regions, then the values after it. fn gets
// the value, the graph that holds it and the control-flow value owning
// that graph (nil at the top level). A non-nil error from fn stops the
// walk and is returned.
//
// Walk is the one traversal for code that must see a whole program — an
// exporter turning Cond/While/Scan into ONNX If/Loop, a distribution pass
// looking for collectives inside loops, a statistic over every op — so
// that none of them can forget the bodies.
func Walk(g *Graph, fn func(v *Value, in *Graph, owner *Value) error) error {
	return walk(g, nil, fn)
}

func walk(g *Graph, owner *Value, fn func(v *Value, in *Graph, owner *Value) error) error {
	for _, v := range g.Values {
		if err := fn(v, g, owner); err != nil {
			return err
		}
		for _, r := range v.Regions {
			if err := walk(r.Graph, v, fn); err != nil {
				return err
			}
		}
	}
	return nil
}
