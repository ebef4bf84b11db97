package ops_test

import (
	"testing"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// TestIndexRoundingScanSortKernelsDoNotAllocate runs the index, rounding,
// clipping, scan and sort kernels the way a compiled plan does, into a
// preallocated output (the sorts' scratch included).
func TestIndexRoundingScanSortKernelsDoNotAllocate(t *testing.T) {
	x := core.TrackLeaf(randT(17, -2, 2, 4, 30))
	y := core.TrackLeaf(randT(18, 0.5, 2, 4, 30))
	type run struct {
		p     *core.Prim
		attrs any
		in    []*tensor.Tensor
	}
	rec := func(y *tensor.Tensor) run { n := core.NodeOf(y); return run{n.Prim, n.Attrs, n.Inputs} }
	// Index results are not differentiable, so not recorded: their
	// primitives are named by handle.
	direct := func(p *core.Prim, attrs any) run {
		return run{p, attrs, []*tensor.Tensor{x}}
	}
	idx := tensor.FromSlice([]int64{3, 0, -1, 3}, 4)
	along := tensor.FromSlice([]int32{1, 0, 29, 2}, 4, 1)
	cases := []struct {
		name string
		r    run
	}{
		{"Gather", rec(ops.Gather(x, idx, 1))},
		{"GatherGrad", run{ops.GatherGradPrim, ops.ScatterAttrs{Axis: 1, Extent: 30}, []*tensor.Tensor{randT(19, -1, 1, 4, 4), idx}}},
		{"TakeAlongAxis", rec(ops.TakeAlongAxis(x, along, 1))},
		{"TakeAlongAxisGrad", run{ops.TakeAlongAxisGradPrim, ops.ScatterAttrs{Axis: 1, Extent: 30}, []*tensor.Tensor{randT(20, -1, 1, 4, 1), along}}},
		{"Floor", rec(ops.Floor(x))},
		{"Round", rec(ops.Round(x))},
		{"FloorMod", rec(ops.Mod(x, y))},
		{"FloorDiv", rec(ops.FloorDiv(x, y))},
		{"Clip", rec(ops.Clip(x, -1, 1))},
		{"ClipTensor", rec(ops.ClipTensor(x, ops.Neg(y), y))},
		{"CumSum", rec(ops.CumSum(x, 0, true, true))},
		{"CumProd", rec(ops.CumProd(x, 1))},
		{"ArgSort", direct(ops.ArgSortPrim, ops.SortAttrs{Axis: 0, Descending: true})},
		{"ArgSort last", direct(ops.ArgSortPrim, ops.SortAttrs{Axis: 1})},
		{"ArgTopK", direct(ops.ArgTopKPrim, ops.TopKAttrs{K: 3})},
		{"ArgTopK heap", direct(ops.ArgTopKPrim, ops.TopKAttrs{K: 2})},
	}
	for _, c := range cases {
		r := c.r
		if r.p == nil {
			t.Fatalf("%s: primitive not registered", c.name)
		}
		out := core.NewOf(r.p.Infer(r.attrs, r.in))
		k, err := r.p.KernelForKey(r.p.KeyFor(r.in, out.DType()), core.CPU)
		if err != nil {
			t.Fatal(err)
		}
		a := testing.AllocsPerRun(50, func() { k(r.attrs, r.in, out) })
		if a != 0 {
			t.Errorf("%s kernel allocates %v times per call", c.name, a)
		}
	}
}
