package compile_test

import (
	"strings"
	"testing"

	"github.com/sporeml/spore/compile"
	"github.com/sporeml/spore/exec"
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// p ← p − lr·(xᵀ·g) becomes one accumulating GEMM written into p.
func TestGemmUpdate(t *testing.T) {
	build := func(lr *tensor.Tensor) (*graph.Graph, *tensor.Tensor) {
		w := tensor.NewParameter("w", tensor.RandUniform(tensor.Float32, -1, 1, 5, 3))
		metas := []tensor.Meta{{Shape: tensor.Shape{4, 5}, DType: tensor.Float32}, {Shape: tensor.Shape{4, 3}, DType: tensor.Float32}}
		g, err := graph.Trace("sgd", metas, func(in []*tensor.Tensor) []*tensor.Tensor {
			grad := ops.MatMulT(in[0], in[1], true, false)
			w.Assign(ops.Sub(w, ops.Mul(grad, lr)))
			return []*tensor.Tensor{ops.Sum(w)}
		})
		if err != nil {
			t.Fatal(err)
		}
		return g, w
	}
	x := tensor.RandUniform(tensor.Float32, -1, 1, 4, 5)
	gr := tensor.RandUniform(tensor.Float32, -1, 1, 4, 3)
	lr := tensor.Scalar(float32(0.1))
	ref, wRef := build(lr)
	refPlan, _ := exec.Compile(ref)
	start := wRef.Float32s()
	refPlan.Run([]*tensor.Tensor{x, gr})
	want := wRef.Float32s()

	g, w := build(lr)
	w.Assign(tensor.FromSlice(start, 5, 3))
	compile.GemmUpdate(g)
	checkAbsorbed(t, g)
	compile.DCE(g)
	if err := graph.Verify(g); err != nil {
		t.Fatal(err)
	}
	if countFixed(g, matMulUpdateSpec) != 1 || strings.Contains(g.String(), "Sub(") {
		t.Fatalf("update not fused:\n%s", g)
	}
	plan, err := exec.Compile(g)
	if err != nil {
		t.Fatal(err)
	}
	if plan.InPlaceAssigns != 1 {
		t.Fatalf("the fused update is not computed into the parameter (%d in place)", plan.InPlaceAssigns)
	}
	plan.Run([]*tensor.Tensor{x, gr})
	got := w.Float32s()
	for i := range want {
		if d := got[i] - want[i]; d > 1e-6 || d < -1e-6 {
			t.Fatalf("element %d: %v, want %v", i, got[i], want[i])
		}
	}
}
