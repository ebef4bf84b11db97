package compile_test

import (
	"strings"
	"testing"

	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/ops"
)

// A lone op reading an operand as a column (a normalisation's x − mean)
// or a row (its scale) becomes a fused loop of one op, which reads the
// broadcast operand at full speed; other lone ops stay as they are. Either
// way the results are the unfused graph's.
func TestFuseLoneBroadcastOp(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(g *graph.Graph) []*graph.Value
		fused []string
	}{
		{"column second", func(g *graph.Graph) []*graph.Value {
			x, m := g.Input(f32(5, 17, 64)), g.Input(f32(5, 17, 1))
			return []*graph.Value{g.Op(ops.SubPrim, nil, x, m)}
		}, []string{"Fused[Sub]"}},
		{"column first", func(g *graph.Graph) []*graph.Value {
			x, m := g.Input(f32(9, 33)), g.Input(f32(9, 1))
			return []*graph.Value{g.Op(ops.DivPrim, nil, m, x)}
		}, []string{"Fused[Div]"}},
		{"column used twice stays one loop each", func(g *graph.Graph) []*graph.Value {
			x, m := g.Input(f32(4, 6)), g.Input(f32(4, 1))
			d := g.Op(ops.SubPrim, nil, x, m)
			return []*graph.Value{d, g.Op(ops.MulPrim, nil, d, m)}
		}, []string{"Fused[Sub]", "Fused[Mul]"}},
		{"row", func(g *graph.Graph) []*graph.Value {
			x, b := g.Input(f32(4, 6)), g.Input(f32(6))
			return []*graph.Value{g.Op(ops.MulPrim, nil, x, b)}
		}, []string{"Fused[Mul]"}},
		{"lone op on equal shapes is left alone", func(g *graph.Graph) []*graph.Value {
			x, y := g.Input(f32(4, 6)), g.Input(f32(4, 6))
			return []*graph.Value{g.Op(ops.MulPrim, nil, x, y)}
		}, nil},
		{"lone general broadcast is left alone", func(g *graph.Graph) []*graph.Value {
			x, p := g.Input(f32(3, 5, 4)), g.Input(f32(5, 4))
			return []*graph.Value{g.Op(ops.AddPrim, nil, x, p)}
		}, nil},
		{"lone scalar op is left alone", func(g *graph.Graph) []*graph.Value {
			x := g.Input(f32(4, 6))
			return []*graph.Value{g.Op(ops.MulPrim, nil, x, g.Const(scalar(3)))}
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			build := func() *graph.Graph {
				g := graph.New("fusecol")
				g.Outputs = tc.build(g)
				return g
			}
			g := checkPasses(t, build, "fuse")
			var names []string
			for _, v := range g.Values {
				if v.Kind == graph.KindOp && strings.HasPrefix(v.Prim.Name, "Fused[") {
					names = append(names, v.Prim.Name)
				}
			}
			if strings.Join(names, " ") != strings.Join(tc.fused, " ") {
				t.Errorf("fused %v, want %v:\n%s", names, tc.fused, g)
			}
		})
	}
}
