//go:build !amd64 || noasm

package vec

func lnStats(x []float32, eps float32) (mean, rstd float32) { return lnStatsGo(x, eps) }
func lnRow(y, x, g, b []float32, mean, rstd float32)        { lnRowGo(y, x, g, b, mean, rstd) }
func lnGradSums(x, dy, gamma, pg, pb []float32, mean, rstd float32) (sg, sgx float32) {
	return lnGradSumsGo(x, dy, gamma, pg, pb, mean, rstd)
}
func lnGradRow(dx, x, dy, gamma []float32, mean, rstd, a, c float32) {
	lnGradRowGo(dx, x, dy, gamma, mean, rstd, a, c)
}
