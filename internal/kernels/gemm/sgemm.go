package gemm

import (
	"unsafe"

	"github.com/sporeml/spore/internal/freelist"

	"github.com/sporeml/spore/internal/kernels/parallel"
	"github.com/sporeml/spore/internal/kernels/vec"
)

// Sgemm computes C = alpha·op(A)·op(B) + beta·C for row-major float32
// matrices, op(X) = X or Xᵀ. op(A) is m×k, op(B) is k×n, C is m×n; lda, ldb
// and ldc are the row strides (in elements) of A, B and C as stored.
//
// As in BLAS, beta == 0 means C is only written, never read (NaN in C is
// ignored), and alpha == 0 or k == 0 means A and B are not read. C must not
// overlap A or B. Invalid sizes, strides or too-short slices panic with an [Error].
// Large products run on the [parallel] pool; small ones run on the caller.
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	checkArgs("Sgemm", transA, transB, m, n, k, len(a), lda, 0, len(b), ldb, 0, len(c), ldc, 0, 1)
	sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nil, ActNone)
}

// SgemmStrided computes batch independent products
// C_i = alpha·op(A_i)·op(B_i) + beta·C_i, where X_i starts at element
// i·strideX of x. A stride of 0 uses the same matrix for every i
// (broadcast); for C that accumulates the batch into one matrix, the
// products being applied in order. Sizes and strides are as in [Sgemm].
func SgemmStrided(transA, transB bool, m, n, k int, alpha float32, a []float32, lda, strideA int, b []float32, ldb, strideB int, beta float32, c []float32, ldc, strideC int, batch int) {
	checkArgs("SgemmStrided", transA, transB, m, n, k, len(a), lda, strideA, len(b), ldb, strideB, len(c), ldc, strideC, batch)
	if batch == 0 {
		return
	}
	macs := int64(m) * int64(n) * int64(k)
	if batch == 1 || strideC == 0 || (macs >= parallelMACs && batch < 2*parallel.Workers()) {
		// One product at a time, each parallel inside if large. With
		// at least two products per thread, whole products per thread
		// balance as well and need no synchronisation inside them
		// (attention's 12 heads of 197×197×64).
		for i := 0; i < batch; i++ {
			sgemm(transA, transB, m, n, k, alpha, a[i*strideA:], lda, b[i*strideB:], ldb, beta, c[i*strideC:], ldc, nil, ActNone)
		}
		return
	}
	// Many small products: spread whole products over the threads.
	t := getTask()
	t.set(cur.Load(), transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nil, ActNone)
	t.split, t.strideA, t.strideB, t.strideC = splitBatch, strideA, strideB, strideC
	grain := int(max(1, parallelMACs/max(1, macs)))
	parallel.For(batch, grain, t.fn)
	putTask(t)
}

// SgemmBiasAct computes C = act(op(A)·op(B) + bias), bias broadcast along
// the rows of C (len(bias) ≥ n; nil for none), with BLAS beta == 0
// semantics: C is only written. The bias and activation are applied to each
// output tile as the micro-kernel stores it (ReLU in registers, GELU on the
// tile while it is in L1), so the output is written once.
func SgemmBiasAct(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, bias []float32, act Act, c []float32, ldc int) {
	checkArgs("SgemmBiasAct", transA, transB, m, n, k, len(a), lda, 0, len(b), ldb, 0, len(c), ldc, 0, 1)
	if bias != nil && len(bias) < n {
		panic(Error("gemm: SgemmBiasAct: len(bias) = " + itoa(len(bias)) + " < n = " + itoa(n)))
	}
	if act > ActGELU {
		panic(Error("gemm: SgemmBiasAct: unknown activation " + act.String()))
	}
	sgemm(transA, transB, m, n, k, 1, a, lda, b, ldb, 0, c, ldc, bias, act)
}

// parallelMACs is the product size (m·n·k multiply-adds) from which a GEMM
// is split over threads: about 10 µs of single-core work, well above the
// few µs a wake-up costs. The seed's 64×512×10 layer stays on the caller.
const parallelMACs = 1 << 20

// sgemm validates nothing; it splits the work and runs the blocked driver.
func sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int, bias []float32, act Act) {
	if m == 0 || n == 0 {
		return
	}
	kern := cur.Load()
	threads := parallel.Workers()
	if threads == 1 || int64(m)*int64(n)*int64(k) < parallelMACs {
		ws := getWorkspace(kern)
		kern.gemm(ws, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, bias, act)
		putWorkspace(ws)
		return
	}
	t := getTask()
	t.set(kern, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, bias, act)
	np, mp := (n+kern.nr-1)/kern.nr, (m+kern.mr-1)/kern.mr
	// One chunk per thread. Each chunk re-packs (or re-reads) the operand
	// it shares with the other chunks, and the caller always runs the
	// first chunk, so call after call a thread works on the same share of
	// the operands, which stays in its cache: a training step's weights,
	// updated by the thread that computed that share of their gradient,
	// and the activations of a layer, read by the thread that wrote them.
	// For's smaller chunks, claimed by whichever thread is free, balance
	// better on a busy machine but shuffle the shares; in runs of a few
	// hundred calls the seed network's compiled training step was 2–15%
	// faster with one chunk per thread at batch 16 to 1024 on two cores.
	// The grain is rounded down: parallel.For makes n/grain chunks, so a
	// rounded-up grain would leave an odd panel count (784/32 = 25
	// panels) in one chunk on one thread.
	switch {
	case np >= 2*threads || np >= mp:
		// Split the columns: each thread packs (or reads) its own B panels
		// (the big operand for the seed's shapes) and shares A.
		t.split = splitN
		parallel.For(np, max(1, np/threads), t.fn)
	default:
		t.split = splitM
		parallel.For(mp, max(1, mp/threads), t.fn)
	}
	putTask(t)
}

// evenBlock returns the block size that splits n into the fewest blocks
// of at most maxBlock, as evenly as possible: a multiple of unit (when
// maxBlock is) unless it is all of n. A fixed block size leaves a ragged
// last block, which for k = 784 and kc = 256 is a pass of 16 over every
// C tile (a load and store of C for 3% of the work), and for m = 1024
// and mc = 168 a last block of 16 rows that goes through the whole B
// block for two row tiles. On the seed network this measured neither
// faster nor slower; it removes the ragged blocks by construction.
func evenBlock(n, maxBlock, unit int) int {
	if n <= maxBlock {
		return n
	}
	blocks := (n + maxBlock - 1) / maxBlock
	b := (n + blocks - 1) / blocks
	return min(maxBlock, (b+unit-1)/unit*unit)
}

const (
	splitN = iota
	splitM
	splitBatch
)

// task carries one parallel GEMM's arguments to the workers. Tasks are
// pooled and fn is bound once, so a parallel call allocates nothing.
type task struct {
	k              *kernel
	transA, transB bool
	m, n, kk       int
	alpha, beta    float32
	a, b, c, bias  []float32
	lda, ldb, ldc  int
	act            Act
	split          int
	strideA        int
	strideB        int
	strideC        int
	fn             func(lo, hi int)
}

var taskPool = freelist.List[task]{New: func() *task {
	t := new(task)
	t.fn = t.run
	return t
}}

func getTask() *task { return taskPool.Get() }

func putTask(t *task) {
	t.a, t.b, t.c, t.bias = nil, nil, nil, nil // do not pin the caller's memory
	taskPool.Put(t)
}

func (t *task) set(k *kernel, transA, transB bool, m, n, kk int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int, bias []float32, act Act) {
	t.k, t.transA, t.transB, t.m, t.n, t.kk = k, transA, transB, m, n, kk
	t.alpha, t.beta, t.a, t.lda, t.b, t.ldb, t.c, t.ldc = alpha, beta, a, lda, b, ldb, c, ldc
	t.bias, t.act = bias, act
}

// run computes the chunk [lo, hi) of panels (or batch items).
func (t *task) run(lo, hi int) {
	ws := getWorkspace(t.k)
	defer putWorkspace(ws)
	switch t.split {
	case splitN:
		j0, j1 := lo*t.k.nr, min(hi*t.k.nr, t.n)
		boff := j0
		if t.transB {
			boff = j0 * t.ldb
		}
		b := t.b[boff:]
		var bias []float32
		if t.bias != nil {
			bias = t.bias[j0:]
		}
		t.k.gemm(ws, t.transA, t.transB, t.m, j1-j0, t.kk, t.alpha, t.a, t.lda, b, t.ldb, t.beta, t.c[j0:], t.ldc, bias, t.act)
	case splitM:
		i0, i1 := lo*t.k.mr, min(hi*t.k.mr, t.m)
		aoff := i0 * t.lda
		if t.transA {
			aoff = i0
		}
		a := t.a[aoff:]
		t.k.gemm(ws, t.transA, t.transB, i1-i0, t.n, t.kk, t.alpha, a, t.lda, t.b, t.ldb, t.beta, t.c[i0*t.ldc:], t.ldc, t.bias, t.act)
	case splitBatch:
		for i := lo; i < hi; i++ {
			t.k.gemm(ws, t.transA, t.transB, t.m, t.n, t.kk, t.alpha, t.a[i*t.strideA:], t.lda, t.b[i*t.strideB:], t.ldb, t.beta, t.c[i*t.strideC:], t.ldc, t.bias, t.act)
		}
	}
}

// workspace holds one thread's packing buffers, reused across calls.
type workspace struct {
	a, b []float32
}

var wsPool freelist.List[workspace]

func getWorkspace(k *kernel) *workspace {
	ws := wsPool.Get()
	if len(ws.a) < k.mc*k.kc {
		ws.a = alignedFloats(k.mc * k.kc)
	}
	if len(ws.b) < k.kc*k.nc {
		ws.b = alignedFloats(k.kc * k.nc)
	}
	return ws
}

func putWorkspace(ws *workspace) { wsPool.Put(ws) }

// alignedFloats returns n floats starting on a 64-byte boundary, so packed
// panels never split a vector load across cache lines.
func alignedFloats(n int) []float32 {
	s := make([]float32, n+16)
	off := int(uintptr(unsafe.Pointer(&s[0]))&63) / 4
	if off != 0 {
		off = 16 - off
	}
	return s[off : off+n : off+n]
}

// gemm is the single-threaded blocked driver (GotoBLAS loop order):
//
//	for jc over n in steps of nc:          B block kc×nc → L2/L3
//	  for pc over k in steps of kc:        pack B block
//	    for ic over m in steps of mc:      pack A block mc×kc → L2
//	      for jr over nc in steps of nr:   B micro-panel kc×nr → L1
//	        for ir over mc in steps of mr: micro-kernel on an mr×nr tile of C
//
// beta applies on the first k block only (later blocks accumulate with
// beta = 1); bias and activation on the last.
func (kn *kernel) gemm(ws *workspace, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int, bias []float32, act Act) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || alpha == 0 {
		scaleEpilogue(m, n, beta, c, ldc, bias, act)
		return
	}
	mr, nr := kn.mr, kn.nr
	// Direct kernels skip packing A, transposed or not (its elements are
	// broadcast straight from where they are stored), and a non-transposed
	// B: full-width B micro-panels are read in place (only a ragged last
	// panel is packed). Packing would copy the operand once per call, which
	// costs as much as the kernel itself when the other dimension is
	// small, as for the seed's batch-64 layers and a training step's
	// weight gradients.
	directA := kn.readsAInPlace(transA, m)
	directB := kn.direct && !transB && m <= directBMaxM
	kcb, mcb := evenBlock(k, kn.kc, kcUnit), evenBlock(m, kn.mc, mr)
	for jc := 0; jc < n; jc += kn.nc {
		nc := min(kn.nc, n-jc)
		for pc := 0; pc < k; pc += kcb {
			kc := min(kcb, k-pc)
			first, last := pc == 0, pc+kc == k
			var boff int
			if transB {
				boff = jc*ldb + pc
			} else {
				boff = pc*ldb + jc
			}
			// With a single A block (m ≤ mc) every B micro-panel is used
			// by one sweep of row tiles only: pack each just before use,
			// so it goes straight from packing into the kernel through L1
			// instead of a round trip of the whole block through L2.
			lazyB := !directB && m <= kn.mc
			edge := nc // first column (within the block) of the packed panels
			switch {
			case directB:
				edge = nc - nc%nr
				if edge < nc {
					packB(ws.b[:kc*nr], transB, b[boff+edge:], ldb, kc, nc-edge, nr, kn.panel, kn.transpose16)
				}
			case lazyB:
				edge = 0
			default:
				packB(ws.b, transB, b[boff:], ldb, kc, nc, nr, kn.panel, kn.transpose16)
				edge = 0
			}
			bt, bs, relu := kBlockEpilogue(first, last, beta, bias, act)
			for ic := 0; ic < m; ic += mcb {
				mc := min(mcb, m-ic)
				ablk, alda := kn.aBlock(ws, transA, directA, a, lda, ic, pc, mc, kc, mr)
				for jr := 0; jr < nc; jr += nr {
					cols := min(nr, nc-jr)
					var bp []float32
					var bld int
					switch {
					case jr < edge:
						bp, bld = b[boff+jr:], ldb
					case lazyB:
						off := boff + jr
						if transB {
							off = boff + jr*ldb
						}
						packB(ws.b[:kc*nr], transB, b[off:], ldb, kc, cols, nr, kn.panel, kn.transpose16)
						bp, bld = ws.b, kn.panel(cols)
					default:
						bp, bld = ws.b[(jr-edge)*kc:], kn.panel(cols)
					}
					var bj []float32
					if bs != nil {
						bj = bs[jc+jr:]
					}
					for ir := 0; ir < mc; ir += mr {
						rows := min(mr, mc-ir)
						ct := c[(ic+ir)*ldc+jc+jr:]
						ap := ablk[tileAOffset(directA, transA, ir, lda, kc):]
						kn.tile(rows, cols, kc, ap, alda, bp, bld, ct, ldc, alpha, bt, bj, relu)
						if last && act == ActGELU {
							kn.gelu(ct, ldc, rows, cols)
						}
					}
				}
			}
		}
	}
}

// kcUnit is what the k block size is rounded to when k is split into
// even blocks.
const kcUnit = 4

// directBMaxM is the largest m for which B is read in place rather than
// packed: with few rows of A each B micro-panel is used only a few times,
// so copying it first costs more than reading it strided.
const directBMaxM = 128

// directAMaxM is the largest m for which A is read in place. Measured on
// the development machine, in-place A is as fast as packed A even at 512³
// (the 14 row streams stay in L1/L2), so there is no limit; it is a
// variable so BenchmarkDirectA can compare the two.
var directAMaxM = 1 << 30

// transADirect says whether direct kernels read a transposed A in place
// (else it is packed). In place, each k step of a tile broadcasts from one
// stretch of a stored row, a single stream of constant stride that the
// prefetchers follow. Packing it costs a copy of A per call that is bound
// by the stores (the packed block is larger than L1); for the weight
// gradients dW = dYᵀ·X of a training step, with long k and few columns,
// that copy cost 15–25% of the product. It is a variable so
// BenchmarkTransA can compare the two.
var transADirect = true

// readsAInPlace reports whether the kernel reads op(A) of a product with m
// rows where it is stored instead of packing it.
func (kn *kernel) readsAInPlace(transA bool, m int) bool {
	if !kn.direct {
		return false
	}
	if transA {
		return transADirect
	}
	return m <= directAMaxM
}

// tileLDA is the micro-kernel's lda for A read in place (see tileFunc):
// the row stride, negated when A is stored transposed.
func tileLDA(transA bool, lda int) int {
	if transA {
		return -lda
	}
	return lda
}

// tileAOffset is the offset, within an A block starting at its row ir = 0,
// of the tile starting at row ir: packed panels are mr·kc floats apart,
// and A in place has row ir at ir·lda, or (stored transposed) at column ir.
func tileAOffset(direct, transA bool, ir, lda, kc int) int {
	switch {
	case !direct:
		return ir * kc
	case transA:
		return ir
	default:
		return ir * lda
	}
}

// scaleEpilogue handles an empty product (k == 0 or alpha == 0):
// C = act(beta·C + bias), with beta == 0 not reading C.
func scaleEpilogue(m, n int, beta float32, c []float32, ldc int, bias []float32, act Act) {
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		for j := range row {
			var v float32
			if beta != 0 {
				v = beta * row[j]
			}
			if bias != nil {
				v += bias[j]
			}
			if act == ActReLU && v < 0 {
				v = 0
			}
			row[j] = v
		}
		if act == ActGELU {
			vec.Gelu(row, row)
		}
	}
}

// checkArgs panics with an Error naming fn if the sizes, strides or slice
// lengths cannot describe the matrices.
func checkArgs(fn string, transA, transB bool, m, n, k, la, lda, sa, lb, ldb, sb, lc, ldc, sc, batch int) {
	bad := func(msg string) { panic(Error("gemm: " + fn + ": " + msg)) }
	if m < 0 || n < 0 || k < 0 || batch < 0 {
		bad("negative size m=" + itoa(m) + " n=" + itoa(n) + " k=" + itoa(k) + " batch=" + itoa(batch))
	}
	if sa < 0 || sb < 0 || sc < 0 {
		bad("negative batch stride")
	}
	check := func(name string, rows, cols, l, ld, stride int) {
		if ld < max(1, cols) {
			bad("ld" + name + " = " + itoa(ld) + " < " + itoa(max(1, cols)) + " columns of " + name)
		}
		if rows == 0 || cols == 0 || batch == 0 {
			return
		}
		need := (batch-1)*stride + (rows-1)*ld + cols
		if l < need {
			bad("len(" + name + ") = " + itoa(l) + " < " + itoa(need) + " elements needed")
		}
	}
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	check("a", ar, ac, la, lda, sa)
	check("b", br, bc, lb, ldb, sb)
	check("c", m, n, lc, ldc, sc)
}

// kBlockEpilogue returns what the products of one k block apply to C: beta
// for the first block and 1 (accumulate) after it, and the bias and ReLU
// only with the last block, when C holds the whole sum.
func kBlockEpilogue(first, last bool, beta float32, bias []float32, act Act) (bt float32, bs []float32, relu bool) {
	bt = beta
	if !first {
		bt = 1
	}
	if last {
		bs, relu = bias, act == ActReLU
	}
	return bt, bs, relu
}

// aBlock returns the mc×kc block of A at row ic and depth pc as the
// micro-kernel reads it: in place (directA), with the leading dimension
// tileLDA gives, or packed into ws.a (leading dimension 0).
func (kn *kernel) aBlock(ws *workspace, transA, directA bool, a []float32, lda, ic, pc, mc, kc, mr int) ([]float32, int) {
	aoff := ic*lda + pc
	if transA {
		aoff = pc*lda + ic
	}
	if directA {
		return a[aoff:], tileLDA(transA, lda)
	}
	packA(ws.a, transA, a[aoff:], lda, mc, kc, mr, kn.packAT)
	return ws.a, 0
}
