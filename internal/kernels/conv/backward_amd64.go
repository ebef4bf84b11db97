//go:build amd64 && !noasm

//go:generate go run backward_asmgen.go

package conv

import "golang.org/x/sys/cpu"

// dotRowsAsm reports whether DotRows runs the AVX-512 kernels: they need
// AVX-512F (512-bit FMA and masked loads); elsewhere the Go twin runs.
var dotRowsAsm = cpu.X86.HasAVX512F

//go:noescape
func dotRows1x1AVX512(part *float32, ldp int, a *float32, lda int, b *float32, ldb, n int, tail uint64, batch, stepA, stepB int)

//go:noescape
func dotRows1x2AVX512(part *float32, ldp int, a *float32, lda int, b *float32, ldb, n int, tail uint64, batch, stepA, stepB int)

//go:noescape
func dotRows1x3AVX512(part *float32, ldp int, a *float32, lda int, b *float32, ldb, n int, tail uint64, batch, stepA, stepB int)

//go:noescape
func dotRows1x4AVX512(part *float32, ldp int, a *float32, lda int, b *float32, ldb, n int, tail uint64, batch, stepA, stepB int)

//go:noescape
func dotRows1x5AVX512(part *float32, ldp int, a *float32, lda int, b *float32, ldb, n int, tail uint64, batch, stepA, stepB int)

//go:noescape
func dotRows2x1AVX512(part *float32, ldp int, a *float32, lda int, b *float32, ldb, n int, tail uint64, batch, stepA, stepB int)

//go:noescape
func dotRows2x2AVX512(part *float32, ldp int, a *float32, lda int, b *float32, ldb, n int, tail uint64, batch, stepA, stepB int)

//go:noescape
func dotRows2x3AVX512(part *float32, ldp int, a *float32, lda int, b *float32, ldb, n int, tail uint64, batch, stepA, stepB int)

//go:noescape
func dotRows2x4AVX512(part *float32, ldp int, a *float32, lda int, b *float32, ldb, n int, tail uint64, batch, stepA, stepB int)

//go:noescape
func dotRows2x5AVX512(part *float32, ldp int, a *float32, lda int, b *float32, ldb, n int, tail uint64, batch, stepA, stepB int)

//go:noescape
func dotRows3x1AVX512(part *float32, ldp int, a *float32, lda int, b *float32, ldb, n int, tail uint64, batch, stepA, stepB int)

//go:noescape
func dotRows3x2AVX512(part *float32, ldp int, a *float32, lda int, b *float32, ldb, n int, tail uint64, batch, stepA, stepB int)

//go:noescape
func dotRows3x3AVX512(part *float32, ldp int, a *float32, lda int, b *float32, ldb, n int, tail uint64, batch, stepA, stepB int)

//go:noescape
func dotRows3x4AVX512(part *float32, ldp int, a *float32, lda int, b *float32, ldb, n int, tail uint64, batch, stepA, stepB int)

//go:noescape
func dotRows3x5AVX512(part *float32, ldp int, a *float32, lda int, b *float32, ldb, n int, tail uint64, batch, stepA, stepB int)

//go:noescape
func dotRows4x1AVX512(part *float32, ldp int, a *float32, lda int, b *float32, ldb, n int, tail uint64, batch, stepA, stepB int)

//go:noescape
func dotRows4x2AVX512(part *float32, ldp int, a *float32, lda int, b *float32, ldb, n int, tail uint64, batch, stepA, stepB int)

//go:noescape
func dotRows4x3AVX512(part *float32, ldp int, a *float32, lda int, b *float32, ldb, n int, tail uint64, batch, stepA, stepB int)

//go:noescape
func dotRows4x4AVX512(part *float32, ldp int, a *float32, lda int, b *float32, ldb, n int, tail uint64, batch, stepA, stepB int)

//go:noescape
func dotRows4x5AVX512(part *float32, ldp int, a *float32, lda int, b *float32, ldb, n int, tail uint64, batch, stepA, stepB int)

// dotRowsAVX512 holds the kernels by [ma-1][nb-1].
var dotRowsAVX512 = [4][5]func(part *float32, ldp int, a *float32, lda int, b *float32, ldb, n int, tail uint64, batch, stepA, stepB int){
	{dotRows1x1AVX512, dotRows1x2AVX512, dotRows1x3AVX512, dotRows1x4AVX512, dotRows1x5AVX512},
	{dotRows2x1AVX512, dotRows2x2AVX512, dotRows2x3AVX512, dotRows2x4AVX512, dotRows2x5AVX512},
	{dotRows3x1AVX512, dotRows3x2AVX512, dotRows3x3AVX512, dotRows3x4AVX512, dotRows3x5AVX512},
	{dotRows4x1AVX512, dotRows4x2AVX512, dotRows4x3AVX512, dotRows4x4AVX512, dotRows4x5AVX512},
}

// dotRows runs DotRowsBatch on checked arguments (ma, nb, n, batch > 0)
// in blocks of up to 4×5 rows.
func dotRows(part []float32, ldp int, a []float32, lda, ma int, b []float32, ldb, nb, n, batch, strideA, strideB int) {
	if !dotRowsAsm {
		dotRowsGo(part, ldp, a, lda, ma, b, ldb, nb, n, batch, strideA, strideB)
		return
	}
	full, rest := n/16, n%16
	tail := uint64(1)<<rest - 1
	stepA, stepB := 4*strideA-64*full, 4*strideB-64*full
	for i := 0; i < ma; i += 4 {
		bi := min(4, ma-i)
		for j := 0; j < nb; j += 5 {
			bj := min(5, nb-j)
			dotRowsAVX512[bi-1][bj-1](&part[i*ldp+j*16], ldp, &a[i*lda], lda, &b[j*ldb], ldb, full, tail, batch, stepA, stepB)
		}
	}
}

//go:noescape
func col2ImPitchedAVX512(dst, src *float32, ld, n16 int, tail uint64, c, kh, kw, plane, rowStep, colStep int)

// col2ImPitched runs Col2ImPitchedF32 on checked arguments.
func col2ImPitched(padded, col []float32, ld, c, hp, wp, kh, kw, dilH, dilW, outH int) {
	n := outH * wp
	if !dotRowsAsm || n == 0 || c*kh*kw == 0 {
		col2ImPitchedGo(padded, col, ld, c, hp, wp, kh, kw, dilH, dilW, outH)
		return
	}
	col2ImPitchedAVX512(&padded[0], &col[0], 4*ld, n/16, uint64(1)<<(n%16)-1, c, kh, kw, 4*(hp+1)*wp, 4*dilH*wp, 4*dilW)
}

//go:noescape
func tapRows1AVX512(dx, dy *float32, ldy int, wt *float32, nsteps int, tail uint64, c, kh, kw, plane, rowStep, colStep int)

//go:noescape
func tapRows2AVX512(dx, dy *float32, ldy int, wt *float32, nsteps int, tail uint64, c, kh, kw, plane, rowStep, colStep int)

//go:noescape
func tapRows3AVX512(dx, dy *float32, ldy int, wt *float32, nsteps int, tail uint64, c, kh, kw, plane, rowStep, colStep int)

//go:noescape
func tapRows4AVX512(dx, dy *float32, ldy int, wt *float32, nsteps int, tail uint64, c, kh, kw, plane, rowStep, colStep int)

//go:noescape
func tapRows5AVX512(dx, dy *float32, ldy int, wt *float32, nsteps int, tail uint64, c, kh, kw, plane, rowStep, colStep int)

//go:noescape
func tapRows6AVX512(dx, dy *float32, ldy int, wt *float32, nsteps int, tail uint64, c, kh, kw, plane, rowStep, colStep int)

//go:noescape
func tapRows7AVX512(dx, dy *float32, ldy int, wt *float32, nsteps int, tail uint64, c, kh, kw, plane, rowStep, colStep int)

//go:noescape
func tapRows8AVX512(dx, dy *float32, ldy int, wt *float32, nsteps int, tail uint64, c, kh, kw, plane, rowStep, colStep int)

//go:noescape
func tapRows9AVX512(dx, dy *float32, ldy int, wt *float32, nsteps int, tail uint64, c, kh, kw, plane, rowStep, colStep int)

//go:noescape
func tapRows10AVX512(dx, dy *float32, ldy int, wt *float32, nsteps int, tail uint64, c, kh, kw, plane, rowStep, colStep int)

//go:noescape
func tapRows11AVX512(dx, dy *float32, ldy int, wt *float32, nsteps int, tail uint64, c, kh, kw, plane, rowStep, colStep int)

//go:noescape
func tapRows12AVX512(dx, dy *float32, ldy int, wt *float32, nsteps int, tail uint64, c, kh, kw, plane, rowStep, colStep int)

//go:noescape
func tapRows13AVX512(dx, dy *float32, ldy int, wt *float32, nsteps int, tail uint64, c, kh, kw, plane, rowStep, colStep int)

//go:noescape
func tapRows14AVX512(dx, dy *float32, ldy int, wt *float32, nsteps int, tail uint64, c, kh, kw, plane, rowStep, colStep int)

//go:noescape
func tapRows15AVX512(dx, dy *float32, ldy int, wt *float32, nsteps int, tail uint64, c, kh, kw, plane, rowStep, colStep int)

//go:noescape
func tapRows16AVX512(dx, dy *float32, ldy int, wt *float32, nsteps int, tail uint64, c, kh, kw, plane, rowStep, colStep int)

// tapRowsAVX512 holds the TapRows kernels by og-1.
var tapRowsAVX512 = [16]func(dx, dy *float32, ldy int, wt *float32, nsteps int, tail uint64, c, kh, kw, plane, rowStep, colStep int){
	tapRows1AVX512, tapRows2AVX512, tapRows3AVX512, tapRows4AVX512,
	tapRows5AVX512, tapRows6AVX512, tapRows7AVX512, tapRows8AVX512,
	tapRows9AVX512, tapRows10AVX512, tapRows11AVX512, tapRows12AVX512,
	tapRows13AVX512, tapRows14AVX512, tapRows15AVX512, tapRows16AVX512,
}

// tapRows runs TapRows on checked arguments (all sizes positive).
func tapRows(dx, dy []float32, ldy, og int, wt []float32, n, c, kh, kw, plane, rowStep, colStep int) {
	if !dotRowsAsm || og > 16 {
		tapRowsGo(dx, dy, ldy, og, wt, n, c, kh, kw, plane, rowStep, colStep)
		return
	}
	tapRowsAVX512[og-1](&dx[0], &dy[0], ldy, &wt[0], (n+15)/16, uint64(1)<<(n%16)-1, c, kh, kw, 4*plane, 4*rowStep, 4*colStep)
}
