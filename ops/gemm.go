package ops

// gemmStrided computes c[i] = op(a[i])·op(b[i]) for i < batch, row-major,
// with element strides between consecutive matrices (0 broadcasts one).
// It is a cache-friendly pure-Go loop; the SIMD GEMM replaces it.
func gemmStrided[T float32 | float64](transA, transB bool, m, n, k int, a []T, strideA int, b []T, strideB int, c []T, batch int) {
	for i := range batch {
		ai := a[i*strideA:]
		bi := b[i*strideB:]
		ci := c[i*m*n : (i+1)*m*n]
		clear(ci)
		for r := range m {
			crow := ci[r*n : (r+1)*n]
			for p := range k {
				var av T
				if transA {
					av = ai[p*m+r]
				} else {
					av = ai[r*k+p]
				}
				if transB {
					for j := range crow {
						crow[j] += av * bi[j*k+p]
					}
				} else {
					brow := bi[p*n : (p+1)*n]
					for j, bv := range brow {
						crow[j] += av * bv
					}
				}
			}
		}
	}
}
