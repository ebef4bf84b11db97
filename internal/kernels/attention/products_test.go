package attention

import (
	"math/rand/v2"
	"testing"

	"github.com/sporeml/spore/internal/kernels/gemm"
	"github.com/sporeml/spore/internal/kernels/vec"
)

// BenchmarkSmallProducts times the one-tile path's three kinds of
// product at the ViT's shapes (17 tokens, head width 16) with a general
// GEMM call and with vec.LinComb, the kernel the path uses: scores
// against the keys (q·kᵀ; LinComb against kᵀ, transposed by
// vec.Transpose, whose cost is included), weights times values (P·V) and
// weights transposed times the output gradient (Pᵀ·dO). Compare the
// pairs within one run.
func BenchmarkSmallProducts(b *testing.B) {
	const L, E = 17, 16
	const ls = (L + 15) &^ 15
	r := rand.New(rand.NewPCG(1, 2))
	f32 := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		return x
	}
	q, k, p := f32(L*E), f32(L*E), f32(L*ls)
	s, kt, out := make([]float32, L*ls), make([]float32, E*ls), make([]float32, L*E)
	b.Run("QKt/GEMM", func(b *testing.B) {
		for b.Loop() {
			gemm.Sgemm(false, true, L, L, E, 0.25, q, E, k, E, 0, s, ls)
		}
	})
	b.Run("QKt/LinComb", func(b *testing.B) {
		for b.Loop() {
			vec.Transpose(kt, ls, k, E, L, E)
			vec.LinComb(s, ls, L, L, E, 0.25, q, E, 1, kt, ls)
		}
	})
	b.Run("PV/GEMM", func(b *testing.B) {
		for b.Loop() {
			gemm.Sgemm(false, false, L, E, L, 1, p, ls, k, E, 0, out, E)
		}
	})
	b.Run("PV/LinComb", func(b *testing.B) {
		for b.Loop() {
			vec.LinComb(out, E, L, E, L, 1, p, ls, 1, k, E)
		}
	})
	b.Run("PtdO/GEMM", func(b *testing.B) {
		for b.Loop() {
			gemm.Sgemm(true, false, L, E, L, 1, p, ls, k, E, 0, out, E)
		}
	})
	b.Run("PtdO/LinComb", func(b *testing.B) {
		for b.Loop() {
			vec.LinComb(out, E, L, E, L, 1, p, 1, ls, k, E)
		}
	})
}
