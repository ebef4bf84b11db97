package onnx

import (
	"math"

	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// 3-D convolution and pooling (N×C×D×H×W), which spore has no primitive
// for, composed from the 2-D ones: each depth offset of the kernel is a
// 2-D op over the depth planes it reaches (folded into the batch), and
// the offsets are summed (Conv), maximised (MaxPool) or averaged
// (AveragePool) along depth. The cost is one 2-D op per kernel depth.

// spatial3 is the geometry of a 3-D node; pads are in ONNX's order (all
// begins, then all ends).
type spatial3 struct {
	kernel, stride, dilation [3]int
	pads                     [6]int
}

// intsOfSize reads integer-list attribute name, which must have size
// entries; absent, it is size copies of def.
func (c *nodeCtx) intsOfSize(name string, def, size int) ([]int, error) {
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

// spatial3Attrs reads a 3-D node's window attributes for an input of
// extents in; kernel is the weight's window (zeros for pools).
func (c *nodeCtx) spatial3Attrs(kernel, in [3]int) (spatial3, error) {
	var s spatial3
	list := c.intsOfSize
	ks, err := list("kernel_shape", 0, 3)
	if err != nil {
		return s, err
	}
	st, err := list("strides", 1, 3)
	if err != nil {
		return s, err
	}
	dl, err := list("dilations", 1, 3)
	if err != nil {
		return s, err
	}
	pd, err := list("pads", 0, 6)
	if err != nil {
		return s, err
	}
	for i := range 3 {
		if ks[i] == 0 {
			ks[i] = kernel[i]
		} else if kernel[i] != 0 && ks[i] != kernel[i] {
			return s, c.Errorf("attribute kernel_shape %v disagrees with the weight's window %v", ks, kernel)
		}
		if ks[i] < 1 || st[i] < 1 || dl[i] < 1 || ks[i] > maxWindow || st[i] > maxWindow || dl[i] > maxWindow {
			return s, c.Errorf("kernel_shape %v, strides %v and dilations %v must be positive and at most %d", ks, st, dl, maxWindow)
		}
		s.kernel[i], s.stride[i], s.dilation[i] = ks[i], st[i], dl[i]
	}
	for i, p := range pd {
		if p < 0 || p > maxWindow {
			return s, c.Errorf("attribute pads %v is negative or exceeds %d", pd, maxWindow)
		}
		s.pads[i] = p
	}
	switch ap := c.String("auto_pad", "NOTSET"); ap {
	case "NOTSET", "":
	case "VALID":
		s.pads = [6]int{}
	case "SAME_UPPER", "SAME_LOWER":
		for i := range 3 {
			ek := (s.kernel[i]-1)*s.dilation[i] + 1
			out := (in[i] + s.stride[i] - 1) / s.stride[i]
			total := max((out-1)*s.stride[i]+ek-in[i], 0)
			lo := total / 2
			if ap == "SAME_LOWER" {
				lo = total - total/2
			}
			s.pads[i], s.pads[3+i] = lo, total-lo
		}
	default:
		return s, c.Errorf("attribute auto_pad is %q, want NOTSET, VALID, SAME_UPPER or SAME_LOWER", ap)
	}
	out := []int{1, 1, 0, 0, 0}
	for i := range 3 {
		ek := (s.kernel[i]-1)*s.dilation[i] + 1
		if in[i]+s.pads[i]+s.pads[3+i] < ek {
			return s, c.Errorf("window %v (dilations %v) is larger than the padded input %v", s.kernel, s.dilation, in)
		}
		out[2+i] = (in[i]+s.pads[i]+s.pads[3+i]-ek)/s.stride[i] + 1
	}
	return s, c.checkMade(out, "output plane")
}

// inner2D returns the 2-D geometry of s's height and width.
func (s spatial3) inner2D() (kernel, stride, dilation [2]int, pads [4]int) {
	return [2]int{s.kernel[1], s.kernel[2]}, [2]int{s.stride[1], s.stride[2]},
		[2]int{s.dilation[1], s.dilation[2]}, [4]int{s.pads[1], s.pads[4], s.pads[2], s.pads[5]}
}

// depthPlanes pads x (N×C×D×H×W) along depth with fill and returns, for
// each kernel depth offset, the depth planes it reaches as an
// (N·Do)×C×H×W batch, and Do.
func depthPlanes(x *tensor.Tensor, s spatial3, fill float64) ([]*tensor.Tensor, int) {
	n, ch, h, w := x.Dim(0), x.Dim(1), x.Dim(3), x.Dim(4)
	pp := [][2]int{{0, 0}, {0, 0}, {s.pads[0], s.pads[3]}, {0, 0}, {0, 0}}
	xp := ops.Pad(x, pp)
	if xp != x && fill != 0 {
		inside := ops.Cast(ops.Pad(tensor.Ones(tensor.Uint8, x.Shape()...), pp), tensor.Bool)
		xp = ops.Select(inside, xp, ops.ScalarLike(x, fill))
	}
	dp := xp.Dim(2)
	ek := (s.kernel[0]-1)*s.dilation[0] + 1
	do := (dp-ek)/s.stride[0] + 1
	planes := make([]*tensor.Tensor, s.kernel[0])
	for k := range planes {
		d0 := k * s.dilation[0]
		sl := ops.StridedSlice(xp, []int{0, 0, d0, 0, 0}, []int{n, ch, d0 + (do-1)*s.stride[0] + 1, h, w}, []int{1, 1, s.stride[0], 1, 1})
		planes[k] = ops.Reshape(ops.Transpose(sl, 0, 2, 1, 3, 4), n*do, ch, h, w)
	}
	return planes, do
}

// unfoldDepth turns an (N·Do)×C×H×W result back into N×C×Do×H×W.
func unfoldDepth(y *tensor.Tensor, n, do int) *tensor.Tensor {
	s := y.Shape()
	return ops.Transpose(ops.Reshape(y, n, do, s[1], s[2], s[3]), 0, 2, 1, 3, 4)
}

// conv3D is Conv over three spatial axes.
func (c *nodeCtx) conv3D(x, w, b *tensor.Tensor) ([]*tensor.Tensor, error) {
	if w.Rank() != 5 {
		return nil, c.Errorf("W has shape %v for X of shape %v", w.Shape(), x.Shape())
	}
	ws := w.Shape()
	s, err := c.spatial3Attrs([3]int{ws[2], ws[3], ws[4]}, [3]int{x.Dim(2), x.Dim(3), x.Dim(4)})
	if err != nil {
		return nil, err
	}
	_, stride, dilation, pads := s.inner2D()
	planes, do := depthPlanes(x, s, 0)
	var y *tensor.Tensor
	for k, p := range planes {
		wk := ops.Reshape(ops.StridedSlice(w, []int{0, 0, k, 0, 0}, []int{ws[0], ws[1], k + 1, ws[3], ws[4]}, []int{1, 1, 1, 1, 1}), ws[0], ws[1], ws[3], ws[4])
		yk := ops.Conv2D(p, wk, ops.Conv2DOpts{
			Stride:   stride,
			Dilation: dilation,
			Padding:  ops.Padding{Mode: ops.PadExplicit, Pads: pads},
			Groups:   int(c.Int("group", 1)),
		})
		if y == nil {
			y = yk
		} else {
			y = ops.Add(y, yk)
		}
	}
	y = unfoldDepth(y, x.Dim(0), do)
	if b != nil {
		y = ops.Add(y, ops.Reshape(b, 1, b.Size(), 1, 1, 1))
	}
	return one(y)
}

// pool3D is MaxPool or AveragePool over three spatial axes (ceil_mode
// and dilations excepted).
func (c *nodeCtx) pool3D(x *tensor.Tensor, isMax bool) ([]*tensor.Tensor, error) {
	if c.Int("ceil_mode", 0) != 0 {
		return nil, c.Errorf("ceil_mode=1 is not supported for 3-D pooling")
	}
	s, err := c.spatial3Attrs([3]int{}, [3]int{x.Dim(2), x.Dim(3), x.Dim(4)})
	if err != nil {
		return nil, err
	}
	if s.dilation != [3]int{1, 1, 1} {
		return nil, c.Errorf("dilations %v are not supported for 3-D pooling", s.dilation)
	}
	kernel, stride, _, pads := s.inner2D()
	pad := ops.Padding{Mode: ops.PadExplicit, Pads: pads}
	n := x.Dim(0)
	if isMax {
		planes, do := depthPlanes(x, s, math.Inf(-1))
		var y *tensor.Tensor
		for _, p := range planes {
			yk := ops.MaxPool2D(p, kernel, stride, pad)
			if y == nil {
				y = yk
			} else {
				y = ops.Maximum(y, yk)
			}
		}
		return one(unfoldDepth(y, n, do))
	}
	// A 3-D window's average is the mean over its depth planes of the 2-D
	// averages: planes in the depth padding count (as zeros) only when
	// count_include_pad is set. The 2-D divisor is the same for every
	// plane, so the depth divisor can be applied separately.
	include := c.Int("count_include_pad", 0) != 0
	planes, do := depthPlanes(x, s, 0)
	var sum *tensor.Tensor
	for _, p := range planes {
		yk := ops.AvgPool2D(p, kernel, stride, pad, ops.CountIncludePad(include))
		if sum == nil {
			sum = yk
		} else {
			sum = ops.Add(sum, yk)
		}
	}
	y := unfoldDepth(sum, n, do)
	div := make([]float64, do)
	for o := range div {
		if include {
			div[o] = float64(s.kernel[0])
			continue
		}
		lo := o*s.stride[0] - s.pads[0]
		div[o] = float64(max(0, min(lo+s.kernel[0], x.Dim(2))-max(lo, 0)))
	}
	inv := make([]float64, do)
	for i, d := range div {
		inv[i] = 1 / max(d, 1)
	}
	return one(ops.Mul(y, ops.Cast(tensor.FromSlice(inv, 1, 1, do, 1, 1), x.DType())))
}

// convTranspose3D is ConvTranspose over three spatial axes, with explicit
// pads (auto_pad NOTSET or VALID) and output_padding; output_shape and
// auto_pad SAME_* are refused. Each kernel depth offset kd is a 2-D
// ConvTranspose of the input's depth planes (folded into the batch) with
// that slice of W; its planes land at depths id·stride + kd·dilation of
// the full output, spread by interleaving zeros and shifted by padding,
// and the offsets are summed before the depth pads are cropped.
func (c *nodeCtx) convTranspose3D(x, w, b *tensor.Tensor) ([]*tensor.Tensor, error) {
	if w.Rank() != 5 {
		return nil, c.Errorf("W has shape %v for X of shape %v", w.Shape(), x.Shape())
	}
	xs, ws := x.Shape(), w.Shape()
	group := int(c.Int("group", 1))
	if group < 1 || ws[0] != xs[1] || xs[1]%group != 0 {
		return nil, c.Errorf("W %v must have X's %d channels first (X %v, group %d)", ws, xs[1], xs, group)
	}
	if c.Has("output_shape") {
		return nil, c.Errorf("output_shape is not supported for 3-D ConvTranspose (give pads and output_padding)")
	}
	autoPad := c.String("auto_pad", "NOTSET")
	if autoPad != "NOTSET" && autoPad != "" && autoPad != "VALID" {
		return nil, c.Errorf("auto_pad %q is not supported for 3-D ConvTranspose", autoPad)
	}
	list := c.intsOfSize
	ks, err := list("kernel_shape", 0, 3)
	if err != nil {
		return nil, err
	}
	st, err := list("strides", 1, 3)
	if err != nil {
		return nil, err
	}
	dl, err := list("dilations", 1, 3)
	if err != nil {
		return nil, err
	}
	pd, err := list("pads", 0, 6)
	if err != nil {
		return nil, err
	}
	op, err := list("output_padding", 0, 3)
	if err != nil {
		return nil, err
	}
	if autoPad == "VALID" {
		pd = make([]int, 6)
	}
	var full, out [3]int
	for i := range 3 {
		if ks[i] != 0 && ks[i] != ws[2+i] {
			return nil, c.Errorf("attribute kernel_shape %v disagrees with the weight's window %v", ks, ws[2:])
		}
		if st[i] < 1 || dl[i] < 1 || st[i] > maxWindow || dl[i] > maxWindow || pd[i] < 0 || pd[3+i] < 0 || pd[i] > maxWindow || pd[3+i] > maxWindow {
			return nil, c.Errorf("strides %v, dilations %v and pads %v must be positive (pads non-negative) and at most %d", st, dl, pd, maxWindow)
		}
		if op[i] < 0 || op[i] >= max(st[i], dl[i]) {
			return nil, c.Errorf("output_padding %v must be below the stride or dilation", op)
		}
		full[i] = st[i]*(xs[2+i]-1) + op[i] + (ws[2+i]-1)*dl[i] + 1
		out[i] = full[i] - pd[i] - pd[3+i]
		if out[i] < 1 {
			return nil, c.Errorf("pads %v leave no output on axis %d", pd, 2+i)
		}
	}
	n, d, co := xs[0], xs[2], ws[1]*group
	if err := c.checkMade([]int{n, co, full[0], full[1], full[2]}, "output"); err != nil {
		return nil, err
	}
	// The input's depth planes as an (N·D)×C×H×W batch.
	planes := ops.Reshape(ops.Transpose(x, 0, 2, 1, 3, 4), n*d, xs[1], xs[3], xs[4])
	attrs := ops.ConvGradAttrs{
		ConvAttrs: ops.ConvAttrs{Stride: [2]int{st[1], st[2]}, Pads: [4]int{pd[1], pd[4], pd[2], pd[5]}, Dilation: [2]int{dl[1], dl[2]}, Groups: group},
		Shape:     tensor.Shape{n * d, co, out[1], out[2]},
	}
	spread := st[0]*(d-1) + 1 // the depth the D planes span at stride st[0]
	var y *tensor.Tensor
	for kd := range ws[2] {
		wk := ops.Reshape(ops.StridedSlice(w, []int{0, 0, kd, 0, 0}, []int{ws[0], ws[1], kd + 1, ws[3], ws[4]}, []int{1, 1, 1, 1, 1}), ws[0], ws[1], ws[3], ws[4])
		z := ops.Reshape(ops.Conv2DBackpropInput(planes, wk, attrs), n, d, 1, co, out[1], out[2])
		if st[0] > 1 { // zeros between the planes
			z = ops.Pad(z, [][2]int{{0, 0}, {0, 0}, {0, st[0] - 1}, {0, 0}, {0, 0}, {0, 0}})
		}
		z = ops.Reshape(z, n, d*st[0], co, out[1], out[2])
		z = ops.Slice(z, []int{0, 0, 0, 0, 0}, []int{n, spread, co, out[1], out[2]})
		lo := kd * dl[0]
		z = ops.Pad(z, [][2]int{{0, 0}, {lo, full[0] - lo - spread}, {0, 0}, {0, 0}, {0, 0}})
		if y == nil {
			y = z
		} else {
			y = ops.Add(y, z)
		}
	}
	y = ops.Slice(y, []int{0, pd[0], 0, 0, 0}, []int{n, out[0], co, out[1], out[2]})
	y = ops.Transpose(y, 0, 2, 1, 3, 4)
	if b != nil {
		y = ops.Add(y, ops.Reshape(b, 1, b.Size(), 1, 1, 1))
	}
	return one(y)
}
