package onnx

import (
	"math"
	"sort"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Smaller ops: ArgMin; the ops whose output shape depends on their
// operand's values (NonZero, Unique, Compress's condition), which read it
// through c.Concrete and compute the result's indices on the host; Det;
// BitShift; MaxUnpool; the random draws RandomUniformLike and Bernoulli,
// from spore's generator (tensor.SetSeed), so that their values are not
// those of another runtime's, seeded or not.

func init() {
	register("ArgMin", 1, 0, argMinOp)
	register("NonZero", 9, 0, nonZeroOp)
	register("Compress", 9, 0, compressOp)
	register("Unique", 11, 0, uniqueOp)
	register("Det", 11, 0, detOp)
	register("BitShift", 11, 0, bitShiftOp)
	register("MaxUnpool", 9, 0, maxUnpoolOp)
	register("RandomUniformLike", 1, 0, randomUniformLikeOp)
	register("Bernoulli", 15, 0, bernoulliOp)
}

// reverseAxis returns x with axis ax in reverse order.
func reverseAxis(x *tensor.Tensor, ax int) *tensor.Tensor {
	r := x.Rank()
	begin, end, stride := make([]int, r), make([]int, r), make([]int, r)
	for i := range r {
		begin[i], end[i], stride[i] = 0, x.Dim(i), 1
	}
	begin[ax], end[ax], stride[ax] = x.Dim(ax)-1, -x.Dim(ax)-1, -1
	return ops.StridedSlice(x, begin, end, stride)
}

// hostKeys returns t's values for comparing on the host: exact int64s for
// the integer and boolean dtypes, float64s for the others (one of the two
// slices is nil).
func hostKeys(t *tensor.Tensor) (iv []int64, fv []float64) {
	switch t.DType() {
	case tensor.Bool:
		b := t.Bools()
		iv = make([]int64, len(b))
		for i, v := range b {
			if v {
				iv[i] = 1
			}
		}
		return iv, nil
	}
	if t.DType().IsInt() {
		return t.Int64s(), nil
	}
	return nil, t.Float64s()
}

// nonZeroOp is NonZero: the coordinates of x's non-zero elements, one
// column each in row-major order, as an int64 [rank, count] tensor (a
// scalar is read as a one-element vector, as NumPy does). The count
// depends on x's values, so x must be concrete.
func nonZeroOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "X")
	if err != nil {
		return nil, err
	}
	if x, err = c.Concrete(x, "X"); err != nil {
		return nil, err
	}
	shape := []int(x.Shape())
	if len(shape) == 0 {
		shape = []int{1}
	}
	iv, fv := hostKeys(x)
	var hits []int
	for i := range x.Size() {
		if (iv != nil && iv[i] != 0) || (fv != nil && fv[i] != 0) {
			hits = append(hits, i)
		}
	}
	n, r := len(hits), len(shape)
	out := make([]int64, r*n)
	for j, flat := range hits {
		for a := r - 1; a >= 0; a-- {
			out[a*n+j] = int64(flat % shape[a])
			flat /= shape[a]
		}
	}
	return one(tensor.FromSlice(out, r, n))
}

// compressOp is Compress: the slices of input along axis (of the
// flattened input without one) where condition is true. The condition
// may be shorter than the axis (the rest is dropped) and must be
// concrete; the input need not be, as the slices are one Gather.
func compressOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	req, err := c.needs(ins, "input", "condition")
	if err != nil {
		return nil, err
	}
	x := req[0]
	cond, err := c.Concrete(req[1], "condition")
	if err != nil {
		return nil, err
	}
	if cond.Rank() != 1 || cond.DType() != tensor.Bool {
		return nil, c.Errorf("condition must be a 1-D bool tensor, got %v %v", cond.Shape(), cond.DType())
	}
	ax := 0
	if c.Has("axis") {
		if ax, err = c.axis(c.Int("axis", 0), x.Rank(), "axis"); err != nil {
			return nil, err
		}
	} else {
		x = ops.Reshape(x, x.Size())
	}
	n := x.Dim(ax)
	var idx []int64
	for i, b := range cond.Bools() {
		if !b {
			continue
		}
		if i >= n {
			return nil, c.Errorf("condition selects index %d beyond the axis's extent %d", i, n)
		}
		idx = append(idx, int64(i))
	}
	return one(ops.Gather(x, tensor.FromSlice(idx, len(idx)), ax))
}

// uniqueOp is Unique: the distinct slices of X along axis (the distinct
// elements of the flattened X without one), sorted ascending (sorted=1,
// the default; lexicographically for slices) or in order of first
// occurrence, with the index of each one's first occurrence, each
// input slice's index in Y, and each one's count. X must be concrete.
func uniqueOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "X")
	if err != nil {
		return nil, err
	}
	if x, err = c.Concrete(x, "X"); err != nil {
		return nil, err
	}
	iv, fv := hostKeys(x)
	ax := 0
	if c.Has("axis") {
		if ax, err = c.axis(c.Int("axis", 0), x.Rank(), "axis"); err != nil {
			return nil, err
		}
	} else {
		x = ops.Reshape(x, x.Size())
	}
	// Slice i of the axis holds, in order, the elements (o·n + i)·inner + e
	// of x for o < outer and e < inner.
	n, outer, inner := x.Dim(ax), 1, 1
	for _, d := range x.Shape()[:ax] {
		outer *= d
	}
	for _, d := range x.Shape()[ax+1:] {
		inner *= d
	}
	width := outer * inner
	at := func(i, k int) int { return ((k/inner)*n+i)*inner + k%inner }
	cmp := func(a, b int) int {
		for k := range width {
			if iv != nil {
				if x, y := iv[at(a, k)], iv[at(b, k)]; x != y {
					if x < y {
						return -1
					}
					return 1
				}
				continue
			}
			if x, y := fv[at(a, k)], fv[at(b, k)]; x != y {
				if x < y {
					return -1
				}
				return 1
			}
		}
		return 0
	}
	// Sort the slices stably, so that the first of equal ones is the
	// first occurrence; runs of equal slices are then the unique ones.
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return cmp(order[i], order[j]) < 0 })
	var first, counts []int64
	group := make([]int, n) // group[i]: the run of slice i, in sorted order
	for k, i := range order {
		if k == 0 || cmp(order[k-1], i) != 0 {
			first = append(first, int64(i))
			counts = append(counts, 0)
		}
		group[i] = len(first) - 1
		counts[len(counts)-1]++
	}
	rank := make([]int, len(first)) // rank[g]: group g's position in Y
	for g := range rank {
		rank[g] = g
	}
	if c.Int("sorted", 1) == 0 {
		// By first occurrence: order the groups by their first index.
		byFirst := make([]int, len(first))
		for g := range byFirst {
			byFirst[g] = g
		}
		sort.Slice(byFirst, func(a, b int) bool { return first[byFirst[a]] < first[byFirst[b]] })
		f2, c2 := make([]int64, len(first)), make([]int64, len(first))
		for pos, g := range byFirst {
			rank[g] = pos
			f2[pos], c2[pos] = first[g], counts[g]
		}
		first, counts = f2, c2
	}
	inverse := make([]int64, n)
	for i := range inverse {
		inverse[i] = int64(rank[group[i]])
	}
	u := len(first)
	y := ops.Gather(x, tensor.FromSlice(first, u), ax)
	return []*tensor.Tensor{y, tensor.FromSlice(first, u), tensor.FromSlice(inverse, n), tensor.FromSlice(counts, u)}, nil
}

// cofactorOrder is the largest matrix Det expands by cofactors (n!
// products, exact and cheap for small n); larger ones are eliminated.
const cofactorOrder = 3

// detOp is Det: the determinant of each matrix of the last two axes, by
// cofactor expansion up to cofactorOrder×cofactorOrder and by Gaussian
// elimination with partial pivoting beyond, both composed of spore's ops
// so that they trace and differentiate.
func detOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "X")
	if err != nil {
		return nil, err
	}
	if x.Rank() < 2 || x.Dim(-1) != x.Dim(-2) {
		return nil, c.Errorf("X must be [..., M, M], got shape %v", x.Shape())
	}
	if !isFloat(x.DType()) {
		return nil, c.Errorf("X has dtype %v, want a float dtype", x.DType())
	}
	n := x.Dim(-1)
	if n == 0 {
		return one(ops.FullLike(ops.Sum(x, -1, -2), 1))
	}
	if n > cofactorOrder {
		return one(eliminationDet(x))
	}
	rows := make([]int, n)
	for i := range rows {
		rows[i] = i
	}
	return one(cofactorDet(x, rows, rows))
}

// eliminationDet is the determinant of each matrix of x's last two axes
// by Gaussian elimination with partial pivoting: at each step the row with
// the largest magnitude in the pivot column is swapped to the top (a
// gather by a per-matrix permutation, flipping the sign when it moves),
// the pivot joins the product, and the rows below are eliminated. A zero
// pivot (a singular matrix) makes the product 0; it divides as 1, so that
// no infinity or NaN follows.
func eliminationDet(x *tensor.Tensor) *tensor.Tensor {
	n := x.Dim(-1)
	batch := []int(x.Shape()[:x.Rank()-2])
	at := func(t *tensor.Tensor, axis, i int) *tensor.Tensor {
		return ops.Gather(t, tensor.Scalar(int64(i)), axis)
	}
	zero, unit := ops.ScalarLike(x, 0), ops.ScalarLike(x, 1)
	var det *tensor.Tensor
	a := x
	for m := n; m >= 1; m-- {
		col := at(a, -1, 0) // [..., m]
		piv := ops.ArgMaxKeepDims(ops.Abs(col), -1)
		iota := ops.Reshape(tensor.Arange(tensor.Int64, 0, float64(m), 1), append(append([]int(nil), onesInts(len(batch))...), m)...)
		// sigma swaps rows 0 and piv.
		sigma := ops.Select(ops.Equal(iota, tensor.Scalar(int64(0))), piv,
			ops.Select(ops.Equal(iota, piv), ops.ZerosLike(piv), iota))
		idx := ops.BroadcastTo(ops.ExpandDims(sigma, -1), append(append([]int(nil), batch...), m, m)...)
		a = ops.TakeAlongAxis(a, idx, -2)
		sign := ops.Select(ops.Equal(ops.Reshape(piv, batch...), tensor.Scalar(int64(0))), unit, ops.Neg(unit))
		p := at(at(a, -2, 0), -1, 0) // [...]
		term := ops.Mul(sign, p)
		if det == nil {
			det = term
		} else {
			det = ops.Mul(det, term)
		}
		if m == 1 {
			break
		}
		safe := ops.Select(ops.Equal(p, zero), unit, p)
		below := ops.Slice(a, append(make([]int, len(batch)), 1, 1), append(append([]int(nil), batch...), m-1, m-1))
		top := ops.Slice(a, append(make([]int, len(batch)), 0, 1), append(append([]int(nil), batch...), 1, m-1))
		first := ops.Slice(a, append(make([]int, len(batch)), 1, 0), append(append([]int(nil), batch...), m-1, 1))
		factor := ops.Div(first, ops.Reshape(safe, append(append([]int(nil), batch...), 1, 1)...))
		a = ops.Sub(below, ops.Mul(factor, top))
	}
	return det
}

// cofactorDet is the determinant of x's sub-matrix of the given rows and
// columns (of the last two axes), expanded along its first row.
func cofactorDet(x *tensor.Tensor, rows, cols []int) *tensor.Tensor {
	at := func(r, col int) *tensor.Tensor {
		e := ops.Gather(x, tensor.Scalar(int64(r)), -2)
		return ops.Gather(e, tensor.Scalar(int64(col)), -1)
	}
	if len(rows) == 1 {
		return at(rows[0], cols[0])
	}
	var det *tensor.Tensor
	for j, col := range cols {
		rest := append(append([]int(nil), cols[:j]...), cols[j+1:]...)
		term := ops.Mul(at(rows[0], col), cofactorDet(x, rows[1:], rest))
		switch {
		case det == nil && j%2 == 0:
			det = term
		case det == nil:
			det = ops.Neg(term)
		case j%2 == 0:
			det = ops.Add(det, term)
		default:
			det = ops.Sub(det, term)
		}
	}
	return det
}

// unsignedBits gives the width of the unsigned dtypes BitShift takes.
func unsignedBits(dt tensor.DType) int {
	switch dt {
	case tensor.Uint8:
		return 8
	case tensor.Uint16:
		return 16
	case tensor.Uint32:
		return 32
	case tensor.Uint64:
		return 64
	}
	return 0
}

// bitShiftOp is BitShift on unsigned integers: spore's ShiftLeft and
// ShiftRight (a shift of the width or more gives 0, where ONNX leaves it
// undefined).
func bitShiftOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	req, err := c.needs(ins, "X", "Y")
	if err != nil {
		return nil, err
	}
	x, y := req[0], req[1]
	dir := c.String("direction", "")
	if dir != "LEFT" && dir != "RIGHT" {
		return nil, c.Errorf("direction %q is not LEFT or RIGHT", dir)
	}
	if x.DType() != y.DType() {
		return nil, c.Errorf("X has dtype %v and Y %v; ONNX wants one", x.DType(), y.DType())
	}
	if unsignedBits(x.DType()) == 0 {
		return nil, c.Errorf("dtype %v is not supported (BitShift takes unsigned integers)", x.DType())
	}
	if dir == "LEFT" {
		return one(ops.ShiftLeft(x, y))
	}
	return one(ops.ShiftRight(x, y))
}

// maxUnpoolOp is MaxUnpool: X's values placed at the flat positions
// Indices gives (MaxPool's, counted over the whole N×C×spatial input of
// the pooling) in zeros of the shape MaxPool's kernel_shape, strides and
// pads invert to. An output_shape larger than that pads it at the end of
// each axis, keeping every value at its coordinates, as ONNX's own example
// of the op has it (ONNX Runtime instead reads the flat indices in the
// larger shape). Indices may be computed from the model's inputs: the
// placing is a scatter-add at run time, and an index outside the output
// fails alike in both modes.
func maxUnpoolOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	req, err := c.needs(ins, "X", "I")
	if err != nil {
		return nil, err
	}
	x, idx := req[0], req[1]
	if x.Rank() < 3 || !idx.Shape().Equal(x.Shape()) {
		return nil, c.Errorf("X must be [N, C, d...] and I of its shape, got %v and %v", x.Shape(), idx.Shape())
	}
	if idx.DType() != tensor.Int64 {
		return nil, c.Errorf("I has dtype %v, want int64", idx.DType())
	}
	sp := x.Rank() - 2
	kernel, err := c.intsAttr("kernel_shape", nil)
	if err != nil {
		return nil, err
	}
	if len(kernel) != sp {
		return nil, c.Errorf("kernel_shape %v must have %d entries", kernel, sp)
	}
	strides, err := c.intsAttr("strides", onesInts(sp))
	if err != nil {
		return nil, err
	}
	pads, err := c.intsAttr("pads", make([]int, 2*sp))
	if err != nil {
		return nil, err
	}
	if len(strides) != sp || len(pads) != 2*sp {
		return nil, c.Errorf("strides %v and pads %v must have %d and %d entries", strides, pads, sp, 2*sp)
	}
	for i := range sp {
		if kernel[i] < 1 || strides[i] < 1 || kernel[i] > maxWindow || strides[i] > maxWindow ||
			pads[i] < 0 || pads[sp+i] < 0 || pads[i] > maxWindow || pads[sp+i] > maxWindow {
			return nil, c.Errorf("kernel_shape %v and strides %v must be positive, pads %v non-negative, all at most %d", kernel, strides, pads, maxWindow)
		}
	}
	inferred := append([]int(nil), x.Shape()...)
	for i := range sp {
		inferred[2+i] = (inferred[2+i]-1)*strides[i] + kernel[i] - pads[i] - pads[sp+i]
	}
	if err := c.checkMade(inferred, "output"); err != nil {
		return nil, err
	}
	out := inferred
	if s := c.In(ins, 2); s != nil {
		v, err := c.intsInput(s, "output_shape")
		if err != nil {
			return nil, err
		}
		if len(v) != x.Rank() || v[0] != out[0] || v[1] != out[1] {
			return nil, c.Errorf("output_shape %v does not fit X %v", v, x.Shape())
		}
		for i := 2; i < len(v); i++ {
			if v[i] < inferred[i] {
				return nil, c.Errorf("output_shape %v is smaller than the unpooled shape %v", v, inferred)
			}
		}
		out = v
	}
	if err := c.checkMade(out, "output"); err != nil {
		return nil, err
	}
	// A scatter-add (Gather's gradient) of the values at their flat
	// positions, range-checked in both modes against the unpooled shape
	// the indices count in; repeated positions add.
	pos := c.runtimeIndex(ops.Reshape(idx, idx.Size()), 0, tensor.Shape(inferred).Size())
	if !tensor.Shape(out).Equal(tensor.Shape(inferred)) {
		pos = remapIndices(pos, inferred, out)
	}
	y := core.Apply(ops.GatherGradPrim, ops.ScatterAttrs{Axis: 0, Extent: tensor.Shape(out).Size()}, ops.Reshape(x, x.Size()), pos)
	return one(ops.Reshape(y, out...))
}

// remapIndices turns flat indices over shape from into the flat indices of
// the same coordinates in shape to, which is at least as large on every
// axis. The quotients are floors of float64 divisions, exact for indices
// below 2^53 (the shapes' sizes are below 2^40), which Export can write
// where an integer floor division it cannot.
func remapIndices(idx *tensor.Tensor, from, to []int) *tensor.Tensor {
	var res *tensor.Tensor
	rest := idx
	strideTo := 1
	for a := len(from) - 1; a >= 0; a-- {
		d := tensor.Scalar(int64(from[a]))
		q := ops.Cast(ops.Floor(ops.Div(ops.Cast(rest, tensor.Float64), tensor.Scalar(float64(from[a])))), tensor.Int64)
		coord := ops.Sub(rest, ops.Mul(q, d))
		rest = q
		term := ops.Mul(coord, tensor.Scalar(int64(strideTo)))
		if res == nil {
			res = term
		} else {
			res = ops.Add(res, term)
		}
		strideTo *= to[a]
	}
	return res
}

// checkScatterReduction accepts the scatters' reduction attribute: none,
// and add and mul from opset 16, min and max from opset 18.
func (c *nodeCtx) checkScatterReduction() error {
	r := c.String("reduction", "none")
	switch {
	case r == "none":
	case (r == "add" || r == "mul") && c.Opset >= 16:
	case (r == "min" || r == "max") && c.Opset >= 18:
	default:
		return c.Errorf("reduction %q is not supported at opset %d", r, c.Opset)
	}
	return nil
}

// scatterReduce writes updates into data at the flat positions pos, by
// the node's reduction: none replaces (a later update wins), add, mul,
// min and max combine each position's value with all its updates. The
// updates are applied in rounds, the k-th update of every position in
// round k, so that each round is one scatterGather at distinct positions:
// into zeros for add, ones for mul, and the running result for min and
// max, combined with the running result elementwise.
func (c *nodeCtx) scatterReduce(data, updates *tensor.Tensor, pos []int) *tensor.Tensor {
	r := c.String("reduction", "none")
	if r == "none" {
		return scatterGather(data, updates, pos)
	}
	var rounds [][]int // rounds[k]: the updates (by index j) of round k
	seen := map[int]int{}
	for j, p := range pos {
		k := seen[p]
		seen[p] = k + 1
		if k == len(rounds) {
			rounds = append(rounds, nil)
		}
		rounds[k] = append(rounds[k], j)
	}
	flat := ops.Reshape(updates, updates.Size())
	y := data
	for _, js := range rounds {
		at := make([]int, len(js))
		sel := make([]int64, len(js))
		for i, j := range js {
			at[i], sel[i] = pos[j], int64(j)
		}
		u := ops.Gather(flat, tensor.FromSlice(sel, len(sel)), 0)
		switch r {
		case "add":
			y = ops.Add(y, scatterGather(ops.ZerosLike(data), u, at))
		case "mul":
			y = ops.Mul(y, scatterGather(ops.OnesLike(data), u, at))
		case "max":
			y = ops.Maximum(y, scatterGather(y, u, at))
		case "min":
			y = ops.Minimum(y, scatterGather(y, u, at))
		}
	}
	return y
}

// maxPoolIndices is MaxPool's Indices output for an N×C×H×W input: for
// each window, the flat index over the whole input (row-major, or with
// colMajor the spatial axes column-major, as storage_order=1 asks) of
// its first maximum in row-major window order. It runs the window as
// dilatedMaxPool does, one strided slice per kernel cell, keeping the
// index of each cell that beats the running maximum.
func maxPoolIndices(x *tensor.Tensor, s spatial, colMajor bool) *tensor.Tensor {
	n, ch, h, w := x.Dim(0), x.Dim(1), x.Dim(2), x.Dim(3)
	pp := [][2]int{{0, 0}, {0, 0}, {s.pads[0], s.pads[1]}, {s.pads[2], s.pads[3]}}
	xp := ops.Pad(x, pp)
	if xp != x {
		inside := ops.Cast(ops.Pad(tensor.Ones(tensor.Uint8, x.Shape()...), pp), tensor.Bool)
		xp = ops.Select(inside, xp, ops.ScalarLike(x, math.Inf(-1)))
	}
	var out [2]int
	padded := [2]int{h + s.pads[0] + s.pads[1], w + s.pads[2] + s.pads[3]}
	for i := range 2 {
		out[i] = (padded[i]-((s.kernel[i]-1)*s.dilation[i]+1))/s.stride[i] + 1
	}
	var best, idx *tensor.Tensor
	cell := make([]int64, n*ch*out[0]*out[1])
	for ki := range s.kernel[0] {
		for kj := range s.kernel[1] {
			y0, x0 := ki*s.dilation[0], kj*s.dilation[1]
			sl := ops.StridedSlice(xp,
				[]int{0, 0, y0, x0},
				[]int{n, ch, y0 + (out[0]-1)*s.stride[0] + 1, x0 + (out[1]-1)*s.stride[1] + 1},
				[]int{1, 1, s.stride[0], s.stride[1]})
			// cell: the flat input index each window reads at this offset
			// (any value where the offset falls in the padding, which
			// holds −∞ and never wins).
			k := 0
			for b := range n * ch {
				for oi := range out[0] {
					r := oi*s.stride[0] + y0 - s.pads[0]
					for oj := range out[1] {
						q := oj*s.stride[1] + x0 - s.pads[2]
						sp := r*w + q
						if colMajor {
							sp = q*h + r
						}
						cell[k] = int64(b*h*w + sp)
						k++
					}
				}
			}
			at := tensor.FromSlice(append([]int64(nil), cell...), n, ch, out[0], out[1])
			if best == nil {
				best, idx = sl, at
				continue
			}
			idx = ops.Select(ops.Greater(sl, best), at, idx)
			best = ops.Maximum(best, sl)
		}
	}
	return idx
}

// batchNormTraining is BatchNormalization with training_mode=1: X
// normalised with its own per-channel mean and biased variance (over every
// axis but 1), and as outputs 1 and 2 the running statistics updated with
// them, input·momentum + batch·(1 − momentum), as ONNX's reference
// computes them (the biased variance in both).
func (c *nodeCtx) batchNormTraining(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, scale, bias, mean, variance := in[0], in[1], in[2], in[3], in[4]
	xs := x.Shape()
	if len(xs) < 2 {
		return nil, c.Errorf("X has shape %v; want N×C×…", xs)
	}
	ch := xs[1]
	for i, p := range in[1:] {
		if !p.Shape().Equal(tensor.Shape{ch}) {
			return nil, c.Errorf("input %d has shape %v, want [%d] for X %v", i+1, p.Shape(), ch, xs)
		}
	}
	axes := []int{0}
	per := make([]int, len(xs)) // a [C] vector's shape against X
	for i := range per {
		per[i] = 1
		if i >= 2 {
			axes = append(axes, i)
		}
	}
	per[1] = ch
	bm := ops.MeanKeepDims(x, axes...)
	d := ops.Sub(x, bm)
	bv := ops.MeanKeepDims(ops.Mul(d, d), axes...)
	eps := scalarOf(x.DType(), float64(c.Float("epsilon", 1e-5)))
	y := ops.Add(ops.Mul(ops.Mul(d, ops.Rsqrt(ops.Add(bv, eps))), ops.Reshape(scale, per...)), ops.Reshape(bias, per...))
	outs := []*tensor.Tensor{y}
	if c.wantOutput(1) || c.wantOutput(2) {
		m := float64(c.Float("momentum", 0.9))
		run := func(old, batch *tensor.Tensor) *tensor.Tensor {
			return ops.Add(ops.Mul(old, scalarOf(old.DType(), m)), ops.Mul(ops.Reshape(batch, ch), scalarOf(old.DType(), 1-m)))
		}
		outs = append(outs, run(mean, bm), run(variance, bv))
	}
	return outs, nil
}

// randomDType reads a random op's dtype attribute: the output's element
// type, def when absent; it must be a float dtype.
func (c *nodeCtx) randomDType(def tensor.DType) (tensor.DType, error) {
	dt := def
	if c.Has("dtype") {
		var err error
		if dt, err = dtypeOf(int32(c.Int("dtype", 0))); err != nil {
			return 0, c.Errorf("attribute dtype: %v", err)
		}
	}
	if !isFloat(dt) {
		return 0, c.Errorf("dtype %v is not supported (float32 and float64 are)", dt)
	}
	return dt, nil
}

// uniformLike draws from [lo, hi) in dtype dt, shaped like x, with the
// node's seed when it has one (the same values on every run).
func (c *nodeCtx) uniformLike(x *tensor.Tensor, dt tensor.DType, lo, hi float64) *tensor.Tensor {
	if x.DType() != dt {
		x = ops.Cast(x, dt)
	}
	if c.Has("seed") {
		return ops.RandomUniformLikeSeeded(x, lo, hi, c.Float("seed", 0))
	}
	return ops.RandomUniformLike(x, lo, hi)
}

// randomUniformLikeOp is RandomUniformLike: values drawn uniformly from
// [low, high) shaped like the input, of its dtype or the node's.
func randomUniformLikeOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "input")
	if err != nil {
		return nil, err
	}
	def := x.DType()
	if !isFloat(def) && !c.Has("dtype") {
		return nil, c.Errorf("input has dtype %v and the node no dtype; the draws are float32 or float64", def)
	}
	dt, err := c.randomDType(def)
	if err != nil {
		return nil, err
	}
	lo, hi := float64(c.Float("low", 0)), float64(c.Float("high", 1))
	if !(lo <= hi) {
		return nil, c.Errorf("low %v is above high %v", lo, hi)
	}
	return one(c.uniformLike(x, dt, lo, hi))
}

// bernoulliOp is Bernoulli: 1 with the input's probability, else 0, each
// element drawn independently, in the input's dtype or the node's.
func bernoulliOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	p, err := c.need(ins, 0, "input")
	if err != nil {
		return nil, err
	}
	if !isFloat(p.DType()) {
		return nil, c.Errorf("input has dtype %v, want probabilities of a float dtype", p.DType())
	}
	dt := p.DType()
	if c.Has("dtype") {
		if dt, err = dtypeOf(int32(c.Int("dtype", 0))); err != nil {
			return nil, c.Errorf("attribute dtype: %v", err)
		}
	}
	u := c.uniformLike(p, p.DType(), 0, 1)
	return one(ops.Cast(ops.Less(u, p), dt))
}
