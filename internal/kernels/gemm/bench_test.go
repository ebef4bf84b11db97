package gemm

import (
	"fmt"
	"math/rand/v2"
	"runtime"
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
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					cpu0, pcpu0 := threadCPU(), processCPU()
					for b.Loop() {
						Sgemm(s.transA, s.transB, s.m, s.n, s.k, 1, a, ac, bb, bc, 0, c, s.n)
					}
					flops := 2 * float64(s.m*s.n*s.k) * float64(b.N)
					b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
					// On a busy shared machine wall time includes time stolen
					// by other processes; CPU time does not. cpuGFLOP/s is
					// flops per CPU-second of this thread (1 thread) or of the
					// whole process (2 threads: per-core efficiency, which
					// shows the cost of splitting the work).
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

// BenchmarkFMAPeak measures the FMA throughput of one core and of all
// threads together with a loop of independent vector FMAs, the ceiling for
// "% of peak" figures.
func BenchmarkFMAPeak(b *testing.B) {
	for _, kn := range []string{"avx512", "avx2"} {
		for _, th := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/threads=%d", kn, th), func(b *testing.B) {
				if !hasKernel(kn) {
					b.Skip("no " + kn)
				}
				defer parallel.SetWorkers(parallel.SetWorkers(th))
				const iters = 1 << 16
				fn := func(lo, hi int) {
					for i := lo; i < hi; i++ {
						fmaPeak(kn, iters)
					}
				}
				for b.Loop() {
					parallel.For(th, 1, fn)
				}
				b.ReportMetric(float64(b.N)*float64(th)*iters*perIter(kn)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// perIter is the flops of one iteration of the named peak loop.
func perIter(name string) float64 {
	if name == "avx512" {
		return 16 * 32
	}
	return 14 * 16
}

// BenchmarkSgemmBiasAct measures the fused dense-layer epilogues on the
// seed's first layer shape, one thread.
func BenchmarkSgemmBiasAct(b *testing.B) {
	const m, n, k = 64, 512, 784
	x, w, bias, y := randSlice(m*k), randSlice(k*n), randSlice(n), make([]float32, m*n)
	defer parallel.SetWorkers(parallel.SetWorkers(1))
	for _, act := range []Act{ActNone, ActReLU, ActGELU} {
		b.Run(act.String(), func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cpu0 := threadCPU()
			for b.Loop() {
				SgemmBiasAct(false, false, m, n, k, x, k, w, n, bias, act, y, n)
			}
			b.ReportMetric(2*m*n*k*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			if cpu := threadCPU() - cpu0; cpu > 0 {
				b.ReportMetric(2*m*n*k*float64(b.N)/cpu/1e9, "cpuGFLOP/s")
			}
		})
	}
}

// BenchmarkPacked compares a dense layer's product x·Wᵀ (W stored [out,
// in], as nn.Dense keeps it) through Sgemm, which packs Wᵀ on every call,
// with the same product on a PackedB packed once, at the seed network's
// layer shapes and small to medium batches, on 1 and 2 threads. Run the
// variants side by side and compare ratios:
//
//	go test -run '^$' -bench Packed -count 5 ./internal/kernels/gemm
func BenchmarkPacked(b *testing.B) {
	for _, batch := range []int{1, 4, 16, 64} {
		for _, l := range [][2]int{{784, 512}, {512, 512}, {512, 10}} {
			k, n := l[0], l[1]
			for _, th := range []int{1, 2} {
				for _, packed := range []bool{false, true} {
					v := "sgemm"
					if packed {
						v = "packed"
					}
					b.Run(fmt.Sprintf("b%d/%dx%d/threads=%d/%s", batch, k, n, th, v), func(b *testing.B) {
						defer parallel.SetWorkers(parallel.SetWorkers(th))
						x, w, y := randSlice(batch*k), randSlice(n*k), make([]float32, batch*n)
						bias := randSlice(n)
						var pb PackedB
						pb.Pack(true, k, n, w, k)
						for b.Loop() {
							if packed {
								SgemmPackedBiasAct(false, batch, n, k, x, k, &pb, bias, ActReLU, y, n)
							} else {
								SgemmBiasAct(false, true, batch, n, k, x, k, w, k, bias, ActReLU, y, n)
							}
						}
						b.ReportMetric(2*float64(batch*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
					})
				}
			}
		}
	}
}
