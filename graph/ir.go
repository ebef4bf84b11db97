package graph

import (
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// Kind says where a Value's content comes from.
type Kind uint8

const (
	// KindInput is an argument of the traced function; Index says which.
	KindInput Kind = iota + 1
	// KindParam is a parameter captured by reference: its buffer is read
	// at run time, never copied into the graph.
	KindParam
	// KindConst is a concrete tensor baked into the graph (created inside
	// the traced function, or folded by a pass).
	KindConst
	// KindOp applies Prim to Args.
	KindOp
	// KindProj is result Index of the multi-result op Args[0].
	KindProj
)

// String returns the name printed in dumps and messages.
func (k Kind) String() string {
	switch k {
	case KindInput:
		return "input"
	case KindParam:
		return "param"
	case KindConst:
		return "const"
	case KindOp:
		return "op"
	case KindProj:
		return "proj"
	}
	return "?"
}

// Value is one SSA value: every value is defined once, by its Kind, and
// used by the Args of later values. IDs are dense within a Graph so that
// passes keep side tables in slices indexed by ID.
type Value struct {
	// ID is the value's index in Graph.Values after Renumber; passes that
	// add values give them fresh IDs past the end.
	ID int
	// Kind says what defines the value.
	Kind Kind
	// Prim is the primitive applied (KindOp only).
	Prim *core.Prim
	// Attrs are Prim's attributes; never mutated once set.
	Attrs any
	// Args are the operands (KindOp only), defined earlier in the graph.
	Args []*Value
	// Meta is the value's shape and dtype. A multi-result op (Prim.InferN)
	// has Metas instead, and its results are read through KindProj values.
	Meta  tensor.Meta
	Metas []tensor.Meta
	// Index is the argument position (KindInput) or result index (KindProj).
	Index int
	// Tensor holds the constant (KindConst) or the parameter (KindParam).
	Tensor *tensor.Tensor
	// Uses counts the Args slots, outputs and assignments that refer to
	// this value; maintained by Graph.CountUses.
	Uses int
	// Loc is the user's source line ("file:line") that applied the op,
	// recorded when it was traced ("" for values a pass made). An error
	// the op's kernel raises at run time names this line, as PyNative
	// mode names the line that ran the op.
	Loc string
	// Regions are the bodies of a control-flow op (Cond, While, Scan):
	// graphs nested in this one, whose inputs are bound to Args. Passes
	// optimise them like the enclosing graph, and exec plans each into a
	// sub-plan the op's kernel runs. Nil for every other value.
	Regions []*Region
}

// Assign is an in-place update performed when the graph runs: parameter
// Param (a KindParam value) receives Val once every read of it is done.
type Assign struct {
	Param *Value
	Val   *Value
}

// Graph is a typed SSA DAG: Values in a topological order (every Arg
// precedes its user), the inputs, the outputs, and the parameter updates.
type Graph struct {
	// Name is the traced function's name, for dumps and errors.
	Name string
	// Values in topological order.
	Values []*Value
	// Inputs are the KindInput values in argument order.
	Inputs []*Value
	// Outputs are the results, in order; a value may appear more than once.
	Outputs []*Value
	// Assigns are the parameter updates, in program order.
	Assigns []Assign
	nextID  int
}

// New returns an empty graph.
func New(name string) *Graph { return &Graph{Name: name} }

func (g *Graph) add(v *Value) *Value {
	v.ID = g.nextID
	g.nextID++
	g.Values = append(g.Values, v)
	return v
}

// Input appends a new function argument of the given meta.
func (g *Graph) Input(m tensor.Meta) *Value {
	v := g.add(&Value{Kind: KindInput, Meta: m, Index: len(g.Inputs)})
	g.Inputs = append(g.Inputs, v)
	return v
}

// Param appends a captured parameter.
func (g *Graph) Param(p *tensor.Tensor) *Value {
	return g.add(&Value{Kind: KindParam, Meta: tensor.Meta{Shape: p.Shape(), DType: p.DType()}, Tensor: p})
}

// Const appends a constant.
func (g *Graph) Const(t *tensor.Tensor) *Value {
	return g.add(&Value{Kind: KindConst, Meta: t.Meta(), Tensor: t})
}

// Op appends p applied to args, inferring its meta with p.Infer.
func (g *Graph) Op(p *core.Prim, attrs any, args ...*Value) *Value {
	return g.OpMeta(p, attrs, InferMeta(p, attrs, args), args...)
}

// OpMeta appends p applied to args with an already inferred meta.
func (g *Graph) OpMeta(p *core.Prim, attrs any, m tensor.Meta, args ...*Value) *Value {
	return g.add(&Value{Kind: KindOp, Prim: p, Attrs: attrs, Args: append([]*Value(nil), args...), Meta: m})
}

// OpN appends a multi-result op and one KindProj value per result, which
// it returns.
func (g *Graph) OpN(p *core.Prim, attrs any, ms []tensor.Meta, args ...*Value) []*Value {
	v := g.add(&Value{Kind: KindOp, Prim: p, Attrs: attrs, Args: append([]*Value(nil), args...), Metas: ms})
	out := make([]*Value, len(ms))
	for i, m := range ms {
		out[i] = g.add(&Value{Kind: KindProj, Args: []*Value{v}, Index: i, Meta: m})
	}
	return out
}

// IsMulti reports whether v is a multi-result op.
func (v *Value) IsMulti() bool { return v.Kind == KindOp && v.Prim.InferN != nil }

// InferMeta runs p's shape inference on values, through symbolic stand-ins
// (inference reads only shapes and dtypes).
func InferMeta(p *core.Prim, attrs any, args []*Value) tensor.Meta {
	in := make([]*tensor.Tensor, len(args))
	for i, a := range args {
		in[i] = core.NewSymbolic(nil, a.ID, a.Meta)
	}
	return p.Meta(attrs, in)
}

// NumIDs is one past the largest ID handed out: the length side tables
// indexed by Value.ID need.
func (g *Graph) NumIDs() int { return g.nextID }

// Renumber gives the values dense IDs 0..len(Values)-1 in their order.
func (g *Graph) Renumber() {
	for i, v := range g.Values {
		v.ID = i
	}
	g.nextID = len(g.Values)
}

// CountUses recomputes every value's Uses.
func (g *Graph) CountUses() {
	for _, v := range g.Values {
		v.Uses = 0
	}
	for _, v := range g.Values {
		for _, a := range v.Args {
			a.Uses++
		}
	}
	for _, o := range g.Outputs {
		o.Uses++
	}
	for _, a := range g.Assigns {
		a.Param.Uses++
		a.Val.Uses++
	}
}

// Replace redirects every use of old (args, outputs, assigned values) to
// nv. The old value stays in Values until dead-code elimination.
func (g *Graph) Replace(old, nv *Value) {
	if old == nv {
		return
	}
	for _, v := range g.Values {
		for i, a := range v.Args {
			if a == old {
				v.Args[i] = nv
			}
		}
	}
	for i, o := range g.Outputs {
		if o == old {
			g.Outputs[i] = nv
		}
	}
	for i := range g.Assigns {
		if g.Assigns[i].Val == old {
			g.Assigns[i].Val = nv
		}
	}
}

// InsertBefore moves the trailing value v (just appended) to sit right
// before position of anchor in Values, keeping a topological order when v's
// args all precede anchor.
func (g *Graph) InsertBefore(v, anchor *Value) {
	n := len(g.Values)
	if n == 0 || g.Values[n-1] != v {
		panic("graph: InsertBefore wants the value appended last")
	}
	pos := -1
	for i, x := range g.Values {
		if x == anchor {
			pos = i
			break
		}
	}
	if pos < 0 {
		panic("graph: InsertBefore: anchor not in graph")
	}
	copy(g.Values[pos+1:], g.Values[pos:n-1])
	g.Values[pos] = v
}

// Clone returns a deep copy of g's structure, regions included: new Values
// with the same prims, attributes, metas and tensors. Compilation rewrites
// a graph in place; control flow keeps a clone of each traced body to
// differentiate.
func (g *Graph) Clone() *Graph {
	c := &Graph{Name: g.Name, nextID: g.nextID}
	m := make(map[*Value]*Value, len(g.Values))
	for _, v := range g.Values {
		nv := *v
		nv.Regions = cloneRegions(v.Regions)
		nv.Args = make([]*Value, len(v.Args))
		for i, a := range v.Args {
			nv.Args[i] = m[a]
		}
		m[v] = &nv
		c.Values = append(c.Values, &nv)
	}
	for _, v := range g.Inputs {
		c.Inputs = append(c.Inputs, m[v])
	}
	for _, v := range g.Outputs {
		c.Outputs = append(c.Outputs, m[v])
	}
	for _, a := range g.Assigns {
		c.Assigns = append(c.Assigns, Assign{Param: m[a.Param], Val: m[a.Val]})
	}
	return c
}
