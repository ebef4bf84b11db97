package ops

import (
	"fmt"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/kernels/conv"
	"github.com/sporeml/spore/tensor"
)

// conv2DBackFilterDirect is the float32 stride-1 filter gradient over
// slices [lo, hi): for a run of images at a time, the padded input planes
// and the pitched output gradients (zero in the thrown-away columns, so
// they add nothing), then for each input channel and window row one
// conv.DotRowsBatch call (dot) that adds the dot products of every output
// channel's gradient with the window row's taps — the rows of the column
// matrix, read in place from the padded plane — over the whole run to the
// slice's 16-lane partials (layout [o][cg][kh][kw][16]; conv2DBackFilter
// sums the lanes and the slices). The sums stay in registers from the
// first image of a run to the last (see run below for its length).
//
// No column matrix is built: in the CPU profile of LeNet-5's batch-64
// training step (one thread), building it and multiplying it by the
// output gradient took about a third of the step.
func (l *loop[T]) conv2DBackFilterDirect(lo, hi int, dot func(part []T, ldp int, a []T, lda, ma int, b []T, ldb, nb, n, batch, strideA, strideB int)) {
	g := &l.cg
	x, dy, part, slices := l.a, l.b, l.d, l.n
	hp, wp := g.pitch()
	plane, np := (hp+1)*wp, g.oh*wp
	kk := g.cg * g.kh * g.kw
	nw := g.o * kk
	cp, onp := g.c*plane, g.o*np
	// A run's buffers fit in 256 KiB, and the output-gradient rows a
	// DotRowsBatch block reads (four channels of the run's images) in 24
	// KiB of L1: more images a call (LeNet-5's 8×8 second layer) saves
	// reloading the partial sums, but rows that fall out of L1 (its 24×24
	// first layer) are read again from L2 for every window row.
	run := max(1, min(32, (1<<16)/(cp+onp), 6144/(min(g.og, 4)*np)))

	sp := l.im.getScratch(run * (cp + onp))
	padded, dyp := (*sp)[:run*cp], (*sp)[run*cp:]
	for sl := lo; sl < hi; sl++ {
		acc := part[sl*nw*16 : (sl+1)*nw*16]
		end := (sl + 1) * g.n / slices
		for n0 := sl * g.n / slices; n0 < end; n0 += run {
			m := min(run, end-n0)
			for k := range m {
				conv.PadPlanes(padded[k*cp:], x[(n0+k)*g.c*g.h*g.w:], g.c, g.h, g.w, g.pt, g.pl, hp, wp)
				l.outGradPitched(dyp[k*onp:], dy, n0+k, wp)
			}
			for gi := range g.groups {
				a := dyp[gi*g.og*np:]
				for c := range g.cg {
					pc := padded[(gi*g.cg+c)*plane:]
					for ki := range g.kh {
						dst := acc[((gi*g.og*g.cg+c)*g.kh+ki)*g.kw*16:]
						dot(dst, kk*16, a, np, g.og, pc[ki*g.dh*wp:], g.dw, g.kw, np, m, onp, cp)
					}
				}
			}
		}
	}
	l.im.putScratch(sp)
}

// dotRowsFor returns conv.DotRowsBatch for float32 and nil for float64,
// whose filter gradient stays on the GEMM. Converting a function (a
// pointer) to an interface allocates nothing.
func dotRowsFor[T float32 | float64]() func(part []T, ldp int, a []T, lda, ma int, b []T, ldb, nb, n, batch, strideA, strideB int) {
	f, _ := any(conv.DotRowsBatch).(func(part []T, ldp int, a []T, lda, ma int, b []T, ldb, nb, n, batch, strideA, strideB int))
	return f
}

// reduceLanesFor returns conv.ReduceLanes for float32 and nil for float64.
func reduceLanesFor[T float32 | float64]() func(dst, src []T) {
	f, _ := any(conv.ReduceLanes).(func(dst, src []T))
	return f
}

// pooledGrad is where a pool-fused convolution gradient takes its output
// gradient from: with on, the kernel's output-gradient operand holds the
// pooling's inputs (the ReLU's outputs) and g the pooling's output
// gradient, of windows kh×kw at stride sh×sw giving oh×ow (see
// ConvGradPoolAttrs).
type pooledGrad[T float32 | float64] struct {
	on                     bool
	g                      []T
	kh, kw, sh, sw, oh, ow int
}

// outGradPitched writes image n's output gradient at the pitch wp of the
// padded planes into dyp, zero in the thrown-away columns: a copy of dy's
// planes, or, for the pool-fused gradients, the ReLU-masked max-pool
// gradient built from the pooling's inputs dy and its gradient.
func (l *loop[T]) outGradPitched(dyp, dy []T, n, wp int) {
	g, pg := &l.cg, &l.pooled
	p := g.p()
	if !pg.on {
		conv.PitchRows(dyp, dy[n*g.o*p:(n+1)*g.o*p], g.o, g.oh, g.ow, wp)
		return
	}
	pp := pg.oh * pg.ow
	conv.MaxPoolReLUGradPitched(dyp, wp, dy[n*g.o*p:(n+1)*g.o*p], pg.g[n*g.o*pp:(n+1)*g.o*pp],
		g.o, g.oh, g.ow, pg.kh, pg.kw, pg.sh, pg.sw, pg.oh, pg.ow)
}

// ConvGradPoolAttrs are the attributes of the pool-fused convolution
// gradients (package compile, ConvBackward): the convolution gradient's and
// those of the max pooling whose ReLU-masked gradient is its output
// gradient.
type ConvGradPoolAttrs struct {
	Grad ConvGradAttrs
	Pool PoolAttrs
}

// String prints every attribute, for IR dumps and CSE keys.
func (a ConvGradPoolAttrs) String() string {
	return fmt.Sprintf("%v pool=[kernel=%v stride=%v]", a.Grad, a.Pool.Kernel, a.Pool.Stride)
}

// PoolGradFuses reports whether the gradient of a max pooling with
// attributes p over an input of shape xs can be built inside a
// convolution gradient: every window inside the input (PoolFits) and no
// two windows overlapping, so that each element receives at most one
// window's gradient.
func PoolGradFuses(p PoolAttrs, xs tensor.Shape) bool {
	return PoolFits(p, xs) && p.Stride[0] >= p.Kernel[0] && p.Stride[1] >= p.Kernel[1]
}

// checkGradPool checks the pool-fused gradients' shared operands: the
// pooling's input act (the convolution's output, of shape dys), its
// output gradient gp, and the geometry, naming op.
func checkGradPool(op string, a ConvGradPoolAttrs, xs, ws tensor.Shape, act, gp *tensor.Tensor) {
	if g := convGeometry(op, a.Grad.ConvAttrs, xs, ws); !g.pitched() {
		core.Panicf(op, "stride %v: the fused gradient takes stride-1 convolutions only", a.Grad.Stride)
	}
	checkConvGrad(op, a.Grad.ConvAttrs, xs, ws, act.Shape())
	checkPoolGrad(op, a.Pool, act.Shape(), gp.Shape(), act.DType(), gp.DType())
	if !PoolGradFuses(a.Pool, act.Shape()) {
		core.Panicf(op, "pooling %v over %v has windows that overlap or leave the input", a.Pool, act.Shape())
	}
}

// gradPoolAttrs returns attrs as ConvGradPoolAttrs, naming op if it is
// not.
func gradPoolAttrs(op string, attrs any, in []*tensor.Tensor) ConvGradPoolAttrs {
	a, ok := attrs.(ConvGradPoolAttrs)
	if !ok {
		core.Panicf(op, "attributes are %T, want ops.ConvGradPoolAttrs", attrs)
	}
	if len(in) != 3 {
		core.Panicf(op, "got %d operands, want 3", len(in))
	}
	return a
}

// InferConvInputGradPool is the shape rule of
//
//	Conv2DBackpropInput(MaxPool2DReLUGrad(act, gp), w)
//
// fused, with operands (act, gp, w) and ConvGradPoolAttrs: the input
// gradient of a stride-1 convolution whose output act went through a ReLU
// and a max pooling with non-overlapping windows, given the pooling's
// output gradient gp.
func InferConvInputGradPool(attrs any, in []*tensor.Tensor) tensor.Meta {
	const op = "Conv2DBackpropInputPool"
	a := gradPoolAttrs(op, attrs, in)
	act, gp, w := in[0], in[1], in[2]
	checkFloatPair(op, act, w)
	checkGradPool(op, a, a.Grad.Shape, w.Shape(), act, gp)
	return tensor.Meta{Shape: a.Grad.Shape, DType: act.DType()}
}

// InferConvFilterGradPool is the shape rule of
//
//	Conv2DBackpropFilter(x, MaxPool2DReLUGrad(act, gp))
//
// fused, with operands (x, act, gp), as InferConvInputGradPool.
func InferConvFilterGradPool(attrs any, in []*tensor.Tensor) tensor.Meta {
	const op = "Conv2DBackpropFilterPool"
	a := gradPoolAttrs(op, attrs, in)
	x, act, gp := in[0], in[1], in[2]
	checkFloatPair(op, x, act)
	checkGradPool(op, a, x.Shape(), a.Grad.Shape, act, gp)
	return tensor.Meta{Shape: a.Grad.Shape, DType: x.DType()}
}

// ConvInputGradPoolKernel returns the CPU kernel of the fused input
// gradient (InferConvInputGradPool) for a float dtype, nil for another:
// Conv2DBackpropInput's, with each image's pitched output gradient built
// from the pooled gradient (conv.MaxPoolReLUGradPitched) instead of
// copied, so the full-size gradient is never written.
//
// It is not inlined: a kernel closure compiled into the calling package
// (compile) loses the escape facts of the generic functions it calls, and
// its convolution geometry would be allocated on every call.
//
//go:noinline
func ConvInputGradPoolKernel(dt tensor.DType) core.KernelFunc {
	switch dt {
	case tensor.Float32:
		return convInputGradPoolKernel(impl32)
	case tensor.Float64:
		return convInputGradPoolKernel(impl64)
	}
	return nil
}

// ConvFilterGradPoolKernel returns the CPU kernel of the fused filter
// gradient (InferConvFilterGradPool), as ConvInputGradPoolKernel (not
// inlined either).
//
//go:noinline
func ConvFilterGradPoolKernel(dt tensor.DType) core.KernelFunc {
	switch dt {
	case tensor.Float32:
		return convFilterGradPoolKernel(impl32)
	case tensor.Float64:
		return convFilterGradPoolKernel(impl64)
	}
	return nil
}

// pooledFrom returns the pooled-gradient source of the fused gradients'
// kernels: gp and the pooling's geometry over act's shape.
func pooledFrom[T float32 | float64](p PoolAttrs, act tensor.Shape, gp []T) pooledGrad[T] {
	return pooledGrad[T]{on: true, g: gp, kh: p.Kernel[0], kw: p.Kernel[1], sh: p.Stride[0], sw: p.Stride[1],
		oh: (act[2]-p.Kernel[0])/p.Stride[0] + 1, ow: (act[3]-p.Kernel[1])/p.Stride[1] + 1}
}

func convInputGradPoolKernel[T float32 | float64](im *floatImpl[T]) core.KernelFunc {
	return func(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
		a := attrs.(ConvGradPoolAttrs)
		g := convGeometry("Conv2DBackpropInputPool", a.Grad.ConvAttrs, a.Grad.Shape, in[2].Shape())
		pooled := pooledFrom(a.Pool, in[0].Shape(), in[1].Data().([]T))
		conv2DBackInput(im, &g, in[0].Data().([]T), in[2].Data().([]T), out.Data().([]T), pooled)
	}
}

func convFilterGradPoolKernel[T float32 | float64](im *floatImpl[T]) core.KernelFunc {
	return func(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
		a := attrs.(ConvGradPoolAttrs)
		g := convGeometry("Conv2DBackpropFilterPool", a.Grad.ConvAttrs, in[0].Shape(), a.Grad.Shape)
		pooled := pooledFrom(a.Pool, in[1].Shape(), in[2].Data().([]T))
		conv2DBackFilter(im, &g, in[0].Data().([]T), in[1].Data().([]T), out.Data().([]T), pooled)
	}
}

// col2ImF32For returns conv.Col2ImPitchedF32 (the input gradient's column
// sums in one kernel call, bit for bit Col2ImPitched with vec.Add) for
// float32 and nil for float64.
func col2ImF32For[T float32 | float64]() func(padded, col []T, ld, c, hp, wp, kh, kw, dilH, dilW, outH int) {
	f, _ := any(conv.Col2ImPitchedF32).(func(padded, col []T, ld, c, hp, wp, kh, kw, dilH, dilW, outH int))
	return f
}

// conv2DBackInputTaps is the float32 stride-1 input gradient over images
// [lo, hi) when each group has at most 16 output channels: per image, the
// pitched output gradient, then per group one conv.TapRows call that adds
// every tap's weighted sum of the output-gradient rows straight into the
// padded planes (l.d holds the filter in TapRows' order), then the crop.
// It does the multiply-adds of the GEMM and col2im path (W_gᵀ·dy_g, then
// the column sums) without the column matrix, whose product with K = og
// ≤ 16 is bound by writing and re-reading it.
func (l *loop[T]) conv2DBackInputTaps(lo, hi int) {
	g := &l.cg
	dy, dx, wt := l.a, l.c, l.d
	taps := tapRowsFor[T]()
	hp, wp := g.pitch()
	plane, np := (hp+1)*wp, g.oh*wp
	per := g.og * g.k() // filter entries of a group

	sp := l.im.getScratch(g.c*plane + g.o*np)
	pgrad, dyp := (*sp)[:g.c*plane], (*sp)[g.c*plane:]
	for n := lo; n < hi; n++ {
		l.outGradPitched(dyp, dy, n, wp)
		clear(pgrad)
		for gi := range g.groups {
			taps(pgrad[gi*g.cg*plane:], dyp[gi*g.og*np:], np, g.og, wt[gi*per:(gi+1)*per], np,
				g.cg, g.kh, g.kw, plane, g.dh*wp, g.dw)
		}
		conv.CropPlanes(dx[n*g.c*g.h*g.w:], pgrad, g.c, g.h, g.w, g.pt, g.pl, hp, wp)
	}
	l.im.putScratch(sp)
}

// tapOrder lays the filter w ([o][cg][kh][kw]) out in dst group by group
// in conv.TapRows' order, [kw][kh][cg][og], and returns dst.
func tapOrder[T float32 | float64](dst, w []T, g *convGeom) []T {
	per := g.og * g.k()
	for gi := range g.groups {
		d := dst[gi*per : (gi+1)*per]
		i := 0
		for kj := range g.kw {
			for ki := range g.kh {
				for ci := range g.cg {
					for oc := range g.og {
						d[i] = w[(((gi*g.og+oc)*g.cg+ci)*g.kh+ki)*g.kw+kj]
						i++
					}
				}
			}
		}
	}
	return dst[:len(w)]
}

// tapRowsFor returns conv.TapRows for float32 and nil for float64, whose
// input gradient stays on the GEMM.
func tapRowsFor[T float32 | float64]() func(dx, dy []T, ldy, og int, wt []T, n, c, kh, kw, plane, rowStep, colStep int) {
	f, _ := any(conv.TapRows).(func(dx, dy []T, ldy, og int, wt []T, n, c, kh, kw, plane, rowStep, colStep int))
	return f
}
