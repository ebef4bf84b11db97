package graph_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// customAttrs mixes settings with structure: only the settings become
// attribute strings.
type customAttrs struct {
	Size   int
	Names  []string
	Long   string
	Body   *graph.Graph
	Hook   func()
	hidden int
}

var customPrim = &core.Prim{Name: "Custom"}

func TestDocNodes(t *testing.T) {
	g, v := build()
	m := g.Input(tensor.Meta{Shape: tensor.Shape{2, 3}, DType: tensor.Float32})
	tr := g.Op(ops.TransposePrim, ops.PermAttr{Perm: []int{1, 0}}, m)
	mm := g.Op(ops.MatMulPrim, ops.MatMulAttrs{TransB: true}, m, m)
	long := strings.Repeat("é", 300)
	cu := g.OpMeta(customPrim, customAttrs{Size: 7, Names: []string{"a", "b"}, Long: long, Hook: func() {}, hidden: 1}, f32x3, v["x"])
	g.Outputs = append(g.Outputs, tr, mm, cu)
	prov := func(x *graph.Value) (string, []string) {
		if x == v["relu"] {
			return "fuse", []string{"Add", "ReLU"}
		}
		return "trace", nil
	}
	d := g.Doc(prov)
	nodes := map[int]graph.DocNode{}
	for _, n := range d.Nodes {
		nodes[n.ID] = n
	}
	if len(d.Nodes) != len(g.Values) || !reflect.DeepEqual(d.Inputs, []int{v["x"].ID, m.ID}) || !reflect.DeepEqual(d.Outputs, []int{v["mul"].ID, tr.ID, mm.ID, cu.ID}) {
		t.Fatalf("doc has %d nodes for %d values, inputs %v, outputs %v", len(d.Nodes), len(g.Values), d.Inputs, d.Outputs)
	}
	for _, c := range []struct {
		name   string
		v      *graph.Value
		op     string
		kind   string
		inputs []int
		attrs  map[string]string
		pass   string
		fused  []string
	}{
		{"input", v["x"], "input", "input", []int{}, map[string]string{"index": "0"}, "trace", []string{}},
		{"const", v["c"], "const", "const", []int{}, map[string]string{"value": "[1 2 3]"}, "trace", []string{}},
		{"param", v["p"], "param", "param", []int{}, map[string]string{"name": "p"}, "trace", []string{}},
		{"op without attributes", v["add"], "Add", "op", []int{v["x"].ID, v["c"].ID}, nil, "trace", []string{}},
		{"fused", v["relu"], "ReLU", "fused", []int{v["add"].ID}, nil, "fuse", []string{"Add", "ReLU"}},
		{"slice attribute", tr, "Transpose", "op", []int{m.ID}, map[string]string{"perm": "[1 0]", "text": "perm=[1 0]"}, "trace", []string{}},
		{"flag attributes", mm, "MatMul", "op", []int{m.ID, m.ID}, map[string]string{"transA": "false", "transB": "true", "text": "ta=false tb=true"}, "trace", []string{}},
	} {
		n := nodes[c.v.ID]
		if n.Op != c.op || n.Kind != c.kind || !reflect.DeepEqual(n.Inputs, c.inputs) || !reflect.DeepEqual(n.Attrs, c.attrs) || n.Pass != c.pass || !reflect.DeepEqual(n.Fused, c.fused) {
			t.Errorf("%s: got %+v, want op %s kind %s inputs %v attrs %v pass %s fused %v", c.name, n, c.op, c.kind, c.inputs, c.attrs, c.pass, c.fused)
		}
	}
	if n := nodes[v["add"].ID]; !reflect.DeepEqual(n.Shape, []int{3}) || n.DType != "float32" {
		t.Errorf("add: shape %v dtype %q", n.Shape, n.DType)
	}
	// Settings print by field; the graph, the function and the unexported
	// field do not, and a long value is cut.
	a := nodes[cu.ID].Attrs
	if a["size"] != "7" || a["names"] != "[a b]" || a["body"] != "" || a["hook"] != "" || a["hidden"] != "" {
		t.Errorf("custom attributes %v", a)
	}
	if got := a["long"]; !strings.HasSuffix(got, "…") || len(got) > 200+len("…") || !strings.HasPrefix(long, strings.TrimSuffix(got, "…")) {
		t.Errorf("a long attribute is %d bytes: %q", len(got), got)
	}
	if _, ok := a["text"]; !ok {
		t.Error("custom attributes lack their text")
	}
}

// Regions nest: the owner lists its bodies, each a Doc numbered as the
// text prints it, with the owner's operands its inputs are bound to.
func TestDocRegions(t *testing.T) {
	g, owner := withRegion()
	d := g.Doc(nil)
	var on graph.DocNode
	for _, n := range d.Nodes {
		if n.ID == owner.ID {
			on = n
		}
	}
	if len(on.Regions) != 1 || on.Shape != nil || on.DType != "" || on.Attrs["types"] != "(f32[3])" {
		t.Fatalf("owner %+v", on)
	}
	r := on.Regions[0]
	body := owner.Regions[0].Graph
	if r.Name != "body" || !reflect.DeepEqual(r.Binds, []int{owner.Args[0].ID, owner.Args[1].ID}) || r.Lead != 1 || !r.Loop || len(r.Graph.Nodes) != len(body.Values) {
		t.Fatalf("region %+v", r)
	}
	var nested graph.DocNode
	for _, n := range r.Graph.Nodes {
		if len(n.Regions) > 0 {
			nested = n
		}
	}
	if len(nested.Regions) != 1 || nested.Regions[0].Name != "inner" || len(nested.Regions[0].Graph.Nodes) != 2 {
		t.Fatalf("nested region %+v", nested)
	}
	for _, n := range d.Nodes {
		if n.Kind == "proj" && (n.Attrs["index"] != "0" || !reflect.DeepEqual(n.Inputs, []int{owner.ID})) {
			t.Errorf("proj %+v", n)
		}
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var back graph.Doc
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d, back) {
		t.Errorf("the doc does not survive a JSON round trip:\n%s", b)
	}
}
