package compile_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sporeml/spore/compile"
	"github.com/sporeml/spore/exec"
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// randParam returns a float32 parameter of the given shape with values
// drawn from seed.
func randParam(name string, seed uint64, shape ...int) *tensor.Tensor {
	g := graph.New("init")
	g.Input(tensor.Meta{Shape: shape, DType: tensor.Float32})
	return tensor.NewParameter(name, randArgs(g, seed)[0])
}

// denseGraph is a two-layer network on parameters: relu(x·W1ᵀ + b1)·W2,
// the first layer as nn.Dense computes it (W1 stored [out, in]), the
// second a plain product with W2 stored [in, out].
func denseGraph(batch int, w1, b1, w2 *tensor.Tensor) *graph.Graph {
	g := graph.New("dense")
	x := g.Input(f32(batch, w1.Dim(1)))
	h := g.Op(ops.MatMulPrim, ops.MatMulAttrs{TransB: true}, x, g.Param(w1))
	h = g.Op(ops.ReluPrim, nil, g.Op(ops.AddPrim, nil, h, g.Param(b1)))
	g.Outputs = []*graph.Value{g.Op(ops.MatMulPrim, ops.MatMulAttrs{}, h, g.Param(w2))}
	return g
}

// sgdGraph assigns w ← w − 0.5·w·s for a scale input s: a compiled
// training step's in-place update of w.
func sgdGraph(w *tensor.Tensor) *graph.Graph {
	g := graph.New("update")
	s := g.Input(f32(1))
	p := g.Param(w)
	upd := g.Op(ops.SubPrim, nil, p, g.Op(ops.MulPrim, nil, g.Op(ops.MulPrim, nil, p, g.Const(full(0.5, 1))), s))
	g.Assigns = append(g.Assigns, graph.Assign{Param: p, Val: upd})
	return g
}

// TestPrepackSeesWrites checks that an inference plan holding packed
// weights follows every way a parameter changes between its calls: an
// eager Assign, and a compiled training step that updates the weight in
// place. The reference is the same graph planned without passes, which
// reads the parameters directly.
func TestPrepackSeesWrites(t *testing.T) {
	for _, batch := range []int{1, 3, 20, 70} {
		t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) {
			w1, b1, w2 := randParam("w1", 1, 40, 50), randParam("b1", 2, 40), randParam("w2", 3, 40, 37)
			res, err := compile.Run(denseGraph(batch, w1, b1, w2), compile.Options{Level: compile.O1, Verify: true})
			if err != nil {
				t.Fatal(err)
			}
			if ir := res.Graph.String(); strings.Count(ir, "packed") != 2 {
				t.Fatalf("want both products packed:\n%s", ir)
			}
			ref, err := exec.Compile(denseGraph(batch, w1, b1, w2))
			if err != nil {
				t.Fatal(err)
			}
			upd, err := compile.Run(sgdGraph(w1), compile.Options{Level: compile.O1, Verify: true})
			if err != nil {
				t.Fatal(err)
			}
			if upd.Plan.InPlaceAssigns != 1 {
				t.Fatalf("the update is not done in place (%d), so this test would not test that", upd.Plan.InPlaceAssigns)
			}
			args := randArgs(res.Graph, 4)
			check := func(what string) {
				t.Helper()
				testkit.AssertClose(t, what, res.Plan.Run(args)[0], ref.Run(args)[0], 1e-4)
			}
			check("first call")
			check("second call")
			w2.Assign(randParam("new", 5, 40, 37))
			check("after Assign of w2")
			upd.Plan.Run([]*tensor.Tensor{full(1, 1)})
			check("after an in-place compiled update of w1")
			upd.Plan.Run([]*tensor.Tensor{full(-3, 1)})
			check("after a second update")
		})
	}
}

// TestPrepackSkipsAssigned checks that a graph that assigns a weight does
// not pack it (it would pack on every call), and packs nothing at O0.
func TestPrepackSkipsAssigned(t *testing.T) {
	w1, b1, w2 := randParam("w1", 1, 8, 6), randParam("b1", 2, 8), randParam("w2", 3, 8, 5)
	g := denseGraph(4, w1, b1, w2)
	for _, v := range g.Values {
		if v.Kind == graph.KindParam && v.Tensor == w1 {
			g.Assigns = append(g.Assigns, graph.Assign{Param: v, Val: g.Op(ops.NegPrim, nil, v)})
		}
	}
	res, err := compile.Run(g, compile.Options{Level: compile.O1, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	if ir := res.Graph.String(); strings.Count(ir, "packed") != 1 {
		t.Errorf("want only w2's product packed:\n%s", ir)
	}
	res, err = compile.Run(denseGraph(4, w1, b1, w2), compile.Options{Level: compile.O0, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	if ir := res.Graph.String(); strings.Contains(ir, "packed") {
		t.Errorf("O0 packed a weight:\n%s", ir)
	}
}

// TestPrepackConst checks that a product with a constant weight is packed
// and computes what the unoptimised plan computes, call after call.
func TestPrepackConst(t *testing.T) {
	for _, batch := range []int{1, 40} {
		w := randParam("w", 7, 33, 45)
		build := func() *graph.Graph {
			g := graph.New("const")
			x := g.Input(f32(batch, 45))
			g.Outputs = []*graph.Value{g.Op(ops.MatMulPrim, ops.MatMulAttrs{TransB: true}, x, g.Const(w.Clone()))}
			return g
		}
		res, err := compile.Run(build(), compile.Options{Level: compile.O1, Verify: true})
		if err != nil {
			t.Fatal(err)
		}
		if ir := res.Graph.String(); !strings.Contains(ir, "packed") {
			t.Fatalf("constant weight not packed:\n%s", ir)
		}
		ref, err := exec.Compile(build())
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			args := randArgs(res.Graph, uint64(10+i))
			testkit.AssertClose(t, fmt.Sprintf("batch %d call %d", batch, i), res.Plan.Run(args)[0], ref.Run(args)[0], 1e-4)
		}
	}
}

// TestPrepackNoAllocs checks that a plan with packed weights allocates
// nothing per call once its weights are packed, and nothing to repack
// them after an update either.
func TestPrepackNoAllocs(t *testing.T) {
	w1, b1, w2 := randParam("w1", 1, 64, 100), randParam("b1", 2, 64), randParam("w2", 3, 64, 30)
	res, err := compile.Run(denseGraph(2, w1, b1, w2), compile.Options{Level: compile.O1})
	if err != nil {
		t.Fatal(err)
	}
	args := randArgs(res.Graph, 4)
	outs := []*tensor.Tensor{tensor.New(tensor.Float32, 2, 30)}
	res.Plan.RunInto(args, outs)
	if n := testing.AllocsPerRun(20, func() { res.Plan.RunInto(args, outs) }); n > 0 {
		t.Errorf("%v allocations per call", n)
	}
	fresh := randParam("new", 5, 64, 100)
	if n := testing.AllocsPerRun(20, func() { w1.Assign(fresh); res.Plan.RunInto(args, outs) }); n > 0 {
		t.Errorf("%v allocations per call with a repack", n)
	}
}
