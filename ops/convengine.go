package ops

import (
	"os"
	"sync"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/freelist"
	"github.com/sporeml/spore/internal/kernels/conv"
	"github.com/sporeml/spore/internal/kernels/parallel"
	"github.com/sporeml/spore/tensor"
)

// ConvTile is called on each finished tile of a convolution's output, so
// that a fused epilogue (bias, folded BatchNorm, activation, residual add)
// runs on the tile while it is still in cache. The tile is image n,
// channels [c0, c1) and output positions [p0, p1) of the flattened OH·OW
// plane: element (c, p) of image n is out[(n·O + c)·OH·OW + p]. Tiles are
// disjoint and together cover the output exactly once; they may be
// delivered concurrently from the worker pool, so a ConvTile must only
// touch its own tile.
type ConvTile func(n, c0, c1, p0, p1 int)

// Conv2DFloat32 computes the float32 Conv2D of x (shape xs) by w (shape
// ws) with resolved attributes a into out, and calls tile (when non-nil)
// on every finished tile. It is the entry the compiler's fused
// convolution anchor calls; Conv2D's own kernel is the same computation
// with no tile function.
func Conv2DFloat32(a ConvAttrs, xs, ws tensor.Shape, x, w, out []float32, tile ConvTile) {
	g := convGeometry("Conv2D", a, xs, ws)
	if len(x) < xs.Size() || len(w) < ws.Size() || len(out) < g.n*g.o*g.p() {
		core.Panicf("Conv2D", "buffers of %d, %d and %d elements are too short for input %v, filter %v and output %v",
			len(x), len(w), len(out), xs, ws, tensor.Shape{g.n, g.o, g.oh, g.ow})
	}
	convEngine(&g, x[:xs.Size()], w[:ws.Size()], out[:g.n*g.o*g.p()], tile)
}

// The float32 convolution engine. Each convolution is computed by the
// algorithm its shape suits best, chosen once per shape (convPlanFor) and
// run as independent tiles — image × channel block × block of output
// positions — spread over the worker pool, so that a batch of one uses
// every core and each tile is finished (and handed to the ConvTile) while
// it is in cache:
//
//   - depthwise (one input channel per group): a direct kernel
//     vectorised along the output rows (conv.Depthwise), where a GEMM per
//     channel would have one output row;
//   - pointwise (1×1, stride 1, no padding): the GEMM W[O, C]·X[C, HW]
//     straight on the input, no column matrix;
//   - Winograd F(2×2, 3×3) for 3×3 stride-1 convolutions with enough
//     channels for its 16 GEMMs to outweigh its transforms;
//   - otherwise im2col and a GEMM per group, the column matrix built a
//     block of output rows at a time (conv.Im2ColRows) so that it stays
//     in cache between its construction and the GEMM that reads it; at
//     stride 1, where one block holds the whole image, the pitched
//     column matrix of convpitch.go instead.
//
// float64 keeps the per-image im2col path (conv2DForward).

// convEngineOn routes Conv2D's float32 kernel through the engine. Setting
// SPORE_CONV_ENGINE=0 in the environment keeps the per-image im2col path
// instead: the reference the engine is measured against, for timing whole
// models before and after.
var convEngineOn = os.Getenv("SPORE_CONV_ENGINE") != "0"

// convAlgo names the algorithm of a planned convolution.
type convAlgo uint8

const (
	algoGEMM      convAlgo = iota // im2col blocks and a GEMM per group
	algoPointwise                 // 1×1, stride 1, unpadded: GEMM on the input
	algoDepthwise                 // direct kernel, one input channel per group
	algoWinograd                  // F(2×2, 3×3)
	algoPitched                   // stride 1, whole images: pitched im2col + GEMM
)

// String names the algorithm in tests and benchmarks.
func (a convAlgo) String() string {
	return [...]string{"gemm", "pointwise", "depthwise", "winograd", "pitched"}[a]
}

// convPlan is how one convolution shape is computed: the algorithm, its
// tiles and its scratch.
type convPlan struct {
	algo    convAlgo
	rows    int // output rows per tile (GEMM)
	pb      int // output positions per tile (pointwise)
	cb      int // output channels per tile (depthwise)
	blocks  int // tiles per image and group
	items   int // tiles in all
	grain   int // tiles per chunk of the parallel loop, at least
	scratch int // per-chunk scratch elements
	shared  int // scratch shared by all chunks (Winograd's filters)
	// filterGrain is the grain of the loop over output channels that
	// transforms Winograd's filters.
	filterGrain int
}

// colBlock is the target size, in elements, of one tile's column matrix
// (or, for the pointwise path, of the block of input it multiplies):
// 256 KiB, which leaves room in a core's L2 for the packed weights and the
// output tile.
const colBlock = 1 << 17

// minCols is the least number of output positions of a GEMM tile.
const minCols = 512

// dwBlock is the target number of output elements of one depthwise tile.
const dwBlock = 1 << 14

// tileMACs is the least work (multiply-adds) worth a chunk of its own on
// another core: below it the hand-off costs more than it saves.
const tileMACs = 1 << 17

// forceAlgo, when set (by tests and benchmarks only), makes convPlanFor
// choose that algorithm wherever it applies.
var forceAlgo *convAlgo

// canWinograd reports whether Conv2DWinograd computes g: one group, a
// 3×3 window at stride 1 without dilation, and no more bottom or right
// padding than its tiles cover.
func (g *convGeom) canWinograd() bool {
	return g.groups == 1 && g.kh == 3 && g.kw == 3 && g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1 &&
		g.oh <= g.h+g.pt && g.ow <= g.w+g.pl
}

// isPointwise reports whether g is a 1×1 convolution at stride 1 without
// padding, whose output positions are its input positions.
func (g *convGeom) isPointwise() bool {
	return g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.pt == 0 && g.pl == 0 && g.oh == g.h && g.ow == g.w
}

// winogradWins is the cost model's choice between Winograd and im2col +
// GEMM for a convolution both can compute. Winograd does 16 multiply-adds
// per 2×2 output tile and channel pair where the GEMM does 36, but its
// input and output transforms (about 40 and 25 vector additions per tile
// and channel) are separate passes over memory, and its filter transform
// (per call: the filters are operands, not constants) is scalar Go. In
// units of one GEMM multiply-add, for n images:
//
//	gemm:     n·9·C·O·P
//	winograd: n·(4·C·O·P′ + (40·C + 25·O)·P′/4·io) + C·O·filter
//
// with P′ the output positions rounded up to whole tiles (one thrown-away
// tile a row). io = 18 and filter = 2600 are fitted to single-thread
// measurements on AVX-512 (BenchmarkConvEngine, resnet18's 3×3 layers):
// Winograd then wins at batch 16 for 128 channels at 28² (1.25×) and 256
// at 14² (1.4×), ties for 64 at 56², and loses at batch 1 wherever the
// filter transform is not amortised (256 at 14²: 0.65×; 128 at 28²:
// 0.8×). Its GEMMs have
// one column a tile; below 32 tiles an image (7×7 outputs: 20) they are
// too narrow to run at speed (512 at 7², batch 16: 0.75×), so such
// shapes never take it.
func winogradWins(g *convGeom) bool {
	const io, filter = 18, 2600
	th, tw := (g.oh+1)/2, (g.ow+1)/2
	if th*(tw+1) < 32 {
		return false
	}
	n, c, o := float64(g.n), float64(g.c), float64(g.o)
	p := float64(g.oh * g.ow)
	pt := float64(4 * th * (tw + 1))
	gemmCost := n * 9 * c * o * p
	winoCost := n*(4*c*o*pt+(40*c+25*o)*pt/4*io) + c*o*filter
	return winoCost < gemmCost
}

// newConvPlan chooses the algorithm and the tiles of g.
func newConvPlan(g *convGeom) convPlan {
	p := convPlan{algo: algoGEMM}
	switch {
	case g.cg == 1:
		p.algo = algoDepthwise
	case g.isPointwise():
		p.algo = algoPointwise
	case g.canWinograd() && winogradWins(g):
		p.algo = algoWinograd
	}
	if f := forceAlgo; f != nil {
		switch {
		case *f == algoDepthwise && g.cg == 1, *f == algoPointwise && g.isPointwise(),
			*f == algoWinograd && g.canWinograd(), *f == algoGEMM, *f == algoPitched && g.pitched():
			p.algo = *f
		}
	}
	k, np := g.k(), g.p()
	var macs int // per tile
	switch p.algo {
	case algoDepthwise:
		// Whole planes, as many as make a block; a multiple of og so
		// that a tile's output channels share their input channels'
		// phase planes.
		p.cb = max(1, dwBlock/max(1, np))
		p.cb = min(g.o, (p.cb+g.og-1)/g.og*g.og)
		p.blocks = (g.o + p.cb - 1) / p.cb
		p.items = g.n * p.blocks
		p.scratch = conv.DepthwiseScratch(g.h, g.w, g.kh, g.kw, g.pt, g.pl, g.sh, g.sw, g.dh, g.dw, g.oh, g.ow)
		macs = p.cb * np * g.kh * g.kw
	case algoPointwise:
		p.pb = max(minCols, colBlock/max(1, k))
		p.pb = (p.pb + 15) &^ 15
		p.pb = min(np, p.pb)
		p.blocks = (np + p.pb - 1) / p.pb
		p.items = g.n * g.groups * p.blocks
		macs = g.og * p.pb * k
	case algoWinograd:
		p.items = g.n
		p.shared = conv.WinogradFiltersLen(g.o, g.c)
		p.scratch = conv.WinogradScratch(1, g.c, g.h, g.w, g.o, g.pt, g.pl, g.oh, g.ow) - p.shared
		macs = 4 * g.c * g.o * np
	case algoPitched:
		p.items = g.n
		macs = g.o * np * k
	default:
		// Rows for a column block of colBlock elements, but at least
		// minCols columns: the GEMM packs the weights once per tile,
		// which for the large windows of the deep layers (k = 4608 at
		// 512 channels) costs as much as the multiply-adds of a narrow
		// tile.
		p.rows = max(colBlock/max(1, k*g.ow), (minCols+g.ow-1)/g.ow)
		p.rows = max(1, min(g.oh, p.rows))
		p.blocks = (g.oh + p.rows - 1) / p.rows
		if p.blocks == 1 && g.pitched() && (forceAlgo == nil || *forceAlgo == algoPitched) {
			// One tile an image, at stride 1: the pitched column
			// matrix (convpitch.go) is built from whole padded rows,
			// kh·kw·C long copies instead of kh·kw·C·OH short ones,
			// which more than pays for its thrown-away columns on the
			// small planes of the deep layers (single thread, 256
			// channels at 14², batch 1: 1.1×; 512 at 7², batch 16:
			// 1.1×).
			p.algo = algoPitched
			p.items = g.n
			macs = g.og * np * k * g.groups
			break
		}
		p.items = g.n * g.groups * p.blocks
		p.scratch = k * p.rows * g.ow
		macs = g.og * p.rows * g.ow * k
	}
	p.grain = max(1, tileMACs/max(1, macs))
	p.filterGrain = max(1, tileMACs/max(1, 16*4*g.c))
	return p
}

// convPlans caches the plans by shape. A model has a few dozen shapes; the
// cache is emptied if something (a sweep over shapes in a test) fills it.
var convPlans struct {
	sync.RWMutex
	m map[convGeom]convPlan
}

// convPlanFor returns g's plan, planning it on first use.
func convPlanFor(g *convGeom) convPlan {
	convPlans.RLock()
	p, ok := convPlans.m[*g]
	convPlans.RUnlock()
	if ok {
		return p
	}
	p = newConvPlan(g)
	if forceAlgo != nil {
		return p // a forced plan is not the shape's own
	}
	convPlans.Lock()
	if convPlans.m == nil || len(convPlans.m) >= 1024 {
		convPlans.m = make(map[convGeom]convPlan)
	}
	convPlans.m[*g] = p
	convPlans.Unlock()
	return p
}

// convRun carries one convolution's operands to the worker pool; runs are
// pooled so that a call allocates nothing.
type convRun struct {
	g            convGeom
	p            convPlan
	x, w, out, u []float32
	tile         ConvTile
	filters      bool // the loop transforms Winograd's filters, not tiles
	// l runs the pitched path (loop.pitchedForward) for algoPitched.
	l loop[float32]
}

var convRuns freelist.List[convRun]

// convEngine computes the float32 convolution g of x by w into out, calling
// tile (if not nil) on each finished tile.
func convEngine(g *convGeom, x, w, out []float32, tile ConvTile) {
	if len(out) == 0 {
		return
	}
	if g.k() == 0 {
		// No input channels: the output is zero, one tile per image.
		clear(out)
		if tile != nil {
			for n := range g.n {
				tile(n, 0, g.o, 0, g.p())
			}
		}
		return
	}
	p := convPlanFor(g)
	r := convRuns.Get()
	r.g, r.p, r.x, r.w, r.out, r.tile = *g, p, x, w, out, tile
	if p.algo == algoPitched {
		r.l.cg, r.l.a, r.l.b, r.l.c, r.l.im = *g, x, w, out, impl32
	}
	var up *[]float32
	if p.algo == algoWinograd {
		up = impl32.getScratch(p.shared)
		r.u = *up
		r.filters = true
		parallel.ForBody(g.o, p.filterGrain, r)
		r.filters = false
	}
	parallel.ForBody(p.items, p.grain, r)
	if up != nil {
		impl32.putScratch(up)
	}
	*r = convRun{}
	convRuns.Put(r)
}

// Run computes tiles [lo, hi) of the planned convolution.
func (r *convRun) Run(lo, hi int) {
	g, p := &r.g, &r.p
	if r.filters {
		conv.WinogradFiltersRange(r.u, r.w, g.o, g.c, lo, hi)
		return
	}
	var sp *[]float32
	var scratch []float32
	if p.scratch > 0 {
		sp = impl32.getScratch(p.scratch)
		scratch = *sp
	}
	np, k := g.p(), g.k()
	for i := lo; i < hi; i++ {
		switch p.algo {
		case algoDepthwise:
			n, b := i/p.blocks, i%p.blocks
			c0, c1 := b*p.cb, min(g.o, (b+1)*p.cb)
			conv.Depthwise(r.out[(n*g.o+c0)*np:], r.x[(n*g.c+c0/g.og)*g.h*g.w:], r.w[c0*g.kh*g.kw:], scratch,
				c1-c0, g.og, g.h, g.w, g.kh, g.kw, g.pt, g.pl, g.sh, g.sw, g.dh, g.dw, g.oh, g.ow)
			if r.tile != nil {
				r.tile(n, c0, c1, 0, np)
			}
		case algoPointwise:
			n, gi, b := i/(g.groups*p.blocks), i/p.blocks%g.groups, i%p.blocks
			p0, p1 := b*p.pb, min(np, (b+1)*p.pb)
			xg := r.x[(n*g.c+gi*g.cg)*np+p0:]
			og := r.out[(n*g.o+gi*g.og)*np+p0:]
			impl32.gemm(false, false, g.og, p1-p0, k, 1, r.w[gi*g.og*k:], k, 0, xg, np, 0, 0, og, np, 0, 1)
			if r.tile != nil {
				r.tile(n, gi*g.og, (gi+1)*g.og, p0, p1)
			}
		case algoPitched:
			r.l.pitchedForward(i, i+1, convEpilogue[float32]{})
			if r.tile != nil {
				r.tile(i, 0, g.o, 0, np)
			}
		case algoWinograd:
			conv.Conv2DWinogradTransformed(r.out[i*g.o*np:], r.x[i*g.c*g.h*g.w:], r.u, nil, scratch,
				1, g.c, g.h, g.w, g.o, g.pt, g.pl, g.oh, g.ow)
			if r.tile != nil {
				r.tile(i, 0, g.o, 0, np)
			}
		default:
			n, gi, b := i/(g.groups*p.blocks), i/p.blocks%g.groups, i%p.blocks
			r0, r1 := b*p.rows, min(g.oh, (b+1)*p.rows)
			ld := (r1 - r0) * g.ow
			col := scratch[:k*ld]
			conv.Im2ColRows(col, ld, r.x[(n*g.c+gi*g.cg)*g.h*g.w:], g.cg, g.h, g.w, g.kh, g.kw,
				g.pt, g.pl, g.sh, g.sw, g.dh, g.dw, g.oh, g.ow, r0, r1)
			og := r.out[(n*g.o+gi*g.og)*np+r0*g.ow:]
			impl32.gemm(false, false, g.og, ld, k, 1, r.w[gi*g.og*k:], k, 0, col, ld, 0, 0, og, np, 0, 1)
			if r.tile != nil {
				r.tile(n, gi*g.og, (gi+1)*g.og, r0*g.ow, r1*g.ow)
			}
		}
	}
	if sp != nil {
		impl32.putScratch(sp)
	}
}
