//go:build amd64 && !noasm

package vec

// The LinComb kernels, one per number of 16-lane registers a row of c
// takes (1 to 4); tail masks the lanes of the last one. Sizes and strides
// are in elements.

//go:noescape
func linComb1AVX512(c *float32, ldc, m int, a *float32, ar, at, n int, b *float32, ldb int, alpha float32, tail uint32)

//go:noescape
func linComb2AVX512(c *float32, ldc, m int, a *float32, ar, at, n int, b *float32, ldb int, alpha float32, tail uint32)

//go:noescape
func linComb3AVX512(c *float32, ldc, m int, a *float32, ar, at, n int, b *float32, ldb int, alpha float32, tail uint32)

//go:noescape
func linComb4AVX512(c *float32, ldc, m int, a *float32, ar, at, n int, b *float32, ldb int, alpha float32, tail uint32)

var linCombAVX512 = [...]func(c *float32, ldc, m int, a *float32, ar, at, n int, b *float32, ldb int, alpha float32, tail uint32){
	linComb1AVX512, linComb2AVX512, linComb3AVX512, linComb4AVX512,
}

// linComb has checked its arguments (m, w > 0); rows wider than 64 are
// done 64 columns at a time.
func linComb(c []float32, ldc, m, w, n int, alpha float32, a []float32, ar, at int, b []float32, ldb int) {
	if !useAsm || n == 0 {
		linCombGo(c, ldc, m, w, n, alpha, a, ar, at, b, ldb)
		return
	}
	for j := 0; j < w; j += 64 {
		cw := min(64, w-j)
		nv := (cw + 15) / 16
		tail := uint32(1)<<(cw-16*(nv-1)) - 1
		linCombAVX512[nv-1](&c[j], ldc, m, &a[0], ar, at, n, &b[j], ldb, alpha, tail)
	}
}

//go:noescape
func expSubMaxRowsAVX512(x *float32, n, rows, ld int, m, sum *float32)

func expSubMaxRows(x []float32, rows, cols, ld int, m, sum []float32) {
	if useAsm && cols > 0 {
		expSubMaxRowsAVX512(&x[0], cols, rows, ld, &m[0], &sum[0])
		return
	}
	expSubMaxRowsGo(x, rows, cols, ld, m, sum)
}

//go:noescape
func transpose16AVX512(dst *float32, ldd int, src *float32, lds, rows, cols int)

// transpose has checked its arguments (rows, cols > 0) and moves one
// block of up to 16×16 per kernel call.
func transpose(dst []float32, ldd int, src []float32, lds, rows, cols int) {
	if !useAsm {
		transposeGo(dst, ldd, src, lds, rows, cols)
		return
	}
	for j := 0; j < rows; j += 16 {
		for e := 0; e < cols; e += 16 {
			transpose16AVX512(&dst[e*ldd+j], ldd, &src[j*lds+e], lds, min(16, rows-j), min(16, cols-e))
		}
	}
}

//go:noescape
func softmaxBackRowsAVX512(p, dp *float32, n, rows, ld int, lse, d *float32)

func softmaxBackRows(p, dp []float32, rows, cols, ld int, lse, d []float32) {
	if useAsm {
		softmaxBackRowsAVX512(&p[0], &dp[0], cols, rows, ld, &lse[0], &d[0])
		return
	}
	softmaxBackRowsGo(p, dp, rows, cols, ld, lse, d)
}
