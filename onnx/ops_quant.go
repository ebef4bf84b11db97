package onnx

import (
	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Linear quantization: QuantizeLinear, DequantizeLinear and
// DynamicQuantizeLinear, and the integer and quantized matrix products
// and convolutions (MatMulInteger, ConvInteger, QLinearMatMul,
// QLinearConv).
//
// Quantized values are uint8 or int8 (the zero point's type says which;
// uint8 when there is none). Every op is composed of spore's elementwise
// ops, so it traces in Graph mode: integer operands are widened to float,
// the arithmetic done there (exactly: every sum of products of 8-bit
// values the suite's sizes make fits a float64's 53 bits), rounded half
// to even as ONNX says, saturated to the type's range and cast back.

func init() {
	register("QuantizeLinear", 10, 0, quantizeLinearOp)
	register("DequantizeLinear", 10, 0, dequantizeLinearOp)
	register("DynamicQuantizeLinear", 11, 0, dynamicQuantizeLinearOp)
	register("MatMulInteger", 10, 0, matMulIntegerOp)
	register("ConvInteger", 10, 0, convIntegerOp)
	register("QLinearMatMul", 10, 0, qlinearMatMulOp)
	register("QLinearConv", 10, 0, qlinearConvOp)
}

// checkQuantAttrs refuses the attributes of later opsets that spore does
// not implement: blocked quantization (block_size, opset 21) and an
// output_dtype other than uint8 and int8 (opset 21).
func (c *nodeCtx) checkQuantAttrs() error {
	if b := c.Int("block_size", 0); b != 0 {
		return c.Errorf("blocked quantization (block_size %d) is not supported", b)
	}
	if dt := c.Int("output_dtype", 0); dt != 0 && dt != int64(onnxpb.TensorProto_UINT8) && dt != int64(onnxpb.TensorProto_INT8) {
		return c.Errorf("output_dtype %d is not supported; spore quantizes to uint8 and int8", dt)
	}
	return nil
}

// quantRange is the range of quantized type dt.
func quantRange(dt tensor.DType) (lo, hi float64) {
	if dt == tensor.Int8 {
		return -128, 127
	}
	return 0, 255
}

// quantTyped checks that a quantized operand (data or zero point) is
// uint8 or int8, the quantized types spore supports.
func (c *nodeCtx) quantTyped(t *tensor.Tensor, what string) error {
	if t.DType() != tensor.Uint8 && t.DType() != tensor.Int8 {
		return c.Errorf("%s has dtype %v; spore's quantized ops take uint8 or int8", what, t.DType())
	}
	return nil
}

// perAxis shapes a scale or zero point v for broadcasting against x: a
// scalar or one-element vector applies to the whole tensor; a vector of
// x's extent on axis applies per slice along axis (opset 13's per-axis
// quantization; opset 10 has only the per-tensor form).
// The axis attribute (default 1) is read only then, so that a scalar
// scale does not need an x of rank 2.
func (c *nodeCtx) perAxis(v, x *tensor.Tensor, what string) (*tensor.Tensor, error) {
	if v.Rank() <= 1 && v.Size() == 1 {
		return ops.Reshape(v), nil
	}
	if c.Opset < 13 {
		return nil, c.Errorf("%s has shape %v; opset %d quantizes per tensor only (a scalar)", what, v.Shape(), c.Opset)
	}
	axis, err := c.axis(c.Int("axis", 1), x.Rank(), "attribute axis")
	if err != nil {
		return nil, err
	}
	if v.Rank() != 1 || v.Dim(0) != x.Dim(axis) {
		return nil, c.Errorf("%s has shape %v; want a scalar or a vector of %d (the extent of axis %d of shape %v)", what, v.Shape(), x.Dim(axis), axis, x.Shape())
	}
	shape := make([]int, x.Rank())
	for i := range shape {
		shape[i] = 1
	}
	shape[axis] = v.Dim(0)
	return ops.Reshape(v, shape...), nil
}

// saturate rounds v half to even, saturates it to the range of
// quantized type dt and casts it.
func saturate(v *tensor.Tensor, dt tensor.DType) *tensor.Tensor {
	lo, hi := quantRange(dt)
	return ops.Cast(ops.Clip(ops.Round(v), lo, hi), dt)
}

// asF32 returns x as float32, casting when it is another type.
func asF32(x *tensor.Tensor) *tensor.Tensor {
	if x.DType() == tensor.Float32 {
		return x
	}
	return ops.Cast(x, tensor.Float32)
}

// quantizeLinearOp is QuantizeLinear: y = saturate(round(x / y_scale) +
// y_zero_point), rounding half to even; the zero point's type (else
// output_dtype, else uint8) is y's.
func quantizeLinearOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	if err := c.checkQuantAttrs(); err != nil {
		return nil, err
	}
	req, err := c.needs(ins, "x", "y_scale")
	if err != nil {
		return nil, err
	}
	x, scale := req[0], req[1]
	if !isFloat(x.DType()) && x.DType() != tensor.Int32 && x.DType() != tensor.Float16 && x.DType() != tensor.BFloat16 {
		return nil, c.Errorf("x has dtype %v; want a float or int32", x.DType())
	}
	if !scale.DType().IsFloat() {
		return nil, c.Errorf("y_scale has dtype %v; want a float", scale.DType())
	}
	s, err := c.perAxis(asF32(scale), x, "y_scale")
	if err != nil {
		return nil, err
	}
	q := ops.Round(ops.Div(asF32(x), s))
	dt := tensor.Uint8
	if c.Int("output_dtype", 0) == int64(onnxpb.TensorProto_INT8) {
		dt = tensor.Int8
	}
	if zp := c.In(ins, 2); zp != nil {
		if err := c.quantTyped(zp, "y_zero_point"); err != nil {
			return nil, err
		}
		z, err := c.perAxis(zp, x, "y_zero_point")
		if err != nil {
			return nil, err
		}
		if c.Has("output_dtype") && zp.DType() != dt {
			return nil, c.Errorf("y_zero_point has dtype %v, output_dtype says %v", zp.DType(), dt)
		}
		dt = zp.DType()
		q = ops.Add(q, ops.Cast(z, tensor.Float32))
	}
	lo, hi := quantRange(dt)
	return one(ops.Cast(ops.Clip(q, lo, hi), dt))
}

// dequantizeLinearOp is DequantizeLinear: y = (x − x_zero_point) ·
// x_scale, of x_scale's type. The difference is taken in int32, as ONNX
// Runtime does, so that int32 data keeps its precision until the scaling.
func dequantizeLinearOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	if err := c.checkQuantAttrs(); err != nil {
		return nil, err
	}
	req, err := c.needs(ins, "x", "x_scale")
	if err != nil {
		return nil, err
	}
	x, scale := req[0], req[1]
	if x.DType() != tensor.Uint8 && x.DType() != tensor.Int8 && x.DType() != tensor.Int32 {
		return nil, c.Errorf("x has dtype %v; spore dequantizes uint8, int8 and int32", x.DType())
	}
	if !scale.DType().IsFloat() {
		return nil, c.Errorf("x_scale has dtype %v; want a float", scale.DType())
	}
	s, err := c.perAxis(scale, x, "x_scale")
	if err != nil {
		return nil, err
	}
	d := ops.Cast(x, tensor.Int32)
	if zp := c.In(ins, 2); zp != nil {
		if zp.DType() != x.DType() {
			return nil, c.Errorf("x_zero_point has dtype %v, x %v; ONNX wants one", zp.DType(), x.DType())
		}
		z, err := c.perAxis(zp, x, "x_zero_point")
		if err != nil {
			return nil, err
		}
		d = ops.Sub(d, ops.Cast(z, tensor.Int32))
	}
	y := ops.Mul(ops.Cast(d, tensor.Float32), asF32(s))
	if scale.DType() != tensor.Float32 {
		y = ops.Cast(y, scale.DType())
	}
	return one(y)
}

// dynamicQuantizeLinearOp is DynamicQuantizeLinear: x's range, widened
// to hold 0, is mapped onto [0, 255]; it returns y, the scale and the zero
// point. A range of zero (x all zeros) takes scale 1, as ONNX Runtime
// does, where the formula would divide by zero.
func dynamicQuantizeLinearOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "x")
	if err != nil {
		return nil, err
	}
	if x.DType() != tensor.Float32 {
		return nil, c.Errorf("x has dtype %v; want float32", x.DType())
	}
	if x.Size() == 0 {
		return nil, c.Errorf("x is empty; its range is undefined")
	}
	all := make([]int, x.Rank())
	for i := range all {
		all[i] = i
	}
	zero := scalarOf(tensor.Float32, 0)
	lo := ops.Minimum(ops.Min(x, all...), zero)
	hi := ops.Maximum(ops.Max(x, all...), zero)
	rng := ops.Sub(hi, lo)
	scale := ops.Select(ops.Equal(rng, zero), scalarOf(tensor.Float32, 1), ops.DivScalar(rng, 255))
	zp := saturate(ops.Clip(ops.Sub(zero, ops.Div(lo, scale)), 0, 255), tensor.Uint8)
	y := saturate(ops.Add(ops.Round(ops.Div(x, scale)), ops.Cast(zp, tensor.Float32)), tensor.Uint8)
	return []*tensor.Tensor{y, scale, zp}, nil
}

// shifted returns x − zp as float64 (exact for 8-bit values), zp shaped
// by shape when it is not a scalar; zp may be nil (zero).
func (c *nodeCtx) shifted(x, zp *tensor.Tensor, what string, shape func(zp *tensor.Tensor) (*tensor.Tensor, error)) (*tensor.Tensor, error) {
	if err := c.quantTyped(x, what); err != nil {
		return nil, err
	}
	xf := ops.Cast(x, tensor.Float64)
	if zp == nil {
		return xf, nil
	}
	if err := c.quantTyped(zp, what+"'s zero point"); err != nil {
		return nil, err
	}
	if zp.Size() == 1 && zp.Rank() <= 1 {
		return ops.Sub(xf, ops.Cast(ops.Reshape(zp), tensor.Float64)), nil
	}
	z, err := shape(zp)
	if err != nil {
		return nil, err
	}
	return ops.Sub(xf, ops.Cast(z, tensor.Float64)), nil
}

// rowZero shapes A's per-row zero point ([M], or A's rank with a last
// extent of 1) to broadcast against A ([..., M, K]).
func (c *nodeCtx) rowZero(a *tensor.Tensor, what string) func(*tensor.Tensor) (*tensor.Tensor, error) {
	return func(zp *tensor.Tensor) (*tensor.Tensor, error) {
		if a.Rank() >= 2 && zp.Rank() == 1 && zp.Dim(0) == a.Dim(a.Rank()-2) {
			return ops.Reshape(zp, zp.Dim(0), 1), nil
		}
		if zp.Rank() == a.Rank() && zp.Dim(zp.Rank()-1) == 1 {
			return zp, nil
		}
		return nil, c.Errorf("%s has shape %v; want a scalar or one value per row of %v", what, zp.Shape(), a.Shape())
	}
}

// colZero shapes B's per-column zero point ([N], or B's rank with a
// second-to-last extent of 1) to broadcast against B ([..., K, N]).
func (c *nodeCtx) colZero(b *tensor.Tensor, what string) func(*tensor.Tensor) (*tensor.Tensor, error) {
	return func(zp *tensor.Tensor) (*tensor.Tensor, error) {
		if b.Rank() >= 2 && zp.Rank() == 1 && zp.Dim(0) == b.Dim(b.Rank()-1) {
			return zp, nil
		}
		if zp.Rank() == b.Rank() && b.Rank() >= 2 && zp.Dim(zp.Rank()-2) == 1 {
			return zp, nil
		}
		return nil, c.Errorf("%s has shape %v; want a scalar or one value per column of %v", what, zp.Shape(), b.Shape())
	}
}

// integerMatMul is (A − a_zero_point) · (B − b_zero_point), exactly, as
// float64.
func (c *nodeCtx) integerMatMul(a, azp, b, bzp *tensor.Tensor) (*tensor.Tensor, error) {
	af, err := c.shifted(a, azp, "A", c.rowZero(a, "a_zero_point"))
	if err != nil {
		return nil, err
	}
	bf, err := c.shifted(b, bzp, "B", c.colZero(b, "b_zero_point"))
	if err != nil {
		return nil, err
	}
	return matMul(c, af, bf), nil
}

// matMulIntegerOp is MatMulInteger: the int32 product of 8-bit matrices
// less their zero points.
func matMulIntegerOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	req, err := c.needs(ins, "A", "B")
	if err != nil {
		return nil, err
	}
	y, err := c.integerMatMul(req[0], c.In(ins, 2), req[1], c.In(ins, 3))
	if err != nil {
		return nil, err
	}
	return one(ops.Cast(y, tensor.Int32))
}

// channelZero shapes W's per-output-channel zero point or scale ([M]) to
// broadcast, along axis, against a tensor of the given rank: W ([M,
// C/group, k...], axis 0) or the output ([N, M, ...], axis 1).
func (c *nodeCtx) channelZero(w *tensor.Tensor, rank, axis int, what string) func(*tensor.Tensor) (*tensor.Tensor, error) {
	return func(v *tensor.Tensor) (*tensor.Tensor, error) {
		if v.Rank() != 1 || v.Dim(0) != w.Dim(0) {
			return nil, c.Errorf("%s has shape %v; want a scalar or one value per output channel (%d)", what, v.Shape(), w.Dim(0))
		}
		shape := make([]int, rank)
		for i := range shape {
			shape[i] = 1
		}
		shape[axis] = v.Dim(0)
		return ops.Reshape(v, shape...), nil
	}
}

// integerConv is conv(x − x_zero_point, w − w_zero_point), exactly, as
// float64 (see exactConv): padding adds zeros to the shifted input, that is x_zero_point
// to x, as ONNX says. x's zero point is per tensor.
func (c *nodeCtx) integerConv(x, xzp, w, wzp *tensor.Tensor) (*tensor.Tensor, error) {
	if w.Rank() < 3 {
		return nil, c.Errorf("w has shape %v; want [M, C/group, k...]", w.Shape())
	}
	if xzp != nil && xzp.Size() != 1 {
		return nil, c.Errorf("x_zero_point has shape %v; want a scalar", xzp.Shape())
	}
	xf, err := c.shifted(x, xzp, "x", nil)
	if err != nil {
		return nil, err
	}
	wf, err := c.shifted(w, wzp, "w", c.channelZero(w, w.Rank(), 0, "w_zero_point"))
	if err != nil {
		return nil, err
	}
	return c.exactConv(xf, wf)
}

// exactConv convolves integer-valued float64 tensors x and w whose
// magnitudes are at most 255 (8-bit values less their zero points),
// exactly. A float32 convolution is exact while every partial sum stays
// below 2^24: when the kernel's k = C/group·∏kernel terms are few enough
// (k·255² ≤ 2^24) it is one float32 convolution; up to k·16·255 ≤ 2^24
// (k ≤ 4112) x is split in 16·hi + lo (|hi| ≤ 16, 0 ≤ lo < 16) and the two
// float32 convolutions combined in float64; beyond, it is a float64
// convolution. float32 is what every backend (and ONNX Runtime, for an
// exported model) convolves in.
func (c *nodeCtx) exactConv(x, w *tensor.Tensor) (*tensor.Tensor, error) {
	conv := func(x *tensor.Tensor) (*tensor.Tensor, error) {
		ys, err := convOp(c, []*tensor.Tensor{ops.Cast(x, tensor.Float32), ops.Cast(w, tensor.Float32)})
		if err != nil {
			return nil, err
		}
		return ops.Cast(ys[0], tensor.Float64), nil
	}
	k := 1
	if w.Dim(0) > 0 {
		k = w.Size() / w.Dim(0)
	}
	switch {
	case k*255*255 <= 1<<24:
		return conv(x)
	case k*16*255 <= 1<<24:
		hi := ops.Floor(ops.DivScalar(x, 16))
		lo := ops.Sub(x, ops.MulScalar(hi, 16))
		yh, err := conv(hi)
		if err != nil {
			return nil, err
		}
		yl, err := conv(lo)
		if err != nil {
			return nil, err
		}
		return ops.Add(ops.MulScalar(yh, 16), yl), nil
	}
	ys, err := convOp(c, []*tensor.Tensor{x, w})
	if err != nil {
		return nil, err
	}
	return ys[0], nil
}

// convIntegerOp is ConvInteger: Conv's attributes, on 8-bit data less its
// zero points, with an int32 result.
func convIntegerOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	req, err := c.needs(ins, "x", "w")
	if err != nil {
		return nil, err
	}
	y, err := c.integerConv(req[0], c.In(ins, 2), req[1], c.In(ins, 3))
	if err != nil {
		return nil, err
	}
	return one(ops.Cast(y, tensor.Int32))
}

// requantize maps an exact integer accumulator acc to y_zero_point's type:
// saturate(round(acc · (in_scale · w_scale / y_scale)) + y_zero_point),
// in float32 as ONNX Runtime does. inScale and wScale are shaped for
// broadcasting against acc already.
func (c *nodeCtx) requantize(acc, inScale, wScale, yScale, yzp *tensor.Tensor) (*tensor.Tensor, error) {
	if yScale.Size() != 1 {
		return nil, c.Errorf("y_scale has shape %v; want a scalar", yScale.Shape())
	}
	if err := c.quantTyped(yzp, "y_zero_point"); err != nil {
		return nil, err
	}
	if yzp.Size() != 1 {
		return nil, c.Errorf("y_zero_point has shape %v; want a scalar", yzp.Shape())
	}
	mult := ops.Div(ops.Mul(asF32(inScale), asF32(wScale)), asF32(ops.Reshape(yScale)))
	v := ops.Round(ops.Mul(ops.Cast(acc, tensor.Float32), mult))
	return saturate(ops.Add(v, ops.Cast(ops.Reshape(yzp), tensor.Float32)), yzp.DType()), nil
}

// scaleShaped shapes a per-tensor scale to rank 0, or applies shape to a
// vector one.
func (c *nodeCtx) scaleShaped(s *tensor.Tensor, what string, shape func(*tensor.Tensor) (*tensor.Tensor, error)) (*tensor.Tensor, error) {
	if !s.DType().IsFloat() {
		return nil, c.Errorf("%s has dtype %v; want a float", what, s.DType())
	}
	if s.Size() == 1 && s.Rank() <= 1 {
		return ops.Reshape(s), nil
	}
	if shape == nil {
		return nil, c.Errorf("%s has shape %v; want a scalar", what, s.Shape())
	}
	return shape(s)
}

// qlinearMatMulOp is QLinearMatMul: the product of two quantized
// matrices, requantized with the output's scale and zero point. A's scale
// and zero point may be per row, B's per column.
func qlinearMatMulOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	req, err := c.needs(ins, "a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale", "y_zero_point")
	if err != nil {
		return nil, err
	}
	a, b := req[0], req[3]
	acc, err := c.integerMatMul(a, req[2], b, req[5])
	if err != nil {
		return nil, err
	}
	as, err := c.scaleShaped(req[1], "a_scale", c.rowZero(a, "a_scale"))
	if err != nil {
		return nil, err
	}
	bs, err := c.scaleShaped(req[4], "b_scale", c.colZero(b, "b_scale"))
	if err != nil {
		return nil, err
	}
	y, err := c.requantize(acc, as, bs, req[6], req[7])
	if err != nil {
		return nil, err
	}
	return one(y)
}

// qlinearConvOp is QLinearConv: Conv's attributes on quantized x and w
// (w's scale and zero point may be per output channel), an optional int32
// bias added to the accumulator, requantized with y's scale and zero
// point.
func qlinearConvOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	req, err := c.needs(ins, "x", "x_scale", "x_zero_point", "w", "w_scale", "w_zero_point", "y_scale", "y_zero_point")
	if err != nil {
		return nil, err
	}
	x, w := req[0], req[3]
	acc, err := c.integerConv(x, req[2], w, req[5])
	if err != nil {
		return nil, err
	}
	if bias := c.In(ins, 8); bias != nil {
		if bias.DType() != tensor.Int32 || bias.Rank() != 1 || bias.Dim(0) != acc.Dim(1) {
			return nil, c.Errorf("B has dtype %v and shape %v; want int32 of [%d]", bias.DType(), bias.Shape(), acc.Dim(1))
		}
		shape := make([]int, acc.Rank())
		for i := range shape {
			shape[i] = 1
		}
		shape[1] = bias.Dim(0)
		acc = ops.Add(acc, ops.Cast(ops.Reshape(bias, shape...), tensor.Float64))
	}
	xs, err := c.scaleShaped(req[1], "x_scale", nil)
	if err != nil {
		return nil, err
	}
	ws, err := c.scaleShaped(req[4], "w_scale", c.channelZero(w, acc.Rank(), 1, "w_scale"))
	if err != nil {
		return nil, err
	}
	y, err := c.requantize(acc, xs, ws, req[6], req[7])
	if err != nil {
		return nil, err
	}
	return one(y)
}
