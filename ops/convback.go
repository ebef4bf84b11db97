package ops

import "github.com/sporeml/spore/internal/kernels/conv"

// conv2DBackFilterDirect is the float32 stride-1 filter gradient over
// slices [lo, hi): per image, the padded input planes and the pitched
// output gradient (zero in the thrown-away columns, so they add nothing),
// then for each input channel and window row one conv.DotRows call (dot)
// that adds the dot products of every output channel's gradient with the
// window row's taps — the rows of the column matrix, read in place from
// the padded plane — to the slice's 16-lane partials (layout
// [o][cg][kh][kw][16]; conv2DBackFilter sums the lanes and the slices).
//
// No column matrix is built: in the CPU profile of LeNet-5's batch-64
// training step (one thread), building it and multiplying it by the
// output gradient took about a third of the step.
func (l *loop[T]) conv2DBackFilterDirect(lo, hi int, dot func(part []T, ldp int, a []T, lda, ma int, b []T, ldb, nb, n int)) {
	g := &l.cg
	x, dy, part, slices := l.a, l.b, l.d, l.n
	p := g.p()
	hp, wp := g.pitch()
	plane, np := (hp+1)*wp, g.oh*wp
	kk := g.cg * g.kh * g.kw
	nw := g.o * kk

	sp := l.im.getScratch(g.c*plane + g.o*np)
	padded, dyp := (*sp)[:g.c*plane], (*sp)[g.c*plane:]
	for sl := lo; sl < hi; sl++ {
		acc := part[sl*nw*16 : (sl+1)*nw*16]
		for n := sl * g.n / slices; n < (sl+1)*g.n/slices; n++ {
			conv.PadPlanes(padded, x[n*g.c*g.h*g.w:], g.c, g.h, g.w, g.pt, g.pl, hp, wp)
			conv.PitchRows(dyp, dy[n*g.o*p:(n+1)*g.o*p], g.o, g.oh, g.ow, wp)
			for gi := range g.groups {
				a := dyp[gi*g.og*np : (gi+1)*g.og*np]
				for c := range g.cg {
					pc := padded[(gi*g.cg+c)*plane:]
					for ki := range g.kh {
						dst := acc[((gi*g.og*g.cg+c)*g.kh+ki)*g.kw*16:]
						dot(dst, kk*16, a, np, g.og, pc[ki*g.dh*wp:], g.dw, g.kw, np)
					}
				}
			}
		}
	}
	l.im.putScratch(sp)
}

// dotRowsFor returns conv.DotRows for float32 and nil for float64, whose
// filter gradient stays on the GEMM. Converting a function (a pointer) to
// an interface allocates nothing.
func dotRowsFor[T float32 | float64]() func(part []T, ldp int, a []T, lda, ma int, b []T, ldb, nb, n int) {
	f, _ := any(conv.DotRows).(func(part []T, ldp int, a []T, lda, ma int, b []T, ldb, nb, n int))
	return f
}

// reduceLanesFor returns conv.ReduceLanes for float32 and nil for float64.
func reduceLanesFor[T float32 | float64]() func(dst, src []T) {
	f, _ := any(conv.ReduceLanes).(func(dst, src []T))
	return f
}
