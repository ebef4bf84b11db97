//go:build amd64 && !noasm

package vec

//go:noescape
func lnStatsAVX512(x *float32, n int, eps float32) (mean, rstd float32)

//go:noescape
func lnRowAVX512(y, x, gamma, beta *float32, n int, mean, rstd float32)

//go:noescape
func lnGradSumsAVX512(x, dy, gamma, pg, pb *float32, n int, mean, rstd float32) (sg, sgx float32)

//go:noescape
func lnGradRowAVX512(dx, x, dy, gamma *float32, n int, mean, rstd, a, c float32)

func lnStats(x []float32, eps float32) (mean, rstd float32) {
	if useAsm {
		return lnStatsAVX512(&x[0], len(x), eps)
	}
	return lnStatsGo(x, eps)
}

func lnRow(y, x, g, b []float32, mean, rstd float32) {
	if useAsm && len(y) > 0 {
		lnRowAVX512(&y[0], &x[0], &g[0], &b[0], len(y), mean, rstd)
		return
	}
	lnRowGo(y, x, g, b, mean, rstd)
}

func lnGradSums(x, dy, gamma, pg, pb []float32, mean, rstd float32) (sg, sgx float32) {
	if useAsm && len(x) > 0 {
		return lnGradSumsAVX512(&x[0], &dy[0], &gamma[0], &pg[0], &pb[0], len(x), mean, rstd)
	}
	return lnGradSumsGo(x, dy, gamma, pg, pb, mean, rstd)
}

func lnGradRow(dx, x, dy, gamma []float32, mean, rstd, a, c float32) {
	if useAsm && len(dx) > 0 {
		lnGradRowAVX512(&dx[0], &x[0], &dy[0], &gamma[0], len(dx), mean, rstd, a, c)
		return
	}
	lnGradRowGo(dx, x, dy, gamma, mean, rstd, a, c)
}
