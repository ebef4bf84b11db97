//go:build !amd64 || noasm

package vec

func linComb(c []float32, ldc, m, w, n int, alpha float32, a []float32, ar, at int, b []float32, ldb int) {
	linCombGo(c, ldc, m, w, n, alpha, a, ar, at, b, ldb)
}

func expSubMax(x []float32) (m, sum float32) { return expSubMaxGo(x) }

func transpose(dst []float32, ldd int, src []float32, lds, rows, cols int) {
	transposeGo(dst, ldd, src, lds, rows, cols)
}
