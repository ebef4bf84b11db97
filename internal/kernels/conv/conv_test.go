package conv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sporeml/spore/internal/kernels/gemm"
)

// geom is one convolution / pooling geometry of the table-driven tests.
type geom struct {
	c, h, w, kh, kw, padT, padL, padB, padR, sH, sW, dH, dW int
}

func (g geom) out() (int, int) {
	return OutSize(g.h, g.kh, g.padT, g.padB, g.sH, g.dH), OutSize(g.w, g.kw, g.padL, g.padR, g.sW, g.dW)
}

var geoms = []geom{
	{1, 5, 5, 3, 3, 0, 0, 0, 0, 1, 1, 1, 1},
	{2, 7, 6, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1},
	{3, 9, 11, 3, 3, 1, 2, 1, 0, 2, 3, 1, 1},
	{2, 10, 9, 3, 3, 2, 2, 2, 2, 1, 2, 2, 3},
	{1, 28, 28, 5, 5, 2, 2, 2, 2, 1, 1, 1, 1},
	{6, 14, 14, 5, 5, 0, 0, 0, 0, 1, 1, 1, 1},
	{1, 4, 4, 2, 2, 3, 3, 3, 3, 2, 2, 1, 1}, // windows wholly in the padding
	{2, 1, 13, 1, 4, 0, 1, 0, 2, 1, 3, 1, 2},
	{1, 3, 3, 5, 5, 1, 1, 1, 1, 1, 1, 1, 1}, // kernel larger than the image
}

func randFloats[T Float](r *rand.Rand, n int) []T {
	x := make([]T, n)
	for i := range x {
		x[i] = T(r.NormFloat64())
	}
	return x
}

// at returns src[ci, iy, ix] or 0 in the padding.
func at[T Float](src []T, g geom, ci, iy, ix int) T {
	if iy < 0 || iy >= g.h || ix < 0 || ix >= g.w {
		return 0
	}
	return src[(ci*g.h+iy)*g.w+ix]
}

func testIm2Col[T Float](t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, g := range geoms {
		oh, ow := g.out()
		src := randFloats[T](r, g.c*g.h*g.w)
		cols := make([]T, g.c*g.kh*g.kw*oh*ow)
		for i := range cols {
			cols[i] = 99 // every element must be written
		}
		Im2Col(cols, src, g.c, g.h, g.w, g.kh, g.kw, g.padT, g.padL, g.sH, g.sW, g.dH, g.dW, oh, ow)
		for ci := 0; ci < g.c; ci++ {
			for ki := 0; ki < g.kh; ki++ {
				for kj := 0; kj < g.kw; kj++ {
					row := (ci*g.kh+ki)*g.kw + kj
					for oy := 0; oy < oh; oy++ {
						for ox := 0; ox < ow; ox++ {
							want := at(src, g, ci, oy*g.sH-g.padT+ki*g.dH, ox*g.sW-g.padL+kj*g.dW)
							if got := cols[row*oh*ow+oy*ow+ox]; got != want {
								t.Fatalf("%+v: cols[%d][%d,%d] = %v, want %v", g, row, oy, ox, got, want)
							}
						}
					}
				}
			}
		}
		// Col2Im is the adjoint: <Im2Col(x), y> = <x, Col2Im(y)>. Also check
		// it accumulates rather than overwrites.
		y := randFloats[T](r, len(cols))
		back := make([]T, len(src))
		for i := range back {
			back[i] = 1
		}
		Col2Im(back, y, g.c, g.h, g.w, g.kh, g.kw, g.padT, g.padL, g.sH, g.sW, g.dH, g.dW, oh, ow)
		var lhs, rhs float64
		for i := range cols {
			lhs += float64(cols[i]) * float64(y[i])
		}
		for i := range src {
			rhs += float64(src[i]) * float64(back[i]-1)
		}
		if math.Abs(lhs-rhs) > 1e-4*(1+math.Abs(lhs)) {
			t.Fatalf("%+v: <Im2Col x, y> = %v, <x, Col2Im y> = %v", g, lhs, rhs)
		}
	}
}

func TestIm2Col(t *testing.T) {
	t.Run("float32", testIm2Col[float32])
	t.Run("float64", testIm2Col[float64])
}

func testPool[T Float](t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const planes = 3
	for _, g := range geoms {
		if g.dH != 1 || g.dW != 1 {
			continue
		}
		oh, ow := g.out()
		src := randFloats[T](r, planes*g.h*g.w)
		src[len(src)/2] = src[len(src)/2+1] // a tie
		mx, am := make([]T, planes*oh*ow), make([]int32, planes*oh*ow)
		MaxPool2D(mx, am, src, planes, g.h, g.w, g.kh, g.kw, g.padT, g.padL, g.sH, g.sW, oh, ow)
		gout := randFloats[T](r, len(mx))
		dx := make([]T, len(src))
		MaxPool2DBackward(dx, gout, am, planes, g.h, g.w, oh, ow)
		wantDx := make([]T, len(src))
		for _, incl := range []bool{false, true} {
			av := make([]T, len(mx))
			AvgPool2D(av, src, planes, g.h, g.w, g.kh, g.kw, g.padT, g.padL, g.sH, g.sW, oh, ow, incl)
			adx := make([]T, len(src))
			AvgPool2DBackward(adx, gout, planes, g.h, g.w, g.kh, g.kw, g.padT, g.padL, g.sH, g.sW, oh, ow, incl)
			wantAdx := make([]T, len(src))
			for p := 0; p < planes; p++ {
				for oy := 0; oy < oh; oy++ {
					for ox := 0; ox < ow; ox++ {
						o := (p*oh+oy)*ow + ox
						m, idx := T(math.Inf(-1)), int32(-1)
						var s T
						cnt := 0
						for ky := 0; ky < g.kh; ky++ {
							for kx := 0; kx < g.kw; kx++ {
								iy, ix := oy*g.sH-g.padT+ky, ox*g.sW-g.padL+kx
								if iy < 0 || iy >= g.h || ix < 0 || ix >= g.w {
									continue
								}
								v := src[(p*g.h+iy)*g.w+ix]
								if v > m || idx < 0 {
									m, idx = v, int32(iy*g.w+ix)
								}
								s += v
								cnt++
							}
						}
						if !incl && mx[o] != m || !incl && am[o] != idx {
							t.Fatalf("%+v: max[%d] = %v@%d, want %v@%d", g, o, mx[o], am[o], m, idx)
						}
						if !incl && idx >= 0 {
							wantDx[p*g.h*g.w+int(idx)] += gout[o]
						}
						div := cnt
						if incl {
							div = g.kh * g.kw
						}
						if div > 0 {
							s /= T(div)
						}
						if math.Abs(float64(av[o]-s)) > 1e-6*(1+math.Abs(float64(s))) {
							t.Fatalf("%+v incl=%v: avg[%d] = %v, want %v", g, incl, o, av[o], s)
						}
						for ky := 0; ky < g.kh && cnt > 0; ky++ {
							for kx := 0; kx < g.kw; kx++ {
								iy, ix := oy*g.sH-g.padT+ky, ox*g.sW-g.padL+kx
								if iy >= 0 && iy < g.h && ix >= 0 && ix < g.w {
									wantAdx[(p*g.h+iy)*g.w+ix] += gout[o] / T(div)
								}
							}
						}
					}
				}
			}
			for i := range adx {
				if math.Abs(float64(adx[i]-wantAdx[i])) > 1e-5 {
					t.Fatalf("%+v incl=%v: avg dx[%d] = %v, want %v", g, incl, i, adx[i], wantAdx[i])
				}
			}
		}
		for i := range dx {
			if math.Abs(float64(dx[i]-wantDx[i])) > 1e-5 {
				t.Fatalf("%+v: max dx[%d] = %v, want %v", g, i, dx[i], wantDx[i])
			}
		}
	}
}

func TestPool(t *testing.T) {
	t.Run("float32", testPool[float32])
	t.Run("float64", testPool[float64])
}

func TestMaxPoolNaN(t *testing.T) {
	src := []float32{1, float32(math.NaN()), 3, 2}
	dst, am := make([]float32, 1), make([]int32, 1)
	MaxPool2D(dst, am, src, 1, 2, 2, 2, 2, 0, 0, 1, 1, 1, 1)
	if dst[0] == dst[0] || am[0] != 1 {
		t.Fatalf("NaN did not win: %v at %d", dst[0], am[0])
	}
}

// naiveConv is the direct definition of a stride-1 convolution with bias.
func naiveConv(src, wt, bias []float32, n, c, h, w, outC, kh, kw, padT, padL, oh, ow int) []float32 {
	dst := make([]float32, n*outC*oh*ow)
	for b := 0; b < n; b++ {
		for oc := 0; oc < outC; oc++ {
			for oy := 0; oy < oh; oy++ {
				for ox := 0; ox < ow; ox++ {
					s := float64(bias[oc])
					for ci := 0; ci < c; ci++ {
						for ki := 0; ki < kh; ki++ {
							for kj := 0; kj < kw; kj++ {
								iy, ix := oy+ki-padT, ox+kj-padL
								if iy >= 0 && iy < h && ix >= 0 && ix < w {
									s += float64(wt[((oc*c+ci)*kh+ki)*kw+kj]) * float64(src[((b*c+ci)*h+iy)*w+ix])
								}
							}
						}
					}
					dst[((b*outC+oc)*oh+oy)*ow+ox] = float32(s)
				}
			}
		}
	}
	return dst
}

func TestConv2DDirect(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct{ n, c, h, w, outC, kh, kw, padT, padL, padB, padR int }{
		{2, 1, 28, 28, 6, 5, 5, 2, 2, 2, 2},
		{2, 6, 14, 14, 16, 5, 5, 0, 0, 0, 0},
		{1, 3, 7, 9, 4, 3, 2, 1, 0, 2, 3},
		{3, 2, 5, 5, 2, 1, 1, 0, 0, 0, 0},
	} {
		oh, ow := OutSize(tc.h, tc.kh, tc.padT, tc.padB, 1, 1), OutSize(tc.w, tc.kw, tc.padL, tc.padR, 1, 1)
		src, wt, bias := randFloats[float32](r, tc.n*tc.c*tc.h*tc.w), randFloats[float32](r, tc.outC*tc.c*tc.kh*tc.kw), randFloats[float32](r, tc.outC)
		dst := make([]float32, tc.n*tc.outC*oh*ow)
		scratch := make([]float32, DirectScratch(tc.c, tc.h, tc.w, tc.kh, tc.kw, tc.padT, tc.padL, oh, ow))
		Conv2DDirect(dst, src, wt, bias, scratch, tc.n, tc.c, tc.h, tc.w, tc.outC, tc.kh, tc.kw, tc.padT, tc.padL, oh, ow)
		want := naiveConv(src, wt, bias, tc.n, tc.c, tc.h, tc.w, tc.outC, tc.kh, tc.kw, tc.padT, tc.padL, oh, ow)
		for i := range dst {
			if math.Abs(float64(dst[i]-want[i])) > 1e-4*(1+math.Abs(float64(want[i]))) {
				t.Fatalf("%+v: dst[%d] = %v, want %v", tc, i, dst[i], want[i])
			}
		}
	}
}

// LeNet's two convolutions at batch 64, for comparing the direct kernel with
// im2col (whose GEMM lives in package gemm; BenchmarkLeNetIm2Col times only
// the unrolling, which im2col+GEMM pays on top of the GEMM).
var lenet = []struct {
	name                                 string
	n, c, h, w, outC, kh, kw, padT, padL int
}{
	{"conv1_1x28x28_6x5x5_pad2", 64, 1, 28, 28, 6, 5, 5, 2, 2},
	{"conv2_6x14x14_16x5x5", 64, 6, 14, 14, 16, 5, 5, 0, 0},
}

func BenchmarkLeNetDirect(b *testing.B) {
	for _, l := range lenet {
		oh, ow := OutSize(l.h, l.kh, l.padT, l.padT, 1, 1), OutSize(l.w, l.kw, l.padL, l.padL, 1, 1)
		r := rand.New(rand.NewPCG(1, 1))
		src, wt, bias := randFloats[float32](r, l.n*l.c*l.h*l.w), randFloats[float32](r, l.outC*l.c*l.kh*l.kw), randFloats[float32](r, l.outC)
		dst := make([]float32, l.n*l.outC*oh*ow)
		scratch := make([]float32, DirectScratch(l.c, l.h, l.w, l.kh, l.kw, l.padT, l.padL, oh, ow))
		flops := 2 * float64(l.n*l.outC*oh*ow*l.c*l.kh*l.kw)
		b.Run(l.name, func(b *testing.B) {
			for b.Loop() {
				Conv2DDirect(dst, src, wt, bias, scratch, l.n, l.c, l.h, l.w, l.outC, l.kh, l.kw, l.padT, l.padL, oh, ow)
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

func BenchmarkLeNetIm2Col(b *testing.B) {
	for _, l := range lenet {
		oh, ow := OutSize(l.h, l.kh, l.padT, l.padT, 1, 1), OutSize(l.w, l.kw, l.padL, l.padL, 1, 1)
		r := rand.New(rand.NewPCG(1, 1))
		src := randFloats[float32](r, l.n*l.c*l.h*l.w)
		cols := make([]float32, l.c*l.kh*l.kw*oh*ow)
		wt := randFloats[float32](r, l.outC*l.c*l.kh*l.kw)
		dst := make([]float32, l.n*l.outC*oh*ow)
		k, p := l.c*l.kh*l.kw, oh*ow
		flops := 2 * float64(l.n*l.outC*p*k)
		b.Run(fmt.Sprintf("%s/im2col-only", l.name), func(b *testing.B) {
			for b.Loop() {
				for i := 0; i < l.n; i++ {
					Im2Col(cols, src[i*l.c*l.h*l.w:], l.c, l.h, l.w, l.kh, l.kw, l.padT, l.padL, 1, 1, 1, 1, oh, ow)
				}
			}
		})
		b.Run(fmt.Sprintf("%s/im2col+sgemm", l.name), func(b *testing.B) {
			for b.Loop() {
				for i := 0; i < l.n; i++ {
					Im2Col(cols, src[i*l.c*l.h*l.w:], l.c, l.h, l.w, l.kh, l.kw, l.padT, l.padL, 1, 1, 1, 1, oh, ow)
					gemm.Sgemm(false, false, l.outC, p, k, 1, wt, k, cols, p, 0, dst[i*l.outC*p:], p)
				}
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
