package vec

import "fmt"

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
// Each element is a chain of multiply-adds in the order t = 0, 1, …,
// n−1 from zero, then one multiplication by alpha, whatever m or the
// strides: two calls on the same values give the same bits. The AVX-512
// kernels fuse each multiply-add (one rounding); the Go twin (other CPUs,
// -tags noasm) rounds the product and the sum, so the two differ in the
// last bits.
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

// linCombGo is LinComb's pure-Go twin. Each element accumulates in a
// register over t, four columns at a time so that four chains overlap,
// with a multiply and an add: Go has no float32 FMA, and rounding a
// float64 one back to float32 at every step made the twin twice as slow
// as a GEMM's Go kernel on these tiles.
func linCombGo[T float32 | float64](c []T, ldc, m, w, n int, alpha T, a []T, ar, at int, b []T, ldb int) {
	for r := range m {
		row := c[r*ldc : r*ldc+w]
		ra := r * ar
		j := 0
		for ; j+4 <= w; j += 4 {
			var s0, s1, s2, s3 T
			for t := range n {
				x := a[ra+t*at]
				bt := b[t*ldb+j : t*ldb+j+4]
				s0 += x * bt[0]
				s1 += x * bt[1]
				s2 += x * bt[2]
				s3 += x * bt[3]
			}
			row[j], row[j+1], row[j+2], row[j+3] = s0*alpha, s1*alpha, s2*alpha, s3*alpha
		}
		for ; j < w; j++ {
			var s0 T
			for t := range n {
				s0 += a[ra+t*at] * b[t*ldb+j]
			}
			row[j] = s0 * alpha
		}
	}
}
