package vec

import (
	"fmt"
	"math"
)

// ExpSubMaxRows replaces each of rows rows of cols elements of x (ld
// apart) by e^(x − m), with m the row's largest element, and stores m in
// m[i] and the sum of the new row (added in 32 lanes, then pairwise) in
// sum[i]: a softmax's numerators, maxima and denominators, two passes
// over each row in registers, one call for all rows. Exp's accuracy
// applies. m[i] is NaN if row i holds a NaN (every element then becomes
// NaN); if the row is empty or all -Inf, m[i] is -Inf, sum[i] is 0 and
// the row is left alone.
//
// It serves rows of a few dozen elements (one-tile attention), where a
// Max call and an exponential call per row cost more than their
// arithmetic.
func ExpSubMaxRows(x []float32, rows, cols, ld int, m, sum []float32) {
	if rows < 0 || cols < 0 || ld < 0 {
		panic(fmt.Sprintf("vec.ExpSubMaxRows: negative size or stride in rows=%d cols=%d ld=%d", rows, cols, ld))
	}
	if rows == 0 {
		return
	}
	if want := (rows-1)*ld + cols; len(x) < want {
		panic(fmt.Sprintf("vec.ExpSubMaxRows: x has %d elements, want %d", len(x), want))
	}
	if len(m) < rows || len(sum) < rows {
		panic(fmt.Sprintf("vec.ExpSubMaxRows: m and sum have %d and %d elements, want %d", len(m), len(sum), rows))
	}
	expSubMaxRows(x, rows, cols, ld, m, sum)
}

// expSubMaxRowsGo is ExpSubMaxRows's pure-Go twin.
func expSubMaxRowsGo(x []float32, rows, cols, ld int, m, sum []float32) {
	for i := range rows {
		m[i], sum[i] = expSubMaxGo(x[i*ld : i*ld+cols])
	}
}

// expSubMaxGo is one row of expSubMaxRowsGo.
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
