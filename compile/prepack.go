package compile

import (
	"sync"

	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/kernels/gemm"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Prepack gives every 2-D float32 product whose right-hand operand is a
// parameter that the graph does not assign — a layer's weight in an
// inference graph — or a constant, a packed copy of that weight, held by
// the compiled plan between calls: plain MatMuls become Anchors with no
// epilogue, and each Anchor product gets its own packed weight. (Constants never change: constant folding already bakes
// their values.)
//
// The GEMM kernel otherwise packs a transposed weight (nn.Dense keeps W as
// [out, in] and computes x·Wᵀ) on every call, which at small batches costs
// as much as the product. The copy is made on the first run and again
// only when the parameter has been written since (core.ParamVersion:
// Assign, and the updates of any compiled training step), so an inference
// plan always sees the current weights. A graph that assigns the parameter
// itself (a training step) would repack it on every call, gaining nothing,
// so its products are left alone.
func Prepack(g *graph.Graph) {
	assigned := map[*graph.Value]bool{}
	for _, a := range g.Assigns {
		assigned[a.Param] = true
	}
	for _, v := range g.Values {
		if v.Kind != graph.KindOp || v.IsMulti() || len(v.Args) < 2 || v.Meta.DType != tensor.Float32 {
			continue
		}
		a, w := v.Args[0], v.Args[1]
		weight := (w.Kind == graph.KindParam && !assigned[w]) || w.Kind == graph.KindConst
		// An Anchor's product reads A's rows in place at any rank (a
		// dense layer over a batch of sequences).
		rankOK := a.Meta.Shape.Rank() >= 2
		if !weight || w.Meta.DType != tensor.Float32 || a.Meta.DType != tensor.Float32 ||
			!rankOK || w.Meta.Shape.Rank() != 2 {
			continue
		}
		switch v.Prim {
		case Anchor:
			aa, ok := v.Attrs.(*AnchorAttrs)
			if !ok || aa.Op != ops.MatMulPrim || aa.packed != nil || aa.fixed != nil {
				continue
			}
			aa.packed = new(packedWeight)
		case ops.MatMulPrim:
			if len(v.Args) != 2 {
				continue
			}
			v.Attrs = bareAnchor(v)
			v.Prim = Anchor
			v.Attrs.(*AnchorAttrs).packed = new(packedWeight)
		}
	}
}

// packedWeight is one product's packed copy of its weight parameter,
// with what it was packed from: the parameter's buffer and version.
type packedWeight struct {
	// mu serialises packing and reading: a plan's runs are already
	// serialised, but attributes may be shared by two plans (a graph
	// compiled twice).
	mu      sync.Mutex
	pb      gemm.PackedB
	packed  bool
	src     *float32 // first element of the buffer packed (nil if empty)
	version uint64
}

// ensure returns w packed, packing it first if it has changed since it
// was last packed. The caller holds p.mu until it no longer reads the
// panels.
func (p *packedWeight) ensure(transB bool, w *tensor.Tensor) *gemm.PackedB {
	wd := w.Data().([]float32)
	k, n := w.Dim(0), w.Dim(1)
	if transB {
		k, n = n, k
	}
	ver := core.ParamVersion(w)
	var src *float32
	if len(wd) > 0 {
		src = &wd[0]
	}
	if pk, pn := p.pb.Dims(); !p.packed || src != p.src || ver != p.version || pk != k || pn != n {
		p.pb.Pack(transB, k, n, wd, w.Dim(1))
		p.packed, p.src, p.version = true, src, ver
	}
	return &p.pb
}
