package ops

import (
	"fmt"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// BroadcastShapes returns the NumPy broadcast of shapes a and b (see
// TryBroadcastShapes). It panics with an *tensor.Error naming op and both
// shapes when they are incompatible: the form an op's shape rule wants,
// where a bad operand is the caller's error.
func BroadcastShapes(op string, a, b tensor.Shape) tensor.Shape {
	s, err := TryBroadcastShapes(a, b)
	if err != nil {
		core.Panicf(op, "%v", err)
	}
	return s
}

// TryBroadcastShapes returns the NumPy broadcast of shapes a and b:
// aligned from the last axis, with the shorter one's missing leading axes
// taken as 1, each pair of extents must be equal or one of them 1, and the
// result has the larger extent (an extent 0 against 1 gives 0). When the
// shapes are incompatible it returns an error naming both, for callers
// that report bad input as an error rather than a panic, such as the ONNX
// loader checking a model's Expand. Shapes are never modified, so the
// result may share a's backing array.
func TryBroadcastShapes(a, b tensor.Shape) (tensor.Shape, error) {
	if a.Equal(b) {
		return a, nil
	}
	n := max(len(a), len(b))
	out := make(tensor.Shape, n)
	for i := range n {
		da, db := 1, 1
		if j := len(a) - n + i; j >= 0 {
			da = a[j]
		}
		if j := len(b) - n + i; j >= 0 {
			db = b[j]
		}
		switch {
		case da == db:
			out[i] = da
		case da == 1:
			out[i] = db
		case db == 1:
			out[i] = da
		default:
			return nil, fmt.Errorf("shapes %v and %v cannot be broadcast", a, b)
		}
	}
	return out, nil
}

// bstrides returns the strides of a tensor of shape in when it is read as
// the broadcast shape out: 0 along axes that it repeats.
func bstrides(in, out tensor.Shape) []int {
	st := make([]int, len(out))
	k := 1
	for i := len(out) - 1; i >= 0; i-- {
		j := len(in) - len(out) + i
		if j < 0 || in[j] == 1 {
			st[i] = 0
		} else {
			st[i] = k
		}
		if j >= 0 {
			k *= in[j]
		}
	}
	return st
}

// map2 writes f(a[ia], b[ib]) for every element of the broadcast output.
// The common cases — equal shapes, a scalar operand, a row broadcast — run
// as plain loops; the rest walk an odometer over all but the last axis.
func map2[T, U any](out []U, a, b []T, as, bs, os tensor.Shape, f func(T, T) U) {
	switch {
	case len(a) == len(out) && len(b) == len(out):
		b = b[:len(a)]
		out = out[:len(a)]
		for i := range a {
			out[i] = f(a[i], b[i])
		}
		return
	case len(b) == 1 && len(a) == len(out):
		y := b[0]
		out = out[:len(a)]
		for i := range a {
			out[i] = f(a[i], y)
		}
		return
	case len(a) == 1 && len(b) == len(out):
		x := a[0]
		out = out[:len(b)]
		for i := range b {
			out[i] = f(x, b[i])
		}
		return
	case len(out) == 0:
		return
	}
	sa, sb := bstrides(as, os), bstrides(bs, os)
	r := len(os)
	inner := os[r-1]
	ia0, ib0 := sa[r-1], sb[r-1]
	idx := make([]int, r)
	offA, offB := 0, 0
	for o := 0; o < len(out); o += inner {
		pa, pb := offA, offB
		for j := range inner {
			out[o+j] = f(a[pa], b[pb])
			pa += ia0
			pb += ib0
		}
		// Advance the odometer over axes r-2 ... 0.
		for ax := r - 2; ax >= 0; ax-- {
			idx[ax]++
			offA += sa[ax]
			offB += sb[ax]
			if idx[ax] < os[ax] {
				break
			}
			offA -= sa[ax] * os[ax]
			offB -= sb[ax] * os[ax]
			idx[ax] = 0
		}
	}
}

// map3 is map2 for ternary ops (Select): c chooses, a and b are the values.
func map3[C, T any](out []T, c []C, a, b []T, cs, as, bs, os tensor.Shape, f func(C, T, T) T) {
	if len(out) == 0 {
		return
	}
	if len(c) == len(out) && len(a) == len(out) && len(b) == len(out) {
		for i := range out {
			out[i] = f(c[i], a[i], b[i])
		}
		return
	}
	sc, sa, sb := bstrides(cs, os), bstrides(as, os), bstrides(bs, os)
	st := os.Strides()
	for o := range out {
		pc, pa, pb := 0, 0, 0
		rem := o
		for ax := range os {
			i := rem / st[ax]
			rem -= i * st[ax]
			pc += i * sc[ax]
			pa += i * sa[ax]
			pb += i * sb[ax]
		}
		out[o] = f(c[pc], a[pa], b[pb])
	}
}

// broadcastCopy copies src (shape ss) into dst (shape ds), repeating along
// broadcast axes.
func broadcastCopy[T any](dst, src []T, ss, ds tensor.Shape) {
	if len(src) == len(dst) {
		copy(dst, src)
		return
	}
	map2(dst, src, src[:1], ss, tensor.Shape{}, ds, func(x, _ T) T { return x })
}

// sumTo reduces a gradient g of a broadcast result back to shape s by
// summing over the axes that broadcasting created or stretched.
func sumTo(g *tensor.Tensor, s tensor.Shape) *tensor.Tensor {
	gs := g.Shape()
	if gs.Equal(s) {
		return g
	}
	lead := len(gs) - len(s)
	var axes []int
	for i := range gs {
		if i < lead || (s[i-lead] == 1 && gs[i] != 1) {
			axes = append(axes, i)
		}
	}
	r := g
	if len(axes) > 0 {
		r = SumKeepDims(g, axes...)
	}
	if !r.Shape().Equal(s) {
		r = Reshape(r, s...)
	}
	return r
}

// maxRunRank bounds the rank runWalk handles; it keeps the walk's state in
// fixed arrays, so that kernels in compiled plans allocate nothing.
const maxRunRank = 8

// minRun is the shortest run worth a vectorised call per run; shorter ones
// go through map2's scalar loop.
const minRun = 16

// runWalk splits a broadcast binary op whose other operand has the
// output's full size into runs of contiguous output elements along which
// operand b, of a smaller shape, is either one repeated value (zero) or a
// contiguous slice, as for a per-channel operand [1 C 1 1] against
// [N C H W] (runs of H·W, one value each) or a bias row. Each run then
// goes to the op's vectorised scalar or same-size kernel instead of a
// scalar call per element.
type runWalk struct {
	run  int  // elements per run
	zero bool // b holds one value per run (else a contiguous slice)
	n    int  // outer axes (extent-1 axes left out)
	ext  [maxRunRank]int
	st   [maxRunRank]int // b's stride along each outer axis
}

// newRunWalk describes reading b (shape bs) along the broadcast shape os
// in runs; ok is false when the rank is too high.
func newRunWalk(bs, os tensor.Shape) (w runWalk, ok bool) {
	r := len(os)
	if r == 0 || r > maxRunRank || len(bs) > r {
		return w, false
	}
	var sb [maxRunRank]int
	k := 1
	for i := r - 1; i >= 0; i-- {
		j := len(bs) - r + i
		if j >= 0 && bs[j] != 1 {
			sb[i] = k
		}
		if j >= 0 {
			k *= bs[j]
		}
	}
	// The run: the trailing axes along which b is uniformly repeated or
	// uniformly contiguous (extent-1 axes fit either).
	w.run = 1
	mode := -1 // 0: repeated, 1: contiguous
	i := r - 1
	for ; i >= 0; i-- {
		if os[i] == 1 {
			continue
		}
		m := 0
		if sb[i] != 0 {
			m = 1
		}
		if mode == -1 {
			mode = m
		}
		if m != mode || m == 1 && sb[i] != w.run {
			break
		}
		w.run *= os[i]
	}
	w.zero = mode != 1
	for a := 0; a <= i; a++ {
		if os[a] != 1 {
			w.ext[w.n], w.st[w.n] = os[a], sb[a]
			w.n++
		}
	}
	return w, true
}

// each calls fn with the output offset of every run, in order, and b's
// offset for it.
func (w *runWalk) each(fn func(o, off int)) {
	var idx [maxRunRank]int
	off := 0
	for o := 0; ; o += w.run {
		fn(o, off)
		ax := w.n - 1
		for ; ax >= 0; ax-- {
			idx[ax]++
			off += w.st[ax]
			if idx[ax] < w.ext[ax] {
				break
			}
			off -= w.st[ax] * w.ext[ax]
			idx[ax] = 0
		}
		if ax < 0 {
			return
		}
	}
}

// mapRuns computes o = op(x, y) for an x of the output's full size and a
// broadcast y by runs (see runWalk): scal(d, a, s) for runs along which y
// repeats one value, body(d, a, b) for runs along which it is contiguous.
// It reports false, doing nothing, when the runs are too short or the
// kernel a run needs is missing.
func mapRuns[T any](o, x, y []T, ys, os tensor.Shape, body func(d, a, b []T), scal func(d, a []T, s T)) bool {
	w, ok := newRunWalk(ys, os)
	if !ok || w.run < minRun || w.zero && scal == nil || !w.zero && body == nil {
		return false
	}
	n := w.run
	if w.zero {
		w.each(func(i, off int) { scal(o[i:i+n], x[i:i+n], y[off]) })
	} else {
		w.each(func(i, off int) { body(o[i:i+n], x[i:i+n], y[off:off+n]) })
	}
	return true
}
