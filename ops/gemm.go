package ops

import (
	"github.com/sporeml/spore/internal/freelist"

	"github.com/sporeml/spore/internal/kernels/gemm"
)

// gemmFunc is a strided batched GEMM of one element type
// (gemm.SgemmStrided, gemm.DgemmStrided).
type gemmFunc[T float32 | float64] func(transA, transB bool, m, n, k int, alpha T, a []T, lda, strideA int, b []T, ldb, strideB int, beta T, c []T, ldc, strideC int, batch int)

// floatImpl holds what the float kernels (MatMul, convolution, pooling)
// use that differs by element type: the GEMM and the pools of loop descriptors and scratch buffers. One
// exists per dtype; each kernel instantiation is bound to its own when it
// is registered, so no kernel asks its operands' type while it runs.
type floatImpl[T float32 | float64] struct {
	gemm    gemmFunc[T]
	loops   freelist.List[loop[T]]
	scratch freelist.List[[]T]
}

var (
	impl32 = &floatImpl[float32]{gemm: gemm.SgemmStrided}
	impl64 = &floatImpl[float64]{gemm: gemm.DgemmStrided}
)

// gemmStrided computes c[i] = op(a[i])·op(b[i]) for i < batch, row-major,
// with element strides between consecutive matrices (0 broadcasts one),
// overwriting c, on the blocked SIMD GEMM.
func (im *floatImpl[T]) gemmStrided(transA, transB bool, m, n, k int, a []T, strideA int, b []T, strideB int, c []T, batch int) {
	lda, ldb := k, n
	if transA {
		lda = m
	}
	if transB {
		ldb = k
	}
	im.gemm(transA, transB, m, n, k, 1, a, lda, strideA, b, ldb, strideB, 0, c, n, m*n, batch)
}

// getScratch returns a pooled buffer of n elements.
func (im *floatImpl[T]) getScratch(n int) *[]T {
	p := im.scratch.Get()
	if cap(*p) < n {
		*p = make([]T, n)
	}
	*p = (*p)[:n]
	return p
}

// putScratch returns a buffer from getScratch to the pool.
func (im *floatImpl[T]) putScratch(p *[]T) { im.scratch.Put(p) }

// getLoop returns a pooled loop descriptor bound to im.
func (im *floatImpl[T]) getLoop() *loop[T] {
	l := im.loops.Get()
	l.im = im
	return l
}

// putLoop clears l (so that it keeps no buffer alive) and pools it.
func (im *floatImpl[T]) putLoop(l *loop[T]) {
	*l = loop[T]{}
	im.loops.Put(l)
}
