package gemm

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/sporeml/spore/internal/kernels/parallel"
)

func BenchmarkPack(b *testing.B) {
	k := kernels[0]
	ws := getWorkspace(k)
	a := randSlice(64 * 784)
	w := randSlice(512 * 784)
	b.Run("A_N_64x256", func(b *testing.B) {
		for b.Loop() {
			packA(ws.a, false, a, 784, 64, 256, k.mr, k.packAT)
		}
		b.ReportMetric(float64(64*256)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
	})
	b.Run("A_T_64x256", func(b *testing.B) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cpu0 := threadCPU()
		for b.Loop() {
			packA(ws.a, true, w, 512, 64, 256, k.mr, k.packAT)
		}
		b.ReportMetric(float64(64*256)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
		// CPU time excludes what other processes steal on a shared machine.
		b.ReportMetric(float64(64*256)*float64(b.N)/(threadCPU()-cpu0)/1e9, "cpuGelem/s")
	})
	// A transposed block of a weight gradient dYᵀ·X (dY stored
	// tokens×192): the AVX-512 kernel's routine (14-row panels, used when
	// transADirect is off), and the pure-Go twin at each kernel's height.
	dy := randSlice(2176 * 192)
	for _, kn := range kernels {
		for _, v := range []string{"asm", "go"} {
			tr := kn.packAT
			if v == "go" {
				tr = nil
			} else if tr == nil {
				continue
			}
			mc := kn.mr * (168 / kn.mr)
			b.Run(fmt.Sprintf("A_T_%dx256_lda192/%s/mr=%d", mc, v, kn.mr), func(b *testing.B) {
				for b.Loop() {
					for pc := 0; pc+256 <= 2176; pc += 256 {
						packA(ws.a, true, dy[pc*192:], 192, mc, 256, kn.mr, tr)
					}
				}
				b.ReportMetric(float64(mc*256*8)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
			})
		}
	}
	b.Run("B_N_256x512", func(b *testing.B) {
		for b.Loop() {
			packB(ws.b, false, w, 512, 256, 512, k.nr, k.panel, k.transpose16)
		}
		b.ReportMetric(float64(512*256)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
	})
	b.Run("B_T_256x512", func(b *testing.B) {
		for b.Loop() {
			packB(ws.b, true, w, 784, 256, 512, k.nr, k.panel, k.transpose16)
		}
		b.ReportMetric(float64(512*256)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
	})
}

func BenchmarkDirectA(b *testing.B) {
	a, bb, c := randSlice(512*512), randSlice(512*512), make([]float32, 512*512)
	defer parallel.SetWorkers(parallel.SetWorkers(1))
	for _, lim := range []int{0, 1 << 30} {
		b.Run(fmt.Sprint(lim), func(b *testing.B) {
			directAMaxM = lim
			defer func() { directAMaxM = 1 << 30 }()
			for b.Loop() {
				Sgemm(false, false, 512, 512, 512, 1, a, 512, bb, 512, 0, c, 512)
			}
			b.ReportMetric(2*512*512*512*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
