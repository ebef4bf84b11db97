//go:build !noasm

package gemm

//go:generate go run ./asmgen

import "golang.org/x/sys/cpu"

// asmTile is the signature of every generated micro-kernel (see asmgen).
type asmTile func(kc int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, alpha, beta float32, bias *float32, flags uint32, mask uint32)

// asmKernels returns the assembly kernels this CPU supports, best first.
func asmKernels() []*kernel {
	var ks []*kernel
	if cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasFMA {
		ks = append(ks, avx512Kernel)
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		ks = append(ks, avx2Kernel)
	}
	return ks
}

// avx512Kernel: 14×32 tiles, 28 zmm accumulators. Per k step it does 2
// vector loads of B and 14 broadcasts of A for 28 FMAs, well within two
// loads per cycle. kc=256 keeps the 32 KiB B micro-panel plus a 14 KiB A
// micro-panel in a 48 KiB L1.
var avx512Kernel = &kernel{
	name: "avx512",
	mr:   14, nr: 32,
	kc: 256, mc: 14 * 12, nc: 1024,
	panel: func(cols int) int {
		if cols <= 16 {
			return 16
		}
		return 32
	},
	direct:      true,
	tile:        tileAVX512,
	transpose16: transposeAVX512,
	packAT:      packATAVX512,
	gelu:        geluTile, // vec.Gelu, itself AVX-512
}

// transposeAVX512 is the packing transpose; the caller guarantees that src
// holds 16 rows of 16·groups floats and dst 16·groups rows of 16.
func transposeAVX512(src []float32, lds int, dst []float32, ldd int, groups int) {
	transpose16AVX512(&src[0], lds*4, &dst[0], ldd*4, groups)
}

// packATAVX512 packs the mc×kc block of op(A) = Aᵀ (op(A)[i][p] =
// a[p·lda + i]) into 14-row panels like packATGo: the full panels in one
// row-by-row sweep, then a partial last panel, zero-padded by its load mask.
func packATAVX512(dst, a []float32, lda, mc, kc int) {
	const mr = 14
	full, rows := mc/mr, mc%mr
	// The assembly does not check bounds: touch the last element each
	// side will use, so a bad call panics here instead.
	_ = a[(kc-1)*lda+mc-1]
	_ = dst[(mc+mr-1)/mr*mr*kc-1]
	if full > 0 {
		packAT14AVX512(&a[0], lda*4, &dst[0], mr*kc*4, kc, full, 1<<mr-1)
	}
	if rows > 0 {
		packAT14AVX512(&a[full*mr], lda*4, &dst[full*mr*kc], mr*kc*4, kc, 1, 1<<rows-1)
	}
}

func tileAVX512(rows, cols, kc int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, alpha, beta float32, bias []float32, relu bool) {
	var bp *float32
	if bias != nil {
		bp = &bias[0]
	}
	var flags uint32
	if relu {
		flags = 1
	}
	mask := uint32(uint64(1)<<cols - 1)
	var f asmTile
	switch {
	case lda < 0 && cols <= 16:
		f, lda = avx512t16[rows-1], -lda
	case lda < 0:
		f, lda = avx512t32[rows-1], -lda
	case lda == 0 && cols <= 16:
		f = avx512p16[rows-1]
	case lda == 0:
		f = avx512p32[rows-1]
	case cols <= 16:
		f = avx512d16[rows-1]
	default:
		f = avx512d32[rows-1]
	}
	f(kc, &a[0], lda*4, &b[0], ldb*4, &c[0], ldc, alpha, beta, bp, flags, mask)
}

// avx2Kernel: 6×16 tiles in 12 ymm accumulators, the classic Haswell
// shape. Without masks, narrow edge tiles go through a scratch tile.
var avx2Kernel = &kernel{
	name: "avx2",
	mr:   6, nr: 16,
	kc: 256, mc: 6 * 24, nc: 1024,
	panel: func(int) int { return 16 },
	tile:  tileAVX2,
	gelu:  geluTile,
}

func tileAVX2(rows, cols, kc int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, alpha, beta float32, bias []float32, relu bool) {
	if cols == 16 {
		var bp *float32
		if bias != nil {
			bp = &bias[0]
		}
		var flags uint32
		if relu {
			flags = 1
		}
		avx2p16[rows-1](kc, &a[0], 0, &b[0], ldb*4, &c[0], ldc, alpha, beta, bp, flags, 0)
		return
	}
	var t [6 * 16]float32
	avx2p16[rows-1](kc, &a[0], 0, &b[0], ldb*4, &t[0], 16, 1, 0, nil, 0, 0)
	finishTile(t[:], 16, rows, cols, c, ldc, alpha, beta, bias, relu)
}

// fmaPeak runs the named kernel family's FMA peak loop for n iterations and
// returns the flops done, or 0 if there is no such probe.
func fmaPeak(name string, n int) float64 {
	switch name {
	case "avx512":
		fmaPeakAVX512(n)
		return float64(n) * 16 * 32
	case "avx2":
		fmaPeakAVX2(n)
		return float64(n) * 14 * 16
	}
	return 0
}
