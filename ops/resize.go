package ops

import (
	bin "encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"strings"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// ResizeAxis is how one axis of a Resize maps output coordinates onto the
// input: output position o reads source positions I0[o] and I1[o] with
// weights W0[o] and W1[o] (linear), or I0[o] alone (nearest).
type ResizeAxis struct {
	// Axis is the axis resized, In its extent in the input.
	Axis, In int
	I0, I1   []int32
	W0, W1   []float32
}

// ResizeAttrs are the attributes of Resize and ResizeGrad: the axes whose
// extent or sampling changes, in the order they are interpolated (axes
// absent are copied), whether the interpolation is linear, and a
// description of where the tables came from (coordinate transform,
// scales), which IR dumps and CSE keys print.
type ResizeAttrs struct {
	Axes   []ResizeAxis
	Linear bool
	Desc   string
}

// String prints the attributes, for IR dumps and CSE keys: the mode, the
// description, each axis's extents, and a hash of the tables (which can
// hold millions of entries) standing for their contents.
func (a ResizeAttrs) String() string {
	var b strings.Builder
	mode := "nearest"
	if a.Linear {
		mode = "linear"
	}
	fmt.Fprintf(&b, "mode=%s %s", mode, a.Desc)
	for _, ax := range a.Axes {
		h := fnv.New64a()
		var buf [4]byte
		for _, t := range [][]int32{ax.I0, ax.I1} {
			for _, v := range t {
				bin.LittleEndian.PutUint32(buf[:], uint32(v))
				h.Write(buf[:])
			}
		}
		for _, t := range [][]float32{ax.W0, ax.W1} {
			for _, v := range t {
				bin.LittleEndian.PutUint32(buf[:], math.Float32bits(v))
				h.Write(buf[:])
			}
		}
		fmt.Fprintf(&b, " axis%d(%d→%d tables=%016x)", ax.Axis, ax.In, len(ax.I0), h.Sum64())
	}
	return b.String()
}

// ResizePrim resizes by separable interpolation over tables computed when
// the op is built (ONNX's Resize in nearest and linear modes), and
// ResizeGradPrim is its transpose, the scatter-add of a cotangent back
// onto the input's shape. Both are linear in their one input, so each is
// the other's VJP.
var ResizePrim, ResizeGradPrim *core.Prim

func init() {
	ResizePrim = core.Define(&core.Prim{
		Name:   "Resize",
		Batch:  batchOne(&ResizePrim, shiftResizeAttrs),
		Traits: core.Traits{Cost: 2},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			return resizeMeta("Resize", attrs.(ResizeAttrs), in[0], false)
		},
		JVP: linearJVP(&ResizePrim, 0),
		VJP: linearVJP(&ResizeGradPrim, 0, nil),
	})
	ResizeGradPrim = core.Define(&core.Prim{
		Name:   "ResizeGrad",
		Batch:  batchOne(&ResizeGradPrim, shiftResizeAttrs),
		Traits: core.Traits{Cost: 2},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			return resizeMeta("ResizeGrad", attrs.(ResizeAttrs), in[0], true)
		},
		JVP: linearJVP(&ResizeGradPrim, 0),
		VJP: linearVJP(&ResizePrim, 0, nil),
	})
	ResizePrim.Register(tensor.Float32, core.CPU, resizeKernel[float32])
	ResizePrim.Register(tensor.Float64, core.CPU, resizeKernel[float64])
	ResizeGradPrim.Register(tensor.Float32, core.CPU, resizeGradKernel[float32])
	ResizeGradPrim.Register(tensor.Float64, core.CPU, resizeGradKernel[float64])
}

// shiftResizeAttrs renumbers the axes for a batch axis put in front.
func shiftResizeAttrs(a any) any {
	r := a.(ResizeAttrs)
	axes := append([]ResizeAxis(nil), r.Axes...)
	for i := range axes {
		axes[i].Axis++
	}
	r.Axes = axes
	return r
}

// resizeMeta is the result of Resize (or, grad, ResizeGrad) on x, after
// checking that the tables fit x.
func resizeMeta(op string, a ResizeAttrs, x *tensor.Tensor, grad bool) tensor.Meta {
	if d := x.DType(); d != tensor.Float32 && d != tensor.Float64 {
		core.Panicf(op, "unsupported dtype %v (shape %v): float32 and float64 are", d, x.Shape())
	}
	s := x.Shape().Clone()
	if len(s) > maxResizeRank {
		core.Panicf(op, "rank %d (shape %v) is more than %d", len(s), x.Shape(), maxResizeRank)
	}
	last := -1
	for _, ax := range a.Axes {
		n := len(ax.I0)
		if ax.Axis <= last || ax.Axis >= len(s) || ax.In < 1 || n < 1 || (a.Linear && (len(ax.I1) != n || len(ax.W0) != n || len(ax.W1) != n)) {
			core.Panicf(op, "bad table for axis %d of %v (%d outputs from %d)", ax.Axis, x.Shape(), n, ax.In)
		}
		last = ax.Axis
		from, to := ax.In, n
		if grad {
			from, to = n, ax.In
		}
		if s[ax.Axis] != from {
			core.Panicf(op, "axis %d of %v has extent %d, the table wants %d", ax.Axis, x.Shape(), s[ax.Axis], from)
		}
		for k := range n {
			if ax.I0[k] < 0 || int(ax.I0[k]) >= ax.In || a.Linear && (ax.I1[k] < 0 || int(ax.I1[k]) >= ax.In) {
				core.Panicf(op, "axis %d: source index out of 0..%d", ax.Axis, ax.In-1)
			}
		}
		s[ax.Axis] = to
	}
	return tensor.Meta{Shape: s, DType: x.DType()}
}

// Resize interpolates x along the axes of a's tables (ResizeAttrs): one
// kernel, where the same interpolation as Gathers and weighted sums costs
// a pass over a whole intermediate tensor per axis and operation. It
// computes exactly what that sequence computes, axis by axis in a's
// order, each product rounded before its sum.
func Resize(x *tensor.Tensor, a ResizeAttrs) *tensor.Tensor {
	return core.Apply(ResizePrim, a, x)
}

// maxResizeRank bounds Resize's rank, so that its kernels keep their
// per-axis state in arrays on the stack: a plan allocates nothing per call.
const maxResizeRank = 8

// resizeRun is one run's view of the tables: per axis, the input's
// stride, the output's extent and the axis's table (nil when the axis is
// copied), and the output coordinates of the row being computed.
type resizeRun[T float32 | float64] struct {
	x       []T
	rank    int
	linear  bool
	stride  [maxResizeRank]int
	outDim  [maxResizeRank]int
	tab     [maxResizeRank]*ResizeAxis
	coord   [maxResizeRank]int
	order   [maxResizeRank]int // the resized axes, ascending
	resized int
}

func (r *resizeRun[T]) init(a *ResizeAttrs, inShape, outShape tensor.Shape) {
	r.rank, r.linear = len(inShape), a.Linear
	st := 1
	for d := r.rank - 1; d >= 0; d-- {
		r.stride[d] = st
		st *= inShape[d]
		r.outDim[d] = outShape[d]
	}
	for i := range a.Axes {
		ax := &a.Axes[i]
		r.tab[ax.Axis] = ax
		r.order[r.resized] = ax.Axis
		r.resized++
	}
}

// base is the source offset of the copied axes before the last at the
// current coordinates.
func (r *resizeRun[T]) base() int {
	b := 0
	for d := range r.rank - 1 {
		if r.tab[d] == nil {
			b += r.coord[d] * r.stride[d]
		}
	}
	return b
}

// next advances the coordinates of the axes before the last.
func (r *resizeRun[T]) next() {
	for d := r.rank - 2; d >= 0; d-- {
		r.coord[d]++
		if r.coord[d] < r.outDim[d] {
			return
		}
		r.coord[d] = 0
	}
}

// at is the input interpolated along the first k resized axes, at the
// current coordinates of those axes and source offset off of the others:
// the k-th axis's two taps at the first k-1 axes' results, each product
// rounded before the sum, as the per-axis Gathers and weighted sums
// compute it. Only axes before the last reach here.
func (r *resizeRun[T]) at(k, off int) T {
	if k == 0 {
		return r.x[off]
	}
	d := r.order[k-1]
	t, c, s := r.tab[d], r.coord[d], r.stride[d]
	if !r.linear {
		return r.at(k-1, off+int(t.I0[c])*s)
	}
	a := r.at(k-1, off+int(t.I0[c])*s)
	b := r.at(k-1, off+int(t.I1[c])*s)
	return T(T(t.W0[c])*a) + T(T(t.W1[c])*b)
}

// resizeKernel is Resize's kernel: it walks the output's rows (all axes
// but the last) and fills each from the tables, with the last axis's
// taps in the inner loop when it is resized.
func resizeKernel[T float32 | float64](attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
	a := attrs.(ResizeAttrs)
	y := out.Data().([]T)
	if len(y) == 0 {
		return
	}
	if resizeOneAxis(&a, in[0].Data().([]T), y, in[0].Shape(), out.Shape()) || resizePlanes(&a, in[0].Data().([]T), y, in[0].Shape(), out.Shape()) {
		return
	}
	var r resizeRun[T]
	r.x = in[0].Data().([]T)
	r.init(&a, in[0].Shape(), out.Shape())
	if r.rank == 0 {
		y[0] = r.x[0]
		return
	}
	last := r.rank - 1
	n := r.outDim[last]
	tl := r.tab[last]
	k := r.resized
	if tl != nil {
		k-- // the last axis is interpolated last, in the inner loop
	}
	for at := 0; at < len(y); at += n {
		row := y[at : at+n]
		base := r.base()
		switch {
		case tl == nil:
			for i := range row {
				row[i] = r.at(k, base+i)
			}
		case !r.linear:
			for i := range row {
				row[i] = r.at(k, base+int(tl.I0[i]))
			}
		default:
			i0, i1, w0, w1 := tl.I0[:n], tl.I1[:n], tl.W0[:n], tl.W1[:n]
			for i := range row {
				row[i] = T(T(w0[i])*r.at(k, base+int(i0[i]))) + T(T(w1[i])*r.at(k, base+int(i1[i])))
			}
		}
		r.next()
	}
}

// resizeGradKernel is ResizeGrad's kernel: every cotangent element adds
// into the source positions its output read, with the same weights.
func resizeGradKernel[T float32 | float64](attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
	a := attrs.(ResizeAttrs)
	g, gx := in[0].Data().([]T), out.Data().([]T)
	clear(gx)
	if len(g) == 0 {
		return
	}
	var r resizeRun[T]
	r.x = gx
	r.init(&a, out.Shape(), in[0].Shape())
	if r.rank == 0 {
		gx[0] = g[0]
		return
	}
	last := r.rank - 1
	n := r.outDim[last]
	tl := r.tab[last]
	k := r.resized
	if tl != nil {
		k--
	}
	for at := 0; at < len(g); at += n {
		row := g[at : at+n]
		base := r.base()
		for i, v := range row {
			switch {
			case tl == nil:
				r.scatter(k, base+i, v)
			case !r.linear:
				r.scatter(k, base+int(tl.I0[i]), v)
			default:
				r.scatter(k, base+int(tl.I0[i]), T(tl.W0[i])*v)
				r.scatter(k, base+int(tl.I1[i]), T(tl.W1[i])*v)
			}
		}
		r.next()
	}
}

// scatter adds v, times the weights of the first k resized axes, into
// every source position the output at the current coordinates read.
func (r *resizeRun[T]) scatter(k, off int, v T) {
	if k == 0 {
		r.x[off] += v
		return
	}
	d := r.order[k-1]
	t, c, s := r.tab[d], r.coord[d], r.stride[d]
	if !r.linear {
		r.scatter(k-1, off+int(t.I0[c])*s, v)
		return
	}
	r.scatter(k-1, off+int(t.I0[c])*s, T(t.W0[c])*v)
	r.scatter(k-1, off+int(t.I1[c])*s, T(t.W1[c])*v)
}

// resizePlanes is Resize's kernel when only the last two axes are resized
// (an image's height and width, the case that matters): the input is
// planes of [H W], each output row reads one or two input rows, and the
// inner loops index the rows directly. It reports false, doing nothing,
// for any other resize. Its arithmetic is the general path's: height
// first, then width, each product rounded before its sum.
func resizePlanes[T float32 | float64](a *ResizeAttrs, x, y []T, inShape, outShape tensor.Shape) bool {
	r := len(inShape)
	var th, tw *ResizeAxis
	for i := range a.Axes {
		switch ax := &a.Axes[i]; {
		case ax.Axis == r-1:
			tw = ax
		case ax.Axis == r-2:
			th = ax
		default:
			return false
		}
	}
	if r < 2 || tw == nil && th == nil {
		return false
	}
	hi, wi, ho, wo := inShape[r-2], inShape[r-1], outShape[r-2], outShape[r-1]
	planes := len(y) / (ho * wo)
	for p := range planes {
		src, dst := x[p*hi*wi:(p+1)*hi*wi], y[p*ho*wo:(p+1)*ho*wo]
		for oy := range ho {
			out := dst[oy*wo : (oy+1)*wo]
			y0, y1 := oy, oy
			var wy0, wy1 T
			if th != nil {
				y0 = int(th.I0[oy])
				y1 = y0
				if a.Linear {
					y1, wy0, wy1 = int(th.I1[oy]), T(th.W0[oy]), T(th.W1[oy])
				}
			}
			r0, r1 := src[y0*wi:(y0+1)*wi], src[y1*wi:(y1+1)*wi]
			switch {
			case !a.Linear && tw == nil:
				copy(out, r0)
			case !a.Linear:
				for i, k := range tw.I0[:len(out)] {
					out[i] = r0[k]
				}
			case th == nil:
				// Width alone.
				i0, i1, w0, w1 := tw.I0[:len(out)], tw.I1[:len(out)], tw.W0[:len(out)], tw.W1[:len(out)]
				for i := range out {
					out[i] = T(T(w0[i])*r0[i0[i]]) + T(T(w1[i])*r0[i1[i]])
				}
			case tw == nil:
				// Height alone.
				r0, r1 = r0[:len(out)], r1[:len(out)]
				for i := range out {
					out[i] = T(wy0*r0[i]) + T(wy1*r1[i])
				}
			default:
				i0, i1, w0, w1 := tw.I0[:len(out)], tw.I1[:len(out)], tw.W0[:len(out)], tw.W1[:len(out)]
				for i := range out {
					a0, a1 := r0[i0[i]], r1[i0[i]]
					b0, b1 := r0[i1[i]], r1[i1[i]]
					u := T(wy0*a0) + T(wy1*a1)
					v := T(wy0*b0) + T(wy1*b1)
					out[i] = T(T(w0[i])*u) + T(T(w1[i])*v)
				}
			}
		}
	}
	return true
}

// resizeOneAxis is Resize's kernel for a single resized axis: for each
// position of the axes before it, each output index along it is one or two
// whole blocks of the axes after it, read as rows. It reports false,
// doing nothing, when more than one axis is resized.
func resizeOneAxis[T float32 | float64](a *ResizeAttrs, x, y []T, inShape, outShape tensor.Shape) bool {
	if len(a.Axes) != 1 {
		return false
	}
	t := &a.Axes[0]
	d := t.Axis
	inner := inShape[d+1:].Size()
	if inner == 1 && d > 0 && len(inShape) >= 2 {
		return false // the last axis alone: resizePlanes reads it as rows
	}
	outer := inShape[:d].Size()
	ni, no := inShape[d], outShape[d]
	for p := range outer {
		src, dst := x[p*ni*inner:(p+1)*ni*inner], y[p*no*inner:(p+1)*no*inner]
		for o := range no {
			out := dst[o*inner : (o+1)*inner]
			i0 := int(t.I0[o])
			r0 := src[i0*inner : (i0+1)*inner]
			if !a.Linear {
				copy(out, r0)
				continue
			}
			i1 := int(t.I1[o])
			r1 := src[i1*inner : (i1+1)*inner]
			w0, w1 := T(t.W0[o]), T(t.W1[o])
			for i := range out {
				out[i] = T(w0*r0[i]) + T(w1*r1[i])
			}
		}
	}
	return true
}

// resizeGradOf applies ResizeGrad: g, a cotangent of Resize's result,
// scattered back onto the input's shape.
func resizeGradOf(a ResizeAttrs, g *tensor.Tensor) *tensor.Tensor {
	return core.Apply(ResizeGradPrim, a, g)
}
