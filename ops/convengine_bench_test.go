package ops

import (
	"fmt"
	"github.com/sporeml/spore/internal/testkit"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/sporeml/spore/internal/kernels/parallel"
	"github.com/sporeml/spore/tensor"
)

// benchLayers are real layer shapes of resnet18, mobilenet_v3_large and
// efficientnet_b0 at 224×224 (batch set per run).
var benchLayers = []struct {
	name string
	tc   engineCase
}{
	{"r18_stem7x7s2", engineCase{c: 3, h: 224, w: 224, o: 64, kh: 7, kw: 7, s: 2, d: 1, groups: 1, pads: [4]int{3, 3, 3, 3}}},
	{"r18_3x3_64_56", engineCase{c: 64, h: 56, w: 56, o: 64, kh: 3, kw: 3, s: 1, d: 1, groups: 1, pads: [4]int{1, 1, 1, 1}}},
	{"r18_3x3s2_64to128", engineCase{c: 64, h: 56, w: 56, o: 128, kh: 3, kw: 3, s: 2, d: 1, groups: 1, pads: [4]int{1, 1, 1, 1}}},
	{"r18_1x1s2_down", engineCase{c: 64, h: 56, w: 56, o: 128, kh: 1, kw: 1, s: 2, d: 1, groups: 1}},
	{"r18_3x3_128_28", engineCase{c: 128, h: 28, w: 28, o: 128, kh: 3, kw: 3, s: 1, d: 1, groups: 1, pads: [4]int{1, 1, 1, 1}}},
	{"r18_3x3_256_14", engineCase{c: 256, h: 14, w: 14, o: 256, kh: 3, kw: 3, s: 1, d: 1, groups: 1, pads: [4]int{1, 1, 1, 1}}},
	{"r18_3x3_512_7", engineCase{c: 512, h: 7, w: 7, o: 512, kh: 3, kw: 3, s: 1, d: 1, groups: 1, pads: [4]int{1, 1, 1, 1}}},
	{"mv3_stem3x3s2", engineCase{c: 3, h: 224, w: 224, o: 16, kh: 3, kw: 3, s: 2, d: 1, groups: 1, pads: [4]int{1, 1, 1, 1}}},
	{"mv3_dw3x3_16_112", engineCase{c: 16, h: 112, w: 112, o: 16, kh: 3, kw: 3, s: 1, d: 1, groups: 16, pads: [4]int{1, 1, 1, 1}}},
	{"mv3_dw3x3s2_64_112", engineCase{c: 64, h: 112, w: 112, o: 64, kh: 3, kw: 3, s: 2, d: 1, groups: 64, pads: [4]int{1, 1, 1, 1}}},
	{"mv3_dw5x5s2_72_56", engineCase{c: 72, h: 56, w: 56, o: 72, kh: 5, kw: 5, s: 2, d: 1, groups: 72, pads: [4]int{2, 2, 2, 2}}},
	{"mv3_dw5x5_120_28", engineCase{c: 120, h: 28, w: 28, o: 120, kh: 5, kw: 5, s: 1, d: 1, groups: 120, pads: [4]int{2, 2, 2, 2}}},
	{"mv3_dw5x5_960_7", engineCase{c: 960, h: 7, w: 7, o: 960, kh: 5, kw: 5, s: 1, d: 1, groups: 960, pads: [4]int{2, 2, 2, 2}}},
	{"mv3_1x1_16to64_112", engineCase{c: 16, h: 112, w: 112, o: 64, kh: 1, kw: 1, s: 1, d: 1, groups: 1}},
	{"mv3_1x1_72to24_56", engineCase{c: 72, h: 56, w: 56, o: 24, kh: 1, kw: 1, s: 1, d: 1, groups: 1}},
	{"mv3_1x1_160to960_7", engineCase{c: 160, h: 7, w: 7, o: 960, kh: 1, kw: 1, s: 1, d: 1, groups: 1}},
	{"mv3_se_960to240_1", engineCase{c: 960, h: 1, w: 1, o: 240, kh: 1, kw: 1, s: 1, d: 1, groups: 1}},
	{"eb0_dw3x3_32_112", engineCase{c: 32, h: 112, w: 112, o: 32, kh: 3, kw: 3, s: 1, d: 1, groups: 32, pads: [4]int{1, 1, 1, 1}}},
	{"eb0_1x1_32to16_112", engineCase{c: 32, h: 112, w: 112, o: 16, kh: 1, kw: 1, s: 1, d: 1, groups: 1}},
	{"eb0_dw5x5_240_28", engineCase{c: 240, h: 28, w: 28, o: 240, kh: 5, kw: 5, s: 1, d: 1, groups: 240, pads: [4]int{2, 2, 2, 2}}},
	{"eb0_1x1_1152to192_7", engineCase{c: 1152, h: 7, w: 7, o: 192, kh: 1, kw: 1, s: 1, d: 1, groups: 1}},
}

// BenchmarkConvEngine times the layers of the vision models on the
// per-image im2col path (old) and on the engine (new), side by side, at
// batch 1 and 16, in GFLOP/s; for the 3×3 stride-1 layers also each
// algorithm forced, to place the Winograd crossover.
//
// CONVBENCH_THREADS sets the worker count (1 measures each algorithm's
// single-core efficiency, reported as cpu-GFLOP/s as well).
func BenchmarkConvEngine(b *testing.B) {
	defer func() { forceAlgo = nil }()
	if t, err := strconv.Atoi(os.Getenv("CONVBENCH_THREADS")); err == nil {
		defer parallel.SetWorkers(parallel.SetWorkers(t))
	}
	for _, l := range benchLayers {
		for _, n := range []int{1, 16} {
			tc := l.tc
			tc.n = n
			xs := tensor.Shape{tc.n, tc.c, tc.h, tc.w}
			ws := tensor.Shape{tc.o, tc.c / tc.groups, tc.kh, tc.kw}
			g := convGeometry("Conv2D", tc.attrs(), xs, ws)
			x, w := make([]float32, xs.Size()), make([]float32, ws.Size())
			for i := range x {
				x[i] = float32(i%7) - 3
			}
			for i := range w {
				w[i] = float32(i%5) - 2
			}
			out := make([]float32, g.n*g.o*g.p())
			flops := 2 * float64(g.n*g.o*g.p()*g.k())
			var cpu0 time.Duration
			report := func(b *testing.B) {
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				b.ReportMetric(flops*float64(b.N)/(testkit.ProcessCPU()-cpu0).Seconds()/1e9, "cpu-GFLOP/s")
			}
			name := fmt.Sprintf("%s/b%d", l.name, n)
			b.Run(name+"/old", func(b *testing.B) {
				conv2DForward(impl32, &g, x, w, out) // warm the scratch pools
				b.ResetTimer()
				cpu0 = testkit.ProcessCPU()
				for range b.N {
					conv2DForward(impl32, &g, x, w, out)
				}
				report(b)
			})
			b.Run(name+"/new", func(b *testing.B) {
				forceAlgo = nil
				convEngine(&g, x, w, out, nil)
				b.ResetTimer()
				cpu0 = testkit.ProcessCPU()
				for range b.N {
					convEngine(&g, x, w, out, nil)
				}
				report(b)
			})
			if g.canWinograd() {
				for _, a := range []convAlgo{algoGEMM, algoWinograd} {
					b.Run(name+"/"+a.String(), func(b *testing.B) {
						forceAlgo = &a
						convEngine(&g, x, w, out, nil)
						b.ResetTimer()
						cpu0 = testkit.ProcessCPU()
						for range b.N {
							convEngine(&g, x, w, out, nil)
						}
						forceAlgo = nil
						report(b)
					})
				}
			}
		}
	}
}
