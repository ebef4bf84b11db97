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
// residual: Anchors), and for each bespoke fused primitive the chain its
// pass matched (the casts, product and epilogue of the bfloat16 GEMMs,
// the product, scaling and update of the in-place GEMM updates, the
// convolution, bias, BatchNorm, ReLU and pooling of Conv2DBiasReLUPool,
// the pooling and ReLU gradients the convolution gradients take in).
// Tools that show what the compiler did (a compile record's nodes) read
// it; it is derived from the op itself, so it holds in any graph, however
// the value was made.
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
	mm, cast, mul, add := ops.MatMulPrim.Name, ops.CastPrim.Name, ops.MulPrim.Name, ops.AddPrim.Name
	poolGrad := []string{ops.MaxPoolGradPrim.Name, ops.ReluGradPrim.Name}
	switch v.Prim {
	case MatMulUpdate:
		return []string{mm, mul, ops.SubPrim.Name}
	case MatMulMomentum:
		return []string{mm, mul, add, ops.FlushSubnormalPrim.Name}
	case BF16MatMulBiasAct:
		a, _ := v.Attrs.(BF16EpilogueAttrs)
		return bf16Chain([]string{cast, cast, mm, cast}, a.Bias, a.Act)
	case BF16MatMul:
		a, _ := v.Attrs.(BF16MatMulAttrs)
		return bf16Chain(append(operandCasts(v), mm, cast), a.Bias, a.Act)
	case BF16MatMulUpdate:
		return append(operandCasts(v), mm, cast, mul, ops.SubPrim.Name)
	case BF16MatMulMomentum:
		return append(operandCasts(v), mm, cast, mul, add, ops.FlushSubnormalPrim.Name)
	case Conv2DBiasReLUPool:
		a, ok := v.Attrs.(ops.ConvEpilogueAttrs)
		if !ok {
			return nil
		}
		names := []string{ops.Conv2DPrim.Name}
		for _, s := range []struct {
			on   bool
			name string
		}{{a.Bias, add}, {a.Scale, mul}, {a.Shift, add}, {a.ReLU, ops.ReluPrim.Name}} {
			if s.on {
				names = append(names, s.name)
			}
		}
		switch {
		case a.Pool != nil && a.AvgPool:
			names = append(names, ops.AvgPoolPrim.Name)
		case a.Pool != nil:
			names = append(names, ops.MaxPoolPrim.Name)
		}
		return names
	case MaxPool2DReLUGrad:
		return poolGrad
	case Conv2DBackpropInputPool:
		return append(poolGrad, ops.Conv2DBackpropInputPrim.Name)
	case Conv2DBackpropFilterPool:
		return append(poolGrad, ops.Conv2DBackpropFilterPrim.Name)
	}
	return nil
}

// operandCasts lists a Cast for each of a bfloat16 product's two factors
// given in float32: the kernel rounds those itself, so their casts were
// absorbed (a factor given in bfloat16 kept its cast for other users).
func operandCasts(v *graph.Value) []string {
	var names []string
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
