package gemm

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sporeml/spore/internal/kernels/parallel"
)

// benchShapes are GEMM size classes: the seed MLP at batch 64 (inference
// x·W, and the training step's dW = xᵀ·g and dX = g·Wᵀ) and squares.
var benchShapes = []struct {
	name           string
	transA, transB bool
	m, n, k        int
}{
	{"seed/fc1_64x784x512", false, false, 64, 512, 784},
	{"seed/fc2_64x512x512", false, false, 64, 512, 512},
	{"seed/fc3_64x512x10", false, false, 64, 10, 512},
	{"seed/dW1_784x64x512_TN", true, false, 784, 512, 64},
	{"seed/dW2_512x64x512_TN", true, false, 512, 512, 64},
	{"seed/dX2_64x512x512_NT", false, true, 64, 512, 512},
	{"seed/dX1_64x512x784_NT", false, true, 64, 784, 512},
	{"square/256", false, false, 256, 256, 256},
	{"square/512", false, false, 512, 512, 512},
	{"square/1024", false, false, 1024, 1024, 1024},
}

func randSlice(n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = rand.Float32() - 0.5
	}
	return s
}

// BenchmarkSgemm reports GFLOP/s (2·m·n·k per call) by size class, kernel
// and thread count.
func BenchmarkSgemm(b *testing.B) {
	for _, kn := range Kernels() {
		if kn == "generic" && testing.Short() {
			continue
		}
		for _, s := range benchShapes {
			for _, th := range []int{1, 2} {
				b.Run(fmt.Sprintf("%s/%s/threads=%d", kn, s.name, th), func(b *testing.B) {
					defer SetKernel("")
					if err := SetKernel(kn); err != nil {
						b.Fatal(err)
					}
					defer parallel.SetWorkers(parallel.SetWorkers(th))
					ar, ac := s.m, s.k
					if s.transA {
						ar, ac = ac, ar
					}
					br, bc := s.k, s.n
					if s.transB {
						br, bc = bc, br
					}
					a, bb, c := randSlice(ar*ac), randSlice(br*bc), make([]float32, s.m*s.n)
					for b.Loop() {
						Sgemm(s.transA, s.transB, s.m, s.n, s.k, 1, a, ac, bb, bc, 0, c, s.n)
					}
					b.ReportMetric(2*float64(s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}

// BenchmarkFMAPeak measures one core's FMA throughput with a loop of
// independent vector FMAs, the ceiling for "% of peak" figures.
func BenchmarkFMAPeak(b *testing.B) {
	for _, kn := range []string{"avx512", "avx2"} {
		b.Run(kn, func(b *testing.B) {
			if !hasKernel(kn) {
				b.Skip("no " + kn)
			}
			var flops float64
			for b.Loop() {
				flops += fmaPeak(kn, 1<<16)
			}
			b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
