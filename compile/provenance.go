package compile

import (
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Absorbed lists the primitives that a fusion pass folded into v, in the
// order they compute, or nil when v is no fused op: the members of an
// elementwise loop (Fuse), the anchor op and epilogue members of an
// Anchor (a GEMM or convolution with its bias, BatchNorm, activation,
// residual: Anchors), and for an Anchor with a fused step (FixedAnchor)
// the chain its pass matched (the casts, product and epilogue of the
// bfloat16 GEMMs, the product, scaling and update of the in-place GEMM
// updates, the convolution, bias, BatchNorm, ReLU and pooling of a pooled
// convolution, the pooling and ReLU gradients the convolution gradients
// take in). Tools that show what the compiler did (a compile record's
// nodes) read it; it is derived from the op itself, so it holds in any
// graph, however the value was made.
func Absorbed(v *graph.Value) []string {
	if v.Kind != graph.KindOp {
		return nil
	}
	switch a := v.Attrs.(type) {
	case *FusedAttrs:
		return append([]string(nil), a.Members...)
	case *AnchorAttrs:
		if a.fixed != nil {
			return a.fixed.members(a.Fused, v)
		}
		return append([]string(nil), a.Members...)
	}
	return nil
}

// operandCasts lists a Cast for each of a bfloat16 product's two factors
// given in float32: the kernel rounds those itself, so their casts were
// absorbed (a factor given in bfloat16 kept its cast for other users).
func operandCasts(v *graph.Value) []string {
	var names []string
	if v == nil {
		return nil
	}
	for _, a := range v.Args[:min(2, len(v.Args))] {
		if a.Meta.DType == tensor.Float32 {
			names = append(names, ops.CastPrim.Name)
		}
	}
	return names
}

// bf16Chain appends a bfloat16 product's epilogue to its chain.
func bf16Chain(names []string, bias bool, act Act) []string {
	if bias {
		names = append(names, ops.AddPrim.Name)
	}
	if p := actPrim(act); p != nil {
		names = append(names, p.Name)
	}
	return names
}
