//go:build amd64 && !noasm

package gemm

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"testing"

	"github.com/sporeml/spore/internal/kernels/half"
	"github.com/sporeml/spore/internal/kernels/parallel"
)

// randPanels returns n random bf16 values (normal, no subnormals: the
// hardware treats those as zero, which the twins do not model).
func randPanels(r *rand.Rand, n int) []uint16 {
	h := alignedBF16(n)
	for i := range h {
		h[i] = half.BF16(float32(r.NormFloat64()))
	}
	return h
}

// TestAsmBF16Twins runs each assembly kernel and its pure-Go twin on
// identical packed panels: VDPBF16PS must agree bit for bit; TDPBF16PS,
// whose internal summation order is not the twin's (see stripRowsGo),
// within the float32 summation bound (k+2)·2⁻²⁴·(Σ|a·b| + |c|).
func TestAsmBF16Twins(t *testing.T) {
	type twin struct {
		kern    *bf16Kernel
		goBlock func(rows, cols, kcp int, a, b []uint16, ps int, c []float32, ldc int, acc bool)
		exact   bool
	}
	var twins []twin
	if slices.Contains(BF16Kernels(), "amx") {
		twins = append(twins, twin{bf16AMX, blockRowsGo, false})
	}
	if slices.Contains(BF16Kernels(), "avx512bf16") {
		twins = append(twins, twin{bf16DP, blockPairsGo, true})
	}
	if len(twins) == 0 {
		t.Skip("this CPU has no bf16 assembly kernel")
	}
	r := rand.New(rand.NewPCG(21, 22))
	for _, tw := range twins {
		t.Run(tw.kern.name, func(t *testing.T) {
			for _, sh := range [][3]int{{1, 1, 32}, {2, 40, 64}, {5, 64, 32}, {20, 32, 96}, {14, 32, 64}, {32, 32, 32}, {31, 33, 96}, {64, 96, 512}, {45, 70, 160}, {100, 5, 32}} {
				rows, cols, kcp := sh[0], sh[1], sh[2]
				np := (cols + 31) / 32
				ps := kcp*bf16NR + 64 // a gap between panels, to check ps is honoured
				a := randPanels(r, tw.kern.aRows(rows)*kcp)
				b := randPanels(r, (np-1)*ps+kcp*bf16NR)
				for _, acc := range []bool{false, true} {
					ldc := cols + 5
					c0 := make([]float32, rows*ldc)
					for i := range c0 {
						c0[i] = float32(r.NormFloat64())
					}
					c1, c2 := slices.Clone(c0), slices.Clone(c0)
					tw.kern.block(rows, cols, kcp, a, b, ps, c1, ldc, acc)
					tw.goBlock(rows, cols, kcp, a, b, ps, c2, ldc, acc)
					// mag[i] = Σ|a·b| + |c|, computed with the twin on |a|, |b|, |c|.
					mag := make([]float32, len(c0))
					if !tw.exact {
						absA, absB := absBF16(a), absBF16(b)
						for i := range mag {
							mag[i] = float32(math.Abs(float64(c0[i])))
						}
						tw.goBlock(rows, cols, kcp, absA, absB, ps, mag, ldc, acc)
					}
					for i := range c1 {
						if tw.exact && math.Float32bits(c1[i]) != math.Float32bits(c2[i]) ||
							!tw.exact && !(math.Abs(float64(c1[i]-c2[i])) <= float64(kcp+2)/(1<<24)*float64(mag[i])) {
							t.Fatalf("%v acc=%v: C[%d][%d] asm %g, twin %g", sh, acc, i/ldc, i%ldc, c1[i], c2[i])
						}
					}
				}
			}
		})
	}
}

func absBF16(x []uint16) []uint16 {
	y := alignedBF16(len(x))
	for i, v := range x {
		y[i] = v &^ 0x8000
	}
	return y
}

// TestPackBF16AsmTwin packs the same operands with the AVX-512 packing
// routines and with their pure-Go twins (bf16PackAsm off), bits and
// float32, B and Bᵀ, full and ragged panels, and compares the panels bit
// for bit.
func TestPackBF16AsmTwin(t *testing.T) {
	if !bf16PackAsm {
		t.Skip("no AVX-512 packing on this CPU")
	}
	defer func() { bf16PackAsm = true }()
	r := rand.New(rand.NewPCG(23, 24))
	for _, sh := range [][2]int{{64, 32}, {97, 65}, {600, 300}, {31, 31}, {1024, 96}, {33, 257}} {
		k, n := sh[0], sh[1]
		for _, transB := range []bool{false, true} {
			ldb := n + 3
			if transB {
				ldb = k + 3
			}
			b := make([]float32, max(k, n)*ldb)
			for i := range b {
				b[i] = float32(r.NormFloat64())
			}
			bits := toBits(b)
			bf16PackAsm = true
			p1, h1 := PackBF16(transB, k, n, b, ldb), PackBF16Bits(transB, k, n, bits, ldb)
			bf16PackAsm = false
			p2, h2 := PackBF16(transB, k, n, b, ldb), PackBF16Bits(transB, k, n, bits, ldb)
			if !equalU16(p1.data, p2.data) || !equalU16(h1.data, h2.data) || !equalU16(p1.data, h1.data) {
				t.Fatalf("k=%d n=%d transB=%v: assembly and Go packing differ", k, n, transB)
			}
		}
	}
}

// BenchmarkBF16Peak sets the throughput of VDPBF16PS (a loop of
// independent instructions, the VDPBF16PS kernel's ceiling) beside the
// float32 FMA peak of BenchmarkFMAPeak's loop, in multiply-adds per second
// of this thread's CPU time, on one thread.
func BenchmarkBF16Peak(b *testing.B) {
	const iters = 1 << 16
	for _, v := range []string{"vdpbf16ps", "fma"} {
		b.Run(v, func(b *testing.B) {
			if v == "vdpbf16ps" && !slices.Contains(BF16Kernels(), "avx512bf16") {
				b.Skip("no AVX512-BF16")
			}
			if v == "fma" && !hasKernel("avx512") {
				b.Skip("no AVX-512")
			}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cpu0 := threadCPU()
			macs := 0.0
			for b.Loop() {
				if v == "fma" {
					macs += fmaPeak("avx512", iters) / 2
				} else {
					dpbf16Peak(iters)
					macs += iters * 24 * 32
				}
			}
			if cpu := threadCPU() - cpu0; cpu > 0 {
				b.ReportMetric(macs/cpu/1e9, "cpuGMAC/s")
			}
		})
	}
}

// TestAMXUnderPreemption runs AMX products on several goroutines at once,
// beside goroutines that spin without yielding (so the scheduler sends
// preemption signals) and under a CPU profile (SIGPROF at 100 Hz), and
// checks every result bit for bit against one computed alone: tile state
// must survive signals, preemption and goroutines moving between threads.
func TestAMXUnderPreemption(t *testing.T) {
	if !slices.Contains(BF16Kernels(), "amx") {
		t.Skip("no AMX")
	}
	defer SetBF16Kernel("")
	SetBF16Kernel("amx")
	defer parallel.SetWorkers(parallel.SetWorkers(1))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	const m, n, k = 96, 160, 1024
	r := rand.New(rand.NewPCG(41, 42))
	a, b := toBits(randBF16Operand(r, m*k)), toBits(randBF16Operand(r, k*n))
	want := make([]float32, m*n)
	GemmBF16(false, false, m, n, k, a, k, b, n, 0, want, n)
	if pprof.StartCPUProfile(io.Discard) == nil {
		defer pprof.StopCPUProfile()
	}
	stop := make(chan struct{})
	var spin sync.WaitGroup
	for range 2 {
		spin.Add(1)
		go func() {
			defer spin.Done()
			x := 0
			for {
				select {
				case <-stop:
					return
				default:
				}
				for i := 0; i < 1<<22; i++ { // no calls: only async preemption stops it
					x += i ^ x>>3
				}
			}
		}()
	}
	// Enough calls for a few hundred milliseconds of tile work: tens of
	// profiling signals and preemption requests land inside the kernel.
	iters := 300
	if testing.Short() {
		iters = 60
	}
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := make([]float32, m*n)
			for it := 0; it < iters; it++ {
				GemmBF16(false, false, m, n, k, a, k, b, n, 0, c, n)
				for i := range c {
					if math.Float32bits(c[i]) != math.Float32bits(want[i]) {
						errs <- fmt.Sprintf("goroutine %d, call %d: C[%d] = %g, want %g", g, it, i, c[i], want[i])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	spin.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
