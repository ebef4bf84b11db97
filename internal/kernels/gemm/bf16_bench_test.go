package gemm

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/sporeml/spore/internal/kernels/parallel"
)

// BenchmarkGemmBF16_1024 sets the 1024³ product through the best float32
// kernel (Sgemm) beside each bf16 kernel, on one thread, reporting
// GFLOP/s: GemmBF16 on bf16 operands ("bits") and SgemmAsBF16 on float32
// operands rounded while packing ("f32"). The "ratio" sub-benchmark runs
// float32 and each bf16 kernel call by call and reports the ratio of their
// fastest calls (x_<kernel>: bf16 throughput over float32), which holds
// steadier than separate runs on a busy machine:
//
//	go test -run '^$' -bench GemmBF16_1024 -count 3 ./internal/kernels/gemm
func BenchmarkGemmBF16_1024(b *testing.B) {
	const n = 1024
	a, bb, c := randSlice(n*n), randSlice(n*n), make([]float32, n*n)
	ah, bh := toBits(a), toBits(bb)
	flops := 2.0 * n * n * n
	run := func(b *testing.B, f func()) {
		defer parallel.SetWorkers(parallel.SetWorkers(1))
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cpu0 := threadCPU()
		for b.Loop() {
			f()
		}
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		if cpu := threadCPU() - cpu0; cpu > 0 {
			b.ReportMetric(flops*float64(b.N)/cpu/1e9, "cpuGFLOP/s")
		}
	}
	fp32 := func() { Sgemm(false, false, n, n, n, 1, a, n, bb, n, 0, c, n) }
	b.Run("fp32/"+Kernel(), func(b *testing.B) { run(b, fp32) })
	defer SetBF16Kernel("")
	for _, kn := range BF16Kernels() {
		if kn == "generic" && testing.Short() {
			continue
		}
		bits := func() { GemmBF16(false, false, n, n, n, ah, n, bh, n, 0, c, n) }
		f32 := func() { SgemmAsBF16(false, false, n, n, n, a, n, bb, n, 0, c, n) }
		b.Run(kn+"/bits", func(b *testing.B) { SetBF16Kernel(kn); run(b, bits) })
		b.Run(kn+"/f32", func(b *testing.B) { SetBF16Kernel(kn); run(b, f32) })
	}
	b.Run("ratio", func(b *testing.B) {
		defer parallel.SetWorkers(parallel.SetWorkers(1))
		var kns []string
		for _, kn := range BF16Kernels() {
			if kn != "generic" {
				kns = append(kns, kn)
			}
		}
		best := make([]time.Duration, len(kns)+1)
		timeIt := func(i int, f func()) {
			t0 := time.Now()
			f()
			if d := time.Since(t0); best[i] == 0 || d < best[i] {
				best[i] = d
			}
		}
		for b.Loop() {
			timeIt(0, fp32)
			for i, kn := range kns {
				SetBF16Kernel(kn)
				timeIt(i+1, func() { GemmBF16(false, false, n, n, n, ah, n, bh, n, 0, c, n) })
			}
		}
		for i, kn := range kns {
			b.ReportMetric(float64(best[0])/float64(best[i+1]), "x_"+kn)
		}
	})
}

// BenchmarkPackedBF16 sets a dense layer's product relu(x·Wᵀ + b) with W
// packed once, in float32 (SgemmPackedBiasAct) and in bf16
// (GemmPackedBF16, each kernel), at the seed network's layer shapes and
// batches 1 to 256, on one thread and two, in GFLOP/s of wall time and of
// CPU time:
//
//	go test -run '^$' -bench PackedBF16 -count 3 ./internal/kernels/gemm
func BenchmarkPackedBF16(b *testing.B) {
	defer SetBF16Kernel("")
	for _, batch := range []int{1, 16, 64, 256} {
		for _, l := range [][2]int{{784, 512}, {512, 512}, {512, 10}} {
			k, n := l[0], l[1]
			x, w, y, bias := randSlice(batch*k), randSlice(n*k), make([]float32, batch*n), randSlice(n)
			var pf PackedB
			pf.Pack(true, k, n, w, k)
			ph := PackBF16(true, k, n, w, k)
			for _, th := range []int{1, 2} {
				variants := append([]string{"fp32"}, BF16Kernels()...)
				for _, v := range variants {
					if v == "generic" && testing.Short() {
						continue
					}
					b.Run(fmt.Sprintf("b%d/%dx%d/threads=%d/%s", batch, k, n, th, v), func(b *testing.B) {
						defer parallel.SetWorkers(parallel.SetWorkers(th))
						if v != "fp32" {
							SetBF16Kernel(v)
						}
						runtime.LockOSThread()
						defer runtime.UnlockOSThread()
						cpu0, pcpu0 := threadCPU(), processCPU()
						for b.Loop() {
							if v == "fp32" {
								SgemmPackedBiasAct(false, batch, n, k, x, k, &pf, bias, ActReLU, y, n)
							} else {
								GemmPackedBF16(batch, n, k, x, k, ph, bias, ActReLU, y, n)
							}
						}
						flops := 2 * float64(batch*n*k) * float64(b.N)
						b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
						// CPU time excludes what other processes steal (see
						// BenchmarkSgemm): this thread's with one thread, the
						// process's with two.
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
}

// BenchmarkSgemmAsBF16 sets Sgemm beside SgemmAsBF16 (default bf16
// kernel) at BenchmarkSgemm's size classes, among them the seed's training
// products with a transposed operand, on one thread:
//
//	go test -run '^$' -bench SgemmAsBF16 -count 3 ./internal/kernels/gemm
func BenchmarkSgemmAsBF16(b *testing.B) {
	for _, s := range benchShapes {
		for _, v := range []string{"fp32", "bf16"} {
			b.Run(s.name+"/"+v, func(b *testing.B) {
				defer parallel.SetWorkers(parallel.SetWorkers(1))
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
				cpu0 := threadCPU()
				for b.Loop() {
					if v == "fp32" {
						Sgemm(s.transA, s.transB, s.m, s.n, s.k, 1, a, ac, bb, bc, 0, c, s.n)
					} else {
						SgemmAsBF16(s.transA, s.transB, s.m, s.n, s.k, a, ac, bb, bc, 0, c, s.n)
					}
				}
				flops := 2 * float64(s.m*s.n*s.k) * float64(b.N)
				b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				if cpu := threadCPU() - cpu0; cpu > 0 {
					b.ReportMetric(flops/cpu/1e9, "cpuGFLOP/s")
				}
			})
		}
	}
}
