package vec

import (
	"fmt"
	"math"
)

// LinComb sets each of m rows of c to alpha times a linear combination of
// n rows of b, with the weights read from a at arbitrary strides:
//
//	c[r·ldc + j] = alpha · Σ_{t<n} a[r·ar + t·at] · b[t·ldb + j]    r < m, j < w
//
// It is a matrix product C = alpha·A·B (ar = lda, at = 1) or C =
// alpha·Aᵀ·B (ar = 1, at = lda) for the tiny operands of one-tile
// attention — a few dozen rows of a few dozen columns — where a general
// GEMM spends longer packing its operands and dispatching than
// multiplying. Nothing is packed: each row of c is accumulated in
// registers, with the row of b as the vector operand and each weight
// broadcast from a. c must not overlap a or b.
//
// Each element is a chain of fused multiply-adds in the order t = 0, 1,
// …, n−1 from zero, then one multiplication by alpha, whatever m, the
// strides or the implementation: two calls on the same values give the
// same bits. (The Go twin fuses through float64, which rounds twice in
// rare halfway cases; it agrees with the assembly to an ulp.)
func LinComb(c []float32, ldc, m, w, n int, alpha float32, a []float32, ar, at int, b []float32, ldb int) {
	if !linCombArgs("LinComb", len(c), ldc, m, w, n, len(a), ar, at, len(b), ldb) {
		return
	}
	linComb(c, ldc, m, w, n, alpha, a, ar, at, b, ldb)
}

// LinCombF64 is LinComb for float64, in plain Go.
func LinCombF64(c []float64, ldc, m, w, n int, alpha float64, a []float64, ar, at int, b []float64, ldb int) {
	if !linCombArgs("LinCombF64", len(c), ldc, m, w, n, len(a), ar, at, len(b), ldb) {
		return
	}
	linCombGo(c, ldc, m, w, n, alpha, a, ar, at, b, ldb)
}

// linCombArgs panics when a size or stride is negative or a slice too
// short, naming it, and reports whether there is anything to compute. A
// call with n = 0 still writes its rows (with zeros).
func linCombArgs(op string, lc, ldc, m, w, n, la, ar, at, lb, ldb int) bool {
	if m < 0 || w < 0 || n < 0 || ldc < 0 || ar < 0 || at < 0 || ldb < 0 {
		panic(fmt.Sprintf("vec.%s: negative size or stride in m=%d w=%d n=%d ldc=%d ar=%d at=%d ldb=%d", op, m, w, n, ldc, ar, at, ldb))
	}
	if m == 0 || w == 0 {
		return false
	}
	if want := (m-1)*ldc + w; lc < want {
		panic(fmt.Sprintf("vec.%s: c has %d elements, want %d", op, lc, want))
	}
	if m > 1 && ldc < w {
		panic(fmt.Sprintf("vec.%s: rows of c overlap (ldc %d < w %d)", op, ldc, w))
	}
	if n == 0 {
		return true
	}
	if want := (m-1)*ar + (n-1)*at + 1; la < want {
		panic(fmt.Sprintf("vec.%s: a has %d elements, want %d", op, la, want))
	}
	if want := (n-1)*ldb + w; lb < want {
		panic(fmt.Sprintf("vec.%s: b has %d elements, want %d", op, lb, want))
	}
	return true
}

// linCombGo is LinComb's pure-Go twin. The float64 FMA is exact for the
// product of two float32s, so float32 results round twice only when the
// float64 sum lands on a float32 halfway point.
func linCombGo[T float32 | float64](c []T, ldc, m, w, n int, alpha T, a []T, ar, at int, b []T, ldb int) {
	for r := range m {
		row := c[r*ldc : r*ldc+w]
		clear(row)
		for t := range n {
			x := float64(a[r*ar+t*at])
			brow := b[t*ldb : t*ldb+w]
			for j, y := range brow {
				row[j] = T(math.FMA(x, float64(y), float64(row[j])))
			}
		}
		for j := range row {
			row[j] *= alpha
		}
	}
}
