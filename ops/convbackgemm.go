package ops

import (
	"github.com/sporeml/spore/internal/freelist"
	"github.com/sporeml/spore/internal/kernels/conv"
	"github.com/sporeml/spore/internal/kernels/parallel"
)

// The convolution gradients of CNN-sized layers (tens to hundreds of
// channels) run as GEMMs over pieces of a few hundred columns: the
// receptive fields of some output rows of one image, or of a few whole
// images side by side (conv.Im2ColRows), so that each piece's column
// matrix stays in cache between being written and being multiplied, and a
// layer with 7×7 outputs still gives the GEMM a long enough dimension.
//
//	filter: dW_g [og, k] += dy_g [og, cols] · col [k, cols]ᵀ, per piece
//	input:  dcol [k, cols] = W_gᵀ [k, og] · dy_g [og, cols]; col2im(dcol)
//
// A piece that is one whole image and needs no column matrix (a 1×1
// window at stride 1 without padding) is read in place, and a 1×1 input
// gradient is written straight into dx.
//
// The batch is cut into one slice per core. The input gradients of the
// slices' images are disjoint; each slice's filter gradient is summed into
// its own partial (slice 0 into dW itself), and the partials are added in
// slice order, so the result does not depend on which core finished first.
// In the profile of resnet18's batch-16 training step, the per-tap dot
// products of the stride-1 filter gradient (conv2DBackFilterDirect, tuned
// on LeNet-5's 6 and 16 channels) took 44% of the step, and clearing
// their 16-lane partial sums (16 copies of a 512×512×3×3 gradient per
// core) another 8%.

// convBackReference routes every convolution gradient to the per-image
// paths the GEMM pieces replaced, and padded max-pool gradients to the
// window-by-window loop conv.MaxPoolBackward replaced: the references the
// tests compare with.
var convBackReference = false

// backGEMMMin is the smallest per-group filter (og·cg·kh·kw entries) that
// takes the GEMM pieces: LeNet-5's layers (6×1×5×5, 16×6×5×5) and
// depthwise filters stay on the direct kernels built for them.
// (A variable so that the tests can send every shape through the pieces.)
var backGEMMMin = 4096

// backGEMM reports whether the gradients of g take the GEMM pieces.
func (g *convGeom) backGEMM() bool {
	return !convBackReference && g.og*g.k() >= backGEMMMin
}

// pieceCols is the number of columns a piece aims at: at least 256 (a
// GEMM dimension long enough for the register tiles and the packing to
// pay), else what keeps a column matrix of k rows near 512 KiB.
func pieceCols(k int) int {
	if backPieceCols > 0 {
		return backPieceCols
	}
	return max(256, min(2048, (1<<17)/max(1, k)))
}

// backPieceCols, when positive, replaces pieceCols' choice, so that the
// tests can cut small images into row pieces and group several images.
var backPieceCols = 0

// piece is a run of columns of the gradients' column matrices: output rows
// [oy0, oy1) of image n0 alone, or whole images [n0, n1).
type piece struct {
	n0, n1, oy0, oy1 int
}

// cols returns the number of columns of pc under g.
func (pc piece) cols(g *convGeom) int {
	return (pc.n1-pc.n0-1)*g.p() + (pc.oy1-pc.oy0)*g.ow
}

// whole reports whether pc is exactly one whole image.
func (pc piece) whole(g *convGeom) bool {
	return pc.n1-pc.n0 == 1 && pc.oy0 == 0 && pc.oy1 == g.oh
}

// nextPiece returns the piece starting at image n, row oy, of images up
// to end, and where the one after it starts.
func nextPiece(g *convGeom, n, oy, end, target int) (pc piece, nn, noy int) {
	if p := g.p(); oy == 0 && p <= target {
		m := max(1, min(end-n, target/max(1, p)))
		return piece{n, n + m, 0, g.oh}, n + m, 0
	}
	rows := max(1, min(g.oh-oy, target/max(1, g.ow)))
	pc = piece{n, n + 1, oy, oy + rows}
	if oy+rows == g.oh {
		return pc, n + 1, 0
	}
	return pc, n, oy + rows
}

// backBody is the loop body of the GEMM-piece gradients: item sl is slice
// sl of the batch.
type backBody[T float32 | float64] struct {
	filter    bool
	g         convGeom
	x, dy, dw []T // filter: x, dy, dW; input: dy, W, dx
	part      []T // the filter partials of slices 1…
	slices    int
	im        *floatImpl[T]
}

var (
	backBodies32 freelist.List[backBody[float32]]
	backBodies64 freelist.List[backBody[float64]]
)

// backBodies returns T's pool of loop bodies.
func backBodies[T float32 | float64]() *freelist.List[backBody[T]] {
	if l, ok := any(&backBodies32).(*freelist.List[backBody[T]]); ok {
		return l
	}
	return any(&backBodies64).(*freelist.List[backBody[T]])
}

// backSlices is the number of batch slices: one per core, one for a
// gradient too small to split.
func backSlices(g *convGeom) int {
	if g.n*g.o*g.p()*g.k() < 1<<18 {
		return 1
	}
	return min(g.n, parallel.Workers())
}

// conv2DBackFilterGEMM is conv2DBackFilter on the GEMM pieces; dw is
// cleared by the caller.
func conv2DBackFilterGEMM[T float32 | float64](im *floatImpl[T], g *convGeom, x, dy, dw []T) {
	slices := backSlices(g)
	var partp *[]T
	b := backBodies[T]().Get()
	*b = backBody[T]{filter: true, g: *g, x: x, dy: dy, dw: dw, slices: slices, im: im}
	if slices > 1 {
		partp = im.getScratch((slices - 1) * len(dw))
		b.part = *partp
		clear(b.part)
	}
	parallel.ForBody(slices, 1, b)
	if slices > 1 {
		add := vecAdd[T]()
		for sl := 1; sl < slices; sl++ {
			add(dw, dw, b.part[(sl-1)*len(dw):sl*len(dw)])
		}
		im.putScratch(partp)
	}
	*b = backBody[T]{}
	backBodies[T]().Put(b)
}

// conv2DBackInputGEMM is conv2DBackInput on the GEMM pieces; dx is
// cleared by the caller.
func conv2DBackInputGEMM[T float32 | float64](im *floatImpl[T], g *convGeom, dy, w, dx []T) {
	b := backBodies[T]().Get()
	*b = backBody[T]{g: *g, x: dy, dy: w, dw: dx, slices: backSlices(g), im: im}
	parallel.ForBody(b.slices, 1, b)
	*b = backBody[T]{}
	backBodies[T]().Put(b)
}

// Run computes slices [lo, hi).
func (b *backBody[T]) Run(lo, hi int) {
	for sl := lo; sl < hi; sl++ {
		n0, n1 := sl*b.g.n/b.slices, (sl+1)*b.g.n/b.slices
		if b.filter {
			acc := b.dw
			if sl > 0 {
				acc = b.part[(sl-1)*len(b.dw) : sl*len(b.dw)]
			}
			b.filterSlice(n0, n1, acc)
		} else {
			b.inputSlice(n0, n1)
		}
	}
}

// direct1x1 reports whether the column matrix of a whole image is the
// image itself: a 1×1 window at stride 1 without padding.
func (g *convGeom) direct1x1() bool {
	return g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.pt == 0 && g.pl == 0 && g.oh == g.h && g.ow == g.w
}

// packOutGrad lays group gi's output gradient over pc out as og rows of
// ld columns in dst.
func packOutGrad[T float32 | float64](g *convGeom, dst []T, ld int, dy []T, gi int, pc piece) {
	p := g.p()
	off := 0
	for n := pc.n0; n < pc.n1; n++ {
		lo, hi := 0, p
		if pc.n1-pc.n0 == 1 {
			lo, hi = pc.oy0*g.ow, pc.oy1*g.ow
		}
		src := dy[(n*g.o+gi*g.og)*p:]
		for oc := range g.og {
			copy(dst[oc*ld+off:oc*ld+off+hi-lo], src[oc*p+lo:oc*p+hi])
		}
		off += hi - lo
	}
}

// packCols writes group gi's column matrix over pc as k rows of ld
// columns in dst.
func packCols[T float32 | float64](g *convGeom, dst []T, ld int, x []T, gi int, pc piece) {
	off := 0
	for n := pc.n0; n < pc.n1; n++ {
		oy0, oy1 := 0, g.oh
		if pc.n1-pc.n0 == 1 {
			oy0, oy1 = pc.oy0, pc.oy1
		}
		conv.Im2ColRows(dst[off:], ld, x[(n*g.c+gi*g.cg)*g.h*g.w:], g.cg, g.h, g.w, g.kh, g.kw,
			g.pt, g.pl, g.sh, g.sw, g.dh, g.dw, g.oh, g.ow, oy0, oy1)
		off += (oy1 - oy0) * g.ow
	}
}

// filterSlice adds the filter gradient of images [n0, n1) into acc.
func (b *backBody[T]) filterSlice(n0, n1 int, acc []T) {
	g := &b.g
	k, p := g.k(), g.p()
	target := pieceCols(k)
	maxCols := max(target, g.ow) // see nextPiece
	sp := b.im.getScratch((k + g.og) * maxCols)
	col, dyp := (*sp)[:k*maxCols], (*sp)[k*maxCols:]
	for gi := range g.groups {
		dwg := acc[gi*g.og*k : (gi+1)*g.og*k]
		for n, oy := n0, 0; n < n1; {
			var pc piece
			pc, n, oy = nextPiece(g, n, oy, n1, target)
			cols := pc.cols(g)
			a, lda := dyp, cols
			bm, ldb := col, cols
			if pc.whole(g) {
				a, lda = b.dy[(pc.n0*g.o+gi*g.og)*p:], p
			} else {
				packOutGrad(g, dyp, cols, b.dy, gi, pc)
			}
			if pc.whole(g) && g.direct1x1() {
				bm, ldb = b.x[(pc.n0*g.c+gi*g.cg)*g.h*g.w:], p
			} else {
				packCols(g, col, cols, b.x, gi, pc)
			}
			b.im.gemm(false, true, g.og, k, cols, 1, a, lda, 0, bm, ldb, 0, 1, dwg, k, 0, 1)
		}
	}
	b.im.putScratch(sp)
}

// inputSlice writes the input gradient of images [n0, n1) into dx (b.dw),
// which is zero.
func (b *backBody[T]) inputSlice(n0, n1 int) {
	g := &b.g
	dy, w, dx := b.x, b.dy, b.dw
	k, p := g.k(), g.p()
	target := pieceCols(k)
	maxCols := max(target, g.ow) // see nextPiece
	sp := b.im.getScratch((k + g.og) * maxCols)
	dcol, dyp := (*sp)[:k*maxCols], (*sp)[k*maxCols:]
	add := vecAdd[T]()
	for gi := range g.groups {
		wg := w[gi*g.og*k : (gi+1)*g.og*k]
		for n, oy := n0, 0; n < n1; {
			var pc piece
			pc, n, oy = nextPiece(g, n, oy, n1, target)
			cols := pc.cols(g)
			bm, ldb := dyp, cols
			if pc.whole(g) {
				bm, ldb = dy[(pc.n0*g.o+gi*g.og)*p:], p
			} else {
				packOutGrad(g, dyp, cols, dy, gi, pc)
			}
			if pc.whole(g) && g.direct1x1() {
				b.im.gemm(true, false, k, cols, g.og, 1, wg, k, 0, bm, ldb, 0, 0, dx[(pc.n0*g.c+gi*g.cg)*p:], p, 0, 1)
				continue
			}
			b.im.gemm(true, false, k, cols, g.og, 1, wg, k, 0, bm, ldb, 0, 0, dcol, cols, 0, 1)
			off := 0
			for n := pc.n0; n < pc.n1; n++ {
				oy0, oy1 := 0, g.oh
				if pc.n1-pc.n0 == 1 {
					oy0, oy1 = pc.oy0, pc.oy1
				}
				conv.Col2ImRows(dx[(n*g.c+gi*g.cg)*g.h*g.w:], dcol[off:], cols, g.cg, g.h, g.w, g.kh, g.kw,
					g.pt, g.pl, g.sh, g.sw, g.dh, g.dw, g.ow, oy0, oy1, add)
				off += (oy1 - oy0) * g.ow
			}
		}
	}
	b.im.putScratch(sp)
}
