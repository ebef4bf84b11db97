package gemm

import (
	"slices"
	"strings"
	"sync/atomic"
)

// tileFunc is the micro-kernel contract every implementation meets (the
// assembly kernels through thin wrappers, and the pure-Go twin tileGo):
//
// A[i][p] is a[p·mr+i] when lda == 0 (a packed micro-panel: kc steps of mr
// floats, rows ≤ mr of them used), a[i·lda+p] when lda > 0 (A in place)
// and a[p·(−lda)+i] when lda < 0 (A stored transposed, in place: step p is
// a stretch of stored row p); the last two only for kernels with direct set. B[p][j] is b[p·ldb+j]: a packed
// micro-panel (ldb = kernel.panel(cols)) or, for direct kernels, B in place.
// c is the top-left element of the output tile, row stride ldc. It stores
//
//	C[i][j] = act(alpha·Σ_p A[i][p]·B[p][j] + beta·C[i][j] + bias[j])
//
// for i < rows, j < cols, where beta == 0 means C is not read, bias may be
// nil, and act is ReLU when relu is set (GELU is applied by the driver).
// kc ≥ 1.
type tileFunc func(rows, cols, kc int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, alpha, beta float32, bias []float32, relu bool)

// kernel is one float32 GEMM implementation: a micro-kernel plus the cache
// blocking that suits it.
type kernel struct {
	name   string
	mr, nr int // register tile: rows of A, columns of B
	// Cache blocking, GotoBLAS style: a kc×nr B micro-panel stays in L1
	// while the mc×kc packed A block streams from L2; the kc×nc B block
	// lives in L2/L3.
	kc, mc, nc int
	// panel returns the packed width of a B micro-panel holding cols ≤ nr
	// columns (narrower kernels exist for narrow edges).
	panel func(cols int) int
	// direct kernels also read A and B in place (lda > 0, any ldb), which
	// saves packing when the operand is not transposed.
	direct bool
	tile   tileFunc
	// transpose16, if set, transposes 16-row blocks for packing a
	// transposed B (see packB); nil means plain Go loops.
	transpose16 func(src []float32, lds int, dst []float32, ldd int, groups int)
	// packAT, if set, packs a transposed A block (see packA) with vector
	// copies; nil means the pure-Go loop packATGo. Direct kernels read a
	// transposed A in place (see transADirect), so theirs serves only
	// when that is switched off, as BenchmarkTransA does to compare.
	packAT func(dst, a []float32, lda, mc, kc int)
	// gelu applies GELU in place to a rows×cols (cols ≤ nr) tile.
	gelu func(c []float32, ldc, rows, cols int)
}

// kernels lists the float32 implementations usable on this machine, best
// first; the generic Go one is always last.
var kernels []*kernel

// cur is the kernel Sgemm uses.
var cur atomic.Pointer[kernel]

func init() {
	kernels = append(asmKernels(), genericKernel)
	cur.Store(kernels[0])
}

// Kernels returns the names of the float32 micro-kernels this machine can
// run, fastest first: some of "avx512", "avx2", then "generic" (pure Go).
func Kernels() []string {
	names := make([]string, len(kernels))
	for i, k := range kernels {
		names[i] = k.name
	}
	return names
}

// Kernel returns the name of the float32 micro-kernel in use.
func Kernel() string { return cur.Load().name }

// SetKernel selects the float32 micro-kernel by name (one of [Kernels]),
// for tests and benchmarks that compare implementations. An empty name
// restores the default. It must not race with running GEMMs.
func SetKernel(name string) error {
	if name == "" {
		cur.Store(kernels[0])
		return nil
	}
	for _, k := range kernels {
		if k.name == name {
			cur.Store(k)
			return nil
		}
	}
	return Error("gemm: unknown kernel " + name + " (have " + strings.Join(Kernels(), ", ") + ")")
}

// hasKernel reports whether name is available.
func hasKernel(name string) bool { return slices.Contains(Kernels(), name) }

// genericKernel is the pure-Go implementation, used on every architecture
// without assembly and under the noasm build tag.
var genericKernel = &kernel{
	name: "generic",
	mr:   4, nr: 4,
	kc: 256, mc: 64, nc: 1024,
	panel: func(int) int { return 4 },
	tile:  tileGeneric,
	gelu:  geluTile,
}

// tileGeneric is the generic kernel's tile: a 4×4 register block in plain
// Go for full tiles, the general loop for edges.
func tileGeneric(rows, cols, kc int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, alpha, beta float32, bias []float32, relu bool) {
	if rows != 4 || cols != 4 || lda != 0 || ldb != 4 {
		tileGo(4, rows, cols, kc, a, lda, b, ldb, c, ldc, alpha, beta, bias, relu)
		return
	}
	var c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33 float32
	a = a[:4*kc]
	b = b[:4*kc]
	for p := 0; p < len(a); p += 4 {
		ap := a[p : p+4 : p+4]
		bp := b[p : p+4 : p+4]
		a0, a1, a2, a3 := ap[0], ap[1], ap[2], ap[3]
		b0, b1, b2, b3 := bp[0], bp[1], bp[2], bp[3]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
	}
	acc := [16]float32{c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33}
	finishTile(acc[:], 4, 4, 4, c, ldc, alpha, beta, bias, relu)
}

// tileGo is the pure-Go twin of the assembly micro-kernels: the same
// contract for any packed tile height mr, in plain loops. The asm kernels
// are tested against it on identical inputs.
func tileGo(mr, rows, cols, kc int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, alpha, beta float32, bias []float32, relu bool) {
	var buf [16 * 32]float32
	acc := buf[:rows*cols]
	if rows*cols > len(buf) {
		acc = make([]float32, rows*cols)
	}
	for p := 0; p < kc; p++ {
		bp := b[p*ldb : p*ldb+cols]
		for i := 0; i < rows; i++ {
			ai := p*mr + i
			if lda > 0 {
				ai = i*lda + p
			} else if lda < 0 {
				ai = p*-lda + i
			}
			av := a[ai]
			row := acc[i*cols : i*cols+cols]
			for j, bv := range bp {
				row[j] += av * bv
			}
		}
	}
	finishTile(acc, cols, rows, cols, c, ldc, alpha, beta, bias, relu)
}

// finishTile applies the epilogue to a computed rows×cols block acc (row
// stride lda) and stores it into c.
func finishTile(acc []float32, lda, rows, cols int, c []float32, ldc int, alpha, beta float32, bias []float32, relu bool) {
	for i := 0; i < rows; i++ {
		src := acc[i*lda : i*lda+cols]
		dst := c[i*ldc : i*ldc+cols]
		for j, v := range src {
			v *= alpha
			if beta != 0 {
				v += beta * dst[j]
			}
			if bias != nil {
				v += bias[j]
			}
			if relu && v < 0 {
				v = 0
			}
			dst[j] = v
		}
	}
}

// Error is the panic value for invalid arguments (sizes, strides, slice
// lengths): a programming error in the caller, reported with the routine
// and the values involved.
type Error string

// Error returns the message.
func (e Error) Error() string { return string(e) }
