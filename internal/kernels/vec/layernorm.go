package vec

import "math"

// Row kernels of layer normalisation. A row of a layer norm is as wide as
// a token (a few dozen to a few thousand elements), so each pass over it
// is one call doing all of that pass's arithmetic: a caller normalising a
// row makes three calls (Sum, SqDevSum, LayerNormRow) and its gradient
// four, rather than one vector call per elementary operation.

// LayerNormStats returns the mean of x and 1/√(var + eps), with the
// biased variance taken about the mean in a second pass (exact for rows
// far from zero, unlike the mean of squares less the squared mean). Both
// sums are accumulated in 64 lanes like Sum. x must not be empty.
func LayerNormStats(x []float32, eps float32) (mean, rstd float32) {
	if len(x) == 0 {
		panic("vec.LayerNormStats: empty row")
	}
	return lnStats(x, eps)
}

// LayerNormRow sets y[i] = (x[i] − mean)·rstd·g[i] + b[i] for i < len(y).
// y may alias x.
func LayerNormRow(y, x, g, b []float32, mean, rstd float32) {
	checkLen("LayerNormRow", len(y), len(x), len(g), len(b))
	lnRow(y, x[:len(y)], g[:len(y)], b[:len(y)], mean, rstd)
}

// LayerNormGradSums is the first pass of a layer-norm row's gradient:
// with x̂ = (x − mean)·rstd and g = dy∘gamma over i < len(x), it adds
// dy∘x̂ to pg and dy to pb (the parameters' gradients) and returns Σ g and
// Σ g∘x̂.
func LayerNormGradSums(x, dy, gamma, pg, pb []float32, mean, rstd float32) (sg, sgx float32) {
	n := len(x)
	checkLen("LayerNormGradSums", n, len(dy), len(gamma), len(pg), len(pb))
	return lnGradSums(x, dy[:n], gamma[:n], pg[:n], pb[:n], mean, rstd)
}

// LayerNormGradRow is the second pass: dx[i] = rstd·(dy[i]·gamma[i] − a −
// c·x̂[i]) for i < len(dx), with x̂ = (x − mean)·rstd, a the mean of g and
// c the mean of g∘x̂ over the row.
func LayerNormGradRow(dx, x, dy, gamma []float32, mean, rstd, a, c float32) {
	n := len(dx)
	checkLen("LayerNormGradRow", n, len(x), len(dy), len(gamma))
	lnGradRow(dx, x[:n], dy[:n], gamma[:n], mean, rstd, a, c)
}

// The float64 row passes: the reference that package norm's float64
// kernels run, and the same loops as the float32 assembly's pure-Go twins
// below, so that one layer-norm formula is written once.

// LayerNormStatsF64 is LayerNormStats for float64: the mean of x and
// 1/√(var + eps), with the biased variance taken about the mean in a
// second pass, each sum in four accumulators. x must not be empty.
func LayerNormStatsF64(x []float64, eps float64) (mean, rstd float64) {
	if len(x) == 0 {
		panic("vec.LayerNormStatsF64: empty row")
	}
	n := len(x)
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= n; i += 4 {
		s0 += x[i]
		s1 += x[i+1]
		s2 += x[i+2]
		s3 += x[i+3]
	}
	for ; i < n; i++ {
		s0 += x[i]
	}
	mean = (s0 + s1 + s2 + s3) / float64(n)
	s0, s1, s2, s3 = 0, 0, 0, 0
	i = 0
	for ; i+4 <= n; i += 4 {
		d0, d1, d2, d3 := x[i]-mean, x[i+1]-mean, x[i+2]-mean, x[i+3]-mean
		s0 += d0 * d0
		s1 += d1 * d1
		s2 += d2 * d2
		s3 += d3 * d3
	}
	for ; i < n; i++ {
		d0 := x[i] - mean
		s0 += d0 * d0
	}
	v := (s0 + s1 + s2 + s3) / float64(n)
	return mean, 1 / math.Sqrt(v+eps)
}

// LayerNormRowF64 is LayerNormRow for float64.
func LayerNormRowF64(y, x, g, b []float64, mean, rstd float64) {
	checkLen("LayerNormRowF64", len(y), len(x), len(g), len(b))
	lnRowGo(y, x, g, b, mean, rstd)
}

// LayerNormGradSumsF64 is LayerNormGradSums for float64.
func LayerNormGradSumsF64(x, dy, gamma, pg, pb []float64, mean, rstd float64) (sg, sgx float64) {
	checkLen("LayerNormGradSumsF64", len(x), len(dy), len(gamma), len(pg), len(pb))
	return lnGradSumsGo(x, dy, gamma, pg, pb, mean, rstd)
}

// LayerNormGradRowF64 is LayerNormGradRow for float64.
func LayerNormGradRowF64(dx, x, dy, gamma []float64, mean, rstd, a, c float64) {
	checkLen("LayerNormGradRowF64", len(dx), len(x), len(dy), len(gamma))
	lnGradRowGo(dx, x, dy, gamma, mean, rstd, a, c)
}

// The pure-Go twins of the float32 assembly. The row passes are generic so
// that the float64 kernels above run the very same loops.

func lnStatsGo(x []float32, eps float32) (mean, rstd float32) {
	n := float32(len(x))
	mean = sumLeafGo(x) / n
	v := sqDevSumGo(x, mean) / n
	return mean, 1 / float32(math.Sqrt(float64(v+eps)))
}

func sqDevSumGo(x []float32, mean float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		d0, d1, d2, d3 := x[i]-mean, x[i+1]-mean, x[i+2]-mean, x[i+3]-mean
		s0 += d0 * d0
		s1 += d1 * d1
		s2 += d2 * d2
		s3 += d3 * d3
	}
	for ; i < len(x); i++ {
		d := x[i] - mean
		s0 += d * d
	}
	return (s0 + s1) + (s2 + s3)
}

func lnRowGo[T float32 | float64](y, x, g, b []T, mean, rstd T) {
	x, g, b = x[:len(y)], g[:len(y)], b[:len(y)]
	for i, v := range x {
		y[i] = (v-mean)*rstd*g[i] + b[i]
	}
}

func lnGradSumsGo[T float32 | float64](x, dy, gamma, pg, pb []T, mean, rstd T) (sg, sgx T) {
	n := len(x)
	dy, gamma, pg, pb = dy[:n], gamma[:n], pg[:n], pb[:n]
	for i, v := range x {
		xh := (v - mean) * rstd
		d := dy[i]
		g := d * gamma[i]
		sg += g
		sgx += g * xh
		pg[i] += d * xh
		pb[i] += d
	}
	return sg, sgx
}

func lnGradRowGo[T float32 | float64](dx, x, dy, gamma []T, mean, rstd, a, c T) {
	n := len(dx)
	x, dy, gamma = x[:n], dy[:n], gamma[:n]
	for i, v := range x {
		xh := (v - mean) * rstd
		dx[i] = rstd * (dy[i]*gamma[i] - a - c*xh)
	}
}
