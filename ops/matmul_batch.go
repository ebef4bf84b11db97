package ops

import (
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// maxMatMulBatchRank bounds the batch axes matmulBatched plans on the
// stack; a product with more batch axes materialises its broadcast
// operands first (allocating, but correct).
const maxMatMulBatchRank = 16

// matmulBatched computes out = op(a)·op(b) over the broadcast batch axes
// without materialising a broadcast operand and without ever running the
// products row by row:
//
//   - when b has no batch extent (a weight [K, N], or batch axes of 1) and
//     a is not transposed, the batch and row axes of a are one [B·M, K]
//     matrix, so the whole product is one GEMM of B·M rows: a Linear
//     layer's [B, S, D]·[D, E] and multi-head attention's
//     sequence-first [S, B, D]·[D, 3D] (whose M is 1) are then blocked
//     GEMMs, not B products of a few rows each;
//   - otherwise each operand's batch axes get element strides (0 along
//     an axis it broadcasts over), adjacent axes whose strides chain are
//     merged, and the innermost merged axis is one strided batched GEMM
//     (parallel over its products when they are small), repeated over
//     the outer axes.
//
// Nothing here allocates in the common case, so a compiled plan's MatMul
// allocates nothing per call.
func matmulBatched[T float32 | float64](im *floatImpl[T], transA, transB bool, a, b, out *tensor.Tensor) {
	as, bs, cs := a.Shape(), b.Shape(), out.Shape()
	ra, rb, r := len(as)-2, len(bs)-2, len(cs)-2
	if ra < 0 || rb < 0 || r < 0 {
		core.Panicf("MatMul", "operands must have rank >= 2, got %v x %v", as, bs)
	}
	m, k := as[ra], as[ra+1]
	if transA {
		m, k = k, m
	}
	n := cs[r+1]
	ad, bd, cd := a.Data().([]T), b.Data().([]T), out.Data().([]T)
	nb := cs[:r].Size()
	if nb == 0 || m == 0 || n == 0 {
		return
	}
	if !transA && as[:ra].Size() == nb && bs[:rb].Size() == 1 {
		im.gemmStrided(false, transB, nb*m, n, k, ad, 0, bd, 0, cd, 1)
		return
	}
	if r > maxMatMulBatchRank {
		matmulMaterialised(im, transA, transB, a, b, out, m, k, n)
		return
	}
	// Per batch axis: extent and the element strides of a, b and c.
	var ext, sa, sb, sc [maxMatMulBatchRank]int
	strA, strB, strC := m*k, k*n, m*n
	for i := r - 1; i >= 0; i-- {
		ext[i] = cs[i]
		if j := i - (r - ra); j >= 0 && as[j] != 1 {
			sa[i] = strA
			strA *= as[j]
		}
		if j := i - (r - rb); j >= 0 && bs[j] != 1 {
			sb[i] = strB
			strB *= bs[j]
		}
		sc[i] = strC
		strC *= cs[i]
	}
	// Merge axis i into axis i+1 (the inner one) while the strides chain:
	// the two then walk memory as one axis of their product's extent.
	// Axes of extent 1 merge into anything.
	d := 0
	for i := 0; i < r; i++ {
		if ext[i] == 1 {
			continue
		}
		if d > 0 {
			o := d - 1
			if sa[o] == sa[i]*ext[i] && sb[o] == sb[i]*ext[i] && sc[o] == sc[i]*ext[i] {
				ext[o] *= ext[i]
				sa[o], sb[o], sc[o] = sa[i], sb[i], sc[i]
				continue
			}
		}
		ext[d], sa[d], sb[d], sc[d] = ext[i], sa[i], sb[i], sc[i]
		d++
	}
	if d == 0 {
		im.gemmStrided(transA, transB, m, n, k, ad, 0, bd, 0, cd, 1)
		return
	}
	inner := d - 1
	outer := nb / ext[inner]
	var idx [maxMatMulBatchRank]int
	for o := 0; o < outer; o++ {
		offA, offB, offC := 0, 0, 0
		for i := 0; i < inner; i++ {
			offA += idx[i] * sa[i]
			offB += idx[i] * sb[i]
			offC += idx[i] * sc[i]
		}
		im.gemmStrided(transA, transB, m, n, k, ad[offA:], sa[inner], bd[offB:], sb[inner], cd[offC:], ext[inner])
		for i := inner - 1; i >= 0; i-- {
			if idx[i]++; idx[i] < ext[i] {
				break
			}
			idx[i] = 0
		}
	}
}

// matmulMaterialised is the fallback for more batch axes than
// matmulBatched plans: both operands are broadcast to the full batch
// shape first.
func matmulMaterialised[T float32 | float64](im *floatImpl[T], transA, transB bool, a, b, out *tensor.Tensor, m, k, n int) {
	cs := out.Shape()
	batch := cs[:len(cs)-2]
	as, bs := a.Shape(), b.Shape()
	a = BroadcastTo(a, append(batch.Clone(), as[len(as)-2:]...)...)
	b = BroadcastTo(b, append(batch.Clone(), bs[len(bs)-2:]...)...)
	im.gemmStrided(transA, transB, m, n, k, a.Data().([]T), m*k, b.Data().([]T), k*n, out.Data().([]T), batch.Size())
}
