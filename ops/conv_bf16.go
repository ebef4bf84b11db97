package ops

import (
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/kernels/half"
	"github.com/sporeml/spore/tensor"
)

// The BFloat16 kernels of the convolution primitives (mixed precision's
// conv in bfloat16). A product of two bfloat16 values is exact in
// float32 (8 + 8 significand bits), so the float32 kernels run on the
// operands widened to float32 compute exactly what a bfloat16 GEMM with
// float32 accumulation does: each operand rounded to bfloat16, exact
// products, float32 sums. The result is rounded to bfloat16. The
// convolution thus keeps every path of the float32 one (pitched, im2col,
// parallel over images) at the float32 kernels' speed; the bfloat16 GEMM
// units are not used for it yet.
//
// This file's init must run after conv.go's, which defines the
// primitives: Go initialises a package's files in the order of their
// names, and "conv.go" sorts before "conv_bf16.go".
func init() {
	for _, p := range []*core.Prim{Conv2DPrim, Conv2DBackpropInputPrim, Conv2DBackpropFilterPrim} {
		p.Register(tensor.BFloat16, core.CPU, widenedBF16(p))
	}
}

// widenedBF16 returns a BFloat16 kernel of p that runs p's Float32 kernel
// on its operands widened to float32 and rounds the result to bfloat16.
func widenedBF16(p *core.Prim) core.KernelFunc {
	return func(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
		k32, err := p.KernelFor(tensor.Float32, core.CPU)
		if err != nil {
			core.Panicf(p.Name, "no float32 kernel to widen bfloat16 operands into: %v", err)
		}
		wide := make([]*tensor.Tensor, len(in))
		for i, x := range in {
			wide[i] = widenBF16(x)
		}
		o := core.FromBuffer(make([]float32, out.Size()), out.Shape())
		k32(attrs, wide, o)
		half.BF16FromFloat32s(tensor.Bits16(out), o.Data().([]float32))
	}
}

// widenBF16 returns a BFloat16 tensor's values as a Float32 tensor (other
// tensors as they are).
func widenBF16(x *tensor.Tensor) *tensor.Tensor {
	if x.DType() != tensor.BFloat16 {
		return x
	}
	w := make([]float32, x.Size())
	half.BF16ToFloat32s(w, tensor.Bits16(x))
	return core.FromBuffer(w, x.Shape())
}
