package graph

import (
	"fmt"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Doc is a graph as data: the values the text form prints, one DocNode
// each, for tools that draw graphs or diff them pass by pass (it marshals
// to the JSON of a compile record). Node IDs are the value IDs the text
// form prints, so a node and its line can be matched, and a value that
// survives a pass keeps its ID, so two Docs of one compilation can be
// diffed node by node.
//
// Control-flow bodies are nested: a Cond, While or Scan node lists its
// regions, each holding a Doc of its own whose IDs are those of the body
// graph (as in the text form, where a region's values are numbered
// within the region), with Binds naming the owner's operands that the
// body's inputs read.
type Doc struct {
	// Nodes are the values in program order, inputs included.
	Nodes []DocNode `json:"nodes"`
	// Inputs are the IDs of the input nodes, in argument order.
	Inputs []int `json:"inputs,omitempty"`
	// Outputs are the IDs of the results, in order.
	Outputs []int `json:"outputs"`
	// Assigns are the parameter updates performed when the graph runs.
	Assigns []DocAssign `json:"assigns,omitempty"`
}

// DocAssign is one parameter update: node Param receives node Value.
type DocAssign struct {
	Param int `json:"param"`
	Value int `json:"value"`
}

// DocNode is one value of a Doc.
type DocNode struct {
	// ID is the value's ID, as the text form prints it (%ID).
	ID int `json:"id"`
	// Op is the primitive's name for an op ("MatMul", "Fused[Add,ReLU]"),
	// and the kind for other values ("input", "param", "const", "proj").
	Op string `json:"op"`
	// Kind is one of input, param, const, op, fused (an op a fusion pass
	// made, see Fused) and proj (one result of a multi-result op).
	Kind string `json:"kind"`
	// Inputs are the IDs of the operands, in order.
	Inputs []int `json:"inputs"`
	// Shape and DType are the result's, the dtype in lower case as
	// "float32"; a multi-result op has none (its proj nodes carry them) and lists its result types in Attrs["types"].
	Shape []int  `json:"shape"`
	DType string `json:"dtype"`
	// Attrs are the attributes as strings: one entry per exported field of
	// an attribute struct (named in lower camel case, as transB), plus
	// "text", the attributes as the text form prints them. An input
	// has "index", a parameter "name", a constant "value", a proj "index".
	Attrs map[string]string `json:"attrs,omitempty"`
	// Pass names the stage that made the value, or last rewrote it in
	// place (gave it another primitive or other attributes, as the
	// fusions do to the op they keep): "trace" for what tracing recorded,
	// else a compiler pass. Redirecting a value's operands (CSE) does not
	// count: the value itself is unchanged.
	Pass string `json:"pass"`
	// Fused lists the primitives a fused op absorbed, in program order;
	// empty for every other node.
	Fused []string `json:"fused"`
	// Source is the user's source line that applied the op ("file:line"),
	// when the tracer recorded one.
	Source string `json:"source,omitempty"`
	// Regions are the bodies of a control-flow op.
	Regions []DocRegion `json:"regions,omitempty"`
}

// DocRegion is one body of a control-flow node (see Region).
type DocRegion struct {
	// Name is the body graph's name.
	Name string `json:"name"`
	// Binds[i] is the ID, in the enclosing Doc, of the operand that the
	// body's input i reads.
	Binds []int `json:"binds"`
	// Lead counts the leading inputs the owning op feeds itself; Loop says
	// the body runs many times per run of its owner.
	Lead int  `json:"lead"`
	Loop bool `json:"loop"`
	// Graph is the body.
	Graph Doc `json:"graph"`
}

// Provenance says, for one value, which stage made it (see DocNode.Pass)
// and which primitives it absorbed if a fusion made it. A nil Provenance
// leaves both empty.
type Provenance func(v *Value) (pass string, fused []string)

// maxAttrLen bounds one attribute string: a Doc describes a graph, it
// does not carry its constants.
const maxAttrLen = 200

// noFused is the Fused list of unfused nodes: empty rather than nil, so
// that the JSON holds [] as for a fused node's list.
var noFused = []string{}

// Doc returns g as data, with prov naming each value's stage and fused
// primitives (for regions too).
func (g *Graph) Doc(prov Provenance) Doc {
	d := Doc{Nodes: make([]DocNode, 0, len(g.Values)), Outputs: ids(g.Outputs), Inputs: ids(g.Inputs)}
	for _, a := range g.Assigns {
		d.Assigns = append(d.Assigns, DocAssign{Param: a.Param.ID, Value: a.Val.ID})
	}
	for _, v := range g.Values {
		d.Nodes = append(d.Nodes, v.docNode(prov))
	}
	return d
}

func ids(vs []*Value) []int {
	out := make([]int, len(vs))
	for i, v := range vs {
		out[i] = v.ID
	}
	return out
}

func (v *Value) docNode(prov Provenance) DocNode {
	n := DocNode{ID: v.ID, Kind: v.Kind.String(), Op: v.Kind.String(), Inputs: ids(v.Args), Fused: noFused, Source: v.Loc}
	if !v.IsMulti() {
		n.Shape = append([]int{}, v.Meta.Shape...)
		n.DType = strings.ToLower(v.Meta.DType.String())
	}
	if prov != nil {
		pass, fused := prov(v)
		n.Pass = pass
		if len(fused) > 0 {
			n.Fused = fused
			n.Kind = "fused"
		}
	}
	switch v.Kind {
	case KindInput, KindProj:
		n.Attrs = map[string]string{"index": fmt.Sprint(v.Index)}
	case KindParam:
		n.Attrs = map[string]string{"name": v.Tensor.Name()}
	case KindConst:
		n.Attrs = map[string]string{"value": constSummary(v.Tensor)}
	case KindOp:
		n.Op = v.Prim.Name
		n.Attrs = attrStrings(v.Attrs)
		if v.IsMulti() {
			ts := make([]string, len(v.Metas))
			for i, m := range v.Metas {
				ts[i] = TypeString(m)
			}
			if n.Attrs == nil {
				n.Attrs = map[string]string{}
			}
			n.Attrs["types"] = "(" + strings.Join(ts, ", ") + ")"
		}
	}
	for _, r := range v.Regions {
		binds := make([]int, len(r.Binds))
		for i, b := range r.Binds {
			binds[i] = v.Args[b].ID
		}
		n.Regions = append(n.Regions, DocRegion{Name: r.Graph.Name, Binds: binds, Lead: r.Lead, Loop: r.Loop, Graph: r.Graph.Doc(prov)})
	}
	return n
}

// attrStrings formats attributes: the printable exported fields of an
// attribute struct by name, a printable non-struct value as "value", and
// the whole as the text form prints it. Fields that hold graphs,
// functions or pointers (a control-flow op's bodies, a fused program) are
// left to "text": they are structure, not settings.
func attrStrings(a any) map[string]string {
	if a == nil {
		return nil
	}
	m := map[string]string{"text": clip(fmt.Sprint(a))}
	rv := reflect.ValueOf(a)
	for rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv = rv.Elem()
	}
	switch {
	case rv.Kind() == reflect.Struct:
		t := rv.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || !printable(f.Type, 0) {
				continue
			}
			m[lowerFirst(f.Name)] = clip(fmt.Sprint(rv.Field(i).Interface()))
		}
	case rv.IsValid() && printable(rv.Type(), 0):
		m["value"] = m["text"]
	}
	return m
}

// printable reports whether values of type t print as settings: basic
// values and slices, arrays and structs of them.
func printable(t reflect.Type, depth int) bool {
	if depth > 4 {
		return false
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.String:
		return true
	case reflect.Slice, reflect.Array:
		return printable(t.Elem(), depth+1)
	case reflect.Struct:
		for i := range t.NumField() {
			if !printable(t.Field(i).Type, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

func lowerFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToLower(r)) + s[n:]
}

func clip(s string) string {
	if len(s) <= maxAttrLen {
		return s
	}
	cut := maxAttrLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
