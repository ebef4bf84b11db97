//go:build !amd64 || noasm

package conv

// Without assembly DotRows is its pure-Go twin.

// dotRowsAsm reports whether DotRows runs assembly: never in this build.
const dotRowsAsm = false

func dotRows(part []float32, ldp int, a []float32, lda, ma int, b []float32, ldb, nb, n, batch, strideA, strideB int) {
	dotRowsGo(part, ldp, a, lda, ma, b, ldb, nb, n, batch, strideA, strideB)
}

// poolGradAsm is false: there is no assembly in this build.
const poolGradAsm = false

// maxPoolReLUGrad2x2AVX512 is never called in this build (poolGradAsm is
// false); it does no row pairs.
func maxPoolReLUGrad2x2AVX512(dst, x, gp *float32, masks *uint16, outH, xstep, wb, dstep, wpb, gstep, two int) int {
	return 0
}

// col2ImPitched is Col2ImPitchedF32's Go twin in this build.
func col2ImPitched(padded, col []float32, ld, c, hp, wp, kh, kw, dilH, dilW, outH int) {
	col2ImPitchedGo(padded, col, ld, c, hp, wp, kh, kw, dilH, dilW, outH)
}

// tapRows is TapRows' Go twin in this build.
func tapRows(dx, dy []float32, ldy, og int, wt []float32, n, c, kh, kw, plane, rowStep, colStep int) {
	tapRowsGo(dx, dy, ldy, og, wt, n, c, kh, kw, plane, rowStep, colStep)
}
