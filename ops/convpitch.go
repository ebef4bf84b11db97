package ops

import (
	"github.com/sporeml/spore/internal/kernels/conv"
	"github.com/sporeml/spore/internal/kernels/vec"
)

// The stride-1 convolutions run on pitched column matrices (see package
// conv): each row of the column matrix is one copy of outH·wp elements of a
// padded image instead of outH copies of outW, which on LeNet's second
// layer (12×12 inputs, 8×8 outputs) is 8× fewer copy calls. The profile
// of a LeNet training step before this path spent 30% of its time in
// im2col and col2im.

// pitched reports whether the pitched path applies: unit strides (any
// dilation, padding and groups).
func (g *convGeom) pitched() bool { return g.sh == 1 && g.sw == 1 }

// pitch returns the padded planes' height and row pitch.
func (g *convGeom) pitch() (hp, wp int) {
	return conv.Pitch(g.h, g.w, g.kh, g.kw, g.pt, g.pl, g.dh, g.dw, g.oh, g.ow)
}

// One GEMM per image and group: laying several images' column matrices
// side by side in one longer GEMM (tried with 32k and 64k-element blocks,
// alternating in one process) made LeNet's layers and their gradients no
// faster at batch 64, within 3%.

// conv2DForwardPitched is conv2DForwardRun's stride-1 path over images
// [lo, hi), without an epilogue.
func (l *loop[T]) conv2DForwardPitched(lo, hi int) {
	l.pitchedForward(lo, hi, convEpilogue[T]{})
}

// convEpilogue is what a fused convolution applies to each output plane,
// in this order; the zero value applies nothing.
type convEpilogue[T float32 | float64] struct {
	bias  []T       // added per channel, if not nil
	scale []T       // then multiplied by, per channel, if not nil
	shift []T       // then added, per channel, if not nil
	relu  bool      // then ReLU
	pool  *poolGeom // then pooled (windows inside the plane), if not nil
	avg   bool      // average pooling rather than max
}

// pitchedForward computes the stride-1 convolution of images [lo, hi) —
// per image, pad, build the pitched column matrix of each group, multiply
// — then per output plane applies the epilogue ep, pooling or else keeping
// the first ow columns of each row.
func (l *loop[T]) pitchedForward(lo, hi int, ep convEpilogue[T]) {
	g := &l.cg
	x, w, out := l.a, l.b, l.c
	k := g.k()
	hp, wp := g.pitch()
	plane, np := (hp+1)*wp, g.oh*wp
	outPlane := ep.outPlane(g)
	plain := ep.bias == nil && ep.scale == nil && ep.shift == nil && !ep.relu && ep.pool == nil

	sp := l.im.getScratch(g.c*plane + k*np + g.og*np)
	padded := (*sp)[:g.c*plane]
	col := (*sp)[g.c*plane : g.c*plane+k*np]
	res := (*sp)[g.c*plane+k*np:]
	for n := lo; n < hi; n++ {
		conv.PadPlanes(padded, x[n*g.c*g.h*g.w:], g.c, g.h, g.w, g.pt, g.pl, hp, wp)
		for gi := range g.groups {
			conv.Im2ColPitched(col, np, padded[gi*g.cg*plane:], g.cg, hp, wp, g.kh, g.kw, g.dh, g.dw, g.oh)
			wg := w[gi*g.og*k : (gi+1)*g.og*k]
			og := out[(n*g.o+gi*g.og)*outPlane : (n*g.o+(gi+1)*g.og)*outPlane]
			if wp == g.ow && plain {
				// No thrown-away columns and nothing to apply: the
				// GEMM writes the output itself.
				l.im.gemmStrided(false, false, g.og, np, k, wg, 0, col, 0, og, 1)
				continue
			}
			l.im.gemmStrided(false, false, g.og, np, k, wg, 0, col, 0, res, 1)
			ep.finish(g, og, res, gi*g.og, g.og, wp)
		}
	}
	l.im.putScratch(sp)
}

// outPlane is the size of one output plane of the convolution g followed
// by ep: pooled, or the convolution's own.
func (ep *convEpilogue[T]) outPlane(g *convGeom) int {
	if pg := ep.pool; pg != nil {
		return pg.oh * pg.ow
	}
	return g.p()
}

// finish applies ep to the pitched GEMM result res of output channels
// [c0, c0+nc) (planes of g.oh rows of wp) and writes them, pooled or
// unpitched, into og.
func (ep *convEpilogue[T]) finish(g *convGeom, og, res []T, c0, nc, wp int) {
	np := g.oh * wp
	res = res[:nc*np]
	bias, relu, pg := ep.bias, ep.relu, ep.pool
	affine := bias != nil || ep.scale != nil || ep.shift != nil || relu
	if r32, ok := any(res).([]float32); ok && affine {
		// float32: the bias, scale, shift and ReLU in one pass per
		// plane (conv.AffineReLU), with the same roundings.
		ep32 := any(ep).(*convEpilogue[float32])
		for oc := range nc {
			c := c0 + oc
			b, sc, sh := conv.NoAdd, float32(1), conv.NoAdd
			if ep32.bias != nil {
				b = ep32.bias[c]
			}
			if ep32.scale != nil {
				sc = ep32.scale[c]
			}
			if ep32.shift != nil {
				sh = ep32.shift[c]
			}
			conv.AffineReLU(r32[oc*np:(oc+1)*np], b, sc, sh, relu)
		}
	} else if !ok {
		// One channel at a time, each step a pass over a plane still in
		// cache, in the unfused chain's order.
		addScalar, mulScalar, vrelu := vecAddScalar[T](), vecMulScalar[T](), vecRelu[T]()
		for oc := range nc {
			r := res[oc*np : (oc+1)*np]
			if bias != nil {
				addScalar(r, r, bias[c0+oc])
			}
			if ep.scale != nil {
				mulScalar(r, r, ep.scale[c0+oc])
			}
			if ep.shift != nil {
				addScalar(r, r, ep.shift[c0+oc])
			}
		}
		if relu {
			vrelu(res, res)
		}
	}
	switch {
	case pg != nil && ep.avg:
		// Pooling reads the pitched planes as planes wp wide: every
		// window lies in the first ow columns.
		conv.AvgPoolValid(og, res, nc, g.oh, wp, pg.kh, pg.kw, pg.sh, pg.sw, pg.oh, pg.ow)
	case pg != nil:
		conv.MaxPoolValid(og, res, nc, g.oh, wp, pg.kh, pg.kw, pg.sh, pg.sw, pg.oh, pg.ow)
	default:
		conv.UnpitchRows(og, res, nc, g.oh, g.ow, wp)
	}
}

// conv2DBackInputPitched is conv2DBackInputRun's stride-1 path over images
// [lo, hi): per image, lay dy out at the pitch with zeros in the
// thrown-away columns, multiply by each group's transposed filter, scatter
// the pitched column gradient back into a padded buffer and crop it.
func (l *loop[T]) conv2DBackInputPitched(lo, hi int) {
	if l.d != nil {
		l.conv2DBackInputTaps(lo, hi)
		return
	}
	g := &l.cg
	dy, w, dx := l.a, l.b, l.c
	k := g.k()
	hp, wp := g.pitch()
	plane, np := (hp+1)*wp, g.oh*wp

	add := vecAdd[T]()
	sp := l.im.getScratch(g.c*plane + k*np + g.o*np)
	pgrad := (*sp)[:g.c*plane]
	dcol := (*sp)[g.c*plane : g.c*plane+k*np]
	dyp := (*sp)[g.c*plane+k*np:]
	for n := lo; n < hi; n++ {
		l.outGradPitched(dyp, dy, n, wp)
		clear(pgrad)
		for gi := range g.groups {
			wg := w[gi*g.og*k : (gi+1)*g.og*k]
			l.im.gemmStrided(true, false, k, np, g.og, wg, 0, dyp[gi*g.og*np:(gi+1)*g.og*np], 0, dcol, 1)
			if c2i := col2ImF32For[T](); c2i != nil {
				c2i(pgrad[gi*g.cg*plane:], dcol, np, g.cg, hp, wp, g.kh, g.kw, g.dh, g.dw, g.oh)
			} else {
				conv.Col2ImPitched(pgrad[gi*g.cg*plane:], dcol, np, g.cg, hp, wp, g.kh, g.kw, g.dh, g.dw, g.oh, add)
			}
		}
		conv.CropPlanes(dx[n*g.c*g.h*g.w:], pgrad, g.c, g.h, g.w, g.pt, g.pl, hp, wp)
	}
	l.im.putScratch(sp)
}

// conv2DBackFilterPitched is conv2DBackFilterRun's stride-1 path over
// slices [lo, hi): each image's pitched column matrix times its pitched
// output gradient (zero in the thrown-away columns, so they add nothing)
// transposed is added into the slice's partial gradient, which is kept
// transposed ([groups][k][og]; conv2DBackFilter transposes it back when it
// adds the slices). This orientation has the GEMM pack the small output
// gradient rather than the column matrix, k/og times larger: packing the
// column matrix took a third of a LeNet training step.
func (l *loop[T]) conv2DBackFilterPitched(lo, hi int) {
	g := &l.cg
	x, dy, dw, part, slices := l.a, l.b, l.c, l.d, l.n
	k := g.k()
	hp, wp := g.pitch()
	plane, np := (hp+1)*wp, g.oh*wp

	if dot := dotRowsFor[T](); dot != nil {
		l.conv2DBackFilterDirect(lo, hi, dot)
		return
	}
	sp := l.im.getScratch(g.c*plane + k*np + g.o*np)
	padded := (*sp)[:g.c*plane]
	col := (*sp)[g.c*plane : g.c*plane+k*np]
	dyp := (*sp)[g.c*plane+k*np:]
	for sl := lo; sl < hi; sl++ {
		acc := part[sl*len(dw) : (sl+1)*len(dw)]
		for n := sl * g.n / slices; n < (sl+1)*g.n/slices; n++ {
			conv.PadPlanes(padded, x[n*g.c*g.h*g.w:], g.c, g.h, g.w, g.pt, g.pl, hp, wp)
			l.outGradPitched(dyp, dy, n, wp)
			for gi := range g.groups {
				conv.Im2ColPitched(col, np, padded[gi*g.cg*plane:], g.cg, hp, wp, g.kh, g.kw, g.dh, g.dw, g.oh)
				dyg := dyp[gi*g.og*np : (gi+1)*g.og*np]
				l.im.gemm(false, true, k, g.og, np, 1, col, np, 0, dyg, np, 0, 1, acc[gi*g.og*k:(gi+1)*g.og*k], g.og, 0, 1)
			}
		}
	}
	l.im.putScratch(sp)
}

// vecAdd returns the SIMD element-wise sum for T. Converting a function
// (a pointer) to an interface allocates nothing.
func vecAdd[T float32 | float64]() func(dst, a, b []T) {
	if f, ok := any(vec.Add).(func(dst, a, b []T)); ok {
		return f
	}
	f, _ := any(vec.AddF64).(func(dst, a, b []T))
	return f
}
