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

// Write prints the graph's text form to w.
func (g *Graph) Write(w io.Writer) {
	var ins []string
	for _, v := range g.Inputs {
		ins = append(ins, fmt.Sprintf("%%%d: %s", v.ID, TypeString(v.Meta)))
	}
	var outs []string
	for _, v := range g.Outputs {
		outs = append(outs, TypeString(v.Meta))
	}
	fmt.Fprintf(w, "func %s(%s) -> (%s)\n", g.Name, strings.Join(ins, ", "), strings.Join(outs, ", "))
	for _, v := range g.Values {
		if v.Kind == KindInput {
			continue
		}
		fmt.Fprintf(w, "  %s\n", v.LongString())
		if sg, ok := v.Attrs.(SubGrapher); ok {
			for _, sub := range sg.SubGraphs() {
				var b strings.Builder
				sub.Write(&b)
				for _, line := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
					fmt.Fprintf(w, "    | %s\n", line)
				}
			}
		}
	}
	for _, a := range g.Assigns {
		fmt.Fprintf(w, "  assign %%%d <- %%%d\n", a.Param.ID, a.Val.ID)
	}
	var rets []string
	for _, v := range g.Outputs {
		rets = append(rets, fmt.Sprintf("%%%d", v.ID))
	}
	fmt.Fprintf(w, "  return %s\n", strings.Join(rets, ", "))
}

// SubGrapher is implemented by the attributes of control-flow ops, whose
// bodies the printer shows nested under the op.
type SubGrapher interface {
	SubGraphs() []*Graph
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
// edges from operands to users, inputs and outputs highlighted.
func (g *Graph) WriteDOT(w io.Writer) {
	fmt.Fprintf(w, "digraph %q {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\", fontsize=10];\n", g.Name)
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
		fmt.Fprintf(w, "  v%d [label=%q%s];\n", v.ID, fmt.Sprintf("%%%d %s\n%s", v.ID, label, TypeString(v.Meta)), style)
		for _, a := range v.Args {
			fmt.Fprintf(w, "  v%d -> v%d;\n", a.ID, v.ID)
		}
	}
	for _, a := range g.Assigns {
		fmt.Fprintf(w, "  v%d -> v%d [style=dashed, label=\"assign\"];\n", a.Val.ID, a.Param.ID)
	}
	fmt.Fprintln(w, "}")
}
