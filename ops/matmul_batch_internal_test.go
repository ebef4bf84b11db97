package ops

import (
	"testing"

	"github.com/sporeml/spore/tensor"
)

// BenchmarkMatMulBatched times the batched MatMul on vit_b_16's shapes
// beside the way the kernel ran them before: the sequence-first QKV
// projection [197, B, 768]·[768, 2304] as 197 products of B rows
// ("per-row", what a stride-0 weight with M = B gave), against one
// flattened GEMM ("flat"); the MLP's [B, 197, 768]·[768, 3072] as B
// products against one; and attention's scores [12, 197, 64]·[12, 64, 197]
// as one strided batched call (its only form, for reference).
func BenchmarkMatMulBatched(b *testing.B) {
	for _, c := range []struct {
		name       string
		a, w       []int
		m, k, n    int
		oldBatch   int
		oldStrideA int
	}{
		{name: "qkv-seqfirst-b1", a: []int{197, 1, 768}, w: []int{768, 2304}, m: 1, k: 768, n: 2304, oldBatch: 197, oldStrideA: 768},
		{name: "qkv-seqfirst-b4", a: []int{197, 4, 768}, w: []int{768, 2304}, m: 4, k: 768, n: 2304, oldBatch: 197, oldStrideA: 4 * 768},
		{name: "mlp-b4", a: []int{4, 197, 768}, w: []int{768, 3072}, m: 197, k: 768, n: 3072, oldBatch: 4, oldStrideA: 197 * 768},
		{name: "scores-12x197x64", a: []int{12, 197, 64}, w: []int{12, 64, 197}},
	} {
		tensor.SetSeed(1)
		a := tensor.RandNormal(tensor.Float32, 0, 1, c.a...)
		w := tensor.RandNormal(tensor.Float32, 0, 1, c.w...)
		out := MatMul(a, w)
		b.Run(c.name+"/new", func(b *testing.B) {
			for b.Loop() {
				matmulBatched(impl32, false, false, a, w, out)
			}
		})
		if c.oldBatch == 0 {
			continue
		}
		b.Run(c.name+"/old", func(b *testing.B) {
			ad, wd, od := a.Data().([]float32), w.Data().([]float32), out.Data().([]float32)
			for b.Loop() {
				impl32.gemmStrided(false, false, c.m, c.n, c.k, ad, c.oldStrideA, wd, 0, od, c.oldBatch)
			}
		})
	}
}
