package gemm

import (
	"github.com/sporeml/spore/internal/freelist"

	"github.com/sporeml/spore/internal/kernels/parallel"
)

// PackedB is a right-hand operand op(B) (k×n) packed once into the
// micro-panels the kernel reads, for products that reuse it: a layer's
// weights, multiplied by every batch of an inference loop. [Sgemm] packs
// a transposed B (a dense layer's [out, in] weight) on every call, which at
// small batches costs as much as the product itself; a PackedB pays that
// once, and a product with it streams each weight exactly once, in order.
//
// The layout is that of packB over the whole of op(B): panel j (columns
// j·nr to j·nr+nr) starts at element j·nr·k and holds k rows of panel
// width w, so any k-block of it is itself a packed micro-panel.
//
// A PackedB belongs to the kernel that was current when it was packed
// ([SetKernel] does not change it). The zero value is empty; Pack fills it.
// It must not be packed while a product reads it.
type PackedB struct {
	kern *kernel
	k, n int
	data []float32
}

// Pack packs op(B), k×n, from b with row stride ldb (op(B) = Bᵀ when
// transB), reusing the PackedB's memory when it is large enough. Invalid
// sizes, strides or a too-short b panic with an [Error].
func (p *PackedB) Pack(transB bool, k, n int, b []float32, ldb int) {
	checkArgs("PackedB.Pack", false, transB, 0, n, k, 0, max(1, k), 0, len(b), ldb, 0, 0, max(1, n), 0, 1)
	kn := cur.Load()
	np := (n + kn.nr - 1) / kn.nr
	size := np * kn.nr * k
	if cap(p.data) < size {
		p.data = alignedFloats(size)
	}
	p.kern, p.k, p.n, p.data = kn, k, n, p.data[:size]
	if k == 0 || n == 0 {
		return
	}
	packB(p.data, transB, b, ldb, k, n, kn.nr, kn.panel, kn.transpose16)
}

// Dims returns op(B)'s sizes as packed: k rows, n columns (0, 0 when
// empty).
func (p *PackedB) Dims() (k, n int) { return p.k, p.n }

// SgemmPacked computes C = alpha·op(A)·B + beta·C with B packed in pb, as
// [Sgemm] would with the operand pb was packed from (results agree within
// float32 rounding: small products sum the whole of k in registers rather
// than in blocks). op(A) is m×k, pb holds k×n.
func SgemmPacked(transA bool, m, n, k int, alpha float32, a []float32, lda int, pb *PackedB, beta float32, c []float32, ldc int) {
	checkPacked("SgemmPacked", transA, m, n, k, len(a), lda, pb, len(c), ldc)
	sgemmPacked(transA, m, n, k, alpha, a, lda, pb, beta, c, ldc, nil, ActNone)
}

// SgemmPackedBiasAct is [SgemmBiasAct] with B packed in pb: C =
// act(op(A)·B + bias), C only written.
func SgemmPackedBiasAct(transA bool, m, n, k int, a []float32, lda int, pb *PackedB, bias []float32, act Act, c []float32, ldc int) {
	checkPacked("SgemmPackedBiasAct", transA, m, n, k, len(a), lda, pb, len(c), ldc)
	if bias != nil && len(bias) < n {
		panic(Error("gemm: SgemmPackedBiasAct: len(bias) = " + itoa(len(bias)) + " < n = " + itoa(n)))
	}
	if act > ActGELU {
		panic(Error("gemm: SgemmPackedBiasAct: unknown activation " + act.String()))
	}
	sgemmPacked(transA, m, n, k, 1, a, lda, pb, 0, c, ldc, bias, act)
}

func checkPacked(fn string, transA bool, m, n, k, la, lda int, pb *PackedB, lc, ldc int) {
	if pb == nil || pb.kern == nil {
		panic(Error("gemm: " + fn + ": B is not packed"))
	}
	if pb.k != k || pb.n != n {
		panic(Error("gemm: " + fn + ": B is packed as " + itoa(pb.k) + "×" + itoa(pb.n) + ", the product needs k×n = " + itoa(k) + "×" + itoa(n)))
	}
	// B's own checks were done when it was packed; ldb = n passes them.
	checkArgs(fn, transA, false, m, n, k, la, lda, 0, k*n, max(1, n), 0, lc, ldc, 0, 1)
}

// packedSplitFloats is the size of a packed B (k·n floats) from which a
// product with few rows is split over threads by column panels. Such a
// product streams B once from L2/L3 and is bound by that stream, not by
// arithmetic, so the multiply-add count (parallelMACs) is the wrong
// measure: two cores pull B in about half the time once each share is
// well above what a hand-off costs (a few µs to a spinning worker).
const packedSplitFloats = 1 << 16

// rowSplitTiles is the number of row tiles per thread from which a
// packed product with A read in place is split by rows (see sgemmPacked).
const rowSplitTiles = 4

func sgemmPacked(transA bool, m, n, k int, alpha float32, a []float32, lda int, pb *PackedB, beta float32, c []float32, ldc int, bias []float32, act Act) {
	if m == 0 || n == 0 {
		return
	}
	kn := pb.kern
	threads := parallel.Workers()
	np, mp := (n+kn.nr-1)/kn.nr, (m+kn.mr-1)/kn.mr
	big := int64(m)*int64(n)*int64(k) >= parallelMACs || (m <= kn.mr && k*n >= packedSplitFloats)
	if threads == 1 || (np < 2 && mp < 2) || !big {
		ws := getWorkspace(kn)
		kn.gemmPacked(ws, transA, m, 0, n, k, alpha, a, lda, pb, beta, c, ldc, bias, act)
		putWorkspace(ws)
		return
	}
	t := packedTaskPool.Get()
	t.transA, t.m, t.n, t.k, t.alpha, t.a, t.lda, t.pb, t.beta, t.c, t.ldc, t.bias, t.act =
		transA, m, n, k, alpha, a, lda, pb, beta, c, ldc, bias, act
	// Each chunk of columns reads all of A, and each chunk of rows all of
	// B, so split the dimension whose chunks re-read the smaller operand:
	// columns for the small batches (A is a few rows), rows for large
	// batches through narrow layers (a 1024-row batch through a 512-wide
	// layer, or a 10-wide output layer that has a single column panel).
	//
	// Rows are also split once every thread gets rowSplitTiles row tiles
	// or more with A read in place, in one chunk per thread of even row
	// count (and even tile heights, see gemmPacked): each thread then
	// reads only its own rows of A, which in a network is the previous
	// layer's output for the same rows, written by the same thread when
	// the caller again takes the first chunk, instead of reading all of
	// it, half from the other core's cache. Measured on the seed network
	// at batch 128 to 1024, in runs of 50 calls alternating with the
	// column split on two cores, this was 3–5% faster.
	//
	// Either way each thread gets one chunk. The caller, which claims
	// the first, then works on the same rows or columns call after call,
	// so a thread's share of the weights stays in its own L2 between
	// calls, as its rows of the activations do between layers. For's
	// smaller chunks, claimed by whichever thread is free, balance better
	// on a busy machine but shuffle the shares: in runs of 50 calls, the
	// seed network's forward pass was 2–10% slower with them at batch 1
	// to 64 on two cores.
	directA := kn.readsAInPlace(transA, m)
	t.byRows = mp >= 2*threads && (m > n || np < 2*threads || (directA && m >= threads*rowSplitTiles*kn.mr))
	t.unit = kn.mr
	panels, grain := np, max(1, np/threads)
	switch {
	case t.byRows && directA:
		t.unit, panels, grain = 1, m, max(1, m/threads)
	case t.byRows:
		panels, grain = mp, max(1, mp/threads)
	}
	parallel.ForBody(panels, grain, t)
	t.a, t.pb, t.c, t.bias = nil, nil, nil, nil
	packedTaskPool.Put(t)
}

// packedTask is one parallel packed product, split by column panels or
// by row tiles.
type packedTask struct {
	transA      bool
	m, n, k     int
	alpha, beta float32
	a, c, bias  []float32
	lda, ldc    int
	pb          *PackedB
	act         Act
	byRows      bool // chunks are rows (else column panels)
	unit        int  // rows per chunk item when byRows: 1, or a row tile of mr
}

var packedTaskPool freelist.List[packedTask]

// Run computes the rows (in units of t.unit) or column panels [lo, hi).
func (t *packedTask) Run(lo, hi int) {
	kn := t.pb.kern
	if t.byRows {
		i0, i1 := lo*t.unit, min(hi*t.unit, t.m)
		aoff := i0 * t.lda
		if t.transA {
			aoff = i0
		}
		ws := getWorkspace(kn)
		kn.gemmPacked(ws, t.transA, i1-i0, 0, t.n, t.k, t.alpha, t.a[aoff:], t.lda, t.pb, t.beta, t.c[i0*t.ldc:], t.ldc, t.bias, t.act)
		putWorkspace(ws)
		return
	}
	j0, j1 := lo*kn.nr, min(hi*kn.nr, t.n)
	var bias []float32
	if t.bias != nil {
		bias = t.bias[j0:]
	}
	ws := getWorkspace(kn)
	kn.gemmPacked(ws, t.transA, t.m, j0, j1-j0, t.k, t.alpha, t.a, t.lda, t.pb, t.beta, t.c[j0:], t.ldc, bias, t.act)
	putWorkspace(ws)
}

// gemmPacked is the blocked driver (see gemm) with B already packed:
// columns [j0, j0+n) of pb (j0 a multiple of nr) into C's first n columns.
// Products of one row tile (m ≤ mr, the GEMV shapes of small batches)
// take the whole of k in one sweep: each C tile is stored once and B
// streams through exactly once, panel after panel. Taller products block
// k by kc so that a B micro-panel stays in L1 across the row tiles.
func (kn *kernel) gemmPacked(ws *workspace, transA bool, m, j0, n, k int, alpha float32, a []float32, lda int, pb *PackedB, beta float32, c []float32, ldc int, bias []float32, act Act) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || alpha == 0 {
		scaleEpilogue(m, n, beta, c, ldc, bias, act)
		return
	}
	mr, nr := kn.mr, kn.nr
	directA := kn.readsAInPlace(transA, m)
	kcMax, mcb := evenBlock(k, kn.kc, kcUnit), evenBlock(m, kn.mc, mr)
	if m <= mr && (directA || mr*k <= len(ws.a)) {
		kcMax = k
	}
	for jc := 0; jc < n; jc += kn.nc {
		nc := min(kn.nc, n-jc)
		for pc := 0; pc < k; pc += kcMax {
			kc := min(kcMax, k-pc)
			first, last := pc == 0, pc+kc == k
			bt, bs, relu := kBlockEpilogue(first, last, beta, bias, act)
			for ic := 0; ic < m; ic += mcb {
				mc := min(mcb, m-ic)
				ablk, alda := kn.aBlock(ws, transA, directA, a, lda, ic, pc, mc, kc, mr)
				// Row tiles of even height where A is read in place
				// (packed A comes in panels of mr rows): a block of
				// 128 rows, a thread's half of a 256 batch, in ten
				// tiles of 13 or 11 rows rather than nine of 14 and
				// one of 2.
				mrb := mr
				if directA {
					mrb = evenBlock(mc, mr, 1)
				}
				for jr := 0; jr < nc; jr += nr {
					cols := min(nr, nc-jr)
					col := j0 + jc + jr // column of pb where this panel starts
					w := kn.panel(min(nr, pb.n-col))
					bp := pb.data[col*k+pc*w:]
					var bj []float32
					if bs != nil {
						bj = bs[jc+jr:]
					}
					for ir := 0; ir < mc; ir += mrb {
						rows := min(mrb, mc-ir)
						ct := c[(ic+ir)*ldc+jc+jr:]
						ap := ablk[tileAOffset(directA, transA, ir, lda, kc):]
						kn.tile(rows, cols, kc, ap, alda, bp, w, ct, ldc, alpha, bt, bj, relu)
						if last && act == ActGELU {
							kn.gelu(ct, ldc, rows, cols)
						}
					}
				}
			}
		}
	}
}
