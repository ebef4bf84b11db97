package onnx

import (
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Cast and CastLike convert between element types with ops.Cast, which
// converts between every pair of spore's dtypes: integers wrap to a
// narrower type as C's conversions do, floats truncate toward zero, and
// FLOAT16 and BFLOAT16 round to nearest, ties to even — but for Cast to
// BFLOAT16 before opset 19, which truncates (drops the float32's low 16
// bits) as ONNX's reference implementation of those opsets does. STRING has no
// spore dtype, so a cast to it is refused with the node's name, and a
// model with a STRING input or initializer when it loads. Cast's saturate
// attribute (opset 19) only concerns the 8-bit float types, which spore
// does not hold either, so it is read by no one.

func init() {
	register("Cast", 6, 0, func(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := c.need(ins, 0, "input")
		if err != nil {
			return nil, err
		}
		if !c.Has("to") {
			return nil, c.Errorf("attribute to is missing")
		}
		dt, err := dtypeOf(int32(c.Int("to", 0)))
		if err != nil {
			return nil, c.Errorf("attribute to: %v", err)
		}
		return one(castTo(c, x, dt))
	})
	register("CastLike", 15, 0, func(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		req, err := c.needs(ins, "input", "target_type")
		if err != nil {
			return nil, err
		}
		return one(castTo(c, req[0], req[1].DType()))
	})
}

// castTo converts x to dt; a cast to x's own dtype is x itself.
func castTo(c *nodeCtx, x *tensor.Tensor, dt tensor.DType) *tensor.Tensor {
	switch {
	case x.DType() == dt:
		return x
	case dt == tensor.BFloat16 && c.Opset < 19:
		// The reference of these opsets truncates to bfloat16 (from
		// float64, exact for the integers up to 2^53).
		if x.DType() != tensor.Float32 {
			x = castTo(c, x, tensor.Float64)
		}
		return ops.TruncBFloat16(x)
	}
	return ops.Cast(x, dt)
}
