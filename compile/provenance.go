package compile

import (
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/ops"
)

// Absorbed lists the primitives that a fusion pass folded into v, in the
// order they compute, or nil when v is no fused op: the members of an
// elementwise loop (Fuse), the anchor op and epilogue members of an
// Anchor (a GEMM or convolution with its bias, BatchNorm, activation,
// residual: Anchors), the MatMul, Mul and Sub of a weight update
// (GemmUpdate), the MatMul, Mul, Add and FlushSubnormal of a momentum
// update (GemmMomentum). Tools that show what the compiler did (a compile record's
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
		return append([]string(nil), a.Members...)
	}
	switch v.Prim {
	case MatMulUpdate:
		return []string{ops.MatMulPrim.Name, ops.MulPrim.Name, ops.SubPrim.Name}
	case MatMulMomentum:
		return []string{ops.MatMulPrim.Name, ops.MulPrim.Name, ops.AddPrim.Name, ops.FlushSubnormalPrim.Name}
	}
	return nil
}
