package onnx

import (
	"math"

	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Neural-network ops: convolution, normalisation (batch, layer, instance,
// Lp, mean-variance, local response), Softmax and its kin, Gelu, dropout
// and pooling. Spore's convolution and pooling are 2-D (NCHW); a 1-D op
// (NCL) runs as 2-D over an inserted unit height.

func init() {
	register("Conv", 1, 0, convOp)
	register("ConvTranspose", 1, 0, convTransposeOp)
	register("BatchNormalization", 9, 0, batchNormOp)
	register("Softmax", 1, 0, softmaxOp(ops.Softmax))
	register("LogSoftmax", 1, 0, softmaxOp(ops.LogSoftmax))
	register("LayerNormalization", 17, 0, layerNormOp)
	register("Gelu", 20, 0, func(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := c.need(ins, 0, "X")
		if err != nil {
			return nil, err
		}
		switch a := c.String("approximate", "none"); a {
		case "none":
			return one(ops.GELU(x))
		case "tanh":
			return one(ops.GELUTanh(x))
		default:
			return nil, c.Errorf("attribute approximate is %q, want \"none\" or \"tanh\"", a)
		}
	})
	register("Dropout", 12, 0, dropoutOp)
	register("MaxPool", 1, 0, poolOp(true))
	register("AveragePool", 1, 0, poolOp(false))
	register("GlobalAveragePool", 1, 0, globalPoolOp(ops.MeanKeepDims))
	register("GlobalMaxPool", 1, 0, globalPoolOp(ops.MaxKeepDims))
	register("InstanceNormalization", 1, 0, instanceNormOp)
	register("Hardmax", 13, 0, func(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := c.need(ins, 0, "input")
		if err != nil {
			return nil, err
		}
		ax, err := c.axis(c.Int("axis", -1), x.Rank(), "axis")
		if err != nil {
			return nil, err
		}
		hot := ops.OneHot(ops.ArgMax(x, ax), x.Dim(ax), x.DType())
		return one(ops.MoveAxis(hot, x.Rank()-1, ax))
	})
	register("LpNormalization", 1, 0, func(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := c.need(ins, 0, "input")
		if err != nil {
			return nil, err
		}
		ax, err := c.axis(c.Int("axis", -1), x.Rank(), "axis")
		if err != nil {
			return nil, err
		}
		var norm *tensor.Tensor
		switch p := c.Int("p", 2); p {
		case 1:
			norm = ops.SumKeepDims(ops.Abs(x), ax)
		case 2:
			norm = ops.Sqrt(ops.SumKeepDims(ops.Mul(x, x), ax))
		default:
			return nil, c.Errorf("p is %d, want 1 or 2", p)
		}
		// A zero vector stays zero, as in ONNX Runtime.
		zero := ops.Equal(norm, ops.ScalarLike(norm, 0))
		return one(ops.Div(x, ops.Select(zero, ops.ScalarLike(norm, 1), norm)))
	})
	register("MeanVarianceNormalization", 9, 0, func(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := c.need(ins, 0, "X")
		if err != nil {
			return nil, err
		}
		axes, err := c.axes(c.IntsAttr("axes", []int64{0, 2, 3}), x.Rank(), "axes")
		if err != nil {
			return nil, err
		}
		mean := ops.MeanKeepDims(x, axes...)
		d := ops.Sub(x, mean)
		std := ops.Sqrt(ops.MeanKeepDims(ops.Mul(d, d), axes...))
		return one(ops.Div(d, ops.AddScalar(std, 1e-9)))
	})
	register("LRN", 1, 0, lrnOp)
}

// maxWindow bounds kernel extents, strides, dilations and pads.
const maxWindow = 1 << 24

// spatial is the 2-D geometry of a convolution or pooling node: kernel,
// strides, dilations and explicit pads (top, bottom, left, right).
type spatial struct {
	kernel, stride, dilation [2]int
	pads                     [4]int
}

// to2D views an N×C×L tensor as N×C×1×L, so that 1-D ops run as 2-D;
// oneD reports whether it did. Ranks other than 3 and 4 fail.
func (c *nodeCtx) to2D(x *tensor.Tensor, what string) (*tensor.Tensor, bool, error) {
	switch x.Rank() {
	case 4:
		return x, false, nil
	case 3:
		s := x.Shape()
		return ops.Reshape(x, s[0], s[1], 1, s[2]), true, nil
	}
	return nil, false, c.Errorf("%s has shape %v; spore supports 1-D (N×C×L), 2-D (N×C×H×W) and, for Conv and pooling, 3-D (N×C×D×H×W)", what, x.Shape())
}

// from2D undoes to2D on a result.
func from2D(y *tensor.Tensor, oneD bool) *tensor.Tensor {
	if !oneD {
		return y
	}
	s := y.Shape()
	return ops.Reshape(y, s[0], s[1], s[3])
}

// spatialAttrs reads kernel_shape (or takes kernel, the filter's window,
// when the node has none), strides, dilations, pads and auto_pad for an
// input of extent (h, w), padding as autoPad (the node's auto_pad) says.
// oneD means the node's attributes have one entry per list and describe
// the width.
func (c *nodeCtx) spatialAttrs(kernel [2]int, h, w int, oneD bool, autoPad string) (spatial, error) {
	n := 2
	if oneD {
		n = 1
	}
	list := func(name string, def int, size int) ([]int, error) {
		v, err := c.intsAttr(name, nil)
		if err != nil {
			return nil, err
		}
		if v == nil {
			v = make([]int, size)
			for i := range v {
				v[i] = def
			}
		}
		if len(v) != size {
			return nil, c.Errorf("attribute %s %v has %d entries, want %d", name, v, len(v), size)
		}
		return v, nil
	}
	var s spatial
	ks, err := list("kernel_shape", 0, n)
	if err != nil {
		return s, err
	}
	st, err := list("strides", 1, n)
	if err != nil {
		return s, err
	}
	dl, err := list("dilations", 1, n)
	if err != nil {
		return s, err
	}
	pd, err := list("pads", 0, 2*n)
	if err != nil {
		return s, err
	}
	// Lift 1-D lists to 2-D with a unit height.
	if oneD {
		ks, st, dl, pd = []int{1, ks[0]}, []int{1, st[0]}, []int{1, dl[0]}, []int{0, pd[0], 0, pd[1]}
	}
	for i := range 2 {
		if ks[i] == 0 {
			ks[i] = kernel[i]
		} else if kernel[i] != 0 && ks[i] != kernel[i] {
			return s, c.Errorf("attribute kernel_shape %v disagrees with the weight's window %v", ks, kernel)
		}
		if ks[i] < 1 || st[i] < 1 || dl[i] < 1 {
			return s, c.Errorf("kernel_shape %v, strides %v and dilations %v must be positive", ks, st, dl)
		}
		// Far beyond any real model, and small enough that the window
		// arithmetic below cannot overflow.
		if ks[i] > maxWindow || st[i] > maxWindow || dl[i] > maxWindow {
			return s, c.Errorf("kernel_shape %v, strides %v or dilations %v exceed %d", ks, st, dl, maxWindow)
		}
		s.kernel[i], s.stride[i], s.dilation[i] = ks[i], st[i], dl[i]
	}
	for _, p := range pd {
		if p < 0 || p > maxWindow {
			return s, c.Errorf("attribute pads %v is negative or exceeds %d", pd, maxWindow)
		}
	}
	// ONNX orders pads as all begins then all ends; spore as top, bottom,
	// left, right.
	s.pads = [4]int{pd[0], pd[2], pd[1], pd[3]}
	in := [2]int{h, w}
	switch ap := autoPad; ap {
	case "NOTSET", "":
	case "VALID":
		s.pads = [4]int{}
	case "SAME_UPPER", "SAME_LOWER":
		for i := range 2 {
			ek := (s.kernel[i]-1)*s.dilation[i] + 1
			out := (in[i] + s.stride[i] - 1) / s.stride[i]
			total := max((out-1)*s.stride[i]+ek-in[i], 0)
			lo := total / 2
			if ap == "SAME_LOWER" {
				lo = total - total/2
			}
			s.pads[2*i], s.pads[2*i+1] = lo, total-lo
		}
	default:
		return s, c.Errorf("attribute auto_pad is %q, want NOTSET, VALID, SAME_UPPER or SAME_LOWER", ap)
	}
	return s, nil
}

// checkOut fails when the windows of s over an n×ch×h×w input would make
// an output of more than maxMade elements (huge pads or dilations in a
// hostile model).
func (c *nodeCtx) checkOut(s spatial, n, ch, h, w int) error {
	in := [2]int{h, w}
	out := []int{n, ch, 0, 0}
	for i := range 2 {
		ek := (s.kernel[i]-1)*s.dilation[i] + 1
		out[2+i] = max(0, (in[i]+s.pads[2*i]+s.pads[2*i+1]-ek)/s.stride[i]+1)
	}
	return c.checkMade(out, "output")
}

// convOp is Conv: Y = X ⋆ W + B over 1-D or 2-D spatial axes.
func convOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	req, err := c.needs(ins, "X", "W")
	if err != nil {
		return nil, err
	}
	x, w := req[0], req[1]
	if x.Rank() == 5 {
		return c.conv3D(x, w, c.In(ins, 2))
	}
	x, oneD, err := c.to2D(x, "X")
	if err != nil {
		return nil, err
	}
	if w.Rank() != x.Rank()-boolInt(oneD) {
		return nil, c.Errorf("W has shape %v for X of shape %v", w.Shape(), x.Shape())
	}
	if oneD {
		ws := w.Shape()
		w = ops.Reshape(w, ws[0], ws[1], 1, ws[2])
	}
	ws := w.Shape()
	s, err := c.spatialAttrs([2]int{ws[2], ws[3]}, x.Dim(2), x.Dim(3), oneD, c.String("auto_pad", "NOTSET"))
	if err != nil {
		return nil, err
	}
	if err := c.checkOut(s, x.Dim(0), ws[0], x.Dim(2), x.Dim(3)); err != nil {
		return nil, err
	}
	y := ops.Conv2D(x, w, ops.Conv2DOpts{
		Stride:   s.stride,
		Dilation: s.dilation,
		Padding:  ops.Padding{Mode: ops.PadExplicit, Pads: s.pads},
		Groups:   int(c.Int("group", 1)),
	})
	if b := c.In(ins, 2); b != nil {
		y = ops.Add(y, ops.Reshape(b, 1, b.Size(), 1, 1))
	}
	return one(from2D(y, oneD))
}

// boolInt is 1 for true: the axis a 1-D op adds.
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// convTransposeOp is ConvTranspose, the gradient of a convolution with
// respect to its input: W is [C_in, C_out/group, kH, kW], and the output
// extent is stride·(in−1) + output_padding + dilated kernel − pads, or
// output_shape when the node gives it (the pads are then derived).
func convTransposeOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	req, err := c.needs(ins, "X", "W")
	if err != nil {
		return nil, err
	}
	x, w := req[0], req[1]
	if x.Rank() == 5 {
		return c.convTranspose3D(x, w, c.In(ins, 2))
	}
	x, oneD, err := c.to2D(x, "X")
	if err != nil {
		return nil, err
	}
	if w.Rank() != x.Rank()-boolInt(oneD) {
		return nil, c.Errorf("W has shape %v for X of shape %v", w.Shape(), x.Shape())
	}
	if oneD {
		ws := w.Shape()
		w = ops.Reshape(w, ws[0], ws[1], 1, ws[2])
	}
	ws, xs := w.Shape(), x.Shape()
	group := int(c.Int("group", 1))
	if group < 1 || ws[0] != xs[1] {
		return nil, c.Errorf("W %v must have X's %d channels first (X %v, group %d)", ws, xs[1], xs, group)
	}
	// auto_pad SAME_* here means output = input·stride, a rule of its
	// own: read the explicit pads, then apply auto_pad below.
	autoPad := c.String("auto_pad", "NOTSET")
	s, err := c.spatialAttrs([2]int{ws[2], ws[3]}, 0, 0, oneD, "NOTSET")
	if err != nil {
		return nil, err
	}
	opad, err := c.intsAttr("output_padding", nil)
	if err != nil {
		return nil, err
	}
	oshape, err := c.intsAttr("output_shape", nil)
	if err != nil {
		return nil, err
	}
	if oneD {
		if opad != nil {
			opad = append([]int{0}, opad...)
		}
		if oshape != nil {
			oshape = append([]int{1}, oshape...)
		}
	}
	if opad == nil {
		opad = []int{0, 0}
	}
	if len(opad) != 2 || (oshape != nil && len(oshape) != 2) {
		return nil, c.Errorf("output_padding %v or output_shape %v has the wrong length", opad, oshape)
	}
	in := [2]int{xs[2], xs[3]}
	var out [2]int
	for i := range 2 {
		ek := (s.kernel[i]-1)*s.dilation[i] + 1
		if opad[i] < 0 || opad[i] >= max(s.stride[i], s.dilation[i]) {
			return nil, c.Errorf("output_padding %v must be below the stride or dilation", opad)
		}
		full := s.stride[i]*(in[i]-1) + opad[i] + ek
		switch {
		case oshape != nil || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER":
			want := in[i] * s.stride[i]
			if oshape != nil {
				want = oshape[i]
			}
			total := full - want
			if total < 0 && oshape == nil {
				// SAME asks for more than the kernel reaches: ONNX
				// Runtime pads nothing and keeps the full extent.
				s.pads[2*i], s.pads[2*i+1] = 0, 0
				out[i] = full
				continue
			}
			if total < 0 {
				// A larger output_shape than the kernel reaches (up to
				// one stride more) gains rows that no input touches, as
				// in ONNX Runtime: the pads are zero and out is want.
				if -total >= s.stride[i] {
					return nil, c.Errorf("output shape %d on axis %d is larger than the %d a stride of %d can give", want, i, full+s.stride[i]-1, s.stride[i])
				}
				s.pads[2*i], s.pads[2*i+1] = 0, 0
				out[i] = want
				continue
			}
			// ONNX Runtime puts the odd pixel at the end for
			// SAME_UPPER and at the start for SAME_LOWER and for an
			// explicit output_shape (checked against it by the
			// convtranspose_same_upper and _output_shape fixtures).
			lo := total - total/2
			if autoPad == "SAME_UPPER" {
				lo = total / 2
			}
			s.pads[2*i], s.pads[2*i+1] = lo, total-lo
		case autoPad == "VALID":
			s.pads[2*i], s.pads[2*i+1] = 0, 0
		case autoPad != "NOTSET" && autoPad != "":
			return nil, c.Errorf("attribute auto_pad is %q, want NOTSET, VALID, SAME_UPPER or SAME_LOWER", autoPad)
		}
		out[i] = full - s.pads[2*i] - s.pads[2*i+1]
		if out[i] < 1 {
			return nil, c.Errorf("pads %v leave no output on axis %d", s.pads, i)
		}
	}
	if err := c.checkMade([]int{xs[0], ws[1] * group, out[0], out[1]}, "output"); err != nil {
		return nil, err
	}
	attrs := ops.ConvGradAttrs{
		ConvAttrs: ops.ConvAttrs{Stride: s.stride, Pads: s.pads, Dilation: s.dilation, Groups: group},
		Shape:     tensor.Shape{xs[0], ws[1] * group, out[0], out[1]},
	}
	y := ops.Conv2DBackpropInput(x, w, attrs)
	if b := c.In(ins, 2); b != nil {
		y = ops.Add(y, ops.Reshape(b, 1, b.Size(), 1, 1))
	}
	return one(from2D(y, oneD))
}

// batchNormOp is BatchNormalization with the running statistics
// (inference), or, for a node with training_mode=1 (opset 14 on), with
// the batch statistics and the updated running statistics as outputs
// (see batchNormTraining). Whether it normalises with the batch's
// statistics is the model's choice, written in the node.
func batchNormOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	in, err := c.needs(ins, "X", "scale", "B", "input_mean", "input_var")
	if err != nil {
		return nil, err
	}
	if c.Int("training_mode", 0) != 0 {
		if c.Opset < 14 {
			return nil, c.Errorf("attribute training_mode exists from opset 14; the model's opset is %d", c.Opset)
		}
		return c.batchNormTraining(in)
	}
	for i := 1; i < len(c.Node.GetOutput()); i++ {
		if c.wantOutput(i) {
			return nil, c.Errorf("output %d (running statistics) exists only in training mode, which is not supported", i)
		}
	}
	x := in[0]
	xs := x.Shape()
	if len(xs) < 2 {
		return nil, c.Errorf("X has shape %v; want N×C×…", xs)
	}
	// spore's BatchNorm takes N×C or N×C×H×W: fold any other layout into
	// N×C×rest×1.
	v := x
	if len(xs) != 2 && len(xs) != 4 {
		rest := 1
		for _, d := range xs[2:] {
			rest *= d
		}
		v = ops.Reshape(x, xs[0], xs[1], rest, 1)
	}
	y, _, _ := ops.BatchNorm(v, in[1], in[2], in[3], in[4], false, 0.9, float64(c.Float("epsilon", 1e-5)))
	if v != x {
		y = ops.Reshape(y, xs...)
	}
	return one(y)
}

// softmaxOp is Softmax or LogSoftmax along one axis from opset 13, and
// over all the axes from axis on before.
func softmaxOp(f func(*tensor.Tensor, int) *tensor.Tensor) opFunc {
	return func(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := c.need(ins, 0, "input")
		if err != nil {
			return nil, err
		}
		if c.Opset < 13 {
			// Before opset 13 the input is seen as a matrix of the axes
			// before axis (default 1) by those from it.
			ax, err := c.axis(c.Int("axis", 1), x.Rank(), "axis")
			if err != nil {
				return nil, err
			}
			inner := 1
			for _, d := range x.Shape()[ax:] {
				inner *= d
			}
			y := f(ops.Reshape(x, x.Size()/max(inner, 1), inner), 1)
			return one(ops.Reshape(y, x.Shape()...))
		}
		ax, err := c.axis(c.Int("axis", -1), x.Rank(), "axis")
		if err != nil {
			return nil, err
		}
		return one(f(x, ax))
	}
}

// layerNormOp is LayerNormalization over the axes from axis to the last;
// Scale and B broadcast to those axes. The optional Mean and InvStdDev
// outputs are computed when the node asks for them. stash_type is not
// read: the statistics are computed in the input's type, which for the
// float32 and float64 inputs spore takes is at least stash_type's
// default float32.
func layerNormOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	req, err := c.needs(ins, "X", "Scale")
	if err != nil {
		return nil, err
	}
	x, scale := req[0], req[1]
	ax, err := c.axis(c.Int("axis", -1), x.Rank(), "axis")
	if err != nil {
		return nil, err
	}
	eps := float64(c.Float("epsilon", 1e-5))
	norm := x.Shape()[ax:]
	if !scale.Shape().Equal(norm) {
		scale = ops.BroadcastTo(scale, norm...)
	}
	b := c.In(ins, 2)
	if b == nil {
		b = tensor.Zeros(x.DType(), norm...)
	} else if !b.Shape().Equal(norm) {
		b = ops.BroadcastTo(b, norm...)
	}
	out := []*tensor.Tensor{ops.LayerNorm(x, scale, b, ax, eps)}
	if c.wantOutput(1) || c.wantOutput(2) {
		axes := make([]int, x.Rank()-ax)
		for i := range axes {
			axes[i] = ax + i
		}
		mean := ops.MeanKeepDims(x, axes...)
		d := ops.Sub(x, mean)
		inv := ops.Rsqrt(ops.AddScalar(ops.MeanKeepDims(ops.Mul(d, d), axes...), eps))
		out = append(out, mean, inv)
	}
	return out, nil
}

// dropoutOp is Dropout (its ratio an attribute before opset 12, an
// input from it): the identity when the cell is not training (the
// mask output is then all true), ops.Dropout with the node's ratio when it
// is. Whether it trains is the cell's mode, not the model's training_mode
// input, as for every spore cell.
func dropoutOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "data")
	if err != nil {
		return nil, err
	}
	ratio := 0.5
	if c.Opset < 12 {
		ratio = float64(c.Float("ratio", 0.5))
	} else if r := c.In(ins, 1); r != nil {
		if ratio, err = c.scalarValue(r, "ratio"); err != nil {
			return nil, err
		}
	}
	if ratio < 0 || ratio >= 1 {
		return nil, c.Errorf("ratio %g is outside [0, 1)", ratio)
	}
	if tm := c.In(ins, 2); tm != nil && c.Opset >= 12 && ratio > 0 && c.fromInputs(tm) {
		// The cell's mode decides, whatever a constant training_mode
		// says; a caller that asks for the other one through an input
		// would get another answer than it expects.
		v, err := c.scalarValue(tm, "training_mode")
		if err != nil {
			return nil, err
		}
		if (v != 0) != c.Training {
			return nil, c.Errorf("input training_mode is %v while the cell's training mode is %v; spore's Dropout follows the cell's mode (SetTrain)", v != 0, c.Training)
		}
	}
	if !c.Training || ratio == 0 {
		if c.wantOutput(1) {
			return []*tensor.Tensor{x, tensor.Full(tensor.Bool, 1, x.Shape()...)}, nil
		}
		return one(x)
	}
	if c.wantOutput(1) {
		return nil, c.Errorf("the mask output is not supported in training mode")
	}
	return one(ops.Dropout(x, ratio, true))
}

// poolOp is MaxPool (isMax) or AveragePool over 1-D or 2-D windows.
// ceil_mode adds the trailing windows that start inside the input (not
// in its end padding), as ONNX and PyTorch do, by extending the end
// padding.
func poolOp(isMax bool) opFunc {
	return func(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := c.need(ins, 0, "X")
		if err != nil {
			return nil, err
		}
		if !c.Has("kernel_shape") {
			return nil, c.Errorf("attribute kernel_shape is missing")
		}
		withIndices := isMax && c.wantOutput(1)
		if withIndices && x.Rank() == 5 {
			return nil, c.Errorf("the Indices output of 3-D MaxPool is not supported")
		}
		if x.Rank() == 5 {
			return c.pool3D(x, isMax)
		}
		x, oneD, err := c.to2D(x, "X")
		if err != nil {
			return nil, err
		}
		s, err := c.spatialAttrs([2]int{}, x.Dim(2), x.Dim(3), oneD, c.String("auto_pad", "NOTSET"))
		if err != nil {
			return nil, err
		}
		dilated := s.dilation != [2]int{1, 1}
		if dilated && !isMax {
			return nil, c.Errorf("dilations %v are not supported in AveragePool", s.dilation)
		}
		if c.Int("storage_order", 0) != 0 && !withIndices {
			return nil, c.Errorf("storage_order=1 is not supported")
		}
		in := [2]int{x.Dim(2), x.Dim(3)}
		orig := s.pads
		extended := false
		if c.Int("ceil_mode", 0) != 0 {
			for i := range 2 {
				lo, hi := s.pads[2*i], s.pads[2*i+1]
				ek := (s.kernel[i]-1)*s.dilation[i] + 1
				span := in[i] + lo + hi - ek
				if span < 0 {
					continue // no window fits; the op reports it
				}
				out := (span+s.stride[i]-1)/s.stride[i] + 1
				if (out-1)*s.stride[i] >= in[i]+lo {
					out-- // the last window would start in the end padding
				}
				if extra := (out-1)*s.stride[i] + ek - (in[i] + lo + hi); extra > 0 {
					s.pads[2*i+1] += extra
					extended = true
				}
			}
		}
		if err := c.checkOut(s, x.Dim(0), x.Dim(1), in[0], in[1]); err != nil {
			return nil, err
		}
		pad := ops.Padding{Mode: ops.PadExplicit, Pads: s.pads}
		var y *tensor.Tensor
		switch {
		case isMax && dilated:
			if y, err = c.dilatedMaxPool(x, s); err != nil {
				return nil, err
			}
		case isMax:
			y = ops.MaxPool2D(x, s.kernel, s.stride, pad)
		default:
			include := c.Int("count_include_pad", 0) != 0
			if include && extended {
				// The windows that ceil_mode adds count the padding
				// but not the cells past it: average over the real
				// cells, then rescale each output by real cells over
				// the cells ONNX counts, a constant of the shapes.
				y = ops.AvgPool2D(x, s.kernel, s.stride, pad, ops.CountIncludePad(false))
				y = ops.Mul(y, ceilIncludeScale(y.DType(), s, orig, in, y.Dim(2), y.Dim(3)))
			} else {
				y = ops.AvgPool2D(x, s.kernel, s.stride, pad, ops.CountIncludePad(include))
			}
		}
		if withIndices {
			idx := maxPoolIndices(x, s, c.Int("storage_order", 0) != 0)
			return []*tensor.Tensor{from2D(y, oneD), from2D(idx, oneD)}, nil
		}
		return one(from2D(y, oneD))
	}
}

// dilatedMaxPool is MaxPool with dilations, which spore's MaxPool2D
// lacks: the maximum over the kernel's offsets of strided slices of the
// input padded with −∞. It costs one slice per kernel cell, which is
// fine for the small kernels dilated pooling uses.
func (c *nodeCtx) dilatedMaxPool(x *tensor.Tensor, s spatial) (*tensor.Tensor, error) {
	n, ch, h, w := x.Dim(0), x.Dim(1), x.Dim(2), x.Dim(3)
	pp := [][2]int{{0, 0}, {0, 0}, {s.pads[0], s.pads[1]}, {s.pads[2], s.pads[3]}}
	xp := ops.Pad(x, pp)
	if xp != x {
		inside := ops.Cast(ops.Pad(tensor.Ones(tensor.Uint8, x.Shape()...), pp), tensor.Bool)
		xp = ops.Select(inside, xp, ops.ScalarLike(x, math.Inf(-1)))
	}
	var out [2]int
	in := [2]int{h + s.pads[0] + s.pads[1], w + s.pads[2] + s.pads[3]}
	for i := range 2 {
		ek := (s.kernel[i]-1)*s.dilation[i] + 1
		if in[i] < ek {
			return nil, c.Errorf("dilated window %v×%v is larger than the padded input %v", s.kernel, s.dilation, in)
		}
		out[i] = (in[i]-ek)/s.stride[i] + 1
	}
	var y *tensor.Tensor
	for i := range s.kernel[0] {
		for j := range s.kernel[1] {
			y0, x0 := i*s.dilation[0], j*s.dilation[1]
			sl := ops.StridedSlice(xp,
				[]int{0, 0, y0, x0},
				[]int{n, ch, y0 + (out[0]-1)*s.stride[0] + 1, x0 + (out[1]-1)*s.stride[1] + 1},
				[]int{1, 1, s.stride[0], s.stride[1]})
			if y == nil {
				y = sl
			} else {
				y = ops.Maximum(y, sl)
			}
		}
	}
	return y, nil
}

// ceilIncludeScale returns the oh×ow factors that turn an average over
// the real input cells of each window into ONNX's average with
// count_include_pad=1 under ceil_mode: the divisor counts the window's
// cells inside the input padded by the node's own pads (orig), not those
// in the extra padding ceil_mode adds.
func ceilIncludeScale(dt tensor.DType, s spatial, orig [4]int, in [2]int, oh, ow int) *tensor.Tensor {
	overlap := func(lo, hi, a, b int) int { return max(0, min(hi, b)-max(lo, a)) }
	counts := func(axis, n int) (real, onnx []float64) {
		real, onnx = make([]float64, n), make([]float64, n)
		head, tail := orig[2*axis], orig[2*axis+1]
		for o := range n {
			lo := o*s.stride[axis] - head
			hi := lo + s.kernel[axis]
			real[o] = float64(overlap(lo, hi, 0, in[axis]))
			onnx[o] = float64(overlap(lo, hi, -head, in[axis]+tail))
		}
		return real, onnx
	}
	rh, nh := counts(0, oh)
	rw, nw := counts(1, ow)
	f := make([]float64, oh*ow)
	for i := range oh {
		for j := range ow {
			if d := nh[i] * nw[j]; d > 0 {
				f[i*ow+j] = rh[i] * rw[j] / d
			}
		}
	}
	return ops.Cast(tensor.FromSlice(f, oh, ow), dt)
}

// globalPoolOp reduces every spatial axis (2 and on) with f, keeping them
// as extent 1.
func globalPoolOp(f func(*tensor.Tensor, ...int) *tensor.Tensor) opFunc {
	return func(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := c.need(ins, 0, "X")
		if err != nil {
			return nil, err
		}
		if x.Rank() < 3 {
			return nil, c.Errorf("X has shape %v; want N×C×spatial…", x.Shape())
		}
		axes := make([]int, x.Rank()-2)
		for i := range axes {
			axes[i] = i + 2
		}
		return one(f(x, axes...))
	}
}

// instanceNormOp is InstanceNormalization: each channel of each sample
// normalised over its spatial axes, then scaled and shifted per channel.
func instanceNormOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	req, err := c.needs(ins, "input", "scale", "B")
	if err != nil {
		return nil, err
	}
	x, scale, b := req[0], req[1], req[2]
	if x.Rank() < 3 || !scale.Shape().Equal(tensor.Shape{x.Dim(1)}) || !b.Shape().Equal(tensor.Shape{x.Dim(1)}) {
		return nil, c.Errorf("input %v, scale %v and B %v: want N×C×spatial… and two [C]", x.Shape(), scale.Shape(), b.Shape())
	}
	axes := make([]int, x.Rank()-2)
	for i := range axes {
		axes[i] = i + 2
	}
	per := make([]int, x.Rank())
	for i := range per {
		per[i] = 1
	}
	per[1] = x.Dim(1)
	eps := float64(c.Float("epsilon", 1e-5))
	mean := ops.MeanKeepDims(x, axes...)
	d := ops.Sub(x, mean)
	inv := ops.Rsqrt(ops.AddScalar(ops.MeanKeepDims(ops.Mul(d, d), axes...), eps))
	return one(ops.Add(ops.Mul(ops.Mul(d, inv), ops.Reshape(scale, per...)), ops.Reshape(b, per...)))
}

// lrnOp is LRN, local response normalisation across channels:
// y = x / (bias + alpha/size · Σ x²)^beta, the sum over the size channels
// centred on each one (floor((size−1)/2) before, ceil after), built from
// slices of the zero-padded squares.
func lrnOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "X")
	if err != nil {
		return nil, err
	}
	if x.Rank() < 3 {
		return nil, c.Errorf("X has shape %v; want N×C×spatial…", x.Shape())
	}
	size := int(c.Int("size", 0))
	if size < 1 || size > maxWindow {
		return nil, c.Errorf("size %d is missing or out of range", size)
	}
	alpha, beta, bias := float64(c.Float("alpha", 1e-4)), float64(c.Float("beta", 0.75)), float64(c.Float("bias", 1))
	r := x.Rank()
	before, after := (size-1)/2, size-1-(size-1)/2
	pp := make([][2]int, r)
	pp[1] = [2]int{before, after}
	sq := ops.Pad(ops.Mul(x, x), pp)
	ch := x.Dim(1)
	var sum *tensor.Tensor
	for k := range size {
		begin, end, stride := make([]int, r), make([]int, r), make([]int, r)
		for i := range r {
			begin[i], end[i], stride[i] = 0, sq.Dim(i), 1
		}
		begin[1], end[1] = k, k+ch
		sl := ops.StridedSlice(sq, begin, end, stride)
		if sum == nil {
			sum = sl
		} else {
			sum = ops.Add(sum, sl)
		}
	}
	den := ops.PowScalar(ops.AddScalar(ops.MulScalar(sum, alpha/float64(size)), bias), beta)
	return one(ops.Div(x, den))
}
