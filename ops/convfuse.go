package ops

import (
	"fmt"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/kernels/conv"
	"github.com/sporeml/spore/internal/kernels/parallel"
	"github.com/sporeml/spore/internal/kernels/vec"
	"github.com/sporeml/spore/tensor"
)

// The compiler's convolution epilogue (package compile: ConvEpilogue, whose
// Anchors run the pooled convolution and the pooled ReLU gradient) fuses chains of
// ops whose intermediates nobody else reads. Their kernels live here, with
// the convolution and pooling machinery they share, and compute exactly
// what the chain computes (the same GEMMs, adds and comparisons, in the
// same order), so that a compiled plan agrees with PyNative mode. Model
// code has no use for them.

// ConvEpilogueAttrs are the attributes of the fused convolution: the
// convolution's, which per-channel operands (each of shape [1, O, 1, 1],
// after x and w in this order) it applies — a bias added, a scale
// multiplied, a shift added: an inference BatchNorm is the scale and the
// shift — whether ReLU follows, and the pooling that follows, if any.
type ConvEpilogueAttrs struct {
	Conv  ConvAttrs
	Bias  bool
	Scale bool
	Shift bool
	ReLU  bool
	// Pool is the pooling applied last; nil for none. Its windows must
	// lie inside the convolution's output (PoolFits).
	Pool *PoolAttrs
	// AvgPool makes Pool an average pooling rather than a max pooling.
	AvgPool bool
}

// String prints every attribute, for IR dumps and CSE keys.
func (a ConvEpilogueAttrs) String() string {
	s := fmt.Sprintf("%v bias=%v relu=%v", a.Conv, a.Bias, a.ReLU)
	if a.Scale || a.Shift {
		s += fmt.Sprintf(" scale=%v shift=%v", a.Scale, a.Shift)
	}
	if a.Pool != nil {
		kind := "max"
		if a.AvgPool {
			kind = "avg"
		}
		s += fmt.Sprintf(" pool=[%s kernel=%v stride=%v]", kind, a.Pool.Kernel, a.Pool.Stride)
	}
	return s
}

// channelOperands is the number of per-channel operands after x and w.
func (a ConvEpilogueAttrs) channelOperands() int {
	n := 0
	for _, on := range []bool{a.Bias, a.Scale, a.Shift} {
		if on {
			n++
		}
	}
	return n
}

// PoolFits reports whether a pooling with attributes p over an input of
// shape xs has every window inside the input (no padding), the case the
// fused kernels handle.
func PoolFits(p PoolAttrs, xs tensor.Shape) bool {
	if len(xs) != 4 || p.Pads != [4]int{} || p.Kernel[0] < 1 || p.Kernel[1] < 1 || p.Stride[0] < 1 || p.Stride[1] < 1 {
		return false
	}
	return xs[2] >= p.Kernel[0] && xs[3] >= p.Kernel[1]
}

// InferConvEpilogue is the shape rule of the fused convolution
//
//	Pool(ReLU((Conv2D(x, w) + bias)·scale + shift))
//
// with each of the bias, the scale, the shift, the ReLU and the (max or
// average) pooling optional (see ConvEpilogueAttrs), for stride-1
// convolutions; attrs must be a ConvEpilogueAttrs.
func InferConvEpilogue(attrs any, in []*tensor.Tensor) tensor.Meta {
	a, ok := attrs.(ConvEpilogueAttrs)
	if !ok {
		core.Panicf("ConvEpilogue", "attributes are %T, want ops.ConvEpilogueAttrs", attrs)
	}
	g, pg := epilogueGeometry(a, in, true)
	if a.Pool != nil {
		return tensor.Meta{Shape: tensor.Shape{g.n, g.o, pg.oh, pg.ow}, DType: in[0].DType()}
	}
	return tensor.Meta{Shape: tensor.Shape{g.n, g.o, g.oh, g.ow}, DType: in[0].DType()}
}

// ConvEpilogueKernel returns the fused convolution's CPU kernel for a
// float dtype (nil for another): each output plane is finished while it is
// still in cache, straight from the GEMM's pitched result, so the
// convolution's output is never written whole, read back for the ReLU, and
// read again for the pooling.
func ConvEpilogueKernel(dt tensor.DType) core.KernelFunc {
	switch dt {
	case tensor.Float32:
		return convEpilogueKernel(impl32)
	case tensor.Float64:
		return convEpilogueKernel(impl64)
	}
	return nil
}

// InferMaxPoolReLUGrad is the shape rule of ReLUGrad(a, MaxPool2DGrad(a,
// dy)) fused, for a max pooling (attrs, a PoolAttrs) whose windows lie
// inside a.
func InferMaxPoolReLUGrad(attrs any, in []*tensor.Tensor) tensor.Meta {
	a, ok := attrs.(PoolAttrs)
	if !ok {
		core.Panicf("MaxPoolReLUGrad", "attributes are %T, want ops.PoolAttrs", attrs)
	}
	if len(in) != 2 {
		core.Panicf("MaxPoolReLUGrad", "got %d operands, want 2", len(in))
	}
	x, dy := in[0], in[1]
	checkPoolGrad("MaxPoolReLUGrad", a, x.Shape(), dy.Shape(), x.DType(), dy.DType())
	if !PoolFits(a, x.Shape()) {
		core.Panicf("MaxPoolReLUGrad", "pooling %v has windows outside input %v", a, x.Shape())
	}
	return x.Meta()
}

// MaxPoolReLUGradKernel returns the CPU kernel of ReLUGrad(a,
// MaxPool2DGrad(a, dy)) fused, for a float dtype (nil for another): one
// pass that routes each dy to its window's winner only where the winner is
// positive.
func MaxPoolReLUGradKernel(dt tensor.DType) core.KernelFunc {
	switch dt {
	case tensor.Float32:
		return maxPoolReLUGradKernel(impl32)
	case tensor.Float64:
		return maxPoolReLUGradKernel(impl64)
	}
	return nil
}

// epilogueGeometry returns a fused convolution's and its pooling's
// geometries. With check (shape inference) it first checks the operands;
// the kernel, which runs on operands inference has checked, skips that
// and, unlike the checks, allocates nothing.
func epilogueGeometry(a ConvEpilogueAttrs, in []*tensor.Tensor, check bool) (convGeom, poolGeom) {
	const op = "ConvEpilogue"
	if check {
		want := 2 + a.channelOperands()
		if len(in) != want {
			core.Panicf(op, "got %d operands, want %d (bias=%v scale=%v shift=%v)", len(in), want, a.Bias, a.Scale, a.Shift)
		}
		checkFloatPair(op, in[0], in[1])
	}
	x, w := in[0], in[1]
	g := convGeometry(op, a.Conv, x.Shape(), w.Shape())
	if check {
		if !g.pitched() {
			core.Panicf(op, "stride %v: the fused kernel takes stride-1 convolutions only", a.Conv.Stride)
		}
		names := []string{}
		for i, on := range []bool{a.Bias, a.Scale, a.Shift} {
			if on {
				names = append(names, []string{"bias", "scale", "shift"}[i])
			}
		}
		for i, name := range names {
			b := in[2+i]
			if b.DType() != x.DType() || !b.Shape().Equal(tensor.Shape{1, g.o, 1, 1}) {
				core.Panicf(op, "%s is %v %v, want %v [1 %d 1 1]", name, b.Shape(), b.DType(), x.DType(), g.o)
			}
		}
		if a.Pool != nil {
			ys := tensor.Shape{g.n, g.o, g.oh, g.ow}
			if !PoolFits(*a.Pool, ys) {
				core.Panicf(op, "pooling %v has windows outside the convolution's output %v", *a.Pool, ys)
			}
			poolGeometry(op, *a.Pool, ys)
		}
	}
	var pg poolGeom
	if p := a.Pool; p != nil {
		pg = poolGeom{nc: g.n * g.o, h: g.oh, w: g.ow, kh: p.Kernel[0], kw: p.Kernel[1], sh: p.Stride[0], sw: p.Stride[1]}
		pg.oh, pg.ow = (g.oh-pg.kh)/pg.sh+1, (g.ow-pg.kw)/pg.sw+1
	}
	return g, pg
}

// convEpilogueKernel returns the fused convolution's kernel for T.
func convEpilogueKernel[T float32 | float64](im *floatImpl[T]) core.KernelFunc {
	return func(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
		a := attrs.(ConvEpilogueAttrs)
		g, pg := epilogueGeometry(a, in, false)
		x, w, y := in[0].Data().([]T), in[1].Data().([]T), out.Data().([]T)
		if len(y) == 0 {
			return
		}
		l := im.getLoop()
		l.kind, l.cg, l.pg = loopConv2DEpilogue, g, pg
		l.a, l.b, l.c = x, w, y
		next := 2
		for _, op := range [...]struct {
			on  bool
			dst *[]T
		}{{a.Bias, &l.ep.bias}, {a.Scale, &l.ep.scale}, {a.Shift, &l.ep.shift}} {
			if op.on {
				*op.dst = in[next].Data().([]T)
				next++
			}
		}
		l.ep.relu, l.ep.avg = a.ReLU, a.AvgPool
		if a.Pool != nil {
			l.ep.pool = &l.pg
		}
		// Images are split over the cores. Splitting a batch-1
		// convolution's output channels instead (one column matrix, each
		// core its rows of the filter) made the CNN fixture and LeNet-5 at
		// batch 1 twice as slow on two threads, side by side in one run
		// on a shared machine (36 against 17 µs, 31 against 17 µs): the
		// hand-off costs more than half of a convolution this small.
		parallel.ForBody(g.n, max(1, (1<<18)/max(1, g.o*g.p()*g.k())), l)
		im.putLoop(l)
	}
}

// conv2DEpilogueRun is the loop body of the fused convolution, over images
// [lo, hi): the pitched convolution with the epilogue applied to each
// output plane straight from the GEMM's result.
func (l *loop[T]) conv2DEpilogueRun(lo, hi int) {
	l.pitchedForward(lo, hi, l.ep)
}

// maxPoolReLUGradKernel returns the fused pooling gradient's kernel for T.
func maxPoolReLUGradKernel[T float32 | float64](im *floatImpl[T]) core.KernelFunc {
	return func(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
		g := poolGeometry("MaxPoolReLUGrad", attrs.(PoolAttrs), in[0].Shape())
		dx := out.Data().([]T)
		clear(dx)
		l := im.getLoop()
		l.kind, l.pg = loopMaxPoolReLUGrad, g
		l.a, l.b, l.c = in[0].Data().([]T), in[1].Data().([]T), dx
		parallel.ForBody(g.nc, g.grain(), l)
		im.putLoop(l)
	}
}

// maxPoolReLUGradRun is the loop body of the fused pooling gradient,
// over planes [lo, hi).
func (l *loop[T]) maxPoolReLUGradRun(lo, hi int) {
	g := &l.pg
	a, dy, dx := l.a, l.b, l.c
	plane, oplane := g.h*g.w, g.oh*g.ow
	conv.MaxPoolValidBackwardReLU(dx[lo*plane:hi*plane], a[lo*plane:hi*plane], dy[lo*oplane:hi*oplane], hi-lo, g.h, g.w, g.kh, g.kw, g.sh, g.sw, g.oh, g.ow)
}

// vecAddScalar returns the SIMD dst = a + s for T.
func vecAddScalar[T float32 | float64]() func(dst, a []T, s T) {
	if f, ok := any(vec.AddScalar).(func(dst, a []T, s T)); ok {
		return f
	}
	f, _ := any(vec.AddScalarF64).(func(dst, a []T, s T))
	return f
}

// vecMulScalar returns the SIMD dst = a·s for T.
func vecMulScalar[T float32 | float64]() func(dst, a []T, s T) {
	if f, ok := any(vec.MulScalar).(func(dst, a []T, s T)); ok {
		return f
	}
	f, _ := any(vec.MulScalarF64).(func(dst, a []T, s T))
	return f
}

// vecRelu returns the SIMD ReLU for T, the ReLU op's own kernel.
func vecRelu[T float32 | float64]() func(dst, x []T) {
	if f, ok := any(vec.Relu).(func(dst, x []T)); ok {
		return f
	}
	f, _ := any(vec.ReluF64).(func(dst, x []T))
	return f
}
