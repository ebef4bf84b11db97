package ops

import (
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// Helpers for the batching rules (core.Prim.Batch) that spore.Vmap applies.
// A rule receives inputs of which some carry an extra batch axis (dims[i],
// or -1 for an input every example shares) and returns the result for the
// whole batch and where its batch axis is. Rules are written with ordinary
// ops, so they run eagerly, into a trace, and on the autodiff tape alike.
// Most rules move the batch axis to the front (MoveAxis, a no-op when it is
// there already) and then shift the op's axis attributes by one.

// MoveAxis returns x with axis from moved to position to, the other axes
// keeping their order (NumPy's and MindSpore's moveaxis). Negative axes
// count from the end.
func MoveAxis(x *tensor.Tensor, from, to int) *tensor.Tensor {
	r := x.Rank()
	from = core.NormAxis("MoveAxis", from, r)
	to = core.NormAxis("MoveAxis", to, r)
	if from == to {
		return x
	}
	perm := make([]int, 0, r)
	for i := range r {
		if i != from {
			perm = append(perm, i)
		}
	}
	perm = append(perm[:to], append([]int{from}, perm[to:]...)...)
	return Transpose(x, perm...)
}

// batchSize returns the extent of the batch axis of the first batched input.
func batchSize(in []*tensor.Tensor, dims []int) int {
	for i, d := range dims {
		if d >= 0 {
			return in[i].Dim(d)
		}
	}
	panic(core.Errorf("Vmap", "batching rule called with no batched input"))
}

// front returns x with its batch axis d first; an unbatched x (d < 0) is
// broadcast along a new leading axis of extent n when n > 0, and returned
// as it is when n is 0.
func front(x *tensor.Tensor, d, n int) *tensor.Tensor {
	if d >= 0 {
		return MoveAxis(x, d, 0)
	}
	if n == 0 {
		return x
	}
	return BroadcastTo(ExpandDims(x, 0), append([]int{n}, x.Shape()...)...)
}

// alignBatched returns the inputs ready for an op that broadcasts its
// operands from the last axis (elementwise ops, MatMul's batch axes):
// batched inputs get their batch axis first and, when their per-example
// rank r is below the largest per-example rank R, R-r unit axes after it,
// so that NumPy broadcasting lines their example axes up with the others'.
// Unbatched inputs are left as they are: their axes already line up with
// the per-example ones from the right, and broadcasting stretches them over
// the batch.
func alignBatched(in []*tensor.Tensor, dims []int) []*tensor.Tensor {
	R := 0
	for i, x := range in {
		r := x.Rank()
		if dims[i] >= 0 {
			r--
		}
		R = max(R, r)
	}
	out := make([]*tensor.Tensor, len(in))
	for i, x := range in {
		if dims[i] < 0 {
			out[i] = x
			continue
		}
		x = MoveAxis(x, dims[i], 0)
		if r := x.Rank() - 1; r < R {
			s := make([]int, 0, R+1)
			s = append(s, x.Dim(0))
			for range R - r {
				s = append(s, 1)
			}
			x = Reshape(x, append(s, x.Shape()[1:]...)...)
		}
		out[i] = x
	}
	return out
}

// batchBroadcasting is the rule of an op whose operands broadcast from the
// last axis (every elementwise op, Select): align the operands and apply
// the op once; the batch axis of the result is the first.
// It takes the address of the primitive's variable, so that a literal can
// name the primitive it is part of.
func batchBroadcasting(pp **core.Prim) func(any, []*tensor.Tensor, []int) (*tensor.Tensor, int) {
	return func(attrs any, in []*tensor.Tensor, dims []int) (*tensor.Tensor, int) {
		p := *pp
		if len(in) == 1 {
			// One operand: the op maps elements, wherever the batch axis is.
			return core.Apply(p, attrs, in[0]), dims[0]
		}
		return core.Apply(p, attrs, alignBatched(in, dims)...), 0
	}
}

// batchReduce is the rule of a reduction with ReduceAttrs: the batch axis
// goes first and the reduced axes shift by one.
func batchReduce(pp **core.Prim) func(any, []*tensor.Tensor, []int) (*tensor.Tensor, int) {
	return func(attrs any, in []*tensor.Tensor, dims []int) (*tensor.Tensor, int) {
		p := *pp
		a := attrs.(ReduceAttrs)
		return core.Apply(p, ReduceAttrs{Axes: shiftAxes(a.Axes), KeepDims: a.KeepDims}, MoveAxis(in[0], dims[0], 0)), 0
	}
}

// shiftAxes returns axes each plus one: the per-example axes of an op once
// the batch axis is in front.
func shiftAxes(axes []int) []int {
	out := make([]int, len(axes))
	for i, a := range axes {
		out[i] = a + 1
	}
	return out
}

// withBatch returns shape s with extent n in front.
func withBatch(n int, s tensor.Shape) tensor.Shape {
	return append(tensor.Shape{n}, s...)
}

// batchReshape: the examples stay in front, each reshaped.
func batchReshape(attrs any, in []*tensor.Tensor, dims []int) (*tensor.Tensor, int) {
	x := MoveAxis(in[0], dims[0], 0)
	return Reshape(x, withBatch(x.Dim(0), attrs.(ShapeAttr).Shape)...), 0
}

// batchBroadcastTo lines the example axes up with the target's (unit axes
// after the batch axis) and broadcasts to the target with the batch in
// front.
func batchBroadcastTo(attrs any, in []*tensor.Tensor, dims []int) (*tensor.Tensor, int) {
	s := attrs.(ShapeAttr).Shape
	x := MoveAxis(in[0], dims[0], 0)
	if r := x.Rank() - 1; r < len(s) {
		t := make([]int, 0, len(s)+1)
		t = append(t, x.Dim(0))
		for range len(s) - r {
			t = append(t, 1)
		}
		x = Reshape(x, append(t, x.Shape()[1:]...)...)
	}
	return BroadcastTo(x, withBatch(x.Dim(0), s)...), 0
}

// batchTranspose keeps the batch axis in front and permutes the others.
func batchTranspose(attrs any, in []*tensor.Tensor, dims []int) (*tensor.Tensor, int) {
	p := attrs.(PermAttr).Perm
	perm := make([]int, len(p)+1)
	for i, a := range p {
		perm[i+1] = a + 1
	}
	return Transpose(MoveAxis(in[0], dims[0], 0), perm...), 0
}

// batchMatMul: MatMul broadcasts its leading (batch) axes, so aligned
// operands give a batched GEMM. When only the left operand is batched and
// the right one is a matrix, the examples are folded into the rows
// instead: one large GEMM rather than one small one per example (the
// per-example forward pass of a dense layer).
func batchMatMul(attrs any, in []*tensor.Tensor, dims []int) (*tensor.Tensor, int) {
	at := attrs.(MatMulAttrs)
	a, b := in[0], in[1]
	if dims[1] < 0 && b.Rank() == 2 && !at.TransA {
		a = MoveAxis(a, dims[0], 0)
		as := a.Shape()
		y := MatMulT(Reshape(a, -1, as[len(as)-1]), b, false, at.TransB)
		return Reshape(y, append(as[:len(as)-1].Clone(), y.Dim(1))...), 0
	}
	x := alignBatched(in, dims)
	return MatMulT(x[0], x[1], at.TransA, at.TransB), 0
}

// batchArg is the rule of ArgMax and ArgMin.
func batchArg(pp **core.Prim) func(any, []*tensor.Tensor, []int) (*tensor.Tensor, int) {
	return func(attrs any, in []*tensor.Tensor, dims []int) (*tensor.Tensor, int) {
		a := attrs.(ArgAttrs)
		return core.Apply(*pp, ArgAttrs{Axis: a.Axis + 1, KeepDims: a.KeepDims}, MoveAxis(in[0], dims[0], 0)), 0
	}
}

// batchConcat: every input gets the batch in front (an unbatched one is
// repeated for every example) and they join along the shifted axis.
func batchConcat(attrs any, in []*tensor.Tensor, dims []int) (*tensor.Tensor, int) {
	n := batchSize(in, dims)
	xs := make([]*tensor.Tensor, len(in))
	for i, x := range in {
		xs[i] = front(x, dims[i], n)
	}
	return core.Apply(ConcatPrim, AxisAttr{attrs.(AxisAttr).Axis + 1}, xs...), 0
}

// batchSliceAttrs extends a window over n examples: all of them, in order.
func batchSliceAttrs(a SliceAttrs, n int) SliceAttrs {
	return SliceAttrs{
		Begin:   append([]int{0}, a.Begin...),
		Strides: append([]int{1}, a.Strides...),
		Size:    append([]int{n}, a.Size...),
		Shape:   withBatch(n, a.Shape),
	}
}

// batchSlice is the rule of StridedSlice and StridedSliceGrad.
func batchSlice(pp **core.Prim) func(any, []*tensor.Tensor, []int) (*tensor.Tensor, int) {
	return func(attrs any, in []*tensor.Tensor, dims []int) (*tensor.Tensor, int) {
		x := MoveAxis(in[0], dims[0], 0)
		return core.Apply(*pp, batchSliceAttrs(attrs.(SliceAttrs), x.Dim(0)), x), 0
	}
}

// batchUnstack: the pieces along the shifted axis keep the batch in front.
func batchUnstack(attrs any, in []*tensor.Tensor, dims []int) ([]*tensor.Tensor, []int) {
	x := MoveAxis(in[0], dims[0], 0)
	outs := core.ApplyN(UnstackPrim, AxisAttr{attrs.(AxisAttr).Axis + 1}, x)
	return outs, make([]int, len(outs))
}

// batchAlong is the rule of the two-input ops that pair the elements of
// equally shaped inputs along one axis (TakeAlongAxis and its gradient,
// LinearRecurrence): both inputs get the batch in front and the axis
// attribute shifts by one.
func batchAlong(pp **core.Prim, shift func(any) any) func(any, []*tensor.Tensor, []int) (*tensor.Tensor, int) {
	return func(attrs any, in []*tensor.Tensor, dims []int) (*tensor.Tensor, int) {
		n := batchSize(in, dims)
		xs := make([]*tensor.Tensor, len(in))
		for i, x := range in {
			xs[i] = front(x, dims[i], n)
		}
		return core.Apply(*pp, shift(attrs), xs...), 0
	}
}

func shiftAxisAttr(a any) any        { return AxisAttr{a.(AxisAttr).Axis + 1} }
func shiftScatterAttrs(a any) any    { s := a.(ScatterAttrs); s.Axis++; return s }
func shiftRecurrenceAttrs(a any) any { r := a.(RecurrenceAttrs); r.Axis++; return r }
func shiftScanAttrs(a any) any       { s := a.(ScanAttrs); s.Axis++; return s }
func shiftSortAttrs(a any) any       { s := a.(SortAttrs); s.Axis++; return s }

// batchOne is the rule of a one-input op whose attribute names an axis of
// its input: batch in front, attribute shifted.
func batchOne(pp **core.Prim, shift func(any) any) func(any, []*tensor.Tensor, []int) (*tensor.Tensor, int) {
	return func(attrs any, in []*tensor.Tensor, dims []int) (*tensor.Tensor, int) {
		return core.Apply(*pp, shift(attrs), MoveAxis(in[0], dims[0], 0)), 0
	}
}

// batchLastAxis is the rule of a one-input op working along the last axis
// (ArgTopK): the batch axis is never the last, so moving it in front is
// all it takes.
func batchLastAxis(pp **core.Prim) func(any, []*tensor.Tensor, []int) (*tensor.Tensor, int) {
	return batchOne(pp, func(a any) any { return a })
}

// offsetIndices turns per-example indices idx (batch in front, negative
// entries counting from the end of an axis of extent ext) into indices of
// the examples' axes laid end to end: example k's index i becomes k*ext+i.
func offsetIndices(idx *tensor.Tensor, ext int) *tensor.Tensor {
	n := idx.Dim(0)
	zero := Cast(tensor.Scalar(int64(0)), idx.DType())
	wrapped := Select(Less(idx, zero), Add(idx, Cast(tensor.Scalar(int64(ext)), idx.DType())), idx)
	offs := make([]int64, n)
	for k := range offs {
		offs[k] = int64(k * ext)
	}
	s := make([]int, idx.Rank())
	for i := range s {
		s[i] = 1
	}
	s[0] = n
	return Add(wrapped, Cast(tensor.FromSlice(offs, s...), idx.DType()))
}

// permBlock returns the permutation that moves the block of axes
// [from, from+size) of a rank-r tensor to start at position to (counted
// in the order without the block).
func permBlock(r, from, size, to int) []int {
	var rest []int
	for i := range r {
		if i < from || i >= from+size {
			rest = append(rest, i)
		}
	}
	block := make([]int, size)
	for i := range block {
		block[i] = from + i
	}
	return append(append(append([]int{}, rest[:to]...), block...), rest[to:]...)
}

// batchGather: with only x batched, gather along the shifted axis; with
// only the indices batched, the examples' index axes land where the
// indices go (at the gathered axis); with both, the examples' gathered
// axes are laid end to end and the indices offset to match, one Gather.
func batchGather(attrs any, in []*tensor.Tensor, dims []int) (*tensor.Tensor, int) {
	ax := attrs.(AxisAttr).Axis
	x, idx := in[0], in[1]
	switch {
	case dims[1] < 0:
		return core.Apply(GatherPrim, AxisAttr{ax + 1}, MoveAxis(x, dims[0], 0), idx), 0
	case dims[0] < 0:
		return core.Apply(GatherPrim, AxisAttr{ax}, x, MoveAxis(idx, dims[1], 0)), ax
	}
	x, idx = MoveAxis(x, dims[0], 0), MoveAxis(idx, dims[1], 0)
	n, ext := x.Dim(0), x.Dim(ax+1)
	// [n, pre..., ext, post...] -> [n*ext, pre..., post...]
	xf := Transpose(x, permBlock(x.Rank(), ax+1, 1, 1)...)
	xf = Reshape(xf, append([]int{n * ext}, xf.Shape()[2:]...)...)
	y := core.Apply(GatherPrim, AxisAttr{0}, xf, offsetIndices(idx, ext)) // [n, I..., pre..., post...]
	ri := idx.Rank() - 1
	// Move the pre axes (after n and I) back in front of I.
	return Transpose(y, permBlock(y.Rank(), 1, ri, 1+ax)...), 0
}

// batchGatherGrad is batchGather's transpose: scatter-add into the
// examples' axes laid end to end.
func batchGatherGrad(attrs any, in []*tensor.Tensor, dims []int) (*tensor.Tensor, int) {
	a := attrs.(ScatterAttrs)
	g, idx := in[0], in[1]
	if dims[1] < 0 {
		return core.Apply(GatherGradPrim, ScatterAttrs{Axis: a.Axis + 1, Extent: a.Extent}, MoveAxis(g, dims[0], 0), idx), 0
	}
	n := batchSize(in, dims)
	g, idx = front(g, dims[0], n), MoveAxis(idx, dims[1], 0)
	ri := idx.Rank() - 1
	// [n, pre..., I..., post...] -> [n, I..., pre..., post...]
	gf := Transpose(g, permBlock(g.Rank(), 1+a.Axis, ri, 1)...)
	y := core.Apply(GatherGradPrim, ScatterAttrs{Axis: 0, Extent: n * a.Extent}, gf, offsetIndices(idx, a.Extent))
	// [n*ext, pre..., post...] -> [n, ext, pre..., post...] -> [n, pre..., ext, post...]
	y = Reshape(y, append([]int{n, a.Extent}, y.Shape()[1:]...)...)
	return MoveAxis(y, 1, 1+a.Axis), 0
}

// batchFoldN is the rule of the NCHW ops (pooling, convolution and their
// gradients) whose image inputs are listed in images and whose other
// inputs (filters) must be unbatched: the examples are folded into the N
// axis, the op runs once, and the result is unfolded. fix adjusts the
// attributes to the folded N (a shape attribute holding an input's shape).
// With a batched filter it returns ok false and the op is looped.
func batchFoldN(pp **core.Prim, images []int, fix func(any, int) any) func(any, []*tensor.Tensor, []int) (*tensor.Tensor, int) {
	return func(attrs any, in []*tensor.Tensor, dims []int) (*tensor.Tensor, int) {
		n := batchSize(in, dims)
		xs := append([]*tensor.Tensor(nil), in...)
		isImage := make([]bool, len(in))
		for _, i := range images {
			isImage[i] = true
		}
		for i, x := range in {
			if !isImage[i] {
				if dims[i] >= 0 {
					return loopBatch(*pp, attrs, in, dims, n), 0
				}
				continue
			}
			x = front(x, dims[i], n)
			xs[i] = Reshape(x, append([]int{n * x.Dim(1)}, x.Shape()[2:]...)...)
		}
		if fix != nil {
			attrs = fix(attrs, n)
		}
		y := core.Apply(*pp, attrs, xs...)
		return Reshape(y, append([]int{n, y.Dim(0) / n}, y.Shape()[1:]...)...), 0
	}
}

// foldShape scales the N of a shape attribute by n (nil stays nil).
func foldShape(s tensor.Shape, n int) tensor.Shape {
	if s == nil {
		return nil
	}
	s = s.Clone()
	s[0] *= n
	return s
}

func foldPoolAttrs(a any, n int) any { p := a.(PoolAttrs); p.Shape = foldShape(p.Shape, n); return p }
func foldConvGradAttrs(a any, n int) any {
	c := a.(ConvGradAttrs)
	c.Shape = foldShape(c.Shape, n)
	return c
}

// loopBatch applies p to each example and stacks the results: the rule of
// last resort, for the cases a rule cannot vectorise (a batched filter).
func loopBatch(p *core.Prim, attrs any, in []*tensor.Tensor, dims []int, n int) *tensor.Tensor {
	per := make([][]*tensor.Tensor, len(in))
	for i, x := range in {
		if dims[i] >= 0 {
			per[i] = Unstack(x, dims[i])
		}
	}
	res := make([]*tensor.Tensor, n)
	for k := range n {
		args := make([]*tensor.Tensor, len(in))
		for i, x := range in {
			args[i] = x
			if per[i] != nil {
				args[i] = per[i][k]
			}
		}
		res[k] = core.Apply(p, attrs, args...)
	}
	return Stack(0, res...)
}
