package ops

import "github.com/sporeml/spore/internal/kernels/gemm"

// gemmStrided computes c[i] = op(a[i])·op(b[i]) for i < batch, row-major,
// with element strides between consecutive matrices (0 broadcasts one),
// overwriting c, on the blocked SIMD GEMM.
func gemmStrided[T float32 | float64](transA, transB bool, m, n, k int, a []T, strideA int, b []T, strideB int, c []T, batch int) {
	lda, ldb := k, n
	if transA {
		lda = m
	}
	if transB {
		ldb = k
	}
	switch c := any(c).(type) {
	case []float32:
		gemm.SgemmStrided(transA, transB, m, n, k, 1, any(a).([]float32), lda, strideA, any(b).([]float32), ldb, strideB, 0, c, n, m*n, batch)
	case []float64:
		gemm.DgemmStrided(transA, transB, m, n, k, 1, any(a).([]float64), lda, strideA, any(b).([]float64), ldb, strideB, 0, c, n, m*n, batch)
	}
}
