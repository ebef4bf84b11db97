package conv

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sporeml/spore/internal/kernels/gemm"
)

// Conv2DWinograd agrees with the direct kernel (Conv2DDirect) to rounding,
// on odd and even output extents (ragged tiles at the bottom and right),
// padded and unpadded, with and without a bias, with one image and with
// batches that span several GEMM batches.
func TestConv2DWinograd(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, tc := range []struct {
		name                                     string
		n, c, h, w, outC, padT, padL, padB, padR int
		bias                                     bool
	}{
		{"CNN fixture conv2", 3, 8, 14, 14, 16, 1, 1, 1, 1, true},
		{"CNN fixture conv1", 2, 1, 28, 28, 8, 1, 1, 1, 1, true},
		{"valid, odd extents", 2, 3, 9, 8, 5, 0, 0, 0, 0, false},
		{"asymmetric padding", 1, 2, 7, 6, 3, 1, 0, 2, 1, true},
		{"one output", 1, 4, 3, 3, 2, 0, 0, 0, 0, true},
		{"many GEMM batches", 40, 2, 8, 8, 3, 1, 1, 1, 1, false},
		{"wide channels", 2, 32, 6, 6, 24, 1, 1, 1, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oh, ow := OutSize(tc.h, 3, tc.padT, tc.padB, 1, 1), OutSize(tc.w, 3, tc.padL, tc.padR, 1, 1)
			src, wt := randFloats[float32](r, tc.n*tc.c*tc.h*tc.w), randFloats[float32](r, tc.outC*tc.c*9)
			var bias []float32
			if tc.bias {
				bias = randFloats[float32](r, tc.outC)
			}
			want := make([]float32, tc.n*tc.outC*oh*ow)
			Conv2DDirect(want, src, wt, bias, make([]float32, DirectScratch(tc.c, tc.h, tc.w, 3, 3, tc.padT, tc.padL, oh, ow)),
				tc.n, tc.c, tc.h, tc.w, tc.outC, 3, 3, tc.padT, tc.padL, oh, ow)
			got := make([]float32, len(want))
			for i := range got {
				got[i] = float32(math.NaN()) // every output must be written
			}
			scratch := make([]float32, WinogradScratch(tc.n, tc.c, tc.h, tc.w, tc.outC, tc.padT, tc.padL, oh, ow))
			for i := range scratch {
				scratch[i] = 1e30 // scratch is written before it is read
			}
			Conv2DWinograd(got, src, wt, bias, scratch, tc.n, tc.c, tc.h, tc.w, tc.outC, tc.padT, tc.padL, oh, ow)
			// The terms are N(0,1)·N(0,1), 9c of them: scale the
			// tolerance by the sum's typical size.
			tol := 1e-5 * math.Sqrt(float64(9*tc.c))
			for i := range want {
				if d := math.Abs(float64(got[i] - want[i])); !(d <= tol*(1+math.Abs(float64(want[i])))) {
					t.Fatalf("dst[%d] = %v, direct %v", i, got[i], want[i])
				}
			}
		})
	}
}

// A scratch too short is refused, not overrun.
func TestConv2DWinogradShortScratch(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Conv2DWinograd accepted a short scratch")
		}
	}()
	n := WinogradScratch(1, 2, 6, 6, 3, 1, 1, 6, 6)
	Conv2DWinograd(make([]float32, 3*36), make([]float32, 2*36), make([]float32, 3*2*9), nil, make([]float32, n-1), 1, 2, 6, 6, 3, 1, 1, 6, 6)
}

// BenchmarkConv3x3 compares, side by side in one run, the ways a stride-1
// 3×3 convolution can run here — Winograd F(2×2, 3×3) (transforming the
// filters per call, and with them transformed once, as a plan holding them
// would), the direct kernel, and the pitched im2col + GEMM that the framework's convolution uses
// (PadPlanes, Im2ColPitched, one GEMM per image, UnpitchRows) — at the CNN
// fixture's two layers at batch 64 and at a wider layer where Winograd's
// 2.25× fewer multiplies have GEMMs large enough to pay. The three
// alternate call by call, and each reports its fastest call (min-µs) and
// how many times as long as the pitched path's fastest call it took
// (x-pitched): on a shared machine the fastest calls are the ones the
// other load disturbed least.
func BenchmarkConv3x3(b *testing.B) {
	for _, l := range []struct {
		name             string
		n, c, h, w, outC int
	}{
		{"cnn_conv1_1x28x28_8", 64, 1, 28, 28, 8},
		{"cnn_conv2_8x14x14_16", 64, 8, 14, 14, 16},
		{"wide_64x14x14_64", 8, 64, 14, 14, 64},
	} {
		const pad = 1
		oh, ow := l.h, l.w
		r := rand.New(rand.NewPCG(1, 1))
		src, wt, bias := randFloats[float32](r, l.n*l.c*l.h*l.w), randFloats[float32](r, l.outC*l.c*9), randFloats[float32](r, l.outC)
		dst := make([]float32, l.n*l.outC*oh*ow)
		wscratch := make([]float32, WinogradScratch(l.n, l.c, l.h, l.w, l.outC, pad, pad, oh, ow))
		u := make([]float32, WinogradFiltersLen(l.outC, l.c))
		WinogradFilters(u, wt, l.outC, l.c)
		dscratch := make([]float32, DirectScratch(l.c, l.h, l.w, 3, 3, pad, pad, oh, ow))
		hp, wp := Pitch(l.h, l.w, 3, 3, pad, pad, 1, 1, oh, ow)
		plane, np, k := (hp+1)*wp, oh*wp, l.c*9
		padded, col, res := make([]float32, l.c*plane), make([]float32, k*np), make([]float32, l.outC*np)
		ways := []struct {
			name string
			run  func()
		}{
			{"pitched", func() {
				for i := range l.n {
					PadPlanes(padded, src[i*l.c*l.h*l.w:], l.c, l.h, l.w, pad, pad, hp, wp)
					Im2ColPitched(col, np, padded, l.c, hp, wp, 3, 3, 1, 1, oh)
					gemm.Sgemm(false, false, l.outC, np, k, 1, wt, k, col, np, 0, res, np)
					UnpitchRows(dst[i*l.outC*oh*ow:], res, l.outC, oh, ow, wp)
				}
			}},
			{"winograd", func() {
				Conv2DWinograd(dst, src, wt, bias, wscratch, l.n, l.c, l.h, l.w, l.outC, pad, pad, oh, ow)
			}},
			{"winograd-held-filters", func() {
				Conv2DWinogradTransformed(dst, src, u, bias, wscratch[len(u):], l.n, l.c, l.h, l.w, l.outC, pad, pad, oh, ow)
			}},
			{"direct", func() {
				Conv2DDirect(dst, src, wt, bias, dscratch, l.n, l.c, l.h, l.w, l.outC, 3, 3, pad, pad, oh, ow)
			}},
		}
		b.Run(l.name, func(b *testing.B) {
			best := make([]time.Duration, len(ways))
			for i := range best {
				best[i] = time.Duration(math.MaxInt64)
			}
			for b.Loop() {
				for i, w := range ways {
					start := time.Now()
					w.run()
					best[i] = min(best[i], time.Since(start))
				}
			}
			for i, w := range ways {
				b.ReportMetric(float64(best[i].Microseconds()), w.name+"-min-µs")
				if i > 0 {
					b.ReportMetric(float64(best[i])/float64(best[0]), w.name+"-x-pitched")
				}
			}
		})
	}
}
