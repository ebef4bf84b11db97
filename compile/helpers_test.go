package compile_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sporeml/spore/compile"
	"github.com/sporeml/spore/exec"
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// f32 is the meta of a float32 tensor of the given shape.
func f32(shape ...int) tensor.Meta { return tensor.Meta{Shape: shape, DType: tensor.Float32} }

// scalar returns a float32 rank-0 constant.
func scalar(v float32) *tensor.Tensor { return tensor.Scalar(v) }

// full returns a float32 constant of shape filled with v.
func full(v float64, shape ...int) *tensor.Tensor { return tensor.Full(tensor.Float32, v, shape...) }

// randArgs returns random tensors for g's inputs.
func randArgs(g *graph.Graph, seed uint64) []*tensor.Tensor {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	args := make([]*tensor.Tensor, len(g.Inputs))
	for i, in := range g.Inputs {
		t := tensor.New(in.Meta.DType, in.Meta.Shape...)
		switch d := t.Data().(type) {
		case []float32:
			for j := range d {
				d[j] = float32(rng.NormFloat64())
			}
		case []float64:
			for j := range d {
				d[j] = rng.NormFloat64()
			}
		}
		args[i] = t
	}
	return args
}

// runGraph compiles g as it is (no passes) and runs it.
func runGraph(t *testing.T, g *graph.Graph, args []*tensor.Tensor) []*tensor.Tensor {
	t.Helper()
	p, err := exec.Compile(g)
	if err != nil {
		t.Fatalf("exec.Compile: %v\n%s", err, g)
	}
	return p.Run(args)
}

// applyPasses runs the passes (by name, in the given order) on g as
// compile.Run would, verifying the graph after each, then DCE.
func applyPasses(t *testing.T, g *graph.Graph, names ...string) {
	t.Helper()
	for _, name := range append(names, "dce") {
		var fn func(*graph.Graph)
		for _, p := range compile.Passes {
			if p.Name == name {
				fn = p.Fn
			}
		}
		if fn == nil {
			t.Fatalf("no pass %q", name)
		}
		fn(g)
		g.CountUses()
		if err := graph.Verify(g); err != nil {
			t.Fatalf("after %s: %v\n%s", name, err, g)
		}
	}
	checkAbsorbed(t, g)
}

// fusedPrims are the primitives the fusion passes introduce.
var fusedPrims = []*core.Prim{
	compile.Anchor,
}

// checkAbsorbed fails unless compile.Absorbed names what every fused op
// of g took in (every pass test runs it, so each fusion is covered): at
// least two primitives, or one for a loop of a lone broadcast op and a
// product Prepack gave a packed weight.
func checkAbsorbed(t *testing.T, g *graph.Graph) {
	t.Helper()
	for _, v := range g.Values {
		if v.Kind != graph.KindOp {
			continue
		}
		fused := strings.HasPrefix(v.Prim.Name, "Fused[")
		for _, p := range fusedPrims {
			fused = fused || v.Prim == p
		}
		if !fused {
			continue
		}
		got := compile.Absorbed(v)
		_, _, step := fixedSpec(v)
		lone := v.Prim == compile.Anchor && !step || strings.HasPrefix(v.Prim.Name, "Fused[")
		if len(got) < 2 && !(lone && len(got) == 1) {
			t.Errorf("Absorbed(%s) = %v", v.LongString(), got)
		}
	}
}

// checkPasses builds a graph twice, applies the passes to the second copy,
// runs both on random inputs and compares the results within float32
// tolerance. It returns the optimised graph for structural checks.
func checkPasses(t *testing.T, build func() *graph.Graph, names ...string) *graph.Graph {
	t.Helper()
	before, after := build(), build()
	if err := graph.Verify(before); err != nil {
		t.Fatalf("hand-built graph is invalid: %v\n%s", err, before)
	}
	before.CountUses()
	after.CountUses()
	applyPasses(t, after, names...)
	for seed := uint64(1); seed <= 3; seed++ {
		args := randArgs(before, seed)
		want := runGraph(t, before, args)
		got := runGraph(t, after, args)
		for i := range want {
			testkit.AssertClose(t, fmt.Sprintf("seed %d output %d", seed, i), got[i], want[i], 1e-5)
		}
	}
	return after
}

// countOps counts the applications of primitive p in g. It compares
// handles, as the passes do, so a renamed primitive cannot make a "none
// left" check pass by counting nothing.
func countOps(g *graph.Graph, p *core.Prim) int {
	n := 0
	for _, v := range g.Values {
		if v.Kind == graph.KindOp && v.Prim == p {
			n++
		}
	}
	return n
}

// numOps counts the ops in g.
func numOps(g *graph.Graph) int {
	n := 0
	for _, v := range g.Values {
		if v.Kind == graph.KindOp {
			n++
		}
	}
	return n
}

// Specs of the fused steps the passes build (compile.AnchorSpec).
var (
	convPoolSpec        = compile.AnchorSpec{Op: ops.Conv2DPrim, Precision: tensor.Float32}
	maxPoolReLUGradSpec = compile.AnchorSpec{Op: ops.MaxPoolGradPrim, Precision: tensor.Float32, PooledGrad: true}
	convInputPoolSpec   = compile.AnchorSpec{Op: ops.Conv2DBackpropInputPrim, Precision: tensor.Float32, PooledGrad: true}
	convFilterPoolSpec  = compile.AnchorSpec{Op: ops.Conv2DBackpropFilterPrim, Precision: tensor.Float32, PooledGrad: true}
	matMulUpdateSpec    = compile.AnchorSpec{Op: ops.MatMulPrim, Precision: tensor.Float32, Update: compile.UpdateAccumulate}
	matMulMomentumSpec  = compile.AnchorSpec{Op: ops.MatMulPrim, Precision: tensor.Float32, Update: compile.UpdateMomentum}
	bf16Spec            = compile.AnchorSpec{Op: ops.MatMulPrim, Precision: tensor.BFloat16}
	bf16UpdateSpec      = compile.AnchorSpec{Op: ops.MatMulPrim, Precision: tensor.BFloat16, Update: compile.UpdateAccumulate}
	bf16MomentumSpec    = compile.AnchorSpec{Op: ops.MatMulPrim, Precision: tensor.BFloat16, Update: compile.UpdateMomentum}
)

// fixedSpec returns the spec of v's fused step, if v is an Anchor with one.
func fixedSpec(v *graph.Value) (compile.AnchorSpec, any, bool) {
	if v.Kind != graph.KindOp || v.Prim != compile.Anchor {
		return compile.AnchorSpec{}, nil, false
	}
	a, ok := v.Attrs.(*compile.AnchorAttrs)
	if !ok || a.Fused == nil {
		return compile.AnchorSpec{}, nil, false
	}
	return compile.AnchorSpec{Op: a.Op, Precision: a.Precision, Update: a.Update, PooledGrad: a.PooledGrad}, a.Fused, true
}

// countFixed counts the Anchors of g whose fused step is spec's.
func countFixed(g *graph.Graph, spec compile.AnchorSpec) int {
	n := 0
	for _, v := range g.Values {
		if s, _, ok := fixedSpec(v); ok && s == spec {
			n++
		}
	}
	return n
}

// countFused counts the Anchors of g whose fused step is spec's with
// kernel attributes of type T.
func countFused[T any](g *graph.Graph, spec compile.AnchorSpec) int {
	n := 0
	for _, v := range g.Values {
		if s, f, ok := fixedSpec(v); ok && s == spec {
			if _, ok := f.(T); ok {
				n++
			}
		}
	}
	return n
}

// fixed returns the attributes of an Anchor running spec's fused step,
// failing the test if there is none.
func fixed(t testing.TB, spec compile.AnchorSpec, fused any) *compile.AnchorAttrs {
	t.Helper()
	a, err := compile.FixedAnchor(spec, fused)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
