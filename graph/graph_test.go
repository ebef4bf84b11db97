package graph_test

import (
	"strings"
	"testing"

	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

var f32x3 = tensor.Meta{Shape: tensor.Shape{3}, DType: tensor.Float32}

// build returns a small valid graph: out = relu(x + c) * p.
func build() (*graph.Graph, map[string]*graph.Value) {
	g := graph.New("small")
	x := g.Input(f32x3)
	c := g.Const(tensor.FromSlice([]float32{1, 2, 3}, 3))
	p := g.Param(tensor.NewParameter("p", tensor.FromSlice([]float32{2, 2, 2}, 3)))
	add := g.Op(ops.AddPrim, nil, x, c)
	relu := g.Op(ops.ReluPrim, nil, add)
	mul := g.Op(ops.MulPrim, nil, relu, p)
	g.Outputs = append(g.Outputs, mul)
	g.CountUses()
	return g, map[string]*graph.Value{"x": x, "c": c, "p": p, "add": add, "relu": relu, "mul": mul}
}

func TestVerifyAcceptsValidGraphs(t *testing.T) {
	g, _ := build()
	if err := graph.Verify(g); err != nil {
		t.Fatal(err)
	}
	if err := graph.Verify(g.Clone()); err != nil {
		t.Fatalf("clone: %v", err)
	}
}

func TestVerifyRejects(t *testing.T) {
	cases := []struct {
		name   string
		break_ func(g *graph.Graph, v map[string]*graph.Value)
		want   string
	}{
		{"use before definition", func(g *graph.Graph, v map[string]*graph.Value) {
			g.Values[3], g.Values[4] = g.Values[4], g.Values[3] // relu before add
		}, "before its definition"},
		{"wrong meta", func(g *graph.Graph, v map[string]*graph.Value) {
			v["mul"].Meta = tensor.Meta{Shape: tensor.Shape{4}, DType: tensor.Float32}
		}, "inference gives"},
		{"inference fails", func(g *graph.Graph, v map[string]*graph.Value) {
			c4 := g.Const(tensor.Ones(tensor.Float32, 4))
			g.InsertBefore(c4, v["x"])
			v["add"].Args[1] = c4
		}, "inference fails"},
		{"output not in graph", func(g *graph.Graph, v map[string]*graph.Value) {
			g.Outputs[0] = &graph.Value{ID: 99}
		}, "not in the graph"},
		{"duplicate value", func(g *graph.Graph, v map[string]*graph.Value) {
			g.Values = append(g.Values, v["mul"])
		}, "appears twice"},
		{"op without prim", func(g *graph.Graph, v map[string]*graph.Value) {
			v["relu"].Prim = nil
		}, "no primitive"},
		{"assign to a non-param", func(g *graph.Graph, v map[string]*graph.Value) {
			g.Assigns = append(g.Assigns, graph.Assign{Param: v["c"], Val: v["mul"]})
		}, "not a param"},
		{"assign of wrong shape", func(g *graph.Graph, v map[string]*graph.Value) {
			s := g.Op(ops.SumPrim, ops.ReduceAttrs{Axes: []int{0}}, v["mul"])
			g.Assigns = append(g.Assigns, graph.Assign{Param: v["p"], Val: s})
		}, "assignment"},
		{"const meta", func(g *graph.Graph, v map[string]*graph.Value) {
			v["c"].Meta.DType = tensor.Float64
		}, "differs from its tensor"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, v := build()
			c.break_(g, v)
			err := graph.Verify(g)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Verify = %v, want an error mentioning %q", err, c.want)
			}
		})
	}
}

func TestPrinters(t *testing.T) {
	g, v := build()
	g.Assigns = append(g.Assigns, graph.Assign{Param: v["p"], Val: v["mul"]})
	text := g.String()
	for _, want := range []string{
		"func small(%0: f32[3]) -> (f32[3])",
		`%2 = param "p" : f32[3]`,
		"%3 = Add(%0, %1) : f32[3]",
		"assign %2 <- %5",
		"return %5",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text form lacks %q:\n%s", want, text)
		}
	}
	var dot strings.Builder
	g.WriteDOT(&dot)
	for _, want := range []string{`digraph "small"`, "v0 -> v3", "v5 -> v2 [style=dashed"} {
		if !strings.Contains(dot.String(), want) {
			t.Errorf("DOT lacks %q:\n%s", want, dot.String())
		}
	}
}

func TestReplayAndTrace(t *testing.T) {
	g, _ := build()
	out := graph.Replay(g, []*tensor.Tensor{tensor.FromSlice([]float32{-5, 0, 1}, 3)})
	if got := out[0].Float32s(); got[0] != 0 || got[1] != 4 || got[2] != 8 {
		t.Fatalf("Replay = %v, want [0 4 8]", got)
	}
	// Tracing captures parameters by reference, never as constants.
	p := tensor.NewParameter("w", tensor.Ones(tensor.Float32, 3))
	tg, err := graph.Trace("t", []tensor.Meta{f32x3}, func(in []*tensor.Tensor) []*tensor.Tensor {
		return []*tensor.Tensor{ops.Mul(ops.Exp(p), in[0])} // Exp(p) has no traced input
	})
	if err != nil {
		t.Fatal(err)
	}
	if s := tg.String(); !strings.Contains(s, `param "w"`) || !strings.Contains(s, "Exp(") {
		t.Fatalf("the parameter read was not traced:\n%s", s)
	}
}
