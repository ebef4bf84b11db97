package gemm

// The float64 GEMM serves gradient checks and reference computations, where
// correctness matters more than speed: it is plain Go loops arranged so the
// inner loop is always unit-stride, with no packing and no threads.

// Dgemm computes C = alpha·op(A)·op(B) + beta·C for row-major float64
// matrices, with the same conventions as [Sgemm].
func Dgemm(transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	checkArgs("Dgemm", transA, transB, m, n, k, len(a), lda, 0, len(b), ldb, 0, len(c), ldc, 0, 1)
	dgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// DgemmStrided is the float64 form of [SgemmStrided].
func DgemmStrided(transA, transB bool, m, n, k int, alpha float64, a []float64, lda, strideA int, b []float64, ldb, strideB int, beta float64, c []float64, ldc, strideC int, batch int) {
	checkArgs("DgemmStrided", transA, transB, m, n, k, len(a), lda, strideA, len(b), ldb, strideB, len(c), ldc, strideC, batch)
	for i := 0; i < batch; i++ {
		dgemm(transA, transB, m, n, k, alpha, a[i*strideA:], lda, b[i*strideB:], ldb, beta, c[i*strideC:], ldc)
	}
}

func dgemm(transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		switch beta {
		case 0:
			clear(row) // BLAS: beta == 0 ignores what C held, NaN included
		case 1:
		default:
			for j := range row {
				row[j] *= beta
			}
		}
	}
	if alpha == 0 || k == 0 {
		return
	}
	opA := func(i, p int) float64 {
		if transA {
			return a[p*lda+i]
		}
		return a[i*lda+p]
	}
	if !transB {
		// C[i,:] += (alpha·op(A)[i,p]) · B[p,:], rows of B unit-stride.
		for i := 0; i < m; i++ {
			crow := c[i*ldc : i*ldc+n]
			for p := 0; p < k; p++ {
				av := alpha * opA(i, p)
				brow := b[p*ldb : p*ldb+n]
				for j, bv := range brow {
					crow[j] += av * bv
				}
			}
		}
		return
	}
	// op(B) = Bᵀ: C[i,j] += alpha · op(A)[i,:]·B[j,:], both unit-stride
	// (op(A) rows are gathered first when A is transposed).
	tmp := make([]float64, k)
	for i := 0; i < m; i++ {
		arow := tmp
		if transA {
			for p := range tmp {
				tmp[p] = a[p*lda+i]
			}
		} else {
			arow = a[i*lda : i*lda+k]
		}
		crow := c[i*ldc : i*ldc+n]
		for j := range crow {
			brow := b[j*ldb : j*ldb+k]
			var s float64
			for p, bv := range brow {
				s += arow[p] * bv
			}
			crow[j] += alpha * s
		}
	}
}
