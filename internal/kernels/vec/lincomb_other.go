//go:build !amd64 || noasm

package vec

func linComb(c []float32, ldc, m, w, n int, alpha float32, a []float32, ar, at int, b []float32, ldb int) {
	linCombGo(c, ldc, m, w, n, alpha, a, ar, at, b, ldb)
}

func expSubMaxRows(x []float32, rows, cols, ld int, m, sum []float32) {
	expSubMaxRowsGo(x, rows, cols, ld, m, sum)
}

func transpose(dst []float32, ldd int, src []float32, lds, rows, cols int) {
	transposeGo(dst, ldd, src, lds, rows, cols)
}

func softmaxBackRows(p, dp []float32, rows, cols, ld int, lse, d []float32) {
	softmaxBackRowsGo(p, dp, rows, cols, ld, lse, d)
}
