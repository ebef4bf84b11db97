package onnx

import (
	"math"

	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Shape and layout ops (DepthToSpace and SpaceToDepth among them), and the
// ops that make constants. Their shape-like
// inputs (Reshape's shape, Slice's starts, ...) must be concrete: traced
// shapes are static, so a shape sub-graph (Shape → Gather → Concat →
// Reshape) runs eagerly on concrete int64 tensors and folds.

func init() {
	register("Reshape", 5, 0, reshapeOp)
	register("Transpose", 1, 0, transposeOp)
	register("Flatten", 1, 0, flattenOp)
	register("Concat", 4, 0, concatOp)
	register("Split", 2, 0, splitOp)
	register("Slice", 10, 0, sliceOp)
	register("Gather", 1, 0, gatherOp)
	register("Squeeze", 1, 0, squeezeOp)
	register("Unsqueeze", 1, 0, unsqueezeOp)
	register("Expand", 8, 0, expandOp)
	register("Tile", 6, 0, tileOp)
	register("Pad", 11, 0, padOp)
	register("Shape", 1, 0, shapeOp)
	register("Size", 1, 0, func(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := c.need(ins, 0, "data")
		if err != nil {
			return nil, err
		}
		return one(tensor.Scalar(int64(x.Size())))
	})
	register("Constant", 1, 0, constantOp)
	register("ConstantOfShape", 9, 0, constantOfShapeOp)
	register("Range", 11, 0, rangeOp)
	register("DepthToSpace", 1, 0, depthToSpaceOp)
	register("SpaceToDepth", 1, 0, spaceToDepthOp)
}

// reshapeOp is Reshape: 0 copies the input's extent unless allowzero
// (opset 14) is set, and one -1 is inferred.
func reshapeOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "data")
	if err != nil {
		return nil, err
	}
	shape, err := c.intsInput(c.In(ins, 1), "shape")
	if err != nil {
		return nil, err
	}
	allowZero := c.Int("allowzero", 0) != 0
	xs := x.Shape()
	known, infer := 1, -1
	for i, d := range shape {
		switch {
		case d == 0 && !allowZero:
			if i >= len(xs) {
				return nil, c.Errorf("shape %v copies axis %d of data %v, which has no such axis", shape, i, xs)
			}
			shape[i] = xs[i]
		case d == -1:
			if infer >= 0 {
				return nil, c.Errorf("shape %v has more than one -1", shape)
			}
			infer = i
			continue
		case d < 0:
			return nil, c.Errorf("shape %v has a negative extent", shape)
		}
		if shape[i] != 0 && known > maxIndex/shape[i] {
			return nil, c.Errorf("shape %v holds too many elements", shape)
		}
		known *= shape[i]
	}
	if infer >= 0 {
		if known == 0 || x.Size()%known != 0 {
			return nil, c.Errorf("cannot infer the -1 of shape %v for data %v", shape, xs)
		}
		shape[infer] = x.Size() / known
	} else if known != x.Size() {
		return nil, c.Errorf("shape %v holds %d elements, data %v holds %d", shape, known, xs, x.Size())
	}
	return one(ops.Reshape(x, shape...))
}

// transposeOp is Transpose; without perm it reverses the axes.
func transposeOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "data")
	if err != nil {
		return nil, err
	}
	perm, err := c.intsAttr("perm", nil)
	if err != nil {
		return nil, err
	}
	if perm == nil {
		perm = make([]int, x.Rank())
		for i := range perm {
			perm[i] = x.Rank() - 1 - i
		}
	}
	if len(perm) != x.Rank() {
		return nil, c.Errorf("perm %v does not match the rank of %v", perm, x.Shape())
	}
	return one(ops.Transpose(x, perm...))
}

// flattenOp is Flatten: a matrix of the axes before axis by those after.
func flattenOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "input")
	if err != nil {
		return nil, err
	}
	a := c.Int("axis", 1)
	r := int64(x.Rank())
	if a < -r || a > r {
		return nil, c.Errorf("axis %d is out of range for rank %d", a, r)
	}
	if a < 0 {
		a += r
	}
	outer := 1
	for _, d := range x.Shape()[:a] {
		outer *= d
	}
	inner := 1
	for _, d := range x.Shape()[a:] {
		inner *= d
	}
	return one(ops.Reshape(x, outer, inner))
}

// concatOp is Concat along axis.
func concatOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	if len(ins) == 0 {
		return nil, c.Errorf("needs at least one input")
	}
	for i, x := range ins {
		if x == nil {
			return nil, c.Errorf("input %d is missing", i)
		}
	}
	if !c.Has("axis") {
		return nil, c.Errorf("attribute axis is missing")
	}
	ax, err := c.axis(c.Int("axis", 0), ins[0].Rank(), "axis")
	if err != nil {
		return nil, err
	}
	// A zero-extent piece (an empty shape list in a shape sub-graph)
	// adds nothing.
	xs := make([]*tensor.Tensor, 0, len(ins))
	for _, x := range ins {
		if x.Rank() == ins[0].Rank() && x.Dim(ax) == 0 && len(ins) > 1 {
			continue
		}
		xs = append(xs, x)
	}
	if len(xs) == 0 {
		return one(ins[0])
	}
	return one(ops.Concat(ax, xs...))
}

// splitOp is Split: sizes from the split input (opset 13; an attribute
// before), or equal pieces, one per output; from opset 18 num_outputs may ask for pieces
// of ⌈n/num_outputs⌉ with a smaller last one.
func splitOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "input")
	if err != nil {
		return nil, err
	}
	ax, err := c.axis(c.Int("axis", 0), x.Rank(), "axis")
	if err != nil {
		return nil, err
	}
	n := x.Dim(ax)
	outs := len(c.Node.GetOutput())
	var sizes []int
	switch {
	case c.Opset < 13 && c.Has("split"):
		if sizes, err = c.intsAttr("split", nil); err != nil {
			return nil, err
		}
	case c.Opset >= 13 && c.In(ins, 1) != nil:
		sizes, err = c.intsInput(ins[1], "split")
		if err != nil {
			return nil, err
		}
	case c.Opset >= 18 && c.Has("num_outputs"):
		k := int(c.Int("num_outputs", 0))
		if k < 1 || k > n {
			return nil, c.Errorf("num_outputs %d does not fit axis %d of extent %d", k, ax, n)
		}
		if k != outs {
			return nil, c.Errorf("num_outputs %d but the node has %d outputs", k, outs)
		}
		step := (n + k - 1) / k
		for off := 0; off < n; off += step {
			sizes = append(sizes, min(step, n-off))
		}
	default:
		if outs < 1 || n%outs != 0 {
			return nil, c.Errorf("axis %d of extent %d does not split into %d equal pieces", ax, n, outs)
		}
		for range outs {
			sizes = append(sizes, n/outs)
		}
	}
	if len(sizes) != outs {
		return nil, c.Errorf("split %v gives %d pieces for %d outputs", sizes, len(sizes), outs)
	}
	total := 0
	for _, s := range sizes {
		if s < 0 {
			return nil, c.Errorf("split %v has a negative size", sizes)
		}
		total += s
	}
	if total != n {
		return nil, c.Errorf("split %v adds up to %d, axis %d has extent %d", sizes, total, ax, n)
	}
	return ops.Split(x, ax, sizes...), nil
}

// sliceOp is Slice: starts, ends, optional axes and steps. Bounds count
// from the end when negative and are clamped; a negative step walks
// backwards. ONNX's rules for this are NumPy's, which StridedSlice
// follows.
func sliceOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "data")
	if err != nil {
		return nil, err
	}
	starts, err := c.Ints(c.In(ins, 1), "starts")
	if err != nil {
		return nil, err
	}
	ends, err := c.Ints(c.In(ins, 2), "ends")
	if err != nil {
		return nil, err
	}
	if len(starts) != len(ends) {
		return nil, c.Errorf("starts %v and ends %v differ in length", starts, ends)
	}
	r := x.Rank()
	axes := make([]int, len(starts))
	for i := range axes {
		axes[i] = i
	}
	if a := c.In(ins, 3); a != nil {
		av, err := c.Ints(a, "axes")
		if err != nil {
			return nil, err
		}
		if len(av) != len(starts) {
			return nil, c.Errorf("axes %v and starts %v differ in length", av, starts)
		}
		if axes, err = c.axes(av, r, "axes"); err != nil {
			return nil, err
		}
	} else if len(starts) > r {
		return nil, c.Errorf("starts %v has more entries than data %v has axes", starts, x.Shape())
	}
	steps := make([]int64, len(starts))
	for i := range steps {
		steps[i] = 1
	}
	if s := c.In(ins, 4); s != nil {
		if steps, err = c.Ints(s, "steps"); err != nil {
			return nil, err
		}
		if len(steps) != len(starts) {
			return nil, c.Errorf("steps %v and starts %v differ in length", steps, starts)
		}
	}
	begin := make([]int, r)
	end := make([]int, r)
	stride := make([]int, r)
	for i := range r {
		begin[i], end[i], stride[i] = 0, math.MaxInt, 1
	}
	bs, es, ss := clampInts(starts), clampInts(ends), clampInts(steps)
	for i, a := range axes {
		if ss[i] == 0 {
			return nil, c.Errorf("steps %v has a zero step", steps)
		}
		begin[a], end[a], stride[a] = bs[i], es[i], ss[i]
	}
	return one(ops.StridedSlice(x, begin, end, stride))
}

// gatherOp is Gather along axis; negative indices count from the end.
func gatherOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	req, err := c.needs(ins, "data", "indices")
	if err != nil {
		return nil, err
	}
	x, idx := req[0], req[1]
	ax, err := c.axis(c.Int("axis", 0), x.Rank(), "axis")
	if err != nil {
		return nil, err
	}
	if idx.DType() != tensor.Int64 && idx.DType() != tensor.Int32 {
		return nil, c.Errorf("indices have dtype %v, want int64 or int32", idx.DType())
	}
	// Indices are checked by the Gather kernel, not here: indices from
	// the model's inputs (token ids) are concrete in PyNative mode and
	// traced in Graph mode, and one check in the kernel gives both modes
	// the same error.
	// The result's shape is data's with axis replaced by the indices'
	// shape; a scalar index removes the axis.
	shape := append(append(append([]int(nil), x.Shape()[:ax]...), idx.Shape()...), x.Shape()[ax+1:]...)
	idx = c.checkIndices(idx, ax, x.Dim(ax)) // an error names the node in both modes
	y := ops.Gather(x, idx, ax)
	if !y.Shape().Equal(shape) {
		y = ops.Reshape(y, shape...)
	}
	return one(y)
}

// squeezeOp is Squeeze; the axes are an optional input from opset 13 (an
// attribute before), and without them every unit axis goes.
func squeezeOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "data")
	if err != nil {
		return nil, err
	}
	av, err := c.axesIn(ins, 1, 13, false)
	if err != nil {
		return nil, err
	}
	if av == nil {
		return one(ops.Squeeze(x))
	}
	axes, err := c.axes(av, x.Rank(), "axes")
	if err != nil {
		return nil, err
	}
	for _, ax := range axes {
		if x.Dim(ax) != 1 {
			return nil, c.Errorf("axis %d of %v has extent %d, not 1", ax, x.Shape(), x.Dim(ax))
		}
	}
	if len(axes) == 0 {
		return one(ops.Squeeze(x))
	}
	return one(ops.Squeeze(x, axes...))
}

// unsqueezeOp is Unsqueeze: the axes (an input from opset 13, an
// attribute before) are positions in the output.
func unsqueezeOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "data")
	if err != nil {
		return nil, err
	}
	av, err := c.axesIn(ins, 1, 13, true)
	if err != nil {
		return nil, err
	}
	r := x.Rank() + len(av)
	if r > maxDims {
		return nil, c.Errorf("axes %v make rank %d, more than %d", av, r, maxDims)
	}
	axes, err := c.axes(av, r, "axes")
	if err != nil {
		return nil, err
	}
	unit := make([]bool, r)
	for _, a := range axes {
		unit[a] = true
	}
	shape := make([]int, 0, r)
	xs := x.Shape()
	j := 0
	for i := range r {
		if unit[i] {
			shape = append(shape, 1)
		} else {
			shape = append(shape, xs[j])
			j++
		}
	}
	return one(ops.Reshape(x, shape...))
}

// expandOp is Expand: broadcast x and the shape together (either may
// have the larger extent on an axis, or the larger rank).
func expandOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "input")
	if err != nil {
		return nil, err
	}
	shape, err := c.intsInput(c.In(ins, 1), "shape")
	if err != nil {
		return nil, err
	}
	xs := x.Shape()
	out, err := ops.TryBroadcastShapes(xs, shape)
	if err != nil {
		return nil, c.Errorf("shape %v does not broadcast with input %v", shape, xs)
	}
	// A negative extent in shape survives broadcasting only against a 1.
	for _, d := range out {
		if d < 0 {
			return nil, c.Errorf("shape %v has a negative extent", shape)
		}
	}
	if out.Equal(xs) {
		return one(x)
	}
	if err := c.checkMade(out, "output"); err != nil {
		return nil, err
	}
	return one(ops.BroadcastTo(x, out...))
}

// tileOp is Tile: one repeat count per axis.
func tileOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "input")
	if err != nil {
		return nil, err
	}
	reps, err := c.intsInput(c.In(ins, 1), "repeats")
	if err != nil {
		return nil, err
	}
	if len(reps) != x.Rank() {
		return nil, c.Errorf("repeats %v must have one entry per axis of %v", reps, x.Shape())
	}
	out := make([]int, len(reps))
	for i, r := range reps {
		if r < 0 || r > maxMade {
			return nil, c.Errorf("repeats %v has a negative count or one above %d", reps, maxMade)
		}
		out[i] = x.Dim(i) * r
	}
	if err := c.checkMade(out, "output"); err != nil {
		return nil, err
	}
	return one(ops.Tile(x, reps...))
}

// padOp is Pad in constant, reflect, edge or wrap mode. pads lists all
// begins then all ends (for the axes input's axes from opset 18, else
// for every axis); a negative pad crops.
func padOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "data")
	if err != nil {
		return nil, err
	}
	pads, err := c.intsInput(c.In(ins, 1), "pads")
	if err != nil {
		return nil, err
	}
	r := x.Rank()
	axes := make([]int, r)
	for i := range axes {
		axes[i] = i
	}
	if a := c.In(ins, 3); a != nil {
		av, err := c.Ints(a, "axes")
		if err != nil {
			return nil, err
		}
		if axes, err = c.axes(av, r, "axes"); err != nil {
			return nil, err
		}
	}
	if len(pads) != 2*len(axes) {
		return nil, c.Errorf("pads %v must have two entries per padded axis (%d axes)", pads, len(axes))
	}
	before, after := make([]int, r), make([]int, r)
	for i, a := range axes {
		before[a], after[a] = pads[i], pads[len(axes)+i]
	}
	// Negative pads crop first; what remains pads with non-negative
	// amounts.
	begin, end, stride := make([]int, r), make([]int, r), make([]int, r)
	crop := false
	for i := range r {
		begin[i], end[i], stride[i] = 0, x.Dim(i), 1
		if before[i] < 0 {
			begin[i], before[i], crop = -before[i], 0, true
		}
		if after[i] < 0 {
			end[i], after[i], crop = x.Dim(i)+after[i], 0, true
		}
		if end[i] < begin[i] {
			return nil, c.Errorf("pads %v crop axis %d of %v to nothing", pads, i, x.Shape())
		}
	}
	if crop {
		x = ops.StridedSlice(x, begin, end, stride)
	}
	padded := make([]int, r)
	for i := range r {
		padded[i] = end[i] - begin[i] + before[i] + after[i]
	}
	if err := c.checkMade(padded, "output"); err != nil {
		return nil, err
	}
	mode := c.String("mode", "constant")
	switch mode {
	case "constant":
		var value float64
		if v := c.In(ins, 2); v != nil {
			if value, err = c.scalarValue(v, "constant_value"); err != nil {
				return nil, err
			}
		}
		pp := make([][2]int, r)
		for i := range r {
			pp[i] = [2]int{before[i], after[i]}
		}
		y := ops.Pad(x, pp)
		if value != 0 && y != x {
			// Where the padding lies is known from the shapes alone:
			// a concrete mask selects the constant there.
			inside := ops.Cast(ops.Pad(tensor.Ones(tensor.Uint8, x.Shape()...), pp), tensor.Bool)
			y = ops.Select(inside, y, scalarOf(x.DType(), value))
		}
		return one(y)
	case "edge", "reflect", "wrap":
		for i := range r {
			if before[i] == 0 && after[i] == 0 {
				continue
			}
			n := x.Dim(i)
			if n == 0 || (mode == "reflect" && (before[i] >= n || after[i] >= n)) || (mode == "wrap" && (before[i] > n || after[i] > n)) {
				return nil, c.Errorf("pads %v are too large for %s padding of axis %d of extent %d", pads, mode, i, n)
			}
			x = padAxis(x, i, before[i], after[i], mode)
		}
		return one(x)
	}
	return nil, c.Errorf("mode %q is not supported (want constant, reflect, edge or wrap)", mode)
}

// padAxis pads axis ax of x by lo and hi elements, built from slices of
// x: copies of the edge (edge), mirror images without the edge
// (reflect), or the far end (wrap).
func padAxis(x *tensor.Tensor, ax, lo, hi int, mode string) *tensor.Tensor {
	r := x.Rank()
	n := x.Dim(ax)
	slice := func(b, e, s int) *tensor.Tensor {
		begin, end, stride := make([]int, r), make([]int, r), make([]int, r)
		for i := range r {
			begin[i], end[i], stride[i] = 0, math.MaxInt, 1
		}
		begin[ax], end[ax], stride[ax] = b, e, s
		return ops.StridedSlice(x, begin, end, stride)
	}
	parts := make([]*tensor.Tensor, 0, 3)
	if lo > 0 {
		var p *tensor.Tensor
		switch mode {
		case "edge":
			p = slice(0, 1, 1)
			shape := append([]int(nil), p.Shape()...)
			shape[ax] = lo
			p = ops.BroadcastTo(p, shape...)
		case "reflect":
			p = slice(lo, 0, -1) // x[lo], ..., x[1]
		case "wrap":
			p = slice(n-lo, n, 1)
		}
		parts = append(parts, p)
	}
	parts = append(parts, x)
	if hi > 0 {
		var p *tensor.Tensor
		switch mode {
		case "edge":
			p = slice(n-1, n, 1)
			shape := append([]int(nil), p.Shape()...)
			shape[ax] = hi
			p = ops.BroadcastTo(p, shape...)
		case "reflect":
			e := n - 2 - hi
			if e < 0 {
				e = math.MinInt // through x[0]; -1 would mean the last element
			}
			p = slice(n-2, e, -1) // x[n-2], ..., x[n-1-hi]
		case "wrap":
			p = slice(0, hi, 1)
		}
		parts = append(parts, p)
	}
	return ops.Concat(ax, parts...)
}

// shapeOp is Shape, with start and end (opset 15) selecting a range of
// axes. Its result is concrete even for a traced input.
func shapeOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "data")
	if err != nil {
		return nil, err
	}
	s := shapeInts(x)
	r := int64(len(s))
	clamp := func(v int64) int64 {
		if v < 0 {
			v += r
		}
		return max(0, min(v, r))
	}
	start, end := clamp(c.Int("start", 0)), clamp(c.Int("end", r))
	if end < start {
		end = start
	}
	return one(int64s(s[start:end]))
}

// constantOp is Constant: one of value, value_float(s), value_int(s).
func constantOp(c *nodeCtx, _ []*tensor.Tensor) ([]*tensor.Tensor, error) {
	switch {
	case c.Has("value"):
		t, err := c.TensorAttr("value")
		if err != nil {
			return nil, err
		}
		if t == nil {
			return nil, c.Errorf("attribute value holds no tensor")
		}
		return one(t)
	case c.Has("value_float"):
		return one(tensor.Scalar(c.Float("value_float", 0)))
	case c.Has("value_floats"):
		v := c.FloatsAttr("value_floats", nil)
		return one(tensor.FromSlice(append([]float32(nil), v...), len(v)))
	case c.Has("value_int"):
		return one(tensor.Scalar(c.Int("value_int", 0)))
	case c.Has("value_ints"):
		return one(int64s(c.IntsAttr("value_ints", nil)))
	case c.Has("sparse_value"), c.Has("value_string"), c.Has("value_strings"):
		return nil, c.Errorf("sparse and string constants are not supported")
	}
	return nil, c.Errorf("no value attribute")
}

// constantOfShapeOp is ConstantOfShape: a tensor of the given shape
// filled with value's single element (float32 0 by default).
func constantOfShapeOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	shape, err := c.intsInput(c.In(ins, 0), "input")
	if err != nil {
		return nil, err
	}
	if len(shape) > maxDims {
		return nil, c.Errorf("shape %v has rank %d, more than %d", shape, len(shape), maxDims)
	}
	if err := c.checkMade(shape, "input"); err != nil {
		return nil, err
	}
	dt, v := tensor.Float32, 0.0
	if c.Has("value") {
		t, err := c.TensorAttr("value")
		if err != nil {
			return nil, err
		}
		if t == nil || t.Size() != 1 {
			return nil, c.Errorf("attribute value must hold one element")
		}
		dt = t.DType()
		if v, err = c.scalarValue(t, "value"); err != nil {
			return nil, err
		}
	}
	return one(tensor.Full(dt, v, shape...))
}

// rangeOp is Range: start, start+delta, ... up to (excluding) limit. Its
// operands must be concrete; a range over a model's input values has a
// data-dependent length, which spore's static shapes cannot express.
func rangeOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	var v [3]*tensor.Tensor
	for i, n := range []string{"start", "limit", "delta"} {
		t, err := c.need(ins, i, n)
		if err != nil {
			return nil, err
		}
		if _, err := c.Concrete(t, n); err != nil {
			return nil, err
		}
		if t.Size() != 1 {
			return nil, c.Errorf("input %s must be a scalar, got shape %v", n, t.Shape())
		}
		if t.DType() == tensor.Bool || t.DType() == tensor.Uint8 {
			return nil, c.Errorf("input %s has dtype %v, want a number type", n, t.DType())
		}
		if i > 0 && t.DType() != v[0].DType() {
			return nil, c.Errorf("inputs have dtypes %v and %v; ONNX wants one", v[0].DType(), t.DType())
		}
		v[i] = t
	}
	dt := v[0].DType()
	// Read the buffers directly: a float operand may be a Parameter, and
	// an op on it would be traced.
	f := func(t *tensor.Tensor) float64 { return t.Float64s()[0] }
	start, limit, delta := f(v[0]), f(v[1]), f(v[2])
	if delta == 0 {
		return nil, c.Errorf("delta is zero")
	}
	n := math.Ceil((limit - start) / delta)
	if n < 0 || math.IsNaN(n) {
		n = 0
	}
	if n > float64(maxMade) {
		return nil, c.Errorf("a range of %g elements is more than %d, the most an op may make", n, maxMade)
	}
	switch dt {
	case tensor.Int64, tensor.Int32:
		s, d := v[0].Int64s()[0], v[2].Int64s()[0]
		out := make([]int64, int(n))
		for i := range out {
			out[i] = s + int64(i)*d
		}
		return one(ops.Cast(tensor.FromSlice(out, len(out)), dt))
	case tensor.Float32:
		// ONNX Runtime accumulates in the element type.
		s, d := float32(start), float32(delta)
		out := make([]float32, int(n))
		for i := range out {
			out[i] = s + float32(i)*d
		}
		return one(tensor.FromSlice(out, len(out)))
	case tensor.Float64:
		out := make([]float64, int(n))
		for i := range out {
			out[i] = start + float64(i)*delta
		}
		return one(tensor.FromSlice(out, len(out)))
	}
	return nil, c.Errorf("dtype %v is not supported", dt)
}

// blockAttr reads DepthToSpace's and SpaceToDepth's blocksize for a 4-D
// input.
func (c *nodeCtx) blockAttr(x *tensor.Tensor) (int, error) {
	if x.Rank() != 4 {
		return 0, c.Errorf("input has shape %v; want N×C×H×W", x.Shape())
	}
	b := c.Int("blocksize", 0)
	if b < 1 || b > 1<<16 {
		return 0, c.Errorf("blocksize %d is missing or out of range", b)
	}
	return int(b), nil
}

// depthToSpaceOp is DepthToSpace in DCR (default) or CRD order.
func depthToSpaceOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "input")
	if err != nil {
		return nil, err
	}
	b, err := c.blockAttr(x)
	if err != nil {
		return nil, err
	}
	n, ch, h, w := x.Dim(0), x.Dim(1), x.Dim(2), x.Dim(3)
	if ch%(b*b) != 0 {
		return nil, c.Errorf("channels %d are not a multiple of blocksize² = %d", ch, b*b)
	}
	cc := ch / (b * b)
	var y *tensor.Tensor
	switch mode := c.String("mode", "DCR"); mode {
	case "DCR":
		y = ops.Transpose(ops.Reshape(x, n, b, b, cc, h, w), 0, 3, 4, 1, 5, 2)
	case "CRD":
		y = ops.Transpose(ops.Reshape(x, n, cc, b, b, h, w), 0, 1, 4, 2, 5, 3)
	default:
		return nil, c.Errorf("mode %q, want DCR or CRD", mode)
	}
	return one(ops.Reshape(y, n, cc, h*b, w*b))
}

// spaceToDepthOp is SpaceToDepth, the inverse of DepthToSpace in DCR order.
func spaceToDepthOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "input")
	if err != nil {
		return nil, err
	}
	b, err := c.blockAttr(x)
	if err != nil {
		return nil, err
	}
	n, ch, h, w := x.Dim(0), x.Dim(1), x.Dim(2), x.Dim(3)
	if h%b != 0 || w%b != 0 {
		return nil, c.Errorf("height %d and width %d must be multiples of blocksize %d", h, w, b)
	}
	y := ops.Transpose(ops.Reshape(x, n, ch, h/b, b, w/b, b), 0, 3, 5, 1, 2, 4)
	return one(ops.Reshape(y, n, ch*b*b, h/b, w/b))
}
