package gemm

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/sporeml/spore/internal/kernels/parallel"
)

// transAShapes are the weight gradients dW = dYᵀ·X of a vision
// transformer's dense layers (embedding 64, MLP 128 or 256, 17 tokens ×
// batch 128 = 2176 rows; the patch embedding sees 16 patches of 49 pixels):
// op(A) = dYᵀ is m×k with dY stored k×m, so A is transposed and k is long.
var transAShapes = []struct {
	name    string
	m, n, k int
}{
	{"qkv_192x64x2176", 192, 64, 2176},
	{"proj_64x64x2176", 64, 64, 2176},
	{"fc1_128x64x2176", 128, 64, 2176},
	{"fc1_256x64x2176", 256, 64, 2176},
	{"fc2_64x128x2176", 64, 128, 2176},
	{"fc2_64x256x2176", 64, 256, 2176},
	{"patch_64x49x2048", 64, 49, 2048},
	// Wider products for contrast: the seed MLP's weight gradients at
	// batch 64 (short k) and a square.
	{"seed_784x512x64", 784, 512, 64},
	{"seed_512x512x64", 512, 512, 64},
	{"square_512", 512, 512, 512},
}

// BenchmarkTransA runs each weight-gradient shape with A transposed (T: A
// stored k×m, as dY is) and with the same product untransposed (N: A
// stored m×k), side by side, on 1 and 2 threads. Compare T against N
// within one run:
//
//	go test -run '^$' -bench TransA -count 3 ./internal/kernels/gemm
func BenchmarkTransA(b *testing.B) {
	for _, s := range transAShapes {
		for _, th := range []int{1, 2} {
			for _, v := range []string{"N", "T", "Tpack"} {
				trans := v != "N"
				b.Run(fmt.Sprintf("%s/threads=%d/%s", s.name, th, v), func(b *testing.B) {
					defer func(d bool) { transADirect = d }(transADirect)
					transADirect = v == "T"
					defer parallel.SetWorkers(parallel.SetWorkers(th))
					a, x, c := randSlice(s.m*s.k), randSlice(s.k*s.n), make([]float32, s.m*s.n)
					lda := s.k
					if trans {
						lda = s.m
					}
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					cpu0, pcpu0 := threadCPU(), processCPU()
					for b.Loop() {
						Sgemm(trans, false, s.m, s.n, s.k, 1, a, lda, x, s.n, 0, c, s.n)
					}
					flops := 2 * float64(s.m*s.n*s.k) * float64(b.N)
					b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
					cpu := threadCPU() - cpu0
					if th > 1 {
						cpu = processCPU() - pcpu0
					}
					if cpu > 0 {
						b.ReportMetric(flops/cpu/1e9, "cpuGFLOP/s")
					}
				})
			}
		}
	}
}

// BenchmarkTransARatio interleaves, call by call at each shape, the
// untransposed product (N), the transposed one read in place (T) and the
// transposed one packed (Tpack, transADirect off), and reports the fastest
// call of each as a ratio to N (1 is parity; above 1, slower). On a shared
// machine other processes slow whole stretches of a run; alternating
// single calls exposes the variants to the same disturbances, and the
// fastest call of many is the least disturbed:
//
//	go test -run '^$' -bench TransARatio -benchtime 400x ./internal/kernels/gemm
func BenchmarkTransARatio(b *testing.B) {
	for _, s := range transAShapes {
		for _, th := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/threads=%d", s.name, th), func(b *testing.B) {
				defer parallel.SetWorkers(parallel.SetWorkers(th))
				defer func(d bool) { transADirect = d }(transADirect)
				an, at := randSlice(s.m*s.k), randSlice(s.k*s.m)
				x, c := randSlice(s.k*s.n), make([]float32, s.m*s.n)
				var best [3]time.Duration
				for i := range best {
					best[i] = 1 << 62
				}
				for b.Loop() {
					for v := range best {
						transADirect = v != 2
						t0 := time.Now()
						if v == 0 {
							Sgemm(false, false, s.m, s.n, s.k, 1, an, s.k, x, s.n, 0, c, s.n)
						} else {
							Sgemm(true, false, s.m, s.n, s.k, 1, at, s.m, x, s.n, 0, c, s.n)
						}
						best[v] = min(best[v], time.Since(t0))
					}
				}
				b.ReportMetric(float64(best[0].Nanoseconds()), "N-ns")
				b.ReportMetric(float64(best[1])/float64(best[0]), "T/N")
				b.ReportMetric(float64(best[2])/float64(best[0]), "Tpack/N")
			})
		}
	}
}
