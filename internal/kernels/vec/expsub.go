package vec

import "math"

// ExpSubMax replaces x by e^(x − m), with m the largest element of x, and
// returns m and the sum of the new x (added in 32 lanes, then pairwise):
// a softmax row's numerators, its maximum and its denominator in two
// passes of one call, with nothing spilled between them. Exp's accuracy
// applies. m is NaN if x holds a NaN (every element then becomes NaN); if
// x is empty or all -Inf, m is -Inf, sum is 0 and x is left alone.
//
// It serves rows of a few dozen elements (one-tile attention), where a
// Max call and an exponential call per row cost more than their
// arithmetic.
func ExpSubMax(x []float32) (m, sum float32) {
	return expSubMax(x)
}

// expSubMaxGo is ExpSubMax's pure-Go twin.
func expSubMaxGo(x []float32) (m, sum float32) {
	m = float32(math.Inf(-1))
	for _, v := range x {
		if v != v {
			m = v
			break
		}
		m = max(m, v)
	}
	if math.IsInf(float64(m), -1) {
		return m, 0
	}
	return m, expShiftSumGo(x, x, -m)
}
