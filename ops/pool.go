package ops

import (
	"fmt"

	"github.com/sporeml/spore/internal/kernels/conv"
	"github.com/sporeml/spore/internal/kernels/parallel"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// PoolAttrs are the resolved attributes of the pooling primitives: window,
// stride and explicit top, bottom, left, right padding. Shape is the input
// shape, set only on the gradient prims that produce an input-shaped
// result from an output-shaped one.
type PoolAttrs struct {
	Kernel [2]int
	Stride [2]int
	Pads   [4]int
	Shape  tensor.Shape
	// CountPad makes average pooling divide by the whole window, padded
	// cells included (count_include_pad=True), rather than by the number
	// of real input cells in it. Max pooling ignores it.
	CountPad bool
}

// String prints every attribute, for IR dumps and CSE keys.
func (a PoolAttrs) String() string {
	return fmt.Sprintf("kernel=%v stride=%v pads=%v shape=%v count_pad=%v", a.Kernel, a.Stride, a.Pads, a.Shape, a.CountPad)
}

// poolGeom is the geometry of one pooling: nc planes of h×w input into
// oh×ow output.
type poolGeom struct {
	nc, h, w, oh, ow int
	kh, kw, sh, sw   int
	pt, pl           int
	countPad         bool // divide averages by kh·kw (see PoolAttrs.CountPad)
}

func poolGeometry(op string, a PoolAttrs, xs tensor.Shape) poolGeom {
	if len(xs) != 4 {
		core.Panicf(op, "want a 4-D NCHW input, got %v", xs)
	}
	g := poolGeom{nc: xs[0] * xs[1], h: xs[2], w: xs[3], kh: a.Kernel[0], kw: a.Kernel[1],
		sh: a.Stride[0], sw: a.Stride[1], pt: a.Pads[0], pl: a.Pads[2], countPad: a.CountPad}
	if g.kh < 1 || g.kw < 1 || g.sh < 1 || g.sw < 1 {
		core.Panicf(op, "kernel %v and stride %v must be positive (input %v)", a.Kernel, a.Stride, xs)
	}
	if g.h < 1 || g.w < 1 {
		core.Panicf(op, "empty spatial extent in input %v", xs)
	}
	// A pad as large as the window would make windows of padding alone,
	// which have no maximum and no average.
	if a.Pads[0] >= g.kh || a.Pads[1] >= g.kh || a.Pads[2] >= g.kw || a.Pads[3] >= g.kw {
		core.Panicf(op, "padding %v must be smaller than the kernel %v", a.Pads, a.Kernel)
	}
	if g.h+a.Pads[0]+a.Pads[1] < g.kh || g.w+a.Pads[2]+a.Pads[3] < g.kw {
		core.Panicf(op, "kernel %v is larger than the padded input %dx%d (input %v, pads %v)",
			a.Kernel, g.h+a.Pads[0]+a.Pads[1], g.w+a.Pads[2]+a.Pads[3], xs, a.Pads)
	}
	g.oh = outExtent(g.h, a.Pads[0], a.Pads[1], g.kh, g.sh)
	g.ow = outExtent(g.w, a.Pads[2], a.Pads[3], g.kw, g.sw)
	return g
}

// window returns the input rows [y0, y1) and columns [x0, x1) of output
// position (oy, ox), clipped to the real input.
func (g *poolGeom) window(oy, ox int) (y0, y1, x0, x1 int) {
	y0, x0 = oy*g.sh-g.pt, ox*g.sw-g.pl
	y1, x1 = min(y0+g.kh, g.h), min(x0+g.kw, g.w)
	return max(y0, 0), y1, max(x0, 0), x1
}

// divisor is the count an average over the clipped window [y0, y1)×[x0, x1)
// divides by. Output extents are floored, so every window lies inside the
// padded input and counting padding means counting the whole window.
func (g *poolGeom) divisor(y0, y1, x0, x1 int) int {
	if g.countPad {
		return g.kh * g.kw
	}
	return (y1 - y0) * (x1 - x0)
}

// valid reports whether every window lies inside the unpadded input, so
// that the clipping-free kernels of package conv apply.
func (g *poolGeom) valid() bool {
	return g.pt == 0 && g.pl == 0 && (g.oh-1)*g.sh+g.kh <= g.h && (g.ow-1)*g.sw+g.kw <= g.w
}

// grain is the number of planes worth handing to another core at once:
// about 32k window reads.
func (g *poolGeom) grain() int { return max(1, (1<<15)/max(1, g.oh*g.ow*g.kh*g.kw)) }

// argmax returns the flat in-plane index of the first largest element of
// the window, in row-major order (NaN wins, as in MindSpore and PyTorch).
func argmaxWindow[T float32 | float64](x []T, w, y0, y1, x0, x1 int) int {
	best := y0*w + x0
	bv := x[best]
	for y := y0; y < y1; y++ {
		for i := y*w + x0; i < y*w+x1; i++ {
			if v := x[i]; v > bv || (v != v && bv == bv) {
				best, bv = i, v
			}
		}
	}
	return best
}

func poolAttrs(op string, x *tensor.Tensor, kernel, stride [2]int, pad []Padding) PoolAttrs {
	if len(pad) > 1 {
		core.Panicf(op, "at most one Padding, got %d", len(pad))
	}
	var p Padding
	if len(pad) == 1 {
		p = pad[0]
	}
	if !x.DType().IsFloat() && (op != "MaxPool2D" || !x.DType().IsInt()) {
		core.Panicf(op, "unsupported dtype %v (input %v)", x.DType(), x.Shape())
	}
	xs := x.Shape()
	if len(xs) != 4 {
		core.Panicf(op, "want a 4-D NCHW input, got %v", xs)
	}
	if kernel[0] < 1 || kernel[1] < 1 || stride[0] < 1 || stride[1] < 1 {
		core.Panicf(op, "kernel %v and stride %v must be positive (input %v)", kernel, stride, xs)
	}
	return PoolAttrs{Kernel: kernel, Stride: stride, Pads: p.resolve(op, xs[2], xs[3], kernel[0], kernel[1], stride)}
}

func inferPool(op string) func(any, []*tensor.Tensor) tensor.Meta {
	return func(attrs any, in []*tensor.Tensor) tensor.Meta {
		x := in[0]
		// Max pooling also takes integers (a maximum needs no
		// arithmetic); averages need a float type.
		if !x.DType().IsFloat() && (op != "MaxPool2D" || !x.DType().IsInt()) {
			core.Panicf(op, "unsupported dtype %v (input %v)", x.DType(), x.Shape())
		}
		g := poolGeometry(op, attrs.(PoolAttrs), x.Shape())
		return tensor.Meta{Shape: tensor.Shape{x.Shape()[0], x.Shape()[1], g.oh, g.ow}, DType: x.DType()}
	}
}

// checkPoolGrad checks the (x, dy) operands of a pooling gradient.
func checkPoolGrad(op string, a PoolAttrs, xs, dys tensor.Shape, dxd, dyd tensor.DType) {
	if dxd != dyd || !dxd.IsFloat() {
		core.Panicf(op, "want float operands of one dtype, got %v %v and %v %v", xs, dxd, dys, dyd)
	}
	g := poolGeometry(op, a, xs)
	if want := (tensor.Shape{xs[0], xs[1], g.oh, g.ow}); !dys.Equal(want) {
		core.Panicf(op, "output gradient %v does not match pooling input %v (%v), which gives %v", dys, xs, a, want)
	}
}

var MaxPoolPrim, MaxPoolGradPrim, MaxPoolGatherPrim, AvgPoolPrim, AvgPoolGradPrim *core.Prim

func init() {
	MaxPoolPrim = core.Define(&core.Prim{
		Name:   "MaxPool2D",
		Batch:  batchFoldN(&MaxPoolPrim, []int{0}, foldPoolAttrs),
		Traits: core.Traits{Cost: 4},
		Infer:  inferPool("MaxPool2D"),
		JVP: func(attrs any, in, t []*tensor.Tensor, out *tensor.Tensor) *tensor.Tensor {
			return core.Apply(MaxPoolGatherPrim, attrs, in[0], t[0])
		},
		VJP: func(attrs any, in []*tensor.Tensor, _, g *tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{core.Apply(MaxPoolGradPrim, attrs, in[0], g)}
		},
	})
	// MaxPool2DGrad(x, dy) routes each dy to the argmax of its window of x.
	// The argmax is recomputed from x, so the forward pass keeps no hidden
	// state and the op is a pure function of its inputs.
	MaxPoolGradPrim = core.Define(&core.Prim{
		Name:   "MaxPool2DGrad",
		Batch:  batchFoldN(&MaxPoolGradPrim, []int{0, 1}, foldPoolAttrs),
		Traits: core.Traits{Cost: 4},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			x, dy := in[0], in[1]
			checkPoolGrad("MaxPool2DGrad", attrs.(PoolAttrs), x.Shape(), dy.Shape(), x.DType(), dy.DType())
			return x.Meta()
		},
		// Linear in dy with the argmax pattern piecewise constant in x: the
		// adjoint of scattering to the argmax is gathering from it.
		JVP: linearJVP(&MaxPoolGradPrim, 1),
		VJP: linearVJP(&MaxPoolGatherPrim, 1, nil),
	})
	// MaxPool2DGather(x, v) reads v at the argmax of each window of x:
	// MaxPool2D(x) is MaxPool2DGather(x, x). It is MaxPool2DGrad's adjoint.
	MaxPoolGatherPrim = core.Define(&core.Prim{
		Name:   "MaxPool2DGather",
		Batch:  batchFoldN(&MaxPoolGatherPrim, []int{0, 1}, foldPoolAttrs),
		Traits: core.Traits{Cost: 4},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			x, v := in[0], in[1]
			if !x.Shape().Equal(v.Shape()) || x.DType() != v.DType() {
				core.Panicf("MaxPool2DGather", "values %v %v do not match input %v %v", v.Shape(), v.DType(), x.Shape(), x.DType())
			}
			return inferPool("MaxPool2DGather")(attrs, in)
		},
		JVP: linearJVP(&MaxPoolGatherPrim, 1),
		VJP: linearVJP(&MaxPoolGradPrim, 1, nil),
	})
	AvgPoolPrim = core.Define(&core.Prim{
		Name:   "AvgPool2D",
		Batch:  batchFoldN(&AvgPoolPrim, []int{0}, foldPoolAttrs),
		Traits: core.Traits{Cost: 4},
		Infer:  inferPool("AvgPool2D"),
		// Averaging is linear; its transpose spreads onto an input of
		// x's shape.
		JVP: linearJVP(&AvgPoolPrim, 0),
		VJP: linearVJP(&AvgPoolGradPrim, 0, func(attrs any, in []*tensor.Tensor) any {
			a := attrs.(PoolAttrs)
			a.Shape = in[0].Shape().Clone()
			return a
		}),
	})
	// AvgPool2DGrad(dy) spreads each dy over the real (unpadded) elements
	// of its window with the forward pass's weight 1/divisor, onto an input
	// of shape attrs.Shape.
	AvgPoolGradPrim = core.Define(&core.Prim{
		Name:   "AvgPool2DGrad",
		Batch:  batchFoldN(&AvgPoolGradPrim, []int{0}, foldPoolAttrs),
		Traits: core.Traits{Cost: 4},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			a := attrs.(PoolAttrs)
			dy := in[0]
			checkPoolGrad("AvgPool2DGrad", a, a.Shape, dy.Shape(), dy.DType(), dy.DType())
			return tensor.Meta{Shape: a.Shape, DType: dy.DType()}
		},
		// The spreading is the transpose of averaging, with the same
		// weights, so its adjoint is AvgPool2D itself.
		JVP: linearJVP(&AvgPoolGradPrim, 0),
		VJP: linearVJP(&AvgPoolPrim, 0, func(attrs any, _ []*tensor.Tensor) any {
			a := attrs.(PoolAttrs)
			a.Shape = nil
			return a
		}),
	})
	registerFloats(MaxPoolPrim, maxPoolKernel(impl32), maxPoolKernel(impl64))
	registerInts(MaxPoolPrim, numberType.maxPool)
	registerFloats(MaxPoolGradPrim, maxPoolGradKernel(impl32), maxPoolGradKernel(impl64))
	registerFloats(MaxPoolGatherPrim, maxPoolGatherKernel(impl32), maxPoolGatherKernel(impl64))
	registerFloats(AvgPoolPrim, avgPoolKernel(impl32), avgPoolKernel(impl64))
	registerFloats(AvgPoolGradPrim, avgPoolGradKernel(impl32), avgPoolGradKernel(impl64))
}

// maxPoolKernel returns MaxPool2D's kernel for T.
func maxPoolKernel[T float32 | float64](im *floatImpl[T]) core.KernelFunc {
	return func(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
		g := poolGeometry("MaxPool2D", attrs.(PoolAttrs), in[0].Shape())
		x := in[0].Data().([]T)
		maxPoolGather(im, &g, x, x, out.Data().([]T))
	}
}

// maxPoolIntKernel is MaxPool2D's kernel for the integer types: the
// maximum of each window clipped to the input (padding never wins), by
// plain loops.
func maxPoolIntKernel[T tensor.Number](attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
	g := poolGeometry("MaxPool2D", attrs.(PoolAttrs), in[0].Shape())
	x, o := in[0].Data().([]T), out.Data().([]T)
	plane, oplane := g.h*g.w, g.oh*g.ow
	for p := range g.nc {
		xp, op := x[p*plane:(p+1)*plane], o[p*oplane:(p+1)*oplane]
		for oy := range g.oh {
			for ox := range g.ow {
				y0, y1, x0, x1 := g.window(oy, ox)
				best := xp[y0*g.w+x0]
				for y := y0; y < y1; y++ {
					for _, v := range xp[y*g.w+x0 : y*g.w+x1] {
						best = max(best, v)
					}
				}
				op[oy*g.ow+ox] = best
			}
		}
	}
}

// maxPoolGradKernel returns MaxPool2DGrad's kernel for T.
func maxPoolGradKernel[T float32 | float64](im *floatImpl[T]) core.KernelFunc {
	return func(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
		g := poolGeometry("MaxPool2DGrad", attrs.(PoolAttrs), in[0].Shape())
		maxPoolScatter(im, &g, in[0].Data().([]T), in[1].Data().([]T), out.Data().([]T))
	}
}

// maxPoolGatherKernel returns MaxPool2DGather's kernel for T.
func maxPoolGatherKernel[T float32 | float64](im *floatImpl[T]) core.KernelFunc {
	return func(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
		g := poolGeometry("MaxPool2DGather", attrs.(PoolAttrs), in[0].Shape())
		maxPoolGather(im, &g, in[0].Data().([]T), in[1].Data().([]T), out.Data().([]T))
	}
}

// avgPoolKernel returns AvgPool2D's kernel for T.
func avgPoolKernel[T float32 | float64](im *floatImpl[T]) core.KernelFunc {
	return func(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
		g := poolGeometry("AvgPool2D", attrs.(PoolAttrs), in[0].Shape())
		avgPoolForward(im, &g, in[0].Data().([]T), out.Data().([]T))
	}
}

// avgPoolGradKernel returns AvgPool2DGrad's kernel for T.
func avgPoolGradKernel[T float32 | float64](im *floatImpl[T]) core.KernelFunc {
	return func(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
		a := attrs.(PoolAttrs)
		g := poolGeometry("AvgPool2DGrad", a, a.Shape)
		avgPoolBackward(im, &g, in[0].Data().([]T), out.Data().([]T))
	}
}

// MaxPool2D returns the maximum of each kernel window of x, an NCHW tensor,
// moved by stride (MindSpore's nn.MaxPool2d). An optional Padding (default
// valid) pads with −∞, so padding never wins; the pads must be smaller than
// the kernel. The gradient goes to the first maximum of each window in
// row-major order.
func MaxPool2D(x *tensor.Tensor, kernel, stride [2]int, pad ...Padding) *tensor.Tensor {
	return core.Apply(MaxPoolPrim, poolAttrs("MaxPool2D", x, kernel, stride, pad), x)
}

// AvgPoolOption is an optional argument of AvgPool2D: a Padding or a
// CountIncludePad, each at most once.
type AvgPoolOption interface{ avgPoolOption() }

func (Padding) avgPoolOption() {}

// CountIncludePad chooses what AvgPool2D divides a window's sum by: the
// whole window, padded cells included (true: PyTorch's and MindSpore's
// count_include_pad=True), or only the real input cells in it (false).
type CountIncludePad bool

func (CountIncludePad) avgPoolOption() {}

// AvgPool2D returns the mean of each kernel window of x, an NCHW tensor,
// moved by stride (MindSpore's nn.AvgPool2d and ops.avg_pool2d). An
// optional Padding (default valid, as in MindSpore) adds windows at the
// border; padded cells add zero to the sum. An optional CountIncludePad
// says whether they count in the divisor. Without one, the default is
// MindSpore's: explicit padding counts them (count_include_pad=True, also
// PyTorch's default), and "same" padding does not (MindSpore's AvgPool
// "same" mode, as in TensorFlow), so there a border window averages only
// real input.
func AvgPool2D(x *tensor.Tensor, kernel, stride [2]int, opts ...AvgPoolOption) *tensor.Tensor {
	const op = "AvgPool2D"
	var (
		pads  []Padding
		count []CountIncludePad
	)
	for i, o := range opts {
		switch o := o.(type) {
		case Padding:
			pads = append(pads, o)
		case CountIncludePad:
			count = append(count, o)
		default:
			core.Panicf(op, "option %d is %T, want a Padding or a CountIncludePad", i, o)
		}
	}
	if len(count) > 1 {
		core.Panicf(op, "at most one CountIncludePad, got %d", len(count))
	}
	a := poolAttrs(op, x, kernel, stride, pads)
	if len(count) == 1 {
		a.CountPad = bool(count[0])
	} else {
		a.CountPad = len(pads) == 0 || pads[0].Mode != PadSame
	}
	return core.Apply(AvgPoolPrim, a, x)
}

// maxPoolGather writes into out, for each window, v at the argmax of x.
func maxPoolGather[T float32 | float64](im *floatImpl[T], g *poolGeom, x, v, out []T) {
	l := im.getLoop()
	l.kind, l.pg = loopMaxPoolGather, *g
	l.a, l.b, l.c = x, v, out
	parallel.ForBody(g.nc, g.grain(), l)
	im.putLoop(l)
}

// maxPoolScatter adds each dy to the argmax of its window of x in dx.
func maxPoolScatter[T float32 | float64](im *floatImpl[T], g *poolGeom, x, dy, dx []T) {
	clear(dx)
	l := im.getLoop()
	l.kind, l.pg = loopMaxPoolScatter, *g
	l.a, l.b, l.c = x, dy, dx
	parallel.ForBody(g.nc, g.grain(), l)
	im.putLoop(l)
}

// avgPoolForward writes each window's mean of x into out.
func avgPoolForward[T float32 | float64](im *floatImpl[T], g *poolGeom, x, out []T) {
	l := im.getLoop()
	l.kind, l.pg = loopAvgPoolForward, *g
	l.a, l.c = x, out
	parallel.ForBody(g.nc, g.grain(), l)
	im.putLoop(l)
}

// avgPoolBackward spreads each dy evenly over its window in dx.
func avgPoolBackward[T float32 | float64](im *floatImpl[T], g *poolGeom, dy, dx []T) {
	clear(dx)
	l := im.getLoop()
	l.kind, l.pg = loopAvgPoolBackward, *g
	l.a, l.c = dy, dx
	parallel.ForBody(g.nc, g.grain(), l)
	im.putLoop(l)
}

// maxPoolGatherRun is the loop body of maxPoolGather, over items [lo, hi).
func (l *loop[T]) maxPoolGatherRun(lo, hi int) {
	g := &l.pg
	x, v, out := l.a, l.b, l.c
	plane := g.h * g.w

	if len(x) > 0 && &x[0] == &v[0] {
		// The forward pass (values are the input): no argmax needed, and
		// no window clipping when no window reaches the padding.
		if g.valid() {
			conv.MaxPoolValid(out[lo*g.oh*g.ow:hi*g.oh*g.ow], x[lo*plane:hi*plane], hi-lo, g.h, g.w, g.kh, g.kw, g.sh, g.sw, g.oh, g.ow)
		} else {
			conv.MaxPool2DRows(out[lo*g.oh*g.ow:hi*g.oh*g.ow], x[lo*plane:hi*plane], hi-lo, g.h, g.w, g.kh, g.kw, g.pt, g.pl, g.sh, g.sw, g.oh, g.ow)
		}
		return
	}
	for c := lo; c < hi; c++ {
		xc, vc := x[c*plane:(c+1)*plane], v[c*plane:(c+1)*plane]
		oc := out[c*g.oh*g.ow : (c+1)*g.oh*g.ow]
		for oy := range g.oh {
			for ox := range g.ow {
				y0, y1, x0, x1 := g.window(oy, ox)
				oc[oy*g.ow+ox] = vc[argmaxWindow(xc, g.w, y0, y1, x0, x1)]
			}
		}
	}
}

// maxPoolScatterRun is the loop body of maxPoolScatter, over items [lo, hi).
func (l *loop[T]) maxPoolScatterRun(lo, hi int) {
	g := &l.pg
	x, dy, dx := l.a, l.b, l.c
	plane := g.h * g.w

	if g.valid() {
		conv.MaxPoolValidBackward(dx[lo*plane:hi*plane], x[lo*plane:hi*plane], dy[lo*g.oh*g.ow:hi*g.oh*g.ow], hi-lo, g.h, g.w, g.kh, g.kw, g.sh, g.sw, g.oh, g.ow)
		return
	}
	if !convBackReference {
		// Padded windows: clipped only at the plane's edges.
		conv.MaxPoolBackward(dx[lo*plane:hi*plane], x[lo*plane:hi*plane], dy[lo*g.oh*g.ow:hi*g.oh*g.ow], hi-lo, g.h, g.w, g.kh, g.kw, g.sh, g.sw, g.pt, g.pl, g.oh, g.ow)
		return
	}
	for c := lo; c < hi; c++ {
		xc, dxc := x[c*plane:(c+1)*plane], dx[c*plane:(c+1)*plane]
		dyc := dy[c*g.oh*g.ow : (c+1)*g.oh*g.ow]
		for oy := range g.oh {
			for ox := range g.ow {
				y0, y1, x0, x1 := g.window(oy, ox)
				dxc[argmaxWindow(xc, g.w, y0, y1, x0, x1)] += dyc[oy*g.ow+ox]
			}
		}
	}
}

// avgPoolForwardRun is the loop body of avgPoolForward, over items [lo, hi).
func (l *loop[T]) avgPoolForwardRun(lo, hi int) {
	g := &l.pg
	x, out := l.a, l.c
	plane := g.h * g.w

	if g.valid() {
		// No window reaches the padding (so the divisor is the window,
		// whatever countPad says): no clipping, and a vector kernel for
		// 2×2 windows at stride 2.
		conv.AvgPoolValid(out[lo*g.oh*g.ow:hi*g.oh*g.ow], x[lo*plane:hi*plane], hi-lo, g.h, g.w, g.kh, g.kw, g.sh, g.sw, g.oh, g.ow)
		return
	}
	// Windows reach the padding: a row at a time, with the border columns
	// clipped, the sums in row-major order and the divisor of g.divisor.
	conv.AvgPool2DRows(out[lo*g.oh*g.ow:hi*g.oh*g.ow], x[lo*plane:hi*plane], hi-lo, g.h, g.w, g.kh, g.kw, g.pt, g.pl, g.sh, g.sw, g.oh, g.ow, g.countPad)
}

// avgPoolBackwardRun is the loop body of avgPoolBackward, over items [lo, hi).
func (l *loop[T]) avgPoolBackwardRun(lo, hi int) {
	g := &l.pg
	dy, dx := l.a, l.c
	plane := g.h * g.w

	for c := lo; c < hi; c++ {
		dxc := dx[c*plane : (c+1)*plane]
		dyc := dy[c*g.oh*g.ow : (c+1)*g.oh*g.ow]
		for oy := range g.oh {
			for ox := range g.ow {
				y0, y1, x0, x1 := g.window(oy, ox)
				v := dyc[oy*g.ow+ox] / T(g.divisor(y0, y1, x0, x1))
				for y := y0; y < y1; y++ {
					row := dxc[y*g.w+x0 : y*g.w+x1]
					for i := range row {
						row[i] += v
					}
				}
			}
		}
	}
}
