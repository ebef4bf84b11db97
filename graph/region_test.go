package graph_test

import (
	"strings"
	"testing"

	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// loopPrim stands for a control-flow op in these tests: a multi-result op
// whose work is its region (it is never run here).
var loopPrim = &core.Prim{
	Name:   "Loop",
	InferN: func(any, []*tensor.Tensor) []tensor.Meta { return []tensor.Meta{f32x3} },
}

// withRegion returns out = Loop(x, y) whose body computes
// Exp(carry + captured y) with a constant, and a nested Loop inside the
// body, so that regions nest two deep.
func withRegion() (*graph.Graph, *graph.Value) {
	inner := graph.New("inner")
	a := inner.Input(f32x3)
	inner.Outputs = []*graph.Value{inner.Op(ops.NegPrim, nil, a)}

	body := graph.New("body")
	c := body.Input(f32x3) // the carry: lead input
	y := body.Input(f32x3) // captured
	k := body.Const(tensor.FromSlice([]float32{1, 2, 3}, 3))
	s := body.Op(ops.AddPrim, nil, body.Op(ops.AddPrim, nil, c, y), k)
	nested := body.OpN(loopPrim, nil, []tensor.Meta{f32x3}, s)
	body.Values[len(body.Values)-2].Regions = []*graph.Region{{Graph: inner, Binds: []int{0}, Lead: 1, Loop: true}}
	body.Outputs = []*graph.Value{body.Op(ops.ExpPrim, nil, nested[0])}

	g := graph.New("outer")
	x := g.Input(f32x3)
	yv := g.Op(ops.NegPrim, nil, x)
	outs := g.OpN(loopPrim, nil, []tensor.Meta{f32x3}, x, yv)
	owner := outs[0].Args[0]
	owner.Regions = []*graph.Region{{Graph: body, Binds: []int{0, 1}, Lead: 1, Loop: true}}
	g.Outputs = []*graph.Value{outs[0]}
	g.CountUses()
	return g, owner
}

func TestWalkVisitsRegions(t *testing.T) {
	g, owner := withRegion()
	seen := map[string]int{}
	owners := map[string]*graph.Value{}
	err := graph.Walk(g, func(v *graph.Value, in *graph.Graph, own *graph.Value) error {
		seen[in.Name]++
		owners[in.Name] = own
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	body := owner.Regions[0].Graph
	inner := body.Values[5].Regions[0].Graph
	for _, c := range []struct {
		graph *graph.Graph
		owner *graph.Value
	}{{g, nil}, {body, owner}, {inner, body.Values[5]}} {
		if seen[c.graph.Name] != len(c.graph.Values) || owners[c.graph.Name] != c.owner {
			t.Errorf("%s: visited %d of %d values, owner %v", c.graph.Name, seen[c.graph.Name], len(c.graph.Values), owners[c.graph.Name])
		}
	}
}

func TestVerifyChecksRegions(t *testing.T) {
	for _, c := range []struct {
		name   string
		break_ func(owner *graph.Value)
		want   string
	}{
		{"valid", func(*graph.Value) {}, ""},
		{"binding out of range", func(o *graph.Value) { o.Regions[0].Binds[1] = 7 }, "bound to argument 7"},
		{"missing binding", func(o *graph.Value) { o.Regions[0].Binds = o.Regions[0].Binds[:1] }, "2 inputs but 1 bindings"},
		{"capture of another type", func(o *graph.Value) {
			o.Args[1] = o.Args[0]
			o.Regions[0].Graph.Inputs[1].Meta = tensor.Meta{Shape: tensor.Shape{3}, DType: tensor.Float64}
		}, "region 0 input 1 is f64[3]"},
		{"bad nested body", func(o *graph.Value) {
			inner := o.Regions[0].Graph.Values[5].Regions[0].Graph
			inner.Outputs = append(inner.Outputs, o.Args[0])
		}, "in region 0 of %"},
	} {
		g, owner := withRegion()
		c.break_(owner)
		err := graph.Verify(g)
		if (err == nil) != (c.want == "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: Verify = %v, want %q", c.name, err, c.want)
		}
	}
}

func TestRegionsPrintNestedAndCloneDeep(t *testing.T) {
	g, owner := withRegion()
	text := g.String()
	for _, want := range []string{
		"\n    region 0 loop lead 1 binds (%0, %1):\n      func body(",
		"\n          region 0 loop lead 1 binds (%4):\n            func inner(",
		"\n              %1 = Neg(%0) : f32[3]\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	var dot strings.Builder
	g.WriteDOT(&dot)
	if n := strings.Count(dot.String(), "subgraph cluster_"); n != 2 {
		t.Errorf("DOT has %d clusters, want 2:\n%s", n, dot.String())
	}
	c := g.Clone()
	if c.String() != text {
		t.Fatalf("clone prints differently:\n%s", c.String())
	}
	var cOwner *graph.Value
	for _, v := range c.Values {
		if len(v.Regions) > 0 {
			cOwner = v
		}
	}
	if cOwner.Regions[0] == owner.Regions[0] || cOwner.Regions[0].Graph.Values[0] == owner.Regions[0].Graph.Values[0] {
		t.Fatal("clone shares its regions with the original")
	}
	cOwner.Regions[0].Binds[0] = 1
	if owner.Regions[0].Binds[0] != 0 {
		t.Fatal("clone shares its bindings with the original")
	}
}
