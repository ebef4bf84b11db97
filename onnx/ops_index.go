package onnx

import (
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Ops that pick or place elements by index: GatherElements, GatherND,
// ScatterElements and ScatterND (at indices known when the node runs, a
// scatter is one Gather from the data and the updates joined; at indices
// computed from the model's inputs, a scatter-add: runtime_scatter.go),
// OneHot, TopK, and Trilu's triangle mask.

func init() {
	register("Trilu", 14, 0, triluOp)
	register("TopK", 10, 0, topKOp)
	register("GatherElements", 11, 0, gatherElementsOp)
	register("ScatterND", 11, 0, scatterNDOp)
	register("GatherND", 11, 0, gatherNDOp)
	register("ScatterElements", 11, 0, scatterElementsOp)
	register("OneHot", 9, 0, oneHotOp)
}

// triluOp is Trilu: the upper (upper=1, the default) or lower triangle of
// the last two axes, diagonal shifted by k. The mask depends only on the
// shape and k, so it is a constant.
func triluOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "input")
	if err != nil {
		return nil, err
	}
	if x.Rank() < 2 {
		return nil, c.Errorf("input has shape %v; want rank 2 or more", x.Shape())
	}
	k := int64(0)
	if kt := c.In(ins, 1); kt != nil {
		v, err := c.Ints(kt, "k")
		if err != nil {
			return nil, err
		}
		if len(v) != 1 {
			return nil, c.Errorf("k must hold one value, got %v", v)
		}
		k = max(min(v[0], maxIndex), -maxIndex)
	}
	upper := c.Int("upper", 1) != 0
	n, m := x.Dim(-2), x.Dim(-1)
	mask := make([]bool, n*m)
	for i := range n {
		for j := range m {
			d := int64(j - i)
			mask[i*m+j] = (upper && d >= k) || (!upper && d <= k)
		}
	}
	return one(ops.Select(tensor.FromSlice(mask, n, m), x, ops.ScalarLike(x, 0)))
}

// topKOp is TopK; the axis is moved last for spore's TopK and back. The
// smallest values (largest=0) are the largest of an order-reversing
// involution of the input: -x for floats, -1-x for signed integers, which
// does not overflow. Results come sorted, which sorted=0 (any order)
// allows.
func topKOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "X")
	if err != nil {
		return nil, err
	}
	kv, err := c.Ints(c.In(ins, 1), "K")
	if err != nil {
		return nil, err
	}
	if len(kv) != 1 {
		return nil, c.Errorf("K must hold one value, got %v", kv)
	}
	smallest := c.Int("largest", 1) == 0
	var flip func(*tensor.Tensor) *tensor.Tensor
	if smallest {
		switch dt := x.DType(); {
		case dt.IsFloat():
			flip = ops.Neg
		case dt == tensor.Int32 || dt == tensor.Int64:
			flip = func(t *tensor.Tensor) *tensor.Tensor { return ops.Sub(ops.ScalarLike(t, -1), t) }
		default:
			return nil, c.Errorf("largest=0 is not supported for dtype %v", dt)
		}
		x = flip(x)
	}
	ax, err := c.axis(c.Int("axis", -1), x.Rank(), "axis")
	if err != nil {
		return nil, err
	}
	if kv[0] < 0 || kv[0] > int64(x.Dim(ax)) {
		return nil, c.Errorf("K=%d is outside [0, %d] for axis %d of %v", kv[0], x.Dim(ax), ax, x.Shape())
	}
	last := x.Rank() - 1
	v, i := ops.TopK(ops.MoveAxis(x, ax, last), int(kv[0]))
	if smallest {
		v = flip(v)
	}
	return []*tensor.Tensor{ops.MoveAxis(v, last, ax), ops.MoveAxis(i, last, ax)}, nil
}

// gatherElementsOp is GatherElements: take_along_axis, where the indices
// may be shorter than the data on the other axes (the data is cut to
// them first).
func gatherElementsOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	req, err := c.needs(ins, "data", "indices")
	if err != nil {
		return nil, err
	}
	x, idx := req[0], req[1]
	if idx.Rank() != x.Rank() {
		return nil, c.Errorf("indices %v must have the rank of data %v", idx.Shape(), x.Shape())
	}
	if idx.DType() != tensor.Int64 && idx.DType() != tensor.Int32 {
		return nil, c.Errorf("indices have dtype %v, want int64 or int32", idx.DType())
	}
	ax, err := c.axis(c.Int("axis", 0), x.Rank(), "axis")
	if err != nil {
		return nil, err
	}
	size := make([]int, x.Rank())
	cut := false
	for i := range size {
		size[i] = x.Dim(i)
		if i != ax && idx.Dim(i) != x.Dim(i) {
			if idx.Dim(i) > x.Dim(i) {
				return nil, c.Errorf("indices %v exceed data %v on axis %d", idx.Shape(), x.Shape(), i)
			}
			size[i], cut = idx.Dim(i), true
		}
	}
	if cut {
		x = ops.Slice(x, make([]int, x.Rank()), size)
	}
	idx = c.checkIndices(idx, ax, x.Dim(ax)) // an error names the node in both modes
	return one(ops.TakeAlongAxis(x, idx, ax))
}

// oneHotOp is OneHot: values[1] where the index is, values[0] elsewhere,
// along a new axis of extent depth. Negative indices count from the end
// of the depth; others outside it give a row of values[0].
func oneHotOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	req, err := c.needs(ins, "indices", "depth", "values")
	if err != nil {
		return nil, err
	}
	idx, dt, vals := req[0], req[1], req[2]
	d, err := c.scalarValue(dt, "depth")
	if err != nil {
		return nil, err
	}
	if !(d >= 1 && d <= float64(maxMade)) { // NaN fails too
		return nil, c.Errorf("depth %g is out of range", d)
	}
	depth := int(d)
	if vals.Size() != 2 {
		return nil, c.Errorf("values must hold [off, on], got shape %v", vals.Shape())
	}
	ax, err := c.axis(c.Int("axis", -1), idx.Rank()+1, "axis")
	if err != nil {
		return nil, err
	}
	if err := c.checkMade(append(append([]int(nil), idx.Shape()...), depth), "output"); err != nil {
		return nil, err
	}
	if !(idx.DType() == tensor.Int64 || idx.DType() == tensor.Int32) {
		idx = ops.Cast(idx, tensor.Int64)
	}
	n := ops.ScalarLike(idx, float64(depth))
	idx = ops.Select(ops.Less(idx, ops.ScalarLike(idx, 0)), ops.Add(idx, n), idx)
	hot := ops.OneHot(idx, depth, vals.DType())
	flat := ops.Reshape(vals, 2)
	off := ops.Reshape(ops.Slice(flat, []int{0}, []int{1}))
	on := ops.Reshape(ops.Slice(flat, []int{1}, []int{1}))
	y := ops.Add(ops.Mul(hot, ops.Sub(on, off)), off)
	if ax != idx.Rank() {
		y = ops.MoveAxis(y, idx.Rank(), ax)
	}
	return one(y)
}

// scatterGather writes updates into data at the flat positions pos (pos[j]
// receives updates' element j; a later j wins) as one Gather from data
// and updates joined end to end, whose indices are constants: spore has
// no scatter primitive, and a Gather's gradient reaches both operands.
func scatterGather(data, updates *tensor.Tensor, pos []int) *tensor.Tensor {
	n := data.Size()
	src := make([]int64, n)
	for i := range src {
		src[i] = int64(i)
	}
	for j, p := range pos {
		src[p] = int64(n + j)
	}
	joined := ops.Concat(0, ops.Reshape(data, n), ops.Reshape(updates, updates.Size()))
	return ops.Reshape(ops.Gather(joined, tensor.FromSlice(src, n), 0), data.Shape()...)
}

// scatterCheck checks a scatter node's dtypes and reduction (see
// checkScatterReduction) and returns the reduction.
func (c *nodeCtx) scatterCheck(data, idx, updates *tensor.Tensor) (string, error) {
	r := c.String("reduction", "none")
	if err := c.checkScatterReduction(); err != nil {
		return "", err
	}
	if data.DType() != updates.DType() {
		return "", c.Errorf("data has dtype %v and updates %v; ONNX wants one", data.DType(), updates.DType())
	}
	if idx.DType() != tensor.Int64 && idx.DType() != tensor.Int32 {
		return "", c.Errorf("indices have dtype %v, want int64 or int32", idx.DType())
	}
	return r, nil
}

// scatterNDOp is ScatterND: each index tuple (the last axis of indices)
// picks a slice of data that the matching slice of updates replaces.
func scatterNDOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	req, err := c.needs(ins, "data", "indices", "updates")
	if err != nil {
		return nil, err
	}
	data, idx, updates := req[0], req[1], req[2]
	reduction, err := c.scatterCheck(data, idx, updates)
	if err != nil {
		return nil, err
	}
	if idx.Rank() < 1 {
		return nil, c.Errorf("indices must have rank 1 or more, got %v", idx.Shape())
	}
	k := idx.Dim(-1)
	ds := data.Shape()
	if k < 1 || k > len(ds) {
		return nil, c.Errorf("index tuples of length %d do not fit data %v", k, ds)
	}
	want := append(append([]int(nil), idx.Shape()[:idx.Rank()-1]...), ds[k:]...)
	if !updates.Shape().Equal(want) {
		return nil, c.Errorf("updates have shape %v, want %v for data %v and indices %v", updates.Shape(), want, ds, idx.Shape())
	}
	if c.dynamic(idx) {
		return oneOrErr(c.scatterNDRuntime(data, idx, updates, reduction))
	}
	iv, err := c.Ints(idx, "indices")
	if err != nil {
		return nil, err
	}
	inner := 1
	for _, d := range ds[k:] {
		inner *= d
	}
	var pos []int
	for t := 0; t < len(iv)/k; t++ {
		off := 0
		for j := range k {
			v, n := iv[t*k+j], int64(ds[j])
			if v < -n || v >= n {
				return nil, c.Errorf("index %d is out of range for axis %d of extent %d", v, j, n)
			}
			if v < 0 {
				v += n
			}
			off = off*ds[j] + int(v)
		}
		for e := range inner {
			pos = append(pos, off*inner+e)
		}
	}
	return one(c.scatterReduce(data, updates, pos))
}

// scatterElementsOp is ScatterElements: updates[p] replaces the element of
// data at p with its axis coordinate replaced by indices[p].
func scatterElementsOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	req, err := c.needs(ins, "data", "indices", "updates")
	if err != nil {
		return nil, err
	}
	data, idx, updates := req[0], req[1], req[2]
	reduction, err := c.scatterCheck(data, idx, updates)
	if err != nil {
		return nil, err
	}
	ds, is := data.Shape(), idx.Shape()
	if len(is) != len(ds) || !updates.Shape().Equal(is) {
		return nil, c.Errorf("indices %v and updates %v must share a shape of data %v's rank", is, updates.Shape(), ds)
	}
	for i := range is {
		if is[i] > ds[i] {
			return nil, c.Errorf("indices %v exceed data %v on axis %d", is, ds, i)
		}
	}
	ax, err := c.axis(c.Int("axis", 0), len(ds), "axis")
	if err != nil {
		return nil, err
	}
	if c.dynamic(idx) {
		return oneOrErr(c.scatterElementsRuntime(data, idx, updates, ax, reduction))
	}
	iv, err := c.Ints(idx, "indices")
	if err != nil {
		return nil, err
	}
	pos := make([]int, len(iv))
	coord := make([]int, len(is))
	for j, v := range iv {
		n := int64(ds[ax])
		if v < -n || v >= n {
			return nil, c.Errorf("index %d is out of range for axis %d of extent %d", v, ax, n)
		}
		if v < 0 {
			v += n
		}
		off := 0
		for i := range is {
			x := coord[i]
			if i == ax {
				x = int(v)
			}
			off = off*ds[i] + x
		}
		pos[j] = off
		for i := len(is) - 1; i >= 0; i-- { // next coordinate, row-major
			if coord[i]++; coord[i] < is[i] {
				break
			}
			coord[i] = 0
		}
	}
	return one(c.scatterReduce(data, updates, pos))
}

// gatherNDOp is GatherND: each index tuple (the last axis of indices)
// picks a slice of data, after batch_dims leading axes that data and
// indices share. The tuples become flat row numbers of data viewed as a
// matrix, and one Gather reads the rows: this works for indices computed
// from the model's inputs too. Each component is range-checked by
// spore's index check, the same in both modes, since a flat row in range
// does not make its components so.
func gatherNDOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	req, err := c.needs(ins, "data", "indices")
	if err != nil {
		return nil, err
	}
	data, idx := req[0], req[1]
	if idx.DType() != tensor.Int64 {
		return nil, c.Errorf("indices have dtype %v, want int64", idx.DType())
	}
	ds, is := data.Shape(), idx.Shape()
	b := int(c.Int("batch_dims", 0))
	if len(is) < 1 || b < 0 || b >= len(is) || b >= len(ds) {
		return nil, c.Errorf("batch_dims %d does not fit data %v and indices %v", b, ds, is)
	}
	k := is[len(is)-1]
	if k < 1 || b+k > len(ds) {
		return nil, c.Errorf("index tuples of length %d do not fit data %v after %d batch axes", k, ds, b)
	}
	if !tensor.Shape(ds[:b]).Equal(is[:b]) {
		return nil, c.Errorf("data %v and indices %v differ on the %d batch axes", ds, is, b)
	}
	batch, rows := 1, 1
	for _, d := range ds[:b] {
		batch *= d
	}
	for _, d := range ds[b : b+k] {
		rows *= d
	}
	rest := ds[b+k:]
	// flat = batch number · rows + Σ component_j · stride_j
	lead := is[:len(is)-1]
	var flat *tensor.Tensor
	stride := rows
	for j := range k {
		n := ds[b+j]
		stride /= n
		comp := ops.Reshape(ops.StridedSlice(idx, zerosInts(len(is), j), endInts(is, j+1), onesInts(len(is))), lead...)
		comp = c.checkIndices(comp, b+j, n)
		comp = ops.Select(ops.Less(comp, ops.ScalarLike(comp, 0)), ops.AddScalar(comp, float64(n)), comp)
		term := ops.MulScalar(comp, float64(stride))
		if flat == nil {
			flat = term
		} else {
			flat = ops.Add(flat, term)
		}
	}
	if b > 0 {
		// Each index position's batch number, a constant of the shapes.
		per := 1
		for _, d := range lead[b:] {
			per *= d
		}
		nums := make([]int64, batch*per)
		for i := range nums {
			nums[i] = int64(i/per) * int64(rows)
		}
		flat = ops.Add(flat, tensor.FromSlice(nums, lead...))
	}
	m := ops.Reshape(data, append([]int{batch * rows}, rest...)...)
	y := ops.Gather(m, flat, 0)
	return one(ops.Reshape(y, append(append([]int(nil), lead...), rest...)...))
}

// zerosInts is n zeros but for j last: a slice's start on the last axis.
func zerosInts(n, j int) []int {
	v := make([]int, n)
	v[n-1] = j
	return v
}

// endInts is shape with the last entry e: a slice's end on the last axis.
func endInts(shape []int, e int) []int {
	v := append([]int(nil), shape...)
	v[len(v)-1] = e
	return v
}

// onesInts is n ones: a slice's unit steps.
func onesInts(n int) []int {
	v := make([]int, n)
	for i := range v {
		v[i] = 1
	}
	return v
}
