package graph

import (
	"fmt"
	"io"
	"strings"

	"github.com/sporeml/spore/tensor"
)

// TypeString formats a meta compactly, as f32[64,10].
func TypeString(m tensor.Meta) string {
	var b strings.Builder
	switch m.DType {
	case tensor.Float32:
		b.WriteString("f32")
	case tensor.Float64:
		b.WriteString("f64")
	case tensor.Int32:
		b.WriteString("i32")
	case tensor.Int64:
		b.WriteString("i64")
	case tensor.Bool:
		b.WriteString("bool")
	case tensor.Uint8:
		b.WriteString("u8")
	default:
		b.WriteString(m.DType.String())
	}
	b.WriteByte('[')
	for i, d := range m.Shape {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, d)
	}
	b.WriteByte(']')
	return b.String()
}

// String prints the graph as text, one value per line, in the spirit of a
// jaxpr:
//
//	func f(%0: f32[64,784]) -> (f32[64,10])
//	  %1 = param "dense.weight" f32[784,512]
//	  %2 = MatMul(%0, %1) {ta=false tb=false} : f32[64,512]
//	  return %2
func (g *Graph) String() string {
	var b strings.Builder
	g.Write(&b)
	return b.String()
}

// Write prints the graph's text form to w. The regions of a control-flow
// value follow it as indented blocks, each headed by what its inputs are
// bound to:
//
//	%5 = Scan(%1, %0, %3) {body=f.scan.body length=4 reverse=false} : (f32[3], f32[4,3])
//	  region 0 loop lead 2 binds (%1, %0, %3):
//	    func f.scan.body(%0: f32[3], %1: f32[3], %2: f32[3]) -> (f32[3], f32[3])
//	      %3 = Add(%0, %1) : f32[3]
//	      return %3, %3
func (g *Graph) Write(w io.Writer) { g.write(w, "") }

func (g *Graph) write(w io.Writer, indent string) {
	var ins []string
	for _, v := range g.Inputs {
		ins = append(ins, fmt.Sprintf("%%%d: %s", v.ID, TypeString(v.Meta)))
	}
	var outs []string
	for _, v := range g.Outputs {
		outs = append(outs, TypeString(v.Meta))
	}
	fmt.Fprintf(w, "%sfunc %s(%s) -> (%s)\n", indent, g.Name, strings.Join(ins, ", "), strings.Join(outs, ", "))
	for _, v := range g.Values {
		if v.Kind == KindInput {
			continue
		}
		fmt.Fprintf(w, "%s  %s\n", indent, v.LongString())
		for k, r := range v.Regions {
			fmt.Fprintf(w, "%s    region %d%s binds (%s):\n", indent, k, regionTags(r), bindList(v, r))
			r.Graph.write(w, indent+"      ")
		}
	}
	for _, a := range g.Assigns {
		fmt.Fprintf(w, "%s  assign %%%d <- %%%d\n", indent, a.Param.ID, a.Val.ID)
	}
	var rets []string
	for _, v := range g.Outputs {
		rets = append(rets, fmt.Sprintf("%%%d", v.ID))
	}
	fmt.Fprintf(w, "%s  return %s\n", indent, strings.Join(rets, ", "))
}

// regionTags describes a region's kind for dumps: " loop" when it repeats,
// and how many leading inputs its op feeds.
func regionTags(r *Region) string {
	s := ""
	if r.Loop {
		s += " loop"
	}
	if r.Lead > 0 {
		s += fmt.Sprintf(" lead %d", r.Lead)
	}
	return s
}

// bindList names the owner's args each region input is bound to.
func bindList(v *Value, r *Region) string {
	bs := make([]string, len(r.Binds))
	for i, b := range r.Binds {
		bs[i] = fmt.Sprintf("%%%d", v.Args[b].ID)
	}
	return strings.Join(bs, ", ")
}

// LongString formats one value's definition.
func (v *Value) LongString() string {
	switch v.Kind {
	case KindInput:
		return fmt.Sprintf("%%%d = input %d : %s", v.ID, v.Index, TypeString(v.Meta))
	case KindParam:
		return fmt.Sprintf("%%%d = param %q : %s", v.ID, v.Tensor.Name(), TypeString(v.Meta))
	case KindConst:
		return fmt.Sprintf("%%%d = const %s : %s", v.ID, constSummary(v.Tensor), TypeString(v.Meta))
	case KindProj:
		return fmt.Sprintf("%%%d = proj %d of %%%d : %s", v.ID, v.Index, v.Args[0].ID, TypeString(v.Meta))
	}
	args := make([]string, len(v.Args))
	for i, a := range v.Args {
		args[i] = fmt.Sprintf("%%%d", a.ID)
	}
	attrs := ""
	if v.Attrs != nil {
		attrs = fmt.Sprintf(" {%v}", v.Attrs)
	}
	typ := TypeString(v.Meta)
	if v.IsMulti() {
		ts := make([]string, len(v.Metas))
		for i, m := range v.Metas {
			ts[i] = TypeString(m)
		}
		typ = "(" + strings.Join(ts, ", ") + ")"
	}
	return fmt.Sprintf("%%%d = %s(%s)%s : %s", v.ID, v.Prim.Name, strings.Join(args, ", "), attrs, typ)
}

// constSummary shows small constants in full and large ones by size.
func constSummary(t *tensor.Tensor) string {
	if t.Size() <= 4 {
		return fmt.Sprint(t.Float64s())
	}
	return fmt.Sprintf("<%d elements>", t.Size())
}

// WriteDOT writes the graph in Graphviz's DOT language: one node per value,
// edges from operands to users, inputs and outputs highlighted. Each
// region is a cluster drawn beside its control-flow node, with dashed
// edges from the bound arguments to the body's inputs and from the body's
// results back to the node.
func (g *Graph) WriteDOT(w io.Writer) {
	fmt.Fprintf(w, "digraph %q {\n  rankdir=TB;\n  compound=true;\n  node [shape=box, fontname=\"monospace\", fontsize=10];\n", g.Name)
	g.writeDOT(w, "v", "  ")
	fmt.Fprintln(w, "}")
}

// writeDOT writes g's nodes and edges; node names start with prefix,
// which is unique to each (nested) graph, as value IDs are not.
func (g *Graph) writeDOT(w io.Writer, prefix, indent string) {
	out := map[*Value]bool{}
	for _, o := range g.Outputs {
		out[o] = true
	}
	for _, v := range g.Values {
		label := ""
		style := ""
		switch v.Kind {
		case KindInput:
			label = fmt.Sprintf("input %d", v.Index)
			style = `, style=filled, fillcolor="#cfe8ff"`
		case KindParam:
			label = fmt.Sprintf("param %s", v.Tensor.Name())
			style = `, style=filled, fillcolor="#fff2cc"`
		case KindConst:
			label = "const " + constSummary(v.Tensor)
			style = `, style=filled, fillcolor="#eeeeee"`
		case KindProj:
			label = fmt.Sprintf("proj %d", v.Index)
		default:
			label = v.Prim.Name
		}
		if out[v] {
			style += `, penwidth=2`
		}
		fmt.Fprintf(w, "%s%s%d [label=%q%s];\n", indent, prefix, v.ID, fmt.Sprintf("%%%d %s\n%s", v.ID, label, TypeString(v.Meta)), style)
		for _, a := range v.Args {
			fmt.Fprintf(w, "%s%s%d -> %s%d;\n", indent, prefix, a.ID, prefix, v.ID)
		}
		for k, r := range v.Regions {
			sub := fmt.Sprintf("%s%d_%d_", prefix, v.ID, k)
			fmt.Fprintf(w, "%ssubgraph cluster_%s {\n", indent, strings.TrimSuffix(sub, "_"))
			fmt.Fprintf(w, "%s  label=%q;\n%s  style=rounded;\n", indent, fmt.Sprintf("region %d of %%%d %s: %s%s", k, v.ID, v.Prim.Name, r.Graph.Name, regionTags(r)), indent)
			r.Graph.writeDOT(w, sub, indent+"  ")
			fmt.Fprintf(w, "%s}\n", indent)
			for i, b := range r.Binds {
				fmt.Fprintf(w, "%s%s%d -> %s%d [style=dashed];\n", indent, prefix, v.Args[b].ID, sub, r.Graph.Inputs[i].ID)
			}
			for _, o := range r.Graph.Outputs {
				fmt.Fprintf(w, "%s%s%d -> %s%d [style=dashed];\n", indent, sub, o.ID, prefix, v.ID)
			}
		}
	}
	for _, a := range g.Assigns {
		fmt.Fprintf(w, "%s%s%d -> %s%d [style=dashed, label=\"assign\"];\n", indent, prefix, a.Val.ID, prefix, a.Param.ID)
	}
}
