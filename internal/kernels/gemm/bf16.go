package gemm

import (
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/sporeml/spore/internal/freelist"

	"github.com/sporeml/spore/internal/kernels/half"
	"github.com/sporeml/spore/internal/kernels/parallel"
	"github.com/sporeml/spore/internal/kernels/vec"
)

// bfloat16 GEMM.
//
// Every bf16 product computes C = act(A·B + bias) or A·B + beta·C with
// each operand rounded to bfloat16 (nearest, ties to even), exact
// products and float32 sums. Kernels sum in different orders, so their
// results agree within float32 rounding of the sums, not bit for bit.
// The assembly kernels also treat subnormal operands, products and sums
// as zero, as VDPBF16PS and TDPBF16PS do; the generic kernel keeps them.
// The difference is below 2⁻¹²⁶ per term.
//
// All kernels share one packed layout of B, the VNNI layout that both
// VDPBF16PS and the AMX tile product TDPBF16PS read: B is cut into panels
// of bf16NR = 32 columns; within a panel, k is padded with zeros to a
// multiple of bf16KStep and stored in pairs, so that the 64 bytes of each
// pair row hold (B[2q][j], B[2q+1][j]) for j = 0…15, then j = 16…31:
//
//	panel[q·64 + j·2 + r] = B[2q+r][j]
//
// A 16-column half of a panel's pair rows is exactly one AMX B tile (16
// pair rows of 64 bytes, row stride 128) or one zmm operand of VDPBF16PS.
// The packed A layout is the kernel's own (see bf16Kernel.packA).

const (
	bf16NR    = 32 // columns of a packed B panel
	bf16KStep = 32 // k granule: packed k is a multiple of it (one AMX tile's k)
)

// bf16Kernel is one bf16 implementation: its packing of A and its block
// routine.
type bf16Kernel struct {
	name string
	// mc and kc block A (rows, and k, a multiple of bf16KStep) for the
	// cache: an mc×kc bf16 block of A is packed once per k block and read
	// against every B panel.
	mc, kc int
	// aRows rounds a row count up to what the packed A layout holds (its
	// row granule); the pad rows are zeros.
	aRows func(rows int) int
	// packA stores rows×kcp of op(A) (kcp a multiple of bf16KStep, the
	// pad columns and rows zeros) in the kernel's A layout.
	packA func(dst []uint16, src bf16Src, i0, p0, rows, kc, kcp int)
	// block computes, for the packed A block a (rows of it used) and the
	// packed B panels b (ps elements apart, cols ≤ 32·panels columns of
	// them used, kcp/2 pair rows each), C[i][j] = Σ_p A[i][p]·B[p][j],
	// storing it in c (row stride ldc) when acc is false and adding it to
	// c when acc is true.
	block func(rows, cols, kcp int, a, b []uint16, ps int, c []float32, ldc int, acc bool)
	// small, if set, is the kernel that serves products of at most
	// smallRows rows instead (AMX tiles are 16 rows tall; a GEMV-shaped
	// product is better served by vector instructions).
	small     *bf16Kernel
	smallRows int
}

// bf16Src is an operand of a bf16 product: float32 values rounded as they
// are packed, or bf16 bits; element (i, p) of op(X) is x[i·ld+p], or
// x[p·ld+i] when trans.
type bf16Src struct {
	f     []float32
	h     []uint16
	ld    int
	trans bool
}

// at returns element (i, p) of op(X) as bf16 bits.
func (s *bf16Src) at(i, p int) uint16 {
	o := i*s.ld + p
	if s.trans {
		o = p*s.ld + i
	}
	if s.f != nil {
		return half.BF16(s.f[o])
	}
	return s.h[o]
}

// row copies op(X)[i, p0:p0+len(dst)] into dst as bf16 bits.
func (s *bf16Src) row(dst []uint16, i, p0 int) {
	if !s.trans {
		o := i*s.ld + p0
		if s.f != nil {
			half.BF16FromFloat32s(dst, s.f[o:o+len(dst)])
		} else {
			copy(dst, s.h[o:o+len(dst)])
		}
		return
	}
	for p := range dst {
		dst[p] = s.at(i, p0+p)
	}
}

var (
	bf16Kernels []*bf16Kernel // usable here, best first; generic last
	bf16Cur     atomic.Pointer[bf16Kernel]
)

func init() {
	bf16Kernels = append(bf16AsmKernels(), bf16Generic)
	bf16Cur.Store(bf16Kernels[0])
}

// BF16Kernels returns the names of the bf16 kernels this machine can run,
// best first: some of "amx" (AMX tiles, where the CPU has them and the
// operating system grants their use), "avx512bf16" (VDPBF16PS), then
// "generic" (pure Go).
func BF16Kernels() []string {
	names := make([]string, len(bf16Kernels))
	for i, k := range bf16Kernels {
		names[i] = k.name
	}
	return names
}

// BF16Kernel returns the name of the bf16 kernel in use.
func BF16Kernel() string { return bf16Cur.Load().name }

// SetBF16Kernel selects the bf16 kernel by name (one of [BF16Kernels]),
// for tests and benchmarks; an empty name restores the default. It must
// not race with running products. A [PackedBF16] serves every kernel.
func SetBF16Kernel(name string) error {
	if name == "" {
		bf16Cur.Store(bf16Kernels[0])
		return nil
	}
	for _, k := range bf16Kernels {
		if k.name == name {
			bf16Cur.Store(k)
			return nil
		}
	}
	return Error("gemm: unknown bf16 kernel " + name + " (have " + strings.Join(BF16Kernels(), ", ") + ")")
}

// GemmBF16 computes C = op(A)·op(B) + beta·C for bfloat16 operands (raw
// bits) with float32 accumulation and a float32 C; op(X) is Xᵀ when transX
// is set. op(A) is m×k, op(B) k×n; beta == 0 means C is only written.
// Invalid sizes, strides or slice lengths panic with an [Error].
func GemmBF16(transA, transB bool, m, n, k int, a []uint16, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) {
	checkBF16Args("GemmBF16", transA, transB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
	bf16Gemm(m, n, k, &bf16Src{h: a, ld: lda, trans: transA}, &bf16Src{h: b, ld: ldb, trans: transB}, nil, beta, c, ldc, nil, ActNone)
}

// SgemmAsBF16 is [GemmBF16] on float32 operands, each element rounded to
// bfloat16 as it is packed: what a product of bf16-cast float32 tensors
// computes, without materialising the casts. Each element of the result
// is within [BF16Tolerance](k)·Σ_p |A[i][p]·B[p][j]| of the float32
// product's.
func SgemmAsBF16(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	checkBF16Args("SgemmAsBF16", transA, transB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
	bf16Gemm(m, n, k, &bf16Src{f: a, ld: lda, trans: transA}, &bf16Src{f: b, ld: ldb, trans: transB}, nil, beta, c, ldc, nil, ActNone)
}

// PackedBF16 is a right-hand operand op(B) (k×n) rounded to bfloat16 and
// packed once into the layout every bf16 kernel reads: a layer's weights,
// held by a compiled plan across calls. It is immutable once packed, so
// concurrent products may share it.
type PackedBF16 struct {
	k, n int
	kp   int      // k padded to a multiple of bf16KStep
	data []uint16 // panels of bf16NR columns, kp·bf16NR elements each
}

// PackBF16 rounds op(B) (k×n, from b with row stride ldb; op(B) = Bᵀ
// when transB) to bfloat16 and packs it. Invalid sizes, strides or a
// too-short b panic with an [Error].
func PackBF16(transB bool, k, n int, b []float32, ldb int) *PackedBF16 {
	checkBF16Operand("PackBF16", "b", transB, k, n, len(b), ldb)
	p := new(PackedBF16)
	p.pack(&bf16Src{f: b, ld: ldb, trans: transB}, k, n)
	return p
}

// PackBF16Bits packs op(B), k×n, given as bfloat16 bits (see [PackBF16]).
func PackBF16Bits(transB bool, k, n int, b []uint16, ldb int) *PackedBF16 {
	checkBF16Operand("PackBF16Bits", "b", transB, k, n, len(b), ldb)
	p := new(PackedBF16)
	p.pack(&bf16Src{h: b, ld: ldb, trans: transB}, k, n)
	return p
}

// Pack packs op(B) into p as [PackBF16] does, reusing p's memory when it
// is large enough, so that a weight repacked after every update allocates
// nothing. It must not run while a product reads p.
func (p *PackedBF16) Pack(transB bool, k, n int, b []float32, ldb int) {
	checkBF16Operand("PackedBF16.Pack", "b", transB, k, n, len(b), ldb)
	p.pack(&bf16Src{f: b, ld: ldb, trans: transB}, k, n)
}

// PackBits is [PackedBF16.Pack] for bfloat16 bits.
func (p *PackedBF16) PackBits(transB bool, k, n int, b []uint16, ldb int) {
	checkBF16Operand("PackedBF16.PackBits", "b", transB, k, n, len(b), ldb)
	p.pack(&bf16Src{h: b, ld: ldb, trans: transB}, k, n)
}

// Dims returns op(B)'s sizes as packed: k rows, n columns.
func (p *PackedBF16) Dims() (k, n int) { return p.k, p.n }

func (p *PackedBF16) pack(src *bf16Src, k, n int) {
	kp := bf16PadK(k)
	np := (n + bf16NR - 1) / bf16NR
	size := np * kp * bf16NR
	if cap(p.data) < size {
		p.data = alignedBF16(size)
	}
	p.k, p.n, p.kp, p.data = k, n, kp, p.data[:size]
	if k*n >= 1<<16 && np > 1 {
		t := bf16PackTaskPool.Get()
		t.p, t.src = p, *src
		parallel.ForBody(np, 1, t)
		*t = bf16PackTask{}
		bf16PackTaskPool.Put(t)
	} else {
		packBPanels(p.data, kp*bf16NR, src, 0, k, 0, n)
	}
}

// bf16PackTask packs a PackedBF16's panels over threads.
type bf16PackTask struct {
	p   *PackedBF16
	src bf16Src
}

var bf16PackTaskPool freelist.List[bf16PackTask]

// Run packs panels [lo, hi).
func (t *bf16PackTask) Run(lo, hi int) {
	p := t.p
	packBPanels(p.data[lo*p.kp*bf16NR:], p.kp*bf16NR, &t.src, 0, p.k, lo*bf16NR, min(hi*bf16NR, p.n))
}

// GemmPackedBF16 computes C = act(A·B + bias) with A (m×k, row stride lda)
// float32, rounded to bfloat16 as it is packed, and B packed in pb (k×n).
// bias (n values) may be nil; C is only written. Invalid arguments panic
// with an [Error].
func GemmPackedBF16(m, n, k int, a []float32, lda int, pb *PackedBF16, bias []float32, act Act, c []float32, ldc int) {
	checkPackedBF16("GemmPackedBF16", m, n, k, len(a), lda, pb, bias, act, len(c), ldc)
	bf16Gemm(m, n, k, &bf16Src{f: a, ld: lda}, nil, pb, 0, c, ldc, bias, act)
}

// GemmPackedBF16Bits is [GemmPackedBF16] with A given as bfloat16 bits.
func GemmPackedBF16Bits(m, n, k int, a []uint16, lda int, pb *PackedBF16, bias []float32, act Act, c []float32, ldc int) {
	checkPackedBF16("GemmPackedBF16Bits", m, n, k, len(a), lda, pb, bias, act, len(c), ldc)
	bf16Gemm(m, n, k, &bf16Src{h: a, ld: lda}, nil, pb, 0, c, ldc, bias, act)
}

func checkBF16Operand(fn, name string, trans bool, rows, cols, l, ld int) {
	if rows < 0 || cols < 0 {
		panic(Error("gemm: " + fn + ": negative size " + itoa(rows) + "×" + itoa(cols) + " of op(" + name + ")"))
	}
	if trans {
		rows, cols = cols, rows
	}
	if ld < max(1, cols) {
		panic(Error("gemm: " + fn + ": ld" + name + " = " + itoa(ld) + " < " + itoa(max(1, cols)) + " columns of " + name))
	}
	if rows > 0 && cols > 0 {
		if need := (rows-1)*ld + cols; l < need {
			panic(Error("gemm: " + fn + ": len(" + name + ") = " + itoa(l) + " < " + itoa(need) + " elements needed"))
		}
	}
}

func checkBF16Args(fn string, transA, transB bool, m, n, k, la, lda, lb, ldb, lc, ldc int) {
	if m < 0 || n < 0 || k < 0 {
		panic(Error("gemm: " + fn + ": negative size m=" + itoa(m) + " n=" + itoa(n) + " k=" + itoa(k)))
	}
	checkBF16Operand(fn, "a", transA, m, k, la, lda)
	checkBF16Operand(fn, "b", transB, k, n, lb, ldb)
	checkBF16Operand(fn, "c", false, m, n, lc, ldc)
}

func checkPackedBF16(fn string, m, n, k, la, lda int, pb *PackedBF16, bias []float32, act Act, lc, ldc int) {
	if pb == nil {
		panic(Error("gemm: " + fn + ": B is not packed (nil *PackedBF16)"))
	}
	if pb.k != k || pb.n != n {
		panic(Error("gemm: " + fn + ": B is packed as " + itoa(pb.k) + "×" + itoa(pb.n) + ", the product needs k×n = " + itoa(k) + "×" + itoa(n)))
	}
	checkBF16Args(fn, false, false, m, n, k, la, lda, k*n, max(1, n), lc, ldc)
	if bias != nil && len(bias) < n {
		panic(Error("gemm: " + fn + ": len(bias) = " + itoa(len(bias)) + " < n = " + itoa(n)))
	}
	if act > ActGELU {
		panic(Error("gemm: " + fn + ": unknown activation " + act.String()))
	}
}

// BF16Tolerance returns the bound, relative to Σ_p |A[i][p]·B[p][j]|, on
// the difference between an element of a bf16 product ([SgemmAsBF16],
// [GemmPackedBF16]) and the float32 product of the same operands: each
// operand rounded to bf16 is off by at most 2⁻⁹ of itself, so a product
// by at most 2⁻⁸ + 2⁻¹⁸, and the two float32 sums of k terms add at most
// (k+2)·2⁻²⁴ each.
func BF16Tolerance(k int) float64 {
	return 1.0/256 + 1.0/(1<<18) + 2*float64(k+2)/(1<<24)
}

// bf16PadK rounds k up to a multiple of bf16KStep.
func bf16PadK(k int) int { return (k + bf16KStep - 1) / bf16KStep * bf16KStep }

// alignedBF16 returns n zeroed uint16s starting on a 64-byte boundary (AMX
// tile rows and zmm loads then never split a cache line).
func alignedBF16(n int) []uint16 {
	s := make([]uint16, n+32)
	off := int(uintptr(unsafe.Pointer(&s[0]))&63) / 2
	if off != 0 {
		off = 32 - off
	}
	return s[off : off+n : off+n]
}

// packBPanels packs rows [p0, p0+kc) of op(B)'s columns [j0, j1) into
// consecutive panels of dst, panel stride ps elements, each holding
// bf16PadK(kc)/2 pair rows; the pad (k beyond kc, columns beyond j1) is
// zero.
func packBPanels(dst []uint16, ps int, src *bf16Src, p0, kc, j0, j1 int) {
	kcp := bf16PadK(kc)
	if !src.trans && src.f != nil && bf16PackAsm {
		// Round float32 rows in wide stretches (a call per 32 elements of
		// each row would cost more than the rounding), then interleave
		// the bf16 rows of each full panel.
		full := j0 + (j1-j0)/bf16NR*bf16NR
		const rows, width = 32, 8 * bf16NR
		var buf [rows * width]uint16
		for jg := j0; jg < full; jg += width {
			w := min(width, full-jg)
			for q0 := 0; q0 < kc/2; q0 += rows / 2 {
				nq := min(rows/2, kc/2-q0)
				for r := 0; r < 2*nq; r++ {
					o := (p0+2*q0+r)*src.ld + jg
					half.BF16FromFloat32s(buf[r*w:(r+1)*w], src.f[o:o+w])
				}
				for jp := jg; jp < jg+w; jp += bf16NR {
					pan := dst[(jp-j0)/bf16NR*ps:]
					if !packPairsAsm(pan[q0*2*bf16NR:], buf[jp-jg:], w, nq) {
						goto general
					}
				}
			}
			// The tail pair rows (odd kc, and the zero pad up to kcp).
			for jp := jg; jp < jg+w; jp += bf16NR {
				packBPanelN(dst[(jp-j0)/bf16NR*ps:][:kcp*bf16NR], src, p0, kc, kcp, jp, bf16NR, kc/2)
			}
		}
		if full < j1 {
			packBPanelN(dst[(full-j0)/bf16NR*ps:][:kcp*bf16NR], src, p0, kc, kcp, full, j1-full, 0)
		}
		return
	}
general:
	for jp := j0; jp < j1; jp += bf16NR {
		cols := min(bf16NR, j1-jp)
		pan := dst[(jp-j0)/bf16NR*ps:][: kcp*bf16NR : kcp*bf16NR]
		if src.trans {
			packBPanelT(pan, src, p0, kc, kcp, jp, cols)
		} else {
			packBPanelN(pan, src, p0, kc, kcp, jp, cols, 0)
		}
	}
}

// packBPanelN packs one panel of an untransposed B (rows of op(B)
// contiguous) from pair row q0 on: two rows at a time, interleaved into
// pair rows; full panels of bf16 bits with assembly where there is some.
func packBPanelN(pan []uint16, src *bf16Src, p0, kc, kcp, jp, cols, q0 int) {
	if cols == bf16NR && src.h != nil && q0 < kc/2 {
		if packPairsAsm(pan[q0*2*bf16NR:], src.h[(p0+2*q0)*src.ld+jp:], src.ld, kc/2-q0) {
			q0 = kc / 2
		}
	}
	var r0, r1 [bf16NR]uint16
	for q := q0; q < kcp/2; q++ {
		p := 2 * q
		for r, row := range [2]*[bf16NR]uint16{&r0, &r1} {
			if cols < bf16NR || p+r >= kc {
				clear(row[:])
			}
			if p+r < kc {
				o := (p0+p+r)*src.ld + jp
				if src.f != nil {
					half.BF16FromFloat32s(row[:cols], src.f[o:o+cols])
				} else {
					copy(row[:cols], src.h[o:o+cols])
				}
			}
		}
		out := pan[q*2*bf16NR : q*2*bf16NR+2*bf16NR]
		for j := range bf16NR {
			out[2*j], out[2*j+1] = r0[j], r1[j]
		}
	}
}

// packBPanelT packs one panel of a transposed B (op(B) = Xᵀ: column j of
// op(B) is row j of X, contiguous in k, so its pairs are adjacent): full
// panels by 16×16 transposes of pairs with assembly where there is some.
func packBPanelT(pan []uint16, src *bf16Src, p0, kc, kcp, jp, cols int) {
	pd := 0 // k done, a multiple of 32
	if cols == bf16NR {
		if src.h != nil {
			if transposePairsAsm(pan, src.h[jp*src.ld+p0:], src.ld, kc/32) {
				pd = kc / 32 * 32
			}
		} else {
			// Round 64 k of each of the 32 rows into a scratch block, then
			// transpose its pairs.
			var buf [bf16NR * 64]uint16
			for pd+64 <= kc {
				for j := 0; j < bf16NR; j++ {
					o := (jp+j)*src.ld + p0 + pd
					half.BF16FromFloat32s(buf[j*64:(j+1)*64], src.f[o:o+64])
				}
				if !transposePairsAsm(pan[pd/2*2*bf16NR:], buf[:], 64, 2) {
					break
				}
				pd += 64
			}
		}
	}
	var buf [64]uint16
	for j := range bf16NR {
		for p := pd; p < kcp; p += len(buf) {
			n := min(len(buf), kcp-p) // even
			in := buf[:n]
			m := 0
			if j < cols && p < kc {
				m = min(n, kc-p)
				o := (jp+j)*src.ld + p0 + p
				if src.f != nil {
					half.BF16FromFloat32s(in[:m], src.f[o:o+m])
				} else {
					copy(in[:m], src.h[o:o+m])
				}
			}
			clear(in[m:])
			for t := 0; t < n/2; t++ {
				o := (p/2+t)*2*bf16NR + 2*j
				pan[o], pan[o+1] = in[2*t], in[2*t+1]
			}
		}
	}
}

// bf16Work is one thread's packing buffers.
type bf16Work struct {
	a, b []uint16
}

var bf16WorkPool freelist.List[bf16Work]

// bf16ParallelMACs is the multiply-add count from which a product is split
// over threads.
const bf16ParallelMACs = 1 << 20

// bf16Gemm is the driver of every bf16 product: B comes from b (packed per
// call) or pb (packed once). beta scales C when the product accumulates
// (pb == nil); bias and act apply when B is packed (beta is then 0).
func bf16Gemm(m, n, k int, a, b *bf16Src, pb *PackedBF16, beta float32, c []float32, ldc int, bias []float32, act Act) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		scaleEpilogueBF16(m, n, beta, c, ldc, bias, act)
		return
	}
	kn := bf16Cur.Load()
	if kn.small != nil && m <= kn.smallRows {
		kn = kn.small
	}
	threads := parallel.Workers()
	np := (n + bf16NR - 1) / bf16NR
	mb := kn.aRows(1)
	mp := (m + mb - 1) / mb
	// A product of one row block with a packed B streams B once and is
	// bound by that stream: split it by columns from 64K weights up, as
	// the float32 packed driver does, whatever its multiply-add count.
	big := int64(m)*int64(n)*int64(k) >= bf16ParallelMACs || (pb != nil && m <= mb && k*n >= 1<<16)
	if threads == 1 || !big || (np < 2 && mp < 2) {
		kn.gemm(m, n, k, 0, a, b, pb, beta, c, ldc, bias, act)
		return
	}
	t := bf16TaskPool.Get()
	t.kn, t.m, t.n, t.k, t.a, t.pb, t.beta, t.c, t.ldc, t.bias, t.act = kn, m, n, k, *a, pb, beta, c, ldc, bias, act
	if b != nil {
		t.b = *b
	}
	// Split the dimension whose chunks re-read the smaller operand, as the
	// float32 driver does: columns unless the product is tall and narrow.
	t.byRows = mp >= 2*threads && (m > n || np < 2*threads)
	if t.byRows {
		parallel.ForBody(mp, max(1, mp/threads), t)
	} else {
		parallel.ForBody(np, max(1, np/threads), t)
	}
	*t = bf16Task{} // do not pin the caller's memory
	bf16TaskPool.Put(t)
}

// bf16Task is one bf16 product split over threads, by row blocks or by
// column panels; pooled, so a split product allocates nothing.
type bf16Task struct {
	kn      *bf16Kernel
	m, n, k int
	a, b    bf16Src
	pb      *PackedBF16
	beta    float32
	c, bias []float32
	ldc     int
	act     Act
	byRows  bool
}

var bf16TaskPool freelist.List[bf16Task]

// Run computes row blocks or column panels [lo, hi).
func (t *bf16Task) Run(lo, hi int) {
	if t.byRows {
		mb := t.kn.aRows(1)
		i0, i1 := lo*mb, min(hi*mb, t.m)
		as := t.a
		if as.trans {
			as.f, as.h = offF(as.f, i0), offH(as.h, i0)
		} else {
			as.f, as.h = offF(as.f, i0*as.ld), offH(as.h, i0*as.ld)
		}
		bp := &t.b
		if t.pb != nil {
			bp = nil
		}
		t.kn.gemm(i1-i0, t.n, t.k, 0, &as, bp, t.pb, t.beta, t.c[i0*t.ldc:], t.ldc, t.bias, t.act)
		return
	}
	j0, j1 := lo*bf16NR, min(hi*bf16NR, t.n)
	var bs []float32
	if t.bias != nil {
		bs = t.bias[j0:]
	}
	if t.pb != nil {
		t.kn.gemm(t.m, j1-j0, t.k, j0, &t.a, nil, t.pb, t.beta, t.c[j0:], t.ldc, bs, t.act)
		return
	}
	bb := t.b
	if bb.trans {
		bb.f, bb.h = offF(bb.f, j0*bb.ld), offH(bb.h, j0*bb.ld)
	} else {
		bb.f, bb.h = offF(bb.f, j0), offH(bb.h, j0)
	}
	t.kn.gemm(t.m, j1-j0, t.k, 0, &t.a, &bb, nil, t.beta, t.c[j0:], t.ldc, bs, t.act)
}

func offF(s []float32, o int) []float32 {
	if s == nil {
		return nil
	}
	return s[o:]
}

func offH(s []uint16, o int) []uint16 {
	if s == nil {
		return nil
	}
	return s[o:]
}

// gemm is the single-threaded blocked driver:
//
//	for pc over k in steps of kc:          pack B k block (unless packed)
//	  for ic over m in steps of mc:        pack A block mc×kc
//	    block: the A block times the B panels
//
// B columns are [j0, j0+n) of pb when B is packed, else op(B)'s first n.
// beta applies on the first k block; bias and act after the last.
func (kn *bf16Kernel) gemm(m, n, k, j0 int, a, b *bf16Src, pb *PackedBF16, beta float32, c []float32, ldc int, bias []float32, act Act) {
	ws := bf16WorkPool.Get()
	defer bf16WorkPool.Put(ws)
	np := (n + bf16NR - 1) / bf16NR
	kcMax := kn.kc
	if pb != nil && m <= kn.aRows(1) {
		// One row block: take k whole, so each C element is stored once and
		// B streams through once.
		kcMax = pb.kp
	}
	if need := kn.aRows(min(kn.mc, m)) * min(kcMax, bf16PadK(k)); len(ws.a) < need {
		ws.a = alignedBF16(need)
	}
	if pb == nil {
		if need := np * min(kcMax, bf16PadK(k)) * bf16NR; len(ws.b) < need {
			ws.b = alignedBF16(need)
		}
	}
	for pc := 0; pc < k; pc += kcMax {
		kc := min(kcMax, k-pc)
		kcp := bf16PadK(kc)
		first, last := pc == 0, pc+kc == k
		var bp []uint16
		ps := kcp * bf16NR
		if pb != nil {
			bp = pb.data[j0/bf16NR*pb.kp*bf16NR+pc/2*2*bf16NR:]
			ps = pb.kp * bf16NR
		} else {
			bp = ws.b
			packBPanels(bp, ps, b, pc, kc, 0, n)
		}
		for ic := 0; ic < m; ic += kn.mc {
			mc := min(kn.mc, m-ic)
			ap := ws.a[:kn.aRows(mc)*kcp]
			kn.packA(ap, *a, ic, pc, mc, kc, kcp)
			ct := c[ic*ldc:]
			if first && beta != 0 && beta != 1 {
				scaleTile(ct, ldc, mc, n, beta)
			}
			kn.block(mc, n, kcp, ap, bp, ps, ct, ldc, !first || beta != 0)
			if last && (bias != nil || act != ActNone) {
				epilogueTile(ct, ldc, mc, n, bias, act)
			}
		}
	}
}

// scaleTile multiplies a rows×cols block of c by beta.
func scaleTile(c []float32, ldc, rows, cols int, beta float32) {
	for i := 0; i < rows; i++ {
		row := c[i*ldc : i*ldc+cols]
		vec.MulScalar(row, row, beta)
	}
}

// epilogueTile applies bias and activation to a rows×cols block of c,
// with the vector kernels of package vec (a scalar ReLU would pay a
// mispredicted branch for every other element).
func epilogueTile(c []float32, ldc, rows, cols int, bias []float32, act Act) {
	for i := 0; i < rows; i++ {
		row := c[i*ldc : i*ldc+cols]
		if bias != nil {
			vec.Add(row, row, bias[:cols])
		}
		if act == ActReLU {
			vec.Relu(row, row)
		}
	}
	if act == ActGELU {
		geluTile(c, ldc, rows, cols)
	}
}

// scaleEpilogueBF16 is the k == 0 product: C = beta·C, or act(bias).
func scaleEpilogueBF16(m, n int, beta float32, c []float32, ldc int, bias []float32, act Act) {
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		for j := range row {
			if beta == 0 {
				row[j] = 0
			} else {
				row[j] *= beta
			}
		}
	}
	if bias != nil || act != ActNone {
		epilogueTile(c, ldc, m, n, bias, act)
	}
}

// bf16Generic is the pure-Go kernel: A packed row-major (row stride kcp),
// which is also the AMX kernel's layout, so its strip serves as that
// kernel's twin.
var bf16Generic = &bf16Kernel{
	name:  "generic",
	mc:    64,
	kc:    256,
	aRows: func(rows int) int { return rows },
	packA: packARowsBF16,
	block: blockRowsGo,
}

// blockRowsGo is the generic kernel's block: stripRowsGo panel by panel.
func blockRowsGo(rows, cols, kcp int, a, b []uint16, ps int, c []float32, ldc int, acc bool) {
	for j0 := 0; j0 < cols; j0 += bf16NR {
		stripRowsGo(rows, min(bf16NR, cols-j0), kcp, a, b[j0/bf16NR*ps:], c[j0:], ldc, acc)
	}
}

// packARowsBF16 packs op(A)[i0:i0+rows, p0:p0+kc] row-major with row
// stride kcp, zero past kc, and zero rows up to len(dst)/kcp.
func packARowsBF16(dst []uint16, src bf16Src, i0, p0, rows, kc, kcp int) {
	if src.trans {
		clear(dst)
		packATrans(src, i0, p0, rows, kc, func(i, p int) int { return i*kcp + p }, dst)
		return
	}
	for i := 0; i < len(dst)/kcp; i++ {
		r := dst[i*kcp : (i+1)*kcp]
		if i < rows {
			src.row(r[:kc], i0+i, p0)
			clear(r[kc:])
		} else {
			clear(r)
		}
	}
}

// stripRowsGo multiplies row-major packed A (row stride kcp) by one B
// panel (cols ≤ 32 of it used) into c, storing or (acc) adding: the
// pure-Go twin of the AMX kernel, adding each exact product to a float32
// sum in k order, as the SDM's pseudo-code for TDPBF16PS does. The
// hardware's internal summation order and rounding differ (on this
// development machine about a third of the elements differ in the last
// bits), so the two are compared within the float32 summation bound
// rather than bit for bit.
func stripRowsGo(rows, cols, kcp int, a, b []uint16, c []float32, ldc int, acc bool) {
	var sum [bf16NR]float32
	for i := 0; i < rows; i++ {
		ar := a[i*kcp : (i+1)*kcp]
		crow := c[i*ldc : i*ldc+cols]
		if acc {
			copy(sum[:cols], crow)
		} else {
			clear(sum[:cols])
		}
		for q := 0; q < kcp/2; q++ {
			a0, a1 := half.BF16ToFloat32(ar[2*q]), half.BF16ToFloat32(ar[2*q+1])
			bq := b[q*2*bf16NR : q*2*bf16NR+2*cols]
			for j := range cols {
				s := sum[j] + a0*half.BF16ToFloat32(bq[2*j])
				sum[j] = s + a1*half.BF16ToFloat32(bq[2*j+1])
			}
		}
		copy(crow, sum[:cols])
	}
}

// packAPairsBF16 packs op(A)[i0:i0+rows, p0:p0+kc] in 14-row panels for
// the VDPBF16PS kernel: panel r holds, for each pair step q < kcp/2, the
// pairs (A[i][2q], A[i][2q+1]) of its 14 rows i, one after the other; pad
// rows and k are zero.
func packAPairsBF16(dst []uint16, src bf16Src, i0, p0, rows, kc, kcp int) {
	const mr = 14
	clear(dst) // the pad rows and k
	if src.trans {
		packATrans(src, i0, p0, rows, kc, func(i, p int) int { return i/mr*mr*kcp + p/2*2*mr + 2*(i%mr) + p%2 }, dst)
		return
	}
	// A pair is moved as one uint32: the bytes keep their order, so this
	// holds on either byte order.
	d32 := unsafe.Slice((*uint32)(unsafe.Pointer(&dst[0])), len(dst)/2)
	var b32 [128]uint32
	buf := unsafe.Slice((*uint16)(unsafe.Pointer(&b32[0])), 2*len(b32))
	for i := 0; i < rows; i++ {
		pan := d32[i/mr*mr*kcp/2:]
		r := i % mr
		for p := 0; p < kc; p += len(buf) {
			m := min(len(buf), kc-p)
			src.row(buf[:m], i0+i, p0+p)
			if m&1 == 1 {
				buf[m] = 0
			}
			for t, v := range b32[:(m+1)/2] {
				pan[(p/2+t)*mr+r] = v
			}
		}
	}
}

// packATrans stores op(A)[i0+i][p0+p] = X[p0+p][i0+i] (A stored
// transposed) at dst[at(i, p)] for i < rows, p < kc, at mapping to the
// kernel's packed layout: stored row by stored row, so that each stretch
// is rounded (or copied) with one vectorised conversion.
func packATrans(src bf16Src, i0, p0, rows, kc int, at func(i, p int) int, dst []uint16) {
	var buf [256]uint16
	for p := 0; p < kc; p++ {
		for i := 0; i < rows; i += len(buf) {
			n := min(len(buf), rows-i)
			o := (p0+p)*src.ld + i0 + i
			if src.f != nil {
				half.BF16FromFloat32s(buf[:n], src.f[o:o+n])
			} else {
				copy(buf[:n], src.h[o:o+n])
			}
			for t, v := range buf[:n] {
				dst[at(i+t, p)] = v
			}
		}
	}
}

// blockPairsGo is the pure-Go twin of the VDPBF16PS kernel's block:
// stripPairsGo for each 14-row panel and B panel.
func blockPairsGo(rows, cols, kcp int, a, b []uint16, ps int, c []float32, ldc int, acc bool) {
	const mr = 14
	for j0 := 0; j0 < cols; j0 += bf16NR {
		for i0 := 0; i0 < rows; i0 += mr {
			stripPairsGo(min(mr, rows-i0), min(bf16NR, cols-j0), kcp/2, a[i0*kcp:], b[j0/bf16NR*ps:], c[i0*ldc+j0:], ldc, acc)
		}
	}
}

// stripPairsGo is the pure-Go twin of the VDPBF16PS micro-kernel: rows ≤
// 14 of a packed A panel (see packAPairsBF16) times one B panel (cols ≤ 32
// of it used) into c, storing or (acc) adding. Like VDPBF16PS it adds, per
// pair step, the odd product and then the even one to a float32 sum; short
// tiles keep several sums over k (see bf16Phases).
func stripPairsGo(rows, cols, kq int, a, b []uint16, c []float32, ldc int, acc bool) {
	const mr = 14
	ph := bf16Phases(rows)
	var sums [4][mr * bf16NR]float32
	for q := 0; q < kq; q++ {
		sum := &sums[q%ph]
		bq := b[q*2*bf16NR : q*2*bf16NR+2*bf16NR]
		for i := 0; i < rows; i++ {
			a0, a1 := half.BF16ToFloat32(a[q*2*mr+2*i]), half.BF16ToFloat32(a[q*2*mr+2*i+1])
			s := sum[i*bf16NR : i*bf16NR+cols]
			for j := range s {
				v := s[j] + a1*half.BF16ToFloat32(bq[2*j+1])
				s[j] = v + a0*half.BF16ToFloat32(bq[2*j])
			}
		}
	}
	// The phases combine as the kernel combines them; then the kernel
	// adds the old C to the finished sum.
	for i := 0; i < rows; i++ {
		ci := c[i*ldc : i*ldc+cols]
		for j := range ci {
			o := i*bf16NR + j
			s := sums[0][o]
			switch ph {
			case 2:
				s += sums[1][o]
			case 4:
				s = (s + sums[1][o]) + (sums[2][o] + sums[3][o])
			}
			if acc {
				ci[j] += s
			} else {
				ci[j] = s
			}
		}
	}
}

// bf16Phases is how many independent sums over k the VDPBF16PS kernel
// keeps per C element for a tile of rows rows (pair step q goes to sum q
// mod phases): short tiles split k so that enough sums are in flight to
// hide the instruction's latency. The generator (asmgen) has the same
// table.
func bf16Phases(rows int) int {
	switch {
	case rows <= 3:
		return 4
	case rows <= 7:
		return 2
	}
	return 1
}
