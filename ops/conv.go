package ops

import (
	"fmt"
	"github.com/sporeml/spore/internal/kernels/conv"
	"github.com/sporeml/spore/internal/kernels/parallel"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// PadMode names how a convolution or pooling window treats the border, with
// MindSpore's pad_mode spellings.
type PadMode string

// The padding modes. The zero PadMode means PadValid, or PadExplicit when
// Padding.Pads is non-zero.
const (
	// PadValid uses no padding: out = ⌊(in − window)/stride⌋ + 1.
	PadValid PadMode = "valid"
	// PadSame pads so that out = ⌈in/stride⌉, as TensorFlow and MindSpore
	// do; an odd total puts the extra row (column) at the bottom (right).
	PadSame PadMode = "same"
	// PadExplicit uses Padding.Pads (MindSpore's pad_mode="pad").
	PadExplicit PadMode = "pad"
)

// Padding is the border treatment of a convolution or pooling window. The
// zero value is "valid".
type Padding struct {
	Mode PadMode
	// Pads are the explicit top, bottom, left and right paddings; they
	// must be zero unless Mode is PadExplicit (or empty).
	Pads [4]int
}

// ValidPad is no padding.
func ValidPad() Padding { return Padding{Mode: PadValid} }

// SamePad pads so that the output has ⌈in/stride⌉ rows and columns.
func SamePad() Padding { return Padding{Mode: PadSame} }

// ExplicitPad pads by the given numbers of rows and columns.
func ExplicitPad(top, bottom, left, right int) Padding {
	return Padding{Mode: PadExplicit, Pads: [4]int{top, bottom, left, right}}
}

// String returns the name printed in dumps and messages.
func (p Padding) String() string {
	if p.Mode == PadExplicit || (p.Mode == "" && p.Pads != [4]int{}) {
		return fmt.Sprintf("pad%v", p.Pads)
	}
	if p.Mode == "" {
		return string(PadValid)
	}
	return string(p.Mode)
}

// resolve turns p into explicit pads for an input of extent (h, w) under a
// window of effective extent (kh, kw) and the given strides.
func (p Padding) resolve(op string, h, w, kh, kw int, stride [2]int) [4]int {
	switch p.Mode {
	case "", PadExplicit:
		for _, v := range p.Pads {
			if v < 0 {
				core.Panicf(op, "negative padding %v", p.Pads)
			}
		}
		return p.Pads
	case PadValid, PadSame:
		if p.Pads != [4]int{} {
			core.Panicf(op, "padding %v given with pad mode %q; use pad mode %q", p.Pads, p.Mode, PadExplicit)
		}
		if p.Mode == PadValid {
			return [4]int{}
		}
		th := sameTotal(h, kh, stride[0])
		tw := sameTotal(w, kw, stride[1])
		return [4]int{th / 2, th - th/2, tw / 2, tw - tw/2}
	}
	core.Panicf(op, "unknown pad mode %q (want %q, %q or %q)", p.Mode, PadValid, PadSame, PadExplicit)
	return [4]int{}
}

// sameTotal is the total padding that makes ⌈in/stride⌉ windows of extent k
// fit.
func sameTotal(in, k, stride int) int {
	out := (in + stride - 1) / stride
	return max((out-1)*stride+k-in, 0)
}

// Conv2DOpts are the options of Conv2D. Zero strides, dilations and groups
// mean 1, so the zero value is a stride-1, unpadded, ungrouped convolution.
type Conv2DOpts struct {
	Stride   [2]int // vertical, horizontal
	Padding  Padding
	Dilation [2]int // vertical, horizontal
	Groups   int
}

// ConvAttrs are the resolved attributes of the convolution primitives: the
// padding is explicit, whatever mode the user asked for, so that the
// gradient prims reproduce the forward geometry exactly.
type ConvAttrs struct {
	Stride   [2]int
	Pads     [4]int // top, bottom, left, right
	Dilation [2]int
	Groups   int
}

// String prints every attribute, for IR dumps and CSE keys.
func (a ConvAttrs) String() string {
	return fmt.Sprintf("stride=%v pads=%v dilation=%v groups=%d", a.Stride, a.Pads, a.Dilation, a.Groups)
}

// ConvGradAttrs are the attributes of Conv2DBackpropInput and
// Conv2DBackpropFilter: the forward attributes and the shape of the input
// (or filter) the gradient is for, which the output shape alone does not
// determine when the stride drops trailing rows.
type ConvGradAttrs struct {
	ConvAttrs
	Shape tensor.Shape
}

// String prints every attribute, for IR dumps and CSE keys.
func (a ConvGradAttrs) String() string {
	return fmt.Sprintf("%v shape=%v", a.ConvAttrs, a.Shape)
}

// convGeom is the geometry of one convolution, derived from the input and
// filter shapes and the attributes.
type convGeom struct {
	n, c, h, w     int // input
	o, cg, kh, kw  int // filter: out channels, in channels per group, window
	og             int // out channels per group
	oh, ow         int // output extent
	sh, sw, dh, dw int
	pt, pl         int
	groups         int
}

// k is the number of rows of the column matrix of one group.
func (g *convGeom) k() int { return g.cg * g.kh * g.kw }

// p is the number of output positions of one image.
func (g *convGeom) p() int { return g.oh * g.ow }

// outExtent is the number of windows of effective extent k that fit in an
// input of extent in with padding lo+hi and the stride, or ≤ 0 if none.
func outExtent(in, lo, hi, k, stride int) int {
	return (in+lo+hi-k)/stride + 1
}

// convGeometry checks a convolution of an input of shape xs by a filter of
// shape ws and returns its geometry, naming op in errors.
func convGeometry(op string, a ConvAttrs, xs, ws tensor.Shape) convGeom {
	if len(xs) != 4 || len(ws) != 4 {
		core.Panicf(op, "want a 4-D NCHW input and a 4-D [out, in/groups, kh, kw] filter, got %v and %v", xs, ws)
	}
	g := convGeom{
		n: xs[0], c: xs[1], h: xs[2], w: xs[3],
		o: ws[0], cg: ws[1], kh: ws[2], kw: ws[3],
		sh: a.Stride[0], sw: a.Stride[1], dh: a.Dilation[0], dw: a.Dilation[1],
		pt: a.Pads[0], pl: a.Pads[2], groups: a.Groups,
	}
	if g.groups < 1 || g.c%g.groups != 0 || g.o%g.groups != 0 {
		core.Panicf(op, "groups=%d must divide input channels and output channels (input %v, filter %v)", g.groups, xs, ws)
	}
	if g.cg*g.groups != g.c {
		core.Panicf(op, "filter %v expects %d input channels per group, input %v has %d channels in %d groups", ws, g.cg, xs, g.c, g.groups)
	}
	if g.kh < 1 || g.kw < 1 {
		core.Panicf(op, "empty filter window %v", ws)
	}
	ekh, ekw := (g.kh-1)*g.dh+1, (g.kw-1)*g.dw+1
	g.oh = outExtent(g.h, a.Pads[0], a.Pads[1], ekh, g.sh)
	g.ow = outExtent(g.w, a.Pads[2], a.Pads[3], ekw, g.sw)
	if g.h+a.Pads[0]+a.Pads[1] < ekh || g.w+a.Pads[2]+a.Pads[3] < ekw {
		core.Panicf(op, "dilated window %dx%d is larger than the padded input %dx%d (input %v, filter %v, %v)",
			ekh, ekw, g.h+a.Pads[0]+a.Pads[1], g.w+a.Pads[2]+a.Pads[3], xs, ws, a)
	}
	g.og = g.o / g.groups
	return g
}

// convAttrs validates opts and resolves them against the input and filter
// shapes.
func convAttrs(op string, opts Conv2DOpts, xs, ws tensor.Shape) ConvAttrs {
	a := ConvAttrs{Stride: opts.Stride, Dilation: opts.Dilation, Groups: opts.Groups}
	for i := range 2 {
		if a.Stride[i] == 0 {
			a.Stride[i] = 1
		}
		if a.Dilation[i] == 0 {
			a.Dilation[i] = 1
		}
		if a.Stride[i] < 0 || a.Dilation[i] < 0 {
			core.Panicf(op, "stride %v and dilation %v must be positive", opts.Stride, opts.Dilation)
		}
	}
	if a.Groups == 0 {
		a.Groups = 1
	}
	if len(xs) != 4 || len(ws) != 4 {
		core.Panicf(op, "want a 4-D NCHW input and a 4-D [out, in/groups, kh, kw] filter, got %v and %v", xs, ws)
	}
	ekh, ekw := (ws[2]-1)*a.Dilation[0]+1, (ws[3]-1)*a.Dilation[1]+1
	a.Pads = opts.Padding.resolve(op, xs[2], xs[3], ekh, ekw, a.Stride)
	return a
}

func checkFloatPair(op string, x, w *tensor.Tensor) {
	if x.DType() != w.DType() || !x.DType().IsFloat() {
		core.Panicf(op, "want two float operands of one dtype, got %v %v and %v %v", x.Shape(), x.DType(), w.Shape(), w.DType())
	}
}

var Conv2DPrim, Conv2DBackpropInputPrim, Conv2DBackpropFilterPrim *core.Prim

func init() {
	Conv2DPrim = core.Define(&core.Prim{
		Name:   "Conv2D",
		Batch:  batchFoldN(&Conv2DPrim, []int{0}, nil),
		Traits: core.Traits{Cost: 100},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			x, w := in[0], in[1]
			checkFloatPair("Conv2D", x, w)
			g := convGeometry("Conv2D", attrs.(ConvAttrs), x.Shape(), w.Shape())
			return tensor.Meta{Shape: tensor.Shape{g.n, g.o, g.oh, g.ow}, DType: x.DType()}
		},
		// y = C(x, w) is bilinear; its transposes are the two backprop
		// primitives.
		JVP: bilinearJVP(&Conv2DPrim),
		VJP: bilinearVJP(wantedOperands,
			func(attrs any, in []*tensor.Tensor, g *tensor.Tensor) *tensor.Tensor {
				return Conv2DBackpropInput(g, in[1], ConvGradAttrs{attrs.(ConvAttrs), in[0].Shape().Clone()})
			},
			func(attrs any, in []*tensor.Tensor, g *tensor.Tensor) *tensor.Tensor {
				return Conv2DBackpropFilter(in[0], g, ConvGradAttrs{attrs.(ConvAttrs), in[1].Shape().Clone()})
			}),
	})
	Conv2DBackpropInputPrim = core.Define(&core.Prim{
		Name:   "Conv2DBackpropInput",
		Batch:  batchFoldN(&Conv2DBackpropInputPrim, []int{0}, foldConvGradAttrs),
		Traits: core.Traits{Cost: 100},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			a := attrs.(ConvGradAttrs)
			dy, w := in[0], in[1]
			checkFloatPair("Conv2DBackpropInput", dy, w)
			checkConvGrad("Conv2DBackpropInput", a.ConvAttrs, a.Shape, w.Shape(), dy.Shape())
			return tensor.Meta{Shape: a.Shape, DType: dy.DType()}
		},
		// dx = Cᵀ(dy, w) is bilinear with ⟨h, Cᵀ(dy, w)⟩ = ⟨C(h, w), dy⟩, so
		// its cotangent h maps to C(h, w) for dy and to the filter
		// gradient of (h, dy) for w. Both are built (everyOperand): the
		// compiler's fused convolution gradients call this rule on
		// intermediates autodiff does not track.
		JVP: bilinearJVP(&Conv2DBackpropInputPrim),
		VJP: bilinearVJP(everyOperand,
			func(attrs any, in []*tensor.Tensor, h *tensor.Tensor) *tensor.Tensor {
				return core.Apply(Conv2DPrim, attrs.(ConvGradAttrs).ConvAttrs, h, in[1])
			},
			func(attrs any, in []*tensor.Tensor, h *tensor.Tensor) *tensor.Tensor {
				return Conv2DBackpropFilter(h, in[0], ConvGradAttrs{attrs.(ConvGradAttrs).ConvAttrs, in[1].Shape().Clone()})
			}),
	})
	Conv2DBackpropFilterPrim = core.Define(&core.Prim{
		Name:   "Conv2DBackpropFilter",
		Traits: core.Traits{Cost: 100},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			a := attrs.(ConvGradAttrs)
			x, dy := in[0], in[1]
			checkFloatPair("Conv2DBackpropFilter", x, dy)
			checkConvGrad("Conv2DBackpropFilter", a.ConvAttrs, x.Shape(), a.Shape, dy.Shape())
			return tensor.Meta{Shape: a.Shape, DType: x.DType()}
		},
		// dw = F(x, dy) is bilinear with ⟨H, F(x, dy)⟩ = ⟨C(x, H), dy⟩;
		// both cotangents are built, as for Conv2DBackpropInput.
		JVP: bilinearJVP(&Conv2DBackpropFilterPrim),
		VJP: bilinearVJP(everyOperand,
			func(attrs any, in []*tensor.Tensor, h *tensor.Tensor) *tensor.Tensor {
				return Conv2DBackpropInput(in[1], h, ConvGradAttrs{attrs.(ConvGradAttrs).ConvAttrs, in[0].Shape().Clone()})
			},
			func(attrs any, in []*tensor.Tensor, h *tensor.Tensor) *tensor.Tensor {
				return core.Apply(Conv2DPrim, attrs.(ConvGradAttrs).ConvAttrs, in[0], h)
			}),
	})
	registerFloats(Conv2DPrim, conv2DKernel(impl32), conv2DKernel(impl64))
	registerFloats(Conv2DBackpropInputPrim, conv2DBackInputKernel(impl32), conv2DBackInputKernel(impl64))
	registerFloats(Conv2DBackpropFilterPrim, conv2DBackFilterKernel(impl32), conv2DBackFilterKernel(impl64))
}

// conv2DKernel returns Conv2D's kernel for T.
func conv2DKernel[T float32 | float64](im *floatImpl[T]) core.KernelFunc {
	return func(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
		g := convGeometry("Conv2D", attrs.(ConvAttrs), in[0].Shape(), in[1].Shape())
		if x, ok := in[0].Data().([]float32); ok && convEngineOn {
			// float32 runs on the engine (convengine.go); float64 on
			// the per-image im2col path.
			convEngine(&g, x, in[1].Data().([]float32), out.Data().([]float32), nil)
			return
		}
		conv2DForward(im, &g, in[0].Data().([]T), in[1].Data().([]T), out.Data().([]T))
	}
}

// conv2DBackInputKernel returns Conv2DBackpropInput's kernel for T.
func conv2DBackInputKernel[T float32 | float64](im *floatImpl[T]) core.KernelFunc {
	return func(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
		a := attrs.(ConvGradAttrs)
		g := convGeometry("Conv2DBackpropInput", a.ConvAttrs, a.Shape, in[1].Shape())
		conv2DBackInput(im, &g, in[0].Data().([]T), in[1].Data().([]T), out.Data().([]T), pooledGrad[T]{})
	}
}

// conv2DBackFilterKernel returns Conv2DBackpropFilter's kernel for T.
func conv2DBackFilterKernel[T float32 | float64](im *floatImpl[T]) core.KernelFunc {
	return func(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
		a := attrs.(ConvGradAttrs)
		g := convGeometry("Conv2DBackpropFilter", a.ConvAttrs, in[0].Shape(), a.Shape)
		conv2DBackFilter(im, &g, in[0].Data().([]T), in[1].Data().([]T), out.Data().([]T), pooledGrad[T]{})
	}
}

// checkConvGrad checks that dy has the shape of the convolution of an input
// of shape xs by a filter of shape ws.
func checkConvGrad(op string, a ConvAttrs, xs, ws, dys tensor.Shape) {
	g := convGeometry(op, a, xs, ws)
	if want := (tensor.Shape{g.n, g.o, g.oh, g.ow}); !dys.Equal(want) {
		core.Panicf(op, "output gradient %v does not match the convolution of input %v by filter %v (%v), which gives %v", dys, xs, ws, a, want)
	}
}

// Conv2D returns the 2-D cross-correlation of x, an NCHW tensor [N, C, H, W],
// with filter w of shape [O, C/groups, kh, kw] (MindSpore's layout), giving
// [N, O, OH, OW]. There is no bias: add one with
// Add(y, Reshape(b, 1, O, 1, 1)). Both operands must be float32 or float64
// of one dtype.
//
// With stride s, dilation d and pads lo+hi along an axis of extent in,
// OH = ⌊(in + lo + hi − d·(k−1) − 1)/s⌋ + 1; PadSame gives ⌈in/s⌉.
func Conv2D(x, w *tensor.Tensor, opts Conv2DOpts) *tensor.Tensor {
	a := convAttrs("Conv2D", opts, x.Shape(), w.Shape())
	return core.Apply(Conv2DPrim, a, x, w)
}

// Conv2DBackpropInput returns the gradient of a convolution with respect to
// its input: the transposed convolution of dy by w onto an input of shape
// attrs.Shape. It is the VJP of Conv2D, exposed for transposed
// convolution layers and second-order gradients.
func Conv2DBackpropInput(dy, w *tensor.Tensor, attrs ConvGradAttrs) *tensor.Tensor {
	return core.Apply(Conv2DBackpropInputPrim, attrs, dy, w)
}

// Conv2DBackpropFilter returns the gradient of a convolution of x with
// respect to its filter, of shape attrs.Shape, given the output gradient dy.
func Conv2DBackpropFilter(x, dy *tensor.Tensor, attrs ConvGradAttrs) *tensor.Tensor {
	return core.Apply(Conv2DBackpropFilterPrim, attrs, x, dy)
}

// im2col lays out the receptive fields of one group of one image x
// ([cg, h, w]) as the columns of col ([cg·kh·kw, oh·ow]), writing zeros
// where a window reaches into the padding.
func im2col[T float32 | float64](g *convGeom, x, col []T) {
	conv.Im2Col(col, x, g.cg, g.h, g.w, g.kh, g.kw, g.pt, g.pl, g.sh, g.sw, g.dh, g.dw, g.oh, g.ow)
}

// col2im is im2col's adjoint: it adds every column entry back into the
// input position it was read from (dx must be initialised by the caller).
func col2im[T float32 | float64](g *convGeom, col, dx []T) {
	conv.Col2Im(dx, col, g.cg, g.h, g.w, g.kh, g.kw, g.pt, g.pl, g.sh, g.sw, g.dh, g.dw, g.oh, g.ow)
}

// conv2DForward computes, per image and group, W_g [og, k] · col [k, p].
func conv2DForward[T float32 | float64](im *floatImpl[T], g *convGeom, x, w, out []T) {
	k, p := g.k(), g.p()
	if len(out) == 0 {
		return
	}
	if k == 0 {
		clear(out)
		return
	}
	// Images are independent: split the batch over the cores, each chunk
	// with its own column buffer.
	l := im.getLoop()
	l.kind, l.cg = loopConv2DForward, *g
	l.a, l.b, l.c = x, w, out
	parallel.ForBody(g.n, max(1, (1<<18)/max(1, g.o*p*k)), l)
	im.putLoop(l)
}

// conv2DBackInput computes, per image and group, col = W_gᵀ · dy_g and
// scatters it back with col2im. Images are independent, so the batch is
// split over the cores. With pooled.on (stride 1 only) dy holds a
// pooling's inputs and the output gradient is built from pooled.g.
func conv2DBackInput[T float32 | float64](im *floatImpl[T], g *convGeom, dy, w, dx []T, pooled pooledGrad[T]) {
	clear(dx)
	k, p := g.k(), g.p()
	if k == 0 || p == 0 || g.og == 0 {
		return
	}
	if !pooled.on && g.backGEMM() {
		conv2DBackInputGEMM(im, g, dy, w, dx)
		return
	}
	l := im.getLoop()
	l.kind, l.cg, l.pooled = loopConv2DBackInput, *g, pooled
	l.a, l.b, l.c = dy, w, dx
	var wtp *[]T
	if tapRowsFor[T]() != nil && g.pitched() && g.og <= 16 {
		// float32, stride 1, at most 16 output channels a group: the
		// taps' filter entries in TapRows' order, for
		// conv2DBackInputTaps.
		wtp = im.getScratch(len(w))
		l.d = tapOrder(*wtp, w, g)
	}
	parallel.ForBody(g.n, max(1, (1<<18)/max(1, g.o*p*k)), l)
	im.putLoop(l)
	if wtp != nil {
		im.putScratch(wtp)
	}
}

// conv2DBackFilter accumulates dW_gᵀ += col · dy_gᵀ over the images. The
// batch is cut into one slice per core; each slice sums into its own
// partial gradient, and the partials are added (and transposed back) in
// slice order, so the result does not depend on which core finished first.
// With pooled.on (stride 1 only) dy holds a pooling's inputs and the
// output gradient is built from pooled.g.
func conv2DBackFilter[T float32 | float64](im *floatImpl[T], g *convGeom, x, dy, dw []T, pooled pooledGrad[T]) {
	clear(dw)
	k, p := g.k(), g.p()
	if k == 0 || p == 0 || g.og == 0 || g.n == 0 {
		return
	}
	if !pooled.on && g.backGEMM() {
		conv2DBackFilterGEMM(im, g, x, dy, dw)
		return
	}
	slices := min(g.n, parallel.Workers())
	if g.n*g.o*p*k < 1<<18 {
		slices = 1
	}
	if dot, reduce := dotRowsFor[T](), reduceLanesFor[T](); dot != nil && g.pitched() {
		// float32, stride 1: dot products on the pitched planes
		// (conv2DBackFilterDirect), summed in 16-lane partials.
		partp := im.getScratch(slices * len(dw) * 16)
		part := (*partp)[:slices*len(dw)*16]
		clear(part)
		l := im.getLoop()
		l.kind, l.cg, l.pooled = loopConv2DBackFilter, *g, pooled
		l.a, l.b, l.c, l.d, l.n = x, dy, dw, part, slices
		parallel.ForBody(slices, 1, l)
		im.putLoop(l)
		// The slices' lane sums are added in slice order, so the result
		// does not depend on which core finished first.
		reduce(dw, part)
		add := vecAdd[T]()
		for sl := 1; sl < slices; sl++ {
			tmp := part[:len(dw)] // slice 0's partials are spent
			reduce(tmp, part[sl*len(dw)*16:])
			add(dw, dw, tmp)
		}
		im.putScratch(partp)
		return
	}
	partp := im.getScratch(slices * len(dw))
	part := (*partp)[:slices*len(dw)]
	clear(part)
	l := im.getLoop()
	l.kind, l.cg, l.pooled = loopConv2DBackFilter, *g, pooled
	l.a, l.b, l.c, l.d, l.n = x, dy, dw, part, slices
	parallel.ForBody(slices, 1, l)
	im.putLoop(l)
	// The partials are transposed per group, [k][og] (see
	// conv2DBackFilterPitched): transpose them back while adding them up.
	for sl := range slices {
		ps := part[sl*len(dw) : (sl+1)*len(dw)]
		for gi := range g.groups {
			pg, dg := ps[gi*g.og*k:(gi+1)*g.og*k], dw[gi*g.og*k:(gi+1)*g.og*k]
			for kk := range k {
				for oc, v := range pg[kk*g.og : (kk+1)*g.og] {
					dg[oc*k+kk] += v
				}
			}
		}
	}
	im.putScratch(partp)
}

// conv2DForwardRun is the loop body of conv2DForward, over items [lo, hi).
func (l *loop[T]) conv2DForwardRun(lo, hi int) {
	g := &l.cg
	x, w, out := l.a, l.b, l.c
	k, p := g.k(), g.p()

	if g.pitched() {
		l.conv2DForwardPitched(lo, hi)
		return
	}
	colp := l.im.getScratch(k * p)
	col := *colp
	for n := lo; n < hi; n++ {
		for gi := range g.groups {
			xg := x[(n*g.c+gi*g.cg)*g.h*g.w:]
			im2col(g, xg, col)
			wg := w[gi*g.og*k : (gi+1)*g.og*k]
			og := out[(n*g.o+gi*g.og)*p : (n*g.o+(gi+1)*g.og)*p]
			l.im.gemmStrided(false, false, g.og, p, k, wg, 0, col, 0, og, 1)
		}
	}
	l.im.putScratch(colp)
}

// conv2DBackInputRun is the loop body of conv2DBackInput, over items [lo, hi).
func (l *loop[T]) conv2DBackInputRun(lo, hi int) {
	g := &l.cg
	dy, w, dx := l.a, l.b, l.c
	k, p := g.k(), g.p()

	if g.pitched() {
		l.conv2DBackInputPitched(lo, hi)
		return
	}
	colp := l.im.getScratch(k * p)
	col := *colp
	for n := lo; n < hi; n++ {
		for gi := range g.groups {
			wg := w[gi*g.og*k : (gi+1)*g.og*k]
			dyg := dy[(n*g.o+gi*g.og)*p : (n*g.o+(gi+1)*g.og)*p]
			l.im.gemmStrided(true, false, k, p, g.og, wg, 0, dyg, 0, col, 1)
			col2im(g, col, dx[(n*g.c+gi*g.cg)*g.h*g.w:])
		}
	}
	l.im.putScratch(colp)
}

// conv2DBackFilterRun is the loop body of conv2DBackFilter, over items [lo, hi).
func (l *loop[T]) conv2DBackFilterRun(lo, hi int) {
	g := &l.cg
	x, dy, dw, part, slices := l.a, l.b, l.c, l.d, l.n
	k, p := g.k(), g.p()

	if g.pitched() {
		l.conv2DBackFilterPitched(lo, hi)
		return
	}
	// As on the pitched path: colᵀ·dy, transposed partials, so that the
	// GEMM packs the output gradient rather than the column matrix.
	colp := l.im.getScratch(k * p)
	col := *colp
	for sl := lo; sl < hi; sl++ {
		acc := part[sl*len(dw) : (sl+1)*len(dw)]
		for n := sl * g.n / slices; n < (sl+1)*g.n/slices; n++ {
			for gi := range g.groups {
				im2col(g, x[(n*g.c+gi*g.cg)*g.h*g.w:], col)
				dyg := dy[(n*g.o+gi*g.og)*p : (n*g.o+(gi+1)*g.og)*p]
				l.im.gemm(false, true, k, g.og, p, 1, col, p, 0, dyg, p, 0, 1, acc[gi*g.og*k:(gi+1)*g.og*k], g.og, 0, 1)
			}
		}
	}
	l.im.putScratch(colp)
}
