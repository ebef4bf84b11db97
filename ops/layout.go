package ops

import (
	"fmt"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// Shape and layout ops: Transpose, the Reshape composites (ExpandDims,
// Squeeze), Concat and its composites (Stack), the slicing family
// (StridedSlice, Slice, Split) with its scatter-back twin (Pad,
// StridedSliceGrad), and Tile. All of them move elements without
// arithmetic, so they accept every dtype.

// PermAttr is Transpose's attribute: output axis i is input axis Perm[i].
type PermAttr struct{ Perm []int }

// String prints every attribute, for IR dumps and CSE keys.
func (a PermAttr) String() string { return fmt.Sprintf("perm=%v", a.Perm) }

// AxisAttr is the attribute of ops parameterised by one (normalised) axis.
type AxisAttr struct{ Axis int }

// String prints every attribute, for IR dumps and CSE keys.
func (a AxisAttr) String() string { return fmt.Sprintf("axis=%d", a.Axis) }

// SliceAttrs describe a strided window of a tensor of shape Shape: on axis
// i it reads Size[i] elements starting at Begin[i], Strides[i] apart
// (backwards when negative). StridedSlice reads the window; StridedSliceGrad
// writes a tensor of the window's shape back into zeros of shape Shape.
// Begin, Strides and Size are normalised: every index they reach is valid.
type SliceAttrs struct {
	Begin   []int
	Strides []int
	Size    []int
	Shape   tensor.Shape
}

// String prints every attribute, for IR dumps and CSE keys.
func (a SliceAttrs) String() string {
	return fmt.Sprintf("begin=%v strides=%v size=%v shape=%v", a.Begin, a.Strides, a.Size, a.Shape)
}

var TransposePrim, ConcatPrim, StridedSlicePrim, StridedSliceGradPrim *core.Prim

// layoutRank is the rank up to which the layout kernels keep their index
// bookkeeping on the stack.
const layoutRank = 8

// rowStrides returns s's row-major strides in buf (reused when it fits).
func rowStrides(s []int, buf []int) []int {
	st := buf[:0]
	if cap(st) < len(s) {
		st = make([]int, 0, len(s))
	}
	st = st[:len(s)]
	k := 1
	for i := len(s) - 1; i >= 0; i-- {
		st[i] = k
		k *= s[i]
	}
	return st
}

func init() {
	TransposePrim = core.Define(&core.Prim{
		Name:   "Transpose",
		Batch:  batchTranspose,
		Traits: core.Traits{Cost: 1},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			p := attrs.(PermAttr).Perm
			xs := in[0].Shape()
			if !isPerm(p, len(xs)) {
				core.Panicf("Transpose", "perm %v is not a permutation of the axes of %v", p, xs)
			}
			s := make(tensor.Shape, len(p))
			for i, ax := range p {
				s[i] = xs[ax]
			}
			return tensor.Meta{Shape: s, DType: in[0].DType()}
		},
		// A transpose's transpose is the inverse permutation.
		JVP: linearJVP(&TransposePrim, 0),
		VJP: linearVJP(&TransposePrim, 0, func(attrs any, _ []*tensor.Tensor) any {
			p := attrs.(PermAttr).Perm
			inv := make([]int, len(p))
			for i, ax := range p {
				inv[ax] = i
			}
			return PermAttr{inv}
		}),
	})
	registerMoves(TransposePrim)
}

func isPerm(p []int, r int) bool {
	if len(p) != r {
		return false
	}
	var seen [64]bool
	for _, ax := range p {
		if ax < 0 || ax >= r || ax >= len(seen) || seen[ax] {
			return false
		}
		seen[ax] = true
	}
	return true
}

// transposeInto writes src (shape xs) permuted by perm into dst. It first
// drops extent-1 axes and merges axes that stay adjacent, so most real
// transposes become one of three loops: a plain copy, a copy of contiguous
// rows (the last axis stays last), or a batch of 2-D transposes done in
// cache-sized tiles.
func transposeInto[T any](dst, src []T, xs tensor.Shape, perm []int) {
	if len(src) == 0 {
		return
	}
	var sb, pb, kb, stb, ob, ib [layoutRank]int
	// Rename the kept (extent > 1) input axes 0..k-1 in input order.
	ren := kb[:0]
	if len(xs) > layoutRank {
		ren = make([]int, 0, len(xs))
	}
	k := 0
	for _, d := range xs {
		if d == 1 {
			ren = append(ren, -1)
		} else {
			ren = append(ren, k)
			k++
		}
	}
	// q: the kept axes in output order, renamed.
	q := pb[:0]
	if k > layoutRank {
		q = make([]int, 0, k)
	}
	for _, ax := range perm {
		if ren[ax] >= 0 {
			q = append(q, ren[ax])
		}
	}
	ext := sb[:0]
	if k > layoutRank {
		ext = make([]int, 0, k)
	}
	for _, d := range xs {
		if d != 1 {
			ext = append(ext, d)
		}
	}
	// Merge runs of output axes that are consecutive input axes. group[a]
	// marks input axis a as the head of a merged group (-1 otherwise);
	// in input order, a merged group is a contiguous range of axes.
	head := ib[:0]
	if k > layoutRank {
		head = make([]int, 0, k)
	}
	for range k {
		head = append(head, -1)
	}
	for i := 0; i < len(q); {
		j := i + 1
		for j < len(q) && q[j] == q[j-1]+1 {
			j++
		}
		head[q[i]] = j - i // the group starting at input axis q[i] spans j-i axes
		i = j
	}
	// Merged input shape (input order) and the new id of each group head.
	ns := ob[:0]
	if k > layoutRank {
		ns = make([]int, 0, k)
	}
	for a := 0; a < k; {
		n, size := head[a], 1
		for _, d := range ext[a : a+n] {
			size *= d
		}
		head[a] = -2 - len(ns) // encode the group's new id
		ns = append(ns, size)
		a += n
	}
	m := len(ns)
	np := stb[:0]
	if m > layoutRank {
		np = make([]int, 0, m)
	}
	for i := 0; i < len(q); {
		j := i + 1
		for j < len(q) && q[j] == q[j-1]+1 {
			j++
		}
		np = append(np, -2-head[q[i]])
		i = j
	}
	switch {
	case m <= 1:
		copy(dst, src)
	case np[m-1] == m-1:
		transposeRows(dst, src, ns, np)
	case np[m-1] == m-2 && np[m-2] == m-1 && leadingIdentity(np[:m-2]):
		rows, cols := ns[m-2], ns[m-1]
		for b := 0; b < len(src); b += rows * cols {
			transpose2D(dst[b:b+rows*cols], src[b:b+rows*cols], rows, cols)
		}
	default:
		transposeGeneral(dst, src, ns, np)
	}
}

func leadingIdentity(p []int) bool {
	for i, ax := range p {
		if ax != i {
			return false
		}
	}
	return true
}

// transposeTile is the side of the square tiles of transpose2D. Small
// tiles measure best here: with a power-of-two row length, the lines of a
// larger tile's column all fall into one cache set and evict each other
// (1024×1024 float32: 8 → 1.0 ms, 32 → 7.4 ms).
const transposeTile = 8

// transpose2D writes the rows×cols matrix src transposed into dst, tile by
// tile, reading each tile's rows contiguously, so that neither the reads
// nor the writes stride through memory far beyond the cache.
func transpose2D[T any](dst, src []T, rows, cols int) {
	for i0 := 0; i0 < rows; i0 += transposeTile {
		i1 := min(i0+transposeTile, rows)
		for j0 := 0; j0 < cols; j0 += transposeTile {
			j1 := min(j0+transposeTile, cols)
			for i := i0; i < i1; i++ {
				for j, v := range src[i*cols+j0 : i*cols+j1] {
					dst[(j0+j)*rows+i] = v
				}
			}
		}
	}
}

// transposeRows handles perms that keep the last axis last: it copies
// contiguous rows, walking the other output axes with an odometer.
func transposeRows[T any](dst, src []T, ns, np []int) {
	m := len(ns)
	var stb, idb [layoutRank]int
	st := rowStrides(ns, stb[:])
	idx := idb[:0]
	if m > layoutRank {
		idx = make([]int, 0, m)
	}
	for range m {
		idx = append(idx, 0)
	}
	inner := ns[m-1]
	off := 0
	for o := 0; o < len(dst); o += inner {
		copy(dst[o:o+inner], src[off:off+inner])
		for ax := m - 2; ax >= 0; ax-- {
			in := np[ax]
			idx[ax]++
			off += st[in]
			if idx[ax] < ns[in] {
				break
			}
			off -= st[in] * ns[in]
			idx[ax] = 0
		}
	}
}

// transposeGeneral walks the output in order, reading the input with the
// permuted strides.
func transposeGeneral[T any](dst, src []T, ns, np []int) {
	m := len(ns)
	var stb, idb [layoutRank]int
	st := rowStrides(ns, stb[:])
	idx := idb[:0]
	if m > layoutRank {
		idx = make([]int, 0, m)
	}
	for range m {
		idx = append(idx, 0)
	}
	inner, step := ns[np[m-1]], st[np[m-1]]
	off := 0
	for o := 0; o < len(dst); o += inner {
		p := off
		for j := range inner {
			dst[o+j] = src[p]
			p += step
		}
		for ax := m - 2; ax >= 0; ax-- {
			in := np[ax]
			idx[ax]++
			off += st[in]
			if idx[ax] < ns[in] {
				break
			}
			off -= st[in] * ns[in]
			idx[ax] = 0
		}
	}
}

// Transpose permutes the axes of x: output axis i is input axis perm[i].
// Negative entries count from the end; with no perm the axes are reversed,
// as in NumPy.
func Transpose(x *tensor.Tensor, perm ...int) *tensor.Tensor {
	r := x.Rank()
	p := make([]int, r)
	if len(perm) == 0 {
		for i := range p {
			p[i] = r - 1 - i
		}
	} else {
		if len(perm) != r {
			core.Panicf("Transpose", "perm %v has %d entries for input %v of rank %d", perm, len(perm), x.Shape(), r)
		}
		for i, ax := range perm {
			p[i] = core.NormAxis("Transpose", ax, r)
		}
		if !isPerm(p, r) {
			core.Panicf("Transpose", "perm %v is not a permutation of the axes of %v", perm, x.Shape())
		}
	}
	if leadingIdentity(p) {
		return x
	}
	return core.Apply(TransposePrim, PermAttr{p}, x)
}

// T returns x with its last two axes swapped (the matrix transpose, batched
// over leading axes). x must have rank 2 or more.
func T(x *tensor.Tensor) *tensor.Tensor {
	r := x.Rank()
	if r < 2 {
		core.Panicf("T", "input %v has rank %d; swapping the last two axes needs rank >= 2", x.Shape(), r)
	}
	p := make([]int, r)
	for i := range p {
		p[i] = i
	}
	p[r-2], p[r-1] = r-1, r-2
	return core.Apply(TransposePrim, PermAttr{p}, x)
}

// ExpandDims inserts an axis of extent 1 at position axis of the result
// (-1 appends it).
func ExpandDims(x *tensor.Tensor, axis int) *tensor.Tensor {
	xs := x.Shape()
	a := core.NormAxis("ExpandDims", axis, len(xs)+1)
	s := make([]int, 0, len(xs)+1)
	s = append(append(append(s, xs[:a]...), 1), xs[a:]...)
	return Reshape(x, s...)
}

// Squeeze removes the given axes, which must have extent 1; with none it
// removes every extent-1 axis.
func Squeeze(x *tensor.Tensor, axes ...int) *tensor.Tensor {
	xs := x.Shape()
	drop := make([]bool, len(xs))
	if len(axes) == 0 {
		for i, d := range xs {
			drop[i] = d == 1
		}
	}
	for _, ax := range axes {
		a := core.NormAxis("Squeeze", ax, len(xs))
		if xs[a] != 1 {
			core.Panicf("Squeeze", "axis %d of %v has extent %d, not 1", ax, xs, xs[a])
		}
		drop[a] = true
	}
	s := make([]int, 0, len(xs))
	for i, d := range xs {
		if !drop[i] {
			s = append(s, d)
		}
	}
	return Reshape(x, s...)
}

func init() {
	ConcatPrim = core.Define(&core.Prim{
		Name:   "Concat",
		Batch:  batchConcat,
		Traits: core.Traits{Cost: 0},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			ax := attrs.(AxisAttr).Axis
			if len(in) == 0 {
				core.Panicf("Concat", "no inputs")
			}
			first := in[0]
			fs := first.Shape()
			if ax < 0 || ax >= len(fs) {
				core.Panicf("Concat", "axis %d out of range for input %v", ax, fs)
			}
			s := fs.Clone()
			for _, x := range in[1:] {
				xs := x.Shape()
				ok := x.DType() == first.DType() && len(xs) == len(fs)
				for i := 0; ok && i < len(xs); i++ {
					ok = i == ax || xs[i] == fs[i]
				}
				if !ok {
					core.Panicf("Concat", "inputs %v %v and %v %v differ off axis %d", fs, first.DType(), xs, x.DType(), ax)
				}
				s[ax] += xs[ax]
			}
			return tensor.Meta{Shape: s, DType: first.DType()}
		},
		JVP: func(attrs any, in, t []*tensor.Tensor, out *tensor.Tensor) *tensor.Tensor {
			ts := make([]*tensor.Tensor, len(in))
			for i, x := range in {
				ts[i] = orZeros(t[i], x)
			}
			return core.Apply(ConcatPrim, attrs, ts...)
		},
		VJP: func(attrs any, in []*tensor.Tensor, _, g *tensor.Tensor) []*tensor.Tensor {
			ax := attrs.(AxisAttr).Axis
			gs := make([]*tensor.Tensor, len(in))
			off := 0
			for i, x := range in {
				n := x.Shape()[ax]
				gs[i] = sliceAxis(g, ax, off, n)
				off += n
			}
			return gs
		},
	})
	// Along an axis with only 1s before it, the result is the inputs one
	// after another: a compiled plan has the inputs' producers write into
	// their slices of the result, and the kernel then moves nothing.
	ConcatPrim.PacksArgs = func(attrs any, args []tensor.Meta) bool {
		ax := attrs.(AxisAttr).Axis
		return len(args) > 0 && ax <= len(args[0].Shape) && args[0].Shape[:ax].Size() == 1
	}
	registerMoves(ConcatPrim)
}

// concatInto copies each input's block for every position of the axes
// before axis: the blocks are contiguous in both input and output.
func concatInto[T any](dst []T, in []*tensor.Tensor, ax int) {
	if len(dst) == 0 {
		return
	}
	s := in[0].Shape()
	outer := s[:ax].Size()
	off := 0
	for o := range outer {
		for _, x := range in {
			src := x.Data().([]T)
			n := len(src) / outer
			// An input a compiled plan computed in place (PacksArgs) is
			// already there: copying it onto itself would only cost the
			// memory traffic the placement saved.
			if n > 0 && &dst[off] != &src[o*n] {
				copy(dst[off:off+n], src[o*n:(o+1)*n])
			}
			off += n
		}
	}
}

// Concat joins xs along axis (negative counts from the end). The inputs
// must share dtype, rank and every extent but axis's.
func Concat(axis int, xs ...*tensor.Tensor) *tensor.Tensor {
	if len(xs) == 0 {
		core.Panicf("Concat", "no inputs")
	}
	ax := core.NormAxis("Concat", axis, xs[0].Rank())
	if len(xs) == 1 {
		return xs[0]
	}
	return core.Apply(ConcatPrim, AxisAttr{ax}, xs...)
}

// Stack joins tensors of one shape along a new axis at position axis of the
// result (-1 appends it).
func Stack(axis int, xs ...*tensor.Tensor) *tensor.Tensor {
	if len(xs) == 0 {
		core.Panicf("Stack", "no inputs")
	}
	s := xs[0].Shape()
	ax := core.NormAxis("Stack", axis, len(s)+1)
	ys := make([]*tensor.Tensor, len(xs))
	for i, x := range xs {
		if !x.Shape().Equal(s) || x.DType() != xs[0].DType() {
			core.Panicf("Stack", "inputs differ: %v %v and %v %v", s, xs[0].DType(), x.Shape(), x.DType())
		}
		ys[i] = ExpandDims(x, ax)
	}
	if len(ys) == 1 {
		return ys[0]
	}
	return core.Apply(ConcatPrim, AxisAttr{ax}, ys...)
}

// Split cuts x along axis into pieces of the given sizes, which must add up
// to the axis's extent.
func Split(x *tensor.Tensor, axis int, sizes ...int) []*tensor.Tensor {
	ax := core.NormAxis("Split", axis, x.Rank())
	n := x.Shape()[ax]
	total := 0
	for _, s := range sizes {
		if s < 0 {
			core.Panicf("Split", "negative size in %v", sizes)
		}
		total += s
	}
	if len(sizes) == 0 || total != n {
		core.Panicf("Split", "sizes %v do not add up to extent %d of axis %d of %v", sizes, n, axis, x.Shape())
	}
	out := make([]*tensor.Tensor, len(sizes))
	off := 0
	for i, s := range sizes {
		out[i] = sliceAxis(x, ax, off, s)
		off += s
	}
	return out
}

// SplitN cuts x along axis into n pieces of equal size; the extent must be
// divisible by n.
func SplitN(x *tensor.Tensor, axis, n int) []*tensor.Tensor {
	ax := core.NormAxis("Split", axis, x.Rank())
	d := x.Shape()[ax]
	if n <= 0 || d%n != 0 {
		core.Panicf("Split", "cannot cut extent %d of axis %d of %v into %d equal pieces", d, axis, x.Shape(), n)
	}
	sizes := make([]int, n)
	for i := range sizes {
		sizes[i] = d / n
	}
	return Split(x, ax, sizes...)
}

// sliceAxis takes n elements of axis ax from start on.
func sliceAxis(x *tensor.Tensor, ax, start, n int) *tensor.Tensor {
	xs := x.Shape()
	a := SliceAttrs{Begin: make([]int, len(xs)), Strides: make([]int, len(xs)), Size: xs.Clone(), Shape: xs.Clone()}
	for i := range a.Strides {
		a.Strides[i] = 1
	}
	a.Begin[ax], a.Size[ax] = start, n
	return applySlice(x, a)
}

// applySlice applies StridedSlice, skipping it when the window is the
// whole tensor.
func applySlice(x *tensor.Tensor, a SliceAttrs) *tensor.Tensor {
	if tensor.Shape(a.Size).Equal(a.Shape) {
		whole := true
		for i := range a.Begin {
			whole = whole && a.Begin[i] == 0 && a.Strides[i] == 1
		}
		if whole {
			return x
		}
	}
	return core.Apply(StridedSlicePrim, a, x)
}

func checkSliceAttrs(op string, a SliceAttrs) {
	r := len(a.Shape)
	if len(a.Begin) != r || len(a.Strides) != r || len(a.Size) != r {
		core.Panicf(op, "window %v does not match rank %d", a, r)
	}
	for i, n := range a.Size {
		if n < 0 || a.Strides[i] == 0 {
			core.Panicf(op, "bad window %v", a)
		}
		if n == 0 {
			continue
		}
		last := a.Begin[i] + (n-1)*a.Strides[i]
		if a.Begin[i] < 0 || a.Begin[i] >= a.Shape[i] || last < 0 || last >= a.Shape[i] {
			core.Panicf(op, "window %v leaves the tensor on axis %d", a, i)
		}
	}
}

func init() {
	StridedSlicePrim = core.Define(&core.Prim{
		Name:   "StridedSlice",
		Batch:  batchSlice(&StridedSlicePrim),
		Traits: core.Traits{Cost: 0},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			a := attrs.(SliceAttrs)
			if !in[0].Shape().Equal(a.Shape) {
				core.Panicf("StridedSlice", "input %v does not match the window's shape %v", in[0].Shape(), a.Shape)
			}
			checkSliceAttrs("StridedSlice", a)
			return tensor.Meta{Shape: tensor.Shape(a.Size).Clone(), DType: in[0].DType()}
		},
		JVP: linearJVP(&StridedSlicePrim, 0),
		VJP: linearVJP(&StridedSliceGradPrim, 0, nil),
	})
	registerMoves(StridedSlicePrim)
	// StridedSliceGradPrim scatters its input into zeros at the window's
	// positions: StridedSlice's gradient, and zero padding when the window
	// is dense. Its own gradient is the StridedSlice reading the window
	// back, so gradients of any order stay within these two primitives.
	StridedSliceGradPrim = core.Define(&core.Prim{
		Name:   "StridedSliceGrad",
		Batch:  batchSlice(&StridedSliceGradPrim),
		Traits: core.Traits{Cost: 0},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			a := attrs.(SliceAttrs)
			if !in[0].Shape().Equal(a.Size) {
				core.Panicf("StridedSliceGrad", "input %v does not match the window's size %v", in[0].Shape(), a.Size)
			}
			checkSliceAttrs("StridedSliceGrad", a)
			return tensor.Meta{Shape: a.Shape.Clone(), DType: in[0].DType()}
		},
		JVP: linearJVP(&StridedSliceGradPrim, 0),
		VJP: linearVJP(&StridedSlicePrim, 0, nil),
	})
	registerMoves(StridedSliceGradPrim)
}

// stridedKernel copies between the window (win, dense) and the full tensor
// (full): into the window when scatter is false, back into a zeroed full
// tensor when it is true.
// stridedSliceKernel is StridedSlice's kernel for T: it copies the
// window out of the full tensor.
func stridedSliceKernel[T core.Elem](attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
	stridedCopy(out.Data().([]T), in[0].Data().([]T), attrs.(SliceAttrs), false)
}

// stridedSliceGradKernel is StridedSliceGrad's kernel for T: it copies the
// window back into a zeroed full tensor.
func stridedSliceGradKernel[T core.Elem](attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
	stridedCopy(in[0].Data().([]T), out.Data().([]T), attrs.(SliceAttrs), true)
}

// transposeKernel is Transpose's kernel for T.
func transposeKernel[T core.Elem](attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
	transposeInto(out.Data().([]T), in[0].Data().([]T), in[0].Shape(), attrs.(PermAttr).Perm)
}

// concatKernel is Concat's kernel for T.
func concatKernel[T core.Elem](attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
	concatInto(out.Data().([]T), in, attrs.(AxisAttr).Axis)
}

func stridedCopy[T any](win, full []T, a SliceAttrs, scatter bool) {
	if scatter {
		clear(full)
	}
	if len(win) == 0 {
		return
	}
	r := len(a.Size)
	if r == 0 {
		if scatter {
			full[0] = win[0]
		} else {
			win[0] = full[0]
		}
		return
	}
	var stb, stepb, idb [layoutRank]int
	st := rowStrides(a.Shape, stb[:])
	step := stepb[:0]
	idx := idb[:0]
	if r > layoutRank {
		step = make([]int, 0, r)
		idx = make([]int, 0, r)
	}
	off := 0
	for i := range r {
		off += a.Begin[i] * st[i]
		step = append(step, a.Strides[i]*st[i])
		idx = append(idx, 0)
	}
	inner, s := a.Size[r-1], step[r-1]
	for o := 0; o < len(win); o += inner {
		switch {
		case s == 1 && scatter:
			copy(full[off:off+inner], win[o:o+inner])
		case s == 1:
			copy(win[o:o+inner], full[off:off+inner])
		case scatter:
			p := off
			for j := range inner {
				full[p] = win[o+j]
				p += s
			}
		default:
			p := off
			for j := range inner {
				win[o+j] = full[p]
				p += s
			}
		}
		for ax := r - 2; ax >= 0; ax-- {
			idx[ax]++
			off += step[ax]
			if idx[ax] < a.Size[ax] {
				break
			}
			off -= step[ax] * a.Size[ax]
			idx[ax] = 0
		}
	}
}

// StridedSlice returns x[begin[0]:end[0]:strides[0], ...] with NumPy's
// slice semantics: negative begin and end count from the end, out-of-range
// bounds are clamped, a negative stride walks backwards, and axes beyond
// len(begin) are taken whole. math.MinInt and math.MaxInt stand for an
// omitted bound (x[::-1] is begin MaxInt, end MinInt, stride -1). Its
// gradient scatters back into zeros (StridedSliceGrad).
func StridedSlice(x *tensor.Tensor, begin, end, strides []int) *tensor.Tensor {
	xs := x.Shape()
	if len(begin) != len(end) || len(begin) != len(strides) || len(begin) > len(xs) {
		core.Panicf("StridedSlice", "begin %v, end %v and strides %v must have one length, at most the rank of %v", begin, end, strides, xs)
	}
	a := SliceAttrs{Begin: make([]int, len(xs)), Strides: make([]int, len(xs)), Size: xs.Clone(), Shape: xs.Clone()}
	for i, n := range xs {
		if i >= len(begin) {
			a.Strides[i] = 1
			continue
		}
		b, e, s := begin[i], end[i], strides[i]
		if s == 0 {
			core.Panicf("StridedSlice", "stride 0 on axis %d (strides %v)", i, strides)
		}
		a.Begin[i], a.Size[i] = sliceIndices(b, e, s, n)
		a.Strides[i] = s
	}
	return applySlice(x, a)
}

// sliceIndices is Python's slice.indices: the first index and the count of
// begin:end:step over an axis of extent n, clamping out-of-range bounds.
func sliceIndices(b, e, s, n int) (start, count int) {
	lo, hi := 0, n // clamp range for a forward walk
	if s < 0 {
		lo, hi = -1, n-1
	}
	clampIdx := func(v int) int {
		if v < 0 {
			v += n
			if v < lo {
				v = lo
			}
		} else if v > hi {
			v = hi
		}
		return v
	}
	b, e = clampIdx(b), clampIdx(e)
	switch {
	case s > 0 && e > b:
		count = (e - b + s - 1) / s
	case s < 0 && b > e:
		count = (b - e - s - 1) / -s
	}
	if count == 0 {
		b = 0 // an empty window reads nothing; keep it in range
	}
	return b, count
}

// Slice returns the window of x that starts at begin and has extent size
// on each axis (MindSpore's ops.slice). A size of -1 takes the rest of the
// axis; a negative begin counts from the end. Unlike StridedSlice it does
// not clamp: a window reaching outside x is an error.
func Slice(x *tensor.Tensor, begin, size []int) *tensor.Tensor {
	xs := x.Shape()
	if len(begin) != len(xs) || len(size) != len(xs) {
		core.Panicf("Slice", "begin %v and size %v must each have one entry per axis of %v", begin, size, xs)
	}
	a := SliceAttrs{Begin: make([]int, len(xs)), Strides: make([]int, len(xs)), Size: make([]int, len(xs)), Shape: xs.Clone()}
	for i, n := range xs {
		b, s := begin[i], size[i]
		if b < 0 {
			b += n
		}
		if s == -1 {
			s = n - b
		}
		if b < 0 || b > n || s < 0 || b+s > n {
			core.Panicf("Slice", "window begin %v size %v leaves %v on axis %d", begin, size, xs, i)
		}
		if s == 0 {
			b = 0
		}
		a.Begin[i], a.Strides[i], a.Size[i] = b, 1, s
	}
	return applySlice(x, a)
}

// Pad surrounds x with zeros: pads[i] = {before, after} elements on axis i
// (MindSpore's ops.pad with constant mode, one pair per axis, outermost
// first). Pads must be non-negative; use Slice to crop.
func Pad(x *tensor.Tensor, pads [][2]int) *tensor.Tensor {
	xs := x.Shape()
	if len(pads) != len(xs) {
		core.Panicf("Pad", "%d pad pairs for input %v of rank %d", len(pads), xs, len(xs))
	}
	a := SliceAttrs{Begin: make([]int, len(xs)), Strides: make([]int, len(xs)), Size: xs.Clone(), Shape: xs.Clone()}
	none := true
	for i, p := range pads {
		if p[0] < 0 || p[1] < 0 {
			core.Panicf("Pad", "negative padding %v on axis %d (crop with Slice)", p, i)
		}
		none = none && p[0] == 0 && p[1] == 0
		a.Begin[i], a.Strides[i] = p[0], 1
		a.Shape[i] += p[0] + p[1]
		if xs[i] == 0 {
			a.Begin[i] = 0 // nothing is written: keep the window in range
		}
	}
	if none {
		return x
	}
	return core.Apply(StridedSliceGradPrim, a, x)
}

// Tile repeats x reps[i] times along axis i (NumPy's tile): when reps is
// longer than x's rank, x gains leading axes of extent 1, and when it is
// shorter, it is padded with leading 1s. It is a broadcast between two
// reshapes, so its gradient is a sum.
func Tile(x *tensor.Tensor, reps ...int) *tensor.Tensor {
	xs := x.Shape()
	r := max(len(xs), len(reps))
	inter := make([]int, 0, 2*r)
	bcast := make([]int, 0, 2*r)
	final := make([]int, 0, r)
	for i := range r {
		d, k := 1, 1
		if j := i - (r - len(xs)); j >= 0 {
			d = xs[j]
		}
		if j := i - (r - len(reps)); j >= 0 {
			k = reps[j]
		}
		if k < 0 {
			core.Panicf("Tile", "negative repetition in %v", reps)
		}
		inter = append(inter, 1, d)
		bcast = append(bcast, k, d)
		final = append(final, k*d)
	}
	return Reshape(BroadcastTo(Reshape(x, inter...), bcast...), final...)
}
