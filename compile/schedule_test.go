package compile_test

import (
	"testing"

	"github.com/sporeml/spore/compile"
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// testPlaced returns a test-local copy op placed as p says (standing for
// the start or the wait of a non-blocking collective), impure like them.
func testPlaced(name string, p core.Placement) *core.Prim {
	prim := &core.Prim{
		Name:   name,
		Traits: core.Traits{Impure: true, Placement: p},
		Infer:  func(_ any, in []*tensor.Tensor) tensor.Meta { return in[0].Meta() },
	}
	prim.RegisterAll(core.CPU, func(_ any, in []*tensor.Tensor, out *tensor.Tensor) { core.Copy(out, in[0]) })
	return prim
}

// TestSchedule builds the shape of a data-parallel backward pass — three
// gradients computed one after another, each packed (Reshape) and started
// only after all are computed, then waited for and used — and checks the
// scheduled order: each start right after its gradient's packing, each
// wait after every gradient, impure ops in program order, and the same
// results as the program order.
func TestSchedule(t *testing.T) {
	start, wait := testPlaced("TestStart", core.PlaceEarly), testPlaced("TestWait", core.PlaceLate)
	draw := testPlaced("TestDraw", core.PlaceInOrder)
	build := func() (*graph.Graph, map[string]*graph.Value) {
		g := graph.New("schedule")
		x := g.Input(f32(4, 4))
		v := map[string]*graph.Value{}
		v["g1"] = g.Op(ops.ExpPrim, nil, x)
		v["d1"] = g.Op(draw, nil, x)
		v["g2"] = g.Op(ops.MulPrim, nil, v["g1"], x)
		v["g3"] = g.Op(ops.MulPrim, nil, v["g2"], v["g1"])
		v["d2"] = g.Op(draw, nil, v["g3"])
		for _, k := range []string{"1", "2", "3"} {
			v["pack"+k] = g.Op(ops.ReshapePrim, ops.ShapeAttr{Shape: tensor.Shape{16}}, v["g"+k])
			v["start"+k] = g.Op(start, nil, v["pack"+k])
		}
		sum := g.Op(ops.AddPrim, nil, v["d1"], v["d2"])
		for _, k := range []string{"1", "2", "3"} {
			v["wait"+k] = g.Op(wait, nil, v["start"+k])
			sum = g.Op(ops.AddPrim, nil, sum, g.Op(ops.ReshapePrim, ops.ShapeAttr{Shape: tensor.Shape{4, 4}}, v["wait"+k]))
		}
		// A draw that needs a wait, then one that does not: they still
		// run in program order.
		v["d3"] = g.Op(draw, nil, v["wait1"])
		v["d4"] = g.Op(draw, nil, x)
		g.Outputs = []*graph.Value{sum, v["d3"], v["d4"]}
		g.CountUses()
		return g, v
	}
	g, v := build()
	args := randArgs(g, 1)
	want := runGraph(t, g, args)[0]
	compile.Schedule(g)
	if err := graph.Verify(g); err != nil {
		t.Fatalf("after Schedule: %v\n%s", err, g)
	}
	pos := map[*graph.Value]int{}
	for i, x := range g.Values {
		pos[x] = i
	}
	before := func(a, b string) {
		t.Helper()
		if pos[v[a]] >= pos[v[b]] {
			t.Errorf("%s (step %d) is not before %s (step %d):\n%s", a, pos[v[a]], b, pos[v[b]], g)
		}
	}
	for _, c := range [][2]string{
		{"start1", "g2"}, // issued as soon as g1 is packed
		{"start2", "g3"},
		{"pack1", "start1"},
		{"g3", "wait1"}, // waits come after all the computing
		{"d1", "d2"},    // impure ops keep their order
		{"d3", "d4"},
		{"wait1", "wait2"},
		{"start1", "start2"}, // starts keep program order
		{"start2", "start3"},
	} {
		before(c[0], c[1])
	}
	if pos[v["start1"]] != pos[v["pack1"]]+1 {
		t.Errorf("start1 at step %d, want right after its packing (step %d):\n%s", pos[v["start1"]], pos[v["pack1"]], g)
	}
	got := runGraph(t, g, args)[0]
	for i, x := range got.Float32s() {
		if x != want.Float32s()[i] {
			t.Fatalf("scheduled graph computes %v, want %v", got, want)
		}
	}
	// A graph without placed ops keeps its order.
	plain := graph.New("plain")
	x := plain.Input(f32(2))
	a := plain.Op(ops.ExpPrim, nil, x)
	b := plain.Op(ops.NegPrim, nil, x)
	plain.Outputs = []*graph.Value{plain.Op(ops.AddPrim, nil, b, a)}
	order := append([]*graph.Value(nil), plain.Values...)
	compile.Schedule(plain)
	for i := range order {
		if plain.Values[i] != order[i] {
			t.Fatalf("Schedule reordered a graph without placed ops:\n%s", plain)
		}
	}
}
