package onnx

import (
	"math"
	"sort"

	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Detection and sampling: GridSample, RoiAlign and NonMaxSuppression.
//
// GridSample and RoiAlign are built of spore's elementwise ops and
// TakeAlongAxis: sample coordinates are computed from the grid or the
// regions, the integer corners around each one gathered from the input
// and blended with weights. They therefore trace in Graph mode with the
// grid and the regions as data, and are differentiable with respect to
// the input (and GridSample's grid, through the weights). Their
// arithmetic follows ONNX Runtime's kernels step by step, padding and
// clamping included. NonMaxSuppression's output has a data-dependent
// length: it reads its operands as values (c.Concrete) and runs eagerly.

func init() {
	register("GridSample", 16, 0, gridSampleOp)
	register("RoiAlign", 10, 0, roiAlignOp)
	register("NonMaxSuppression", 10, 0, nonMaxSuppressionOp)
}

// sampler gathers pixels of images x ([N, C, H·W]) at integer positions,
// with the out-of-range positions handled by padding ("zeros", "border"
// or "reflection", the last reflecting at lo and hi on each axis).
type sampler struct {
	x       *tensor.Tensor // [N, C, H·W]
	n, ch   int
	h, w    int
	padding string
	lo, hi  [2]float64 // reflection borders, x then y
}

// reflectInto folds v into [lo, hi] by reflecting at the borders:
// lo + r − |((|v − lo|) mod 2r) − r| with r = hi − lo, ONNX Runtime's
// GsReflect in closed form.
func reflectInto(v *tensor.Tensor, lo, hi float64) *tensor.Tensor {
	r := hi - lo
	if r <= 0 {
		return ops.FullLike(v, lo)
	}
	t := ops.Mod(ops.Abs(ops.SubScalar(v, lo)), ops.ScalarLike(v, 2*r))
	return ops.Sub(ops.ScalarLike(v, lo+r), ops.Abs(ops.SubScalar(t, r)))
}

// noNaN replaces NaN by 0 so that a NaN coordinate gathers a valid
// (ignored or zero-weighted) position rather than an undefined one.
func noNaN(v *tensor.Tensor) *tensor.Tensor {
	return ops.Select(ops.NotEqual(v, v), ops.ZerosLike(v), v)
}

// at returns the pixels at columns px and rows py ([N, P], integer
// valued floats), as [N, C, P].
func (s *sampler) at(px, py *tensor.Tensor) *tensor.Tensor {
	var valid *tensor.Tensor
	switch s.padding {
	case "zeros":
		in := func(v *tensor.Tensor, n int) *tensor.Tensor {
			return ops.LogicalAnd(ops.GreaterEqual(v, ops.ScalarLike(v, 0)), ops.LessEqual(v, ops.ScalarLike(v, float64(n-1))))
		}
		valid = ops.LogicalAnd(in(px, s.w), in(py, s.h))
	case "reflection":
		px, py = reflectInto(px, s.lo[0], s.hi[0]), reflectInto(py, s.lo[1], s.hi[1])
	}
	ix := ops.Cast(ops.Clip(noNaN(px), 0, float64(s.w-1)), tensor.Int64)
	iy := ops.Cast(ops.Clip(noNaN(py), 0, float64(s.h-1)), tensor.Int64)
	pos := ops.Add(ops.Mul(iy, ops.ScalarLike(iy, float64(s.w))), ix)
	p := pos.Dim(1)
	idx := ops.BroadcastTo(ops.Reshape(pos, s.n, 1, p), s.n, s.ch, p)
	v := ops.TakeAlongAxis(s.x, idx, 2)
	if valid != nil {
		v = ops.Select(ops.Reshape(valid, s.n, 1, p), v, ops.ZerosLike(v))
	}
	return v
}

// weigh multiplies pixels [N, C, P] by weights [N, P].
func weigh(v, w *tensor.Tensor) *tensor.Tensor {
	return ops.Mul(v, ops.ExpandDims(w, 1))
}

// cubicCoeffs returns the four cubic convolution weights (A = −0.75) of
// the taps at −1, 0, 1, 2 for a fraction t in [0, 1), ONNX Runtime's
// GsGetCubicCoeffs.
func cubicCoeffs(t *tensor.Tensor) [4]*tensor.Tensor {
	const a = -0.75
	poly := func(x *tensor.Tensor, c3, c2, c1, c0 float64) *tensor.Tensor {
		// ((c3·x + c2)·x + c1)·x + c0
		y := ops.AddScalar(ops.MulScalar(x, c3), c2)
		y = ops.AddScalar(ops.Mul(y, x), c1)
		return ops.AddScalar(ops.Mul(y, x), c0)
	}
	one := ops.ScalarLike(t, 1)
	// Far taps (distance 1+t and 2−t): a·d³ − 5a·d² + 8a·d − 4a.
	// Near taps (distance t and 1−t): (a+2)·d³ − (a+3)·d² + 1.
	return [4]*tensor.Tensor{
		poly(ops.Add(t, one), a, -5*a, 8*a, -4*a),
		poly(t, a+2, -(a + 3), 0, 1),
		poly(ops.Sub(one, t), a+2, -(a + 3), 0, 1),
		poly(ops.Sub(ops.ScalarLike(t, 2), t), a, -5*a, 8*a, -4*a),
	}
}

// gridSampleOp is GridSample over 4-D input: Y[n, c, i, j] samples X[n, c]
// at the normalised position Grid[n, i, j] = (x, y) in [−1, 1], by
// bilinear (also "linear", opset 20's name), nearest (ties to even) or
// bicubic ("cubic") interpolation, with zeros, border or reflection
// padding. Opset 20's volumetric (5-D) sampling is refused.
func gridSampleOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	req, err := c.needs(ins, "X", "grid")
	if err != nil {
		return nil, err
	}
	x, grid := req[0], req[1]
	if !isFloat(x.DType()) || grid.DType() != x.DType() {
		return nil, c.Errorf("X and grid have dtypes %v and %v; want one float type", x.DType(), grid.DType())
	}
	if x.Rank() != 4 {
		return nil, c.Errorf("X has shape %v; spore samples 4-D input [N, C, H, W] only", x.Shape())
	}
	if grid.Rank() != 4 || grid.Dim(0) != x.Dim(0) || grid.Dim(3) != 2 {
		return nil, c.Errorf("grid has shape %v; want [%d, H_out, W_out, 2] for X of shape %v", grid.Shape(), x.Dim(0), x.Shape())
	}
	mode := c.String("mode", "bilinear")
	switch mode {
	case "linear":
		mode = "bilinear"
	case "cubic":
		mode = "bicubic"
	case "bilinear", "bicubic", "nearest":
	default:
		return nil, c.Errorf("mode %q is not one of bilinear, nearest, bicubic", mode)
	}
	padding := c.String("padding_mode", "zeros")
	if padding != "zeros" && padding != "border" && padding != "reflection" {
		return nil, c.Errorf("padding_mode %q is not one of zeros, border, reflection", padding)
	}
	align := c.Int("align_corners", 0) != 0
	n, ch, h, w := x.Dim(0), x.Dim(1), x.Dim(2), x.Dim(3)
	if h == 0 || w == 0 {
		return nil, c.Errorf("X has shape %v; there is nothing to sample", x.Shape())
	}
	ho, wo := grid.Dim(1), grid.Dim(2)
	s := &sampler{x: ops.Reshape(x, n, ch, h*w), n: n, ch: ch, h: h, w: w, padding: padding}
	for i, d := range []int{w, h} {
		if align {
			s.lo[i], s.hi[i] = 0, float64(d-1)
		} else {
			s.lo[i], s.hi[i] = -0.5, float64(d)-0.5
		}
	}
	g := ops.Unstack(ops.Reshape(grid, n, ho*wo, 2), 2)
	var coord [2]*tensor.Tensor
	for i, d := range []int{w, h} {
		// Denormalise: align_corners maps ±1 to the corner pixels'
		// centres, otherwise to their outer edges.
		v := ops.AddScalar(g[i], 1)
		if align {
			coord[i] = ops.MulScalar(v, float64(d-1)/2)
		} else {
			coord[i] = ops.DivScalar(ops.SubScalar(ops.MulScalar(v, float64(d)), 1), 2)
		}
		if mode == "nearest" {
			coord[i] = ops.Round(coord[i])
		}
	}
	// A position outside the borders on either axis is padded on both,
	// as ONNX Runtime does; bicubic sampling pads only its 16 taps (as
	// ONNX Runtime and PyTorch do), not the position.
	if padding != "zeros" && mode != "bicubic" {
		out := ops.LogicalOr(
			ops.LogicalOr(ops.Less(coord[0], ops.ScalarLike(coord[0], s.lo[0])), ops.Greater(coord[0], ops.ScalarLike(coord[0], s.hi[0]))),
			ops.LogicalOr(ops.Less(coord[1], ops.ScalarLike(coord[1], s.lo[1])), ops.Greater(coord[1], ops.ScalarLike(coord[1], s.hi[1]))))
		for i, d := range []int{w, h} {
			var p *tensor.Tensor
			if padding == "border" {
				p = ops.Clip(coord[i], 0, float64(d-1))
			} else {
				p = reflectInto(coord[i], s.lo[i], s.hi[i])
			}
			coord[i] = ops.Select(out, p, coord[i])
		}
	}
	cx, cy := coord[0], coord[1]
	var y *tensor.Tensor
	switch mode {
	case "nearest":
		y = s.at(cx, cy)
	case "bilinear":
		x0, y0 := ops.Floor(cx), ops.Floor(cy)
		x1, y1 := ops.AddScalar(x0, 1), ops.AddScalar(y0, 1)
		dx1, dx2 := ops.Sub(cx, x0), ops.Sub(x1, cx)
		dy1, dy2 := ops.Sub(cy, y0), ops.Sub(y1, cy)
		top := ops.Add(weigh(s.at(x0, y0), dx2), weigh(s.at(x1, y0), dx1))
		bottom := ops.Add(weigh(s.at(x0, y1), dx2), weigh(s.at(x1, y1), dx1))
		y = ops.Add(weigh(top, dy2), weigh(bottom, dy1))
	case "bicubic":
		fx, fy := ops.Floor(cx), ops.Floor(cy)
		wx, wy := cubicCoeffs(ops.Sub(cx, fx)), cubicCoeffs(ops.Sub(cy, fy))
		for i := 0; i < 4; i++ {
			py := ops.AddScalar(fy, float64(i-1))
			var row *tensor.Tensor
			for j := 0; j < 4; j++ {
				v := weigh(s.at(ops.AddScalar(fx, float64(j-1)), py), wx[j])
				if row == nil {
					row = v
				} else {
					row = ops.Add(row, v)
				}
			}
			row = weigh(row, wy[i])
			if y == nil {
				y = row
			} else {
				y = ops.Add(y, row)
			}
		}
	}
	return one(ops.Reshape(y, n, ch, ho, wo))
}

// roiAlignOp is RoiAlign: for each region (x1, y1, x2, y2 scaled by
// spatial_scale) of image batch_indices[r], an output_height ×
// output_width grid of bins, each the average (or the maximum, mode
// "max") of sampling_ratio² bilinear samples, as ONNX Runtime computes
// it: half_pixel (opset 16's default) shifts the region by −½ pixel,
// output_half_pixel (opset 10's only behaviour) does not and makes
// regions at least 1 pixel wide. sampling_ratio 0 (adaptive, ceil of the
// bin's extent) needs the regions' values (c.Concrete); a positive one
// keeps them data, traced in Graph mode.
func roiAlignOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	req, err := c.needs(ins, "X", "rois", "batch_indices")
	if err != nil {
		return nil, err
	}
	x, rois, bidx := req[0], req[1], req[2]
	if !isFloat(x.DType()) || rois.DType() != x.DType() {
		return nil, c.Errorf("X and rois have dtypes %v and %v; want one float type", x.DType(), rois.DType())
	}
	if x.Rank() != 4 {
		return nil, c.Errorf("X has shape %v; want [N, C, H, W]", x.Shape())
	}
	if rois.Rank() != 2 || rois.Dim(1) != 4 {
		return nil, c.Errorf("rois has shape %v; want [num_rois, 4]", rois.Shape())
	}
	nr := rois.Dim(0)
	if bidx.Rank() != 1 || bidx.Dim(0) != nr || (bidx.DType() != tensor.Int64 && bidx.DType() != tensor.Int32) {
		return nil, c.Errorf("batch_indices has dtype %v and shape %v; want int64 of [%d]", bidx.DType(), bidx.Shape(), nr)
	}
	mode := c.String("mode", "avg")
	if mode != "avg" && mode != "max" {
		return nil, c.Errorf("mode %q is not avg or max", mode)
	}
	half := c.Opset >= 16
	if c.Has("coordinate_transformation_mode") {
		switch m := c.String("coordinate_transformation_mode", ""); m {
		case "half_pixel":
			half = true
		case "output_half_pixel":
			half = false
		default:
			return nil, c.Errorf("coordinate_transformation_mode %q is not half_pixel or output_half_pixel", m)
		}
	}
	oh, ow := int(c.Int("output_height", 1)), int(c.Int("output_width", 1))
	ratio := int(c.Int("sampling_ratio", 0))
	scale := float64(c.Float("spatial_scale", 1))
	if oh <= 0 || ow <= 0 || ratio < 0 || oh > maxIndex || ow > maxIndex {
		return nil, c.Errorf("output_height %d and output_width %d must be positive, sampling_ratio %d not negative", oh, ow, ratio)
	}
	n, ch, h, w := x.Dim(0), x.Dim(1), x.Dim(2), x.Dim(3)
	if h == 0 || w == 0 {
		return nil, c.Errorf("X has shape %v; there is nothing to pool", x.Shape())
	}
	offset := 0.0
	if half {
		offset = 0.5
	}
	// The region's corners and extents, [R, 1] each.
	corner := ops.SubScalar(ops.MulScalar(rois, scale), offset)
	parts := ops.Unstack(corner, 1)
	sx, sy := ops.ExpandDims(parts[0], 1), ops.ExpandDims(parts[1], 1)
	rw, rh := ops.Sub(ops.ExpandDims(parts[2], 1), sx), ops.Sub(ops.ExpandDims(parts[3], 1), sy)
	if !half {
		rw, rh = ops.Maximum(rw, ops.ScalarLike(rw, 1)), ops.Maximum(rh, ops.ScalarLike(rh, 1))
	}
	binW, binH := ops.DivScalar(rw, float64(ow)), ops.DivScalar(rh, float64(oh))
	// The sampling grid of each region: gh × gw samples per bin, the
	// same for all regions when sampling_ratio is set, else per region
	// (then padded to the largest with masked samples).
	gh, gw := make([]int, nr), make([]int, nr)
	for r := range gh {
		gh[r], gw[r] = ratio, ratio
	}
	if ratio == 0 {
		if _, err := c.Concrete(rois, "rois (sampling_ratio 0 sizes each region's sampling grid by its extent)"); err != nil {
			return nil, err
		}
		// From the buffer, not through ops (which trace a parameter), in
		// the regions' precision as ONNX Runtime computes it.
		rv := rois.Float64s()
		round := func(v float64) float64 {
			if x.DType() == tensor.Float32 {
				return float64(float32(v))
			}
			return v
		}
		extent := func(a, b float64, bins int) int {
			e := round(round(round(b*scale)-offset) - round(round(a*scale)-offset))
			if !half {
				e = max(e, 1)
			}
			return int(math.Ceil(round(e / float64(bins))))
		}
		for r := range gh {
			gh[r] = extent(rv[4*r+1], rv[4*r+3], oh)
			gw[r] = extent(rv[4*r], rv[4*r+2], ow)
			if gh[r] < 0 || gw[r] < 0 || gh[r] > 1<<12 || gw[r] > 1<<12 {
				return nil, c.Errorf("region %d asks for a %d × %d sampling grid", r, gh[r], gw[r])
			}
		}
	}
	mh, mw := 1, 1
	for r := range gh {
		mh, mw = max(mh, gh[r]), max(mw, gw[r])
	}
	// Checked factor by factor before any product, which could overflow.
	if err := c.checkMade([]int{nr, ch, oh, ow, mh, mw}, "sample"); err != nil {
		return nil, err
	}
	p := oh * ow * mh * mw
	// Per sample (ph, pw, iy, ix), flattened in that order, and per region.
	fy, fx := make([]float64, nr*p), make([]float64, nr*p)
	mask := make([]bool, nr*p)
	count := make([]float64, nr)
	for r := 0; r < nr; r++ {
		count[r] = float64(max(gh[r]*gw[r], 1))
		k := r * p
		for ph := 0; ph < oh; ph++ {
			for pw := 0; pw < ow; pw++ {
				for iy := 0; iy < mh; iy++ {
					for ix := 0; ix < mw; ix++ {
						// Bin and in-bin offsets, in bins: the sample sits
						// at ph + (iy+½)/gh of the region's bin height.
						if iy < gh[r] && ix < gw[r] {
							fy[k] = float64(ph) + (float64(iy)+0.5)/float64(gh[r])
							fx[k] = float64(pw) + (float64(ix)+0.5)/float64(gw[r])
							mask[k] = true
						}
						k++
					}
				}
			}
		}
	}
	dt := x.DType()
	yy := ops.Add(sy, ops.Mul(castConst(tensor.FromSlice(fy, nr, p), dt), binH))
	xx := ops.Add(sx, ops.Mul(castConst(tensor.FromSlice(fx, nr, p), dt), binW))
	// ONNX Runtime's bilinear_interpolate: samples beyond a pixel outside
	// the image weigh nothing; the others are clamped into it.
	outside := ops.LogicalOr(
		ops.LogicalOr(ops.Less(yy, ops.ScalarLike(yy, -1)), ops.Greater(yy, ops.ScalarLike(yy, float64(h)))),
		ops.LogicalOr(ops.Less(xx, ops.ScalarLike(xx, -1)), ops.Greater(xx, ops.ScalarLike(xx, float64(w)))))
	keep := ops.LogicalAnd(ops.LogicalNot(outside), tensor.FromSlice(mask, nr, p))
	axisW := func(v *tensor.Tensor, d int) (lo, hi, frac *tensor.Tensor) {
		v = ops.Maximum(noNaN(v), ops.ScalarLike(v, 0))
		lo = ops.Floor(v)
		last := ops.GreaterEqual(lo, ops.ScalarLike(lo, float64(d-1)))
		lo = ops.Select(last, ops.ScalarLike(lo, float64(d-1)), lo)
		v = ops.Select(last, lo, v)
		hi = ops.Select(last, lo, ops.AddScalar(lo, 1))
		return lo, hi, ops.Sub(v, lo)
	}
	yl, yh, ly := axisW(yy, h)
	xl, xh, lx := axisW(xx, w)
	one1 := ops.ScalarLike(ly, 1)
	hy, hx := ops.Sub(one1, ly), ops.Sub(one1, lx)
	zero := ops.ZerosLike(ly)
	wt := func(a, b *tensor.Tensor) *tensor.Tensor { return ops.Select(keep, ops.Mul(a, b), zero) }
	s := &sampler{x: ops.Gather(ops.Reshape(x, n, ch, h*w), bidx, 0), n: nr, ch: ch, h: h, w: w, padding: "border"}
	// Corners where the sample is dropped gather position 0, weighted 0.
	pick := func(px, py *tensor.Tensor) *tensor.Tensor {
		return s.at(ops.Select(keep, px, zero), ops.Select(keep, py, zero))
	}
	terms := []*tensor.Tensor{
		weigh(pick(xl, yl), wt(hy, hx)),
		weigh(pick(xh, yl), wt(hy, lx)),
		weigh(pick(xl, yh), wt(ly, hx)),
		weigh(pick(xh, yh), wt(ly, lx)),
	}
	var y *tensor.Tensor
	if mode == "avg" {
		y = ops.Add(ops.Add(terms[0], terms[1]), ops.Add(terms[2], terms[3]))
		y = ops.Sum(ops.Reshape(y, nr, ch, oh, ow, mh*mw), 4)
		y = ops.Div(y, castConst(tensor.FromSlice(count, nr, 1, 1, 1), dt))
	} else {
		// ONNX Runtime's max mode: the largest weighted corner of each
		// sample, then the largest sample; padded samples never win.
		y = ops.Maximum(ops.Maximum(terms[0], terms[1]), ops.Maximum(terms[2], terms[3]))
		inBin := ops.BroadcastTo(ops.ExpandDims(tensor.FromSlice(mask, nr, p), 1), nr, ch, p)
		y = ops.Select(inBin, y, ops.FullLike(y, math.Inf(-1)))
		y = ops.Max(ops.Reshape(y, nr, ch, oh, ow, mh*mw), 4)
		// A region with an empty grid (extent 0, adaptive) pools to 0.
		empty := make([]bool, nr)
		for r := range empty {
			empty[r] = gh[r]*gw[r] == 0
		}
		y = ops.Select(tensor.FromSlice(empty, nr, 1, 1, 1), ops.ZerosLike(y), y)
	}
	return one(y)
}

// nmsBox is one box as its extremes on each axis.
type nmsBox struct{ x0, y0, x1, y1 float32 }

// area is the box's area.
func (a nmsBox) area() float32 { return (a.x1 - a.x0) * (a.y1 - a.y0) }

// suppresses reports whether boxes a and b overlap by more than
// threshold (intersection over union), ONNX Runtime's SuppressByIOU in
// float32: boxes that do not meet, or with no area, never suppress.
func (a nmsBox) suppresses(b nmsBox, threshold float32) bool {
	ix0, ix1 := max(a.x0, b.x0), min(a.x1, b.x1)
	if ix1 <= ix0 {
		return false
	}
	iy0, iy1 := max(a.y0, b.y0), min(a.y1, b.y1)
	if iy1 <= iy0 {
		return false
	}
	inter := (ix1 - ix0) * (iy1 - iy0)
	if inter <= 0 {
		return false
	}
	aa, ab := a.area(), b.area()
	union := aa + ab - inter
	if aa <= 0 || ab <= 0 || union <= 0 {
		return false
	}
	return inter/union > threshold
}

// nonMaxSuppressionOp is NonMaxSuppression: for each batch and class,
// the boxes scoring above score_threshold, taken greedily by descending
// score (ties: the lower index first) and kept unless one already kept
// overlaps them by more than iou_threshold, at most
// max_output_boxes_per_class of them. The output, [selected, 3] int64
// (batch, class, box), is as long as the data make it, so every operand
// is read as a value and the op runs eagerly in both modes.
func nonMaxSuppressionOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	req, err := c.needs(ins, "boxes", "scores")
	if err != nil {
		return nil, err
	}
	boxesT, scoresT := req[0], req[1]
	for i, what := range []string{"boxes", "scores"} {
		if _, err := c.Concrete(req[i], what); err != nil {
			return nil, err
		}
		if !isFloat(req[i].DType()) {
			return nil, c.Errorf("%s has dtype %v; want float", what, req[i].DType())
		}
	}
	if boxesT.Rank() != 3 || boxesT.Dim(2) != 4 {
		return nil, c.Errorf("boxes has shape %v; want [batch, boxes, 4]", boxesT.Shape())
	}
	nb, ns := boxesT.Dim(0), boxesT.Dim(1)
	if scoresT.Rank() != 3 || scoresT.Dim(0) != nb || scoresT.Dim(2) != ns {
		return nil, c.Errorf("scores has shape %v; want [%d, classes, %d] for boxes of shape %v", scoresT.Shape(), nb, ns, boxesT.Shape())
	}
	nc := scoresT.Dim(1)
	limit := int64(0)
	if t := c.In(ins, 2); t != nil {
		v, err := c.Ints(t, "max_output_boxes_per_class")
		if err != nil {
			return nil, err
		}
		if len(v) != 1 {
			return nil, c.Errorf("max_output_boxes_per_class must hold one value, got shape %v", t.Shape())
		}
		limit = max(v[0], 0)
	}
	iou := float32(0)
	if t := c.In(ins, 3); t != nil {
		v, err := c.scalarValue(t, "iou_threshold")
		if err != nil {
			return nil, err
		}
		iou = float32(v)
	}
	hasScore, scoreMin := false, float32(0)
	if t := c.In(ins, 4); t != nil {
		v, err := c.scalarValue(t, "score_threshold")
		if err != nil {
			return nil, err
		}
		hasScore, scoreMin = true, float32(v)
	}
	center := c.Int("center_point_box", 0)
	if center != 0 && center != 1 {
		return nil, c.Errorf("center_point_box %d is not 0 or 1", center)
	}
	bv, sv := boxesT.Float32s(), scoresT.Float32s()
	boxes := make([]nmsBox, nb*ns)
	for i := range boxes {
		v := bv[4*i : 4*i+4]
		if center == 1 {
			// [x_centre, y_centre, width, height]
			boxes[i] = nmsBox{v[0] - v[2]/2, v[1] - v[3]/2, v[0] + v[2]/2, v[1] + v[3]/2}
		} else {
			// [y1, x1, y2, x2], any diagonal pair of corners.
			boxes[i] = nmsBox{min(v[1], v[3]), min(v[0], v[2]), max(v[1], v[3]), max(v[0], v[2])}
		}
	}
	var out []int64
	cand := make([]int, 0, ns)
	var kept []int
	for b := 0; b < nb; b++ {
		for cl := 0; cl < nc; cl++ {
			scores := sv[(b*nc+cl)*ns : (b*nc+cl+1)*ns]
			cand = cand[:0]
			for i, s := range scores {
				if !hasScore || s > scoreMin {
					cand = append(cand, i)
				}
			}
			sort.SliceStable(cand, func(i, j int) bool { return scores[cand[i]] > scores[cand[j]] })
			kept = kept[:0]
			for _, i := range cand {
				if int64(len(kept)) >= limit {
					break
				}
				bi := boxes[b*ns+i]
				ok := true
				for _, k := range kept {
					if boxes[b*ns+k].suppresses(bi, iou) {
						ok = false
						break
					}
				}
				if ok {
					kept = append(kept, i)
					out = append(out, int64(b), int64(cl), int64(i))
				}
			}
		}
	}
	return one(tensor.FromSlice(out, len(out)/3, 3))
}
