package conv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sporeml/spore/internal/kernels/vec"
)

// TestDotRows checks DotRowsBatch (the AVX-512 kernels where the CPU has
// them) and its pure-Go twin against float64 sums, for blocks that cross
// the 4×5 kernel blocks, lengths with and without a masked tail, rows of b
// that overlap as a convolution's taps do, and batches of one and more
// items (DotRows is the batch of one).
func TestDotRows(t *testing.T) {
	cases := []struct{ ma, nb, n, lda, ldb, ldp int }{
		{1, 1, 1, 1, 1, 16},
		{1, 1, 16, 16, 16, 16},
		{2, 3, 17, 20, 1, 48},
		{4, 5, 672, 672, 1, 80},
		{6, 5, 672, 700, 1, 400},
		{16, 5, 96, 96, 1, 2400},
		{3, 7, 95, 100, 2, 112},
		{9, 11, 33, 40, 3, 200},
		{5, 4, 15, 15, 0, 64}, // every row of b the same
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range cases {
		for _, batch := range []int{1, 3} {
			t.Run(fmt.Sprintf("%dx%d/n=%d/ldb=%d/batch=%d", c.ma, c.nb, c.n, c.ldb, batch), func(t *testing.T) {
				sa, sb := (c.ma-1)*c.lda+c.n+5, (c.nb-1)*c.ldb+c.n+3
				a := randFloats[float32](r, (batch-1)*sa+(c.ma-1)*c.lda+c.n)
				b := randFloats[float32](r, (batch-1)*sb+(c.nb-1)*c.ldb+c.n)
				init := randFloats[float32](r, (c.ma-1)*c.ldp+c.nb*16)
				got := append([]float32(nil), init...)
				twin := append([]float32(nil), init...)
				if batch == 1 {
					DotRows(got, c.ldp, a, c.lda, c.ma, b, c.ldb, c.nb, c.n)
				} else {
					DotRowsBatch(got, c.ldp, a, c.lda, c.ma, b, c.ldb, c.nb, c.n, batch, sa, sb)
				}
				dotRowsGo(twin, c.ldp, a, c.lda, c.ma, b, c.ldb, c.nb, c.n, batch, sa, sb)
				for i := range c.ma {
					for j := range c.nb {
						for l := range 16 {
							k := i*c.ldp + j*16 + l
							want, mag := float64(init[k]), math.Abs(float64(init[k]))
							for item := range batch {
								for tt := l; tt < c.n; tt += 16 {
									p := float64(a[item*sa+i*c.lda+tt]) * float64(b[item*sb+j*c.ldb+tt])
									want += p
									mag += math.Abs(p)
								}
							}
							tol := 1e-6 * (mag + 1)
							if math.Abs(float64(got[k])-want) > tol || math.Abs(float64(twin[k])-want) > tol {
								t.Fatalf("part[%d] (row %d of a, row %d of b, lane %d) = %v, twin %v, want %v", k, i, j, l, got[k], twin[k], want)
							}
						}
					}
				}
				// Entries between the blocks' rows are left alone.
				for k := range init {
					if k%c.ldp >= c.nb*16 && got[k] != init[k] {
						t.Fatalf("part[%d], outside every block, changed from %v to %v", k, init[k], got[k])
					}
				}
			})
		}
	}
}

// TestDotRowsShortSlices checks that DotRows rejects slices too short for
// the sizes given, rather than reading past them.
func TestDotRowsShortSlices(t *testing.T) {
	part, a, b := make([]float32, 2*32), make([]float32, 2*20), make([]float32, 21)
	cases := []struct {
		name string
		call func()
	}{
		{"a", func() { DotRows(part, 32, a[:39], 20, 2, b, 1, 2, 20) }},
		{"b", func() { DotRows(part, 32, a, 20, 2, b[:20], 1, 2, 20) }},
		{"part", func() { DotRows(part[:63], 32, a, 20, 2, b, 1, 2, 20) }},
		{"ldp", func() { DotRows(part, 16, a, 20, 2, b, 1, 2, 20) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("DotRows with a short %s did not panic", c.name)
				}
			}()
			c.call()
		})
	}
}

// TestReduceLanes checks the lane sums against float64 sums.
func TestReduceLanes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	src := randFloats[float32](r, 5*16)
	dst := make([]float32, 5)
	ReduceLanes(dst, src)
	for i, v := range dst {
		var want float64
		for _, x := range src[i*16 : i*16+16] {
			want += float64(x)
		}
		if math.Abs(float64(v)-want) > 1e-5 {
			t.Errorf("lane sum %d = %v, want %v", i, v, want)
		}
	}
}

// TestCol2ImPitchedF32 checks the one-kernel float32 col2im (AVX-512 where
// the CPU has it) against Col2ImPitched with vec.Add and with its own
// scalar sums, bit for bit, with and without a masked tail, dilation and
// a row stride past the run.
func TestCol2ImPitchedF32(t *testing.T) {
	cases := []struct{ c, h, w, kh, kw, padT, padL, dilH, dilW, extra int }{
		{6, 12, 12, 5, 5, 0, 0, 1, 1, 0}, // LeNet-5's second layer: runs of 96
		{1, 28, 28, 5, 5, 0, 0, 1, 1, 0},
		{2, 7, 9, 3, 2, 1, 2, 1, 1, 3},
		{3, 9, 8, 2, 3, 0, 1, 2, 2, 5},
		{1, 3, 3, 1, 1, 0, 0, 1, 1, 0}, // runs shorter than a vector
	}
	r := rand.New(rand.NewPCG(11, 12))
	for _, c := range cases {
		t.Run(fmt.Sprintf("c%d/%dx%d/k%dx%d/d%dx%d", c.c, c.h, c.w, c.kh, c.kw, c.dilH, c.dilW), func(t *testing.T) {
			oh := OutSize(c.h, c.kh, c.padT, c.padT, 1, c.dilH)
			ow := OutSize(c.w, c.kw, c.padL, c.padL, 1, c.dilW)
			hp, wp := Pitch(c.h, c.w, c.kh, c.kw, c.padT, c.padL, c.dilH, c.dilW, oh, ow)
			ld := oh*wp + c.extra
			col := randFloats[float32](r, c.c*c.kh*c.kw*ld)
			init := randFloats[float32](r, c.c*(hp+1)*wp)
			want := append([]float32(nil), init...)
			Col2ImPitched(want, col, ld, c.c, hp, wp, c.kh, c.kw, c.dilH, c.dilW, oh, vec.Add)
			plain := append([]float32(nil), init...)
			Col2ImPitched(plain, col, ld, c.c, hp, wp, c.kh, c.kw, c.dilH, c.dilW, oh, nil)
			got := append([]float32(nil), init...)
			Col2ImPitchedF32(got, col, ld, c.c, hp, wp, c.kh, c.kw, c.dilH, c.dilW, oh)
			twin := append([]float32(nil), init...)
			col2ImPitchedGo(twin, col, ld, c.c, hp, wp, c.kh, c.kw, c.dilH, c.dilW, oh)
			for i := range want {
				b := math.Float32bits(want[i])
				if math.Float32bits(got[i]) != b || math.Float32bits(twin[i]) != b || math.Float32bits(plain[i]) != b {
					t.Fatalf("element %d = %v, twin %v, want %v (plain %v)", i, got[i], twin[i], want[i], plain[i])
				}
			}
		})
	}
}

// TestTapRows checks TapRows (AVX-512 where the CPU has it) and its Go
// twin against float64 sums, for every og the kernels take and one past,
// with and without a masked tail and with taps that overlap.
func TestTapRows(t *testing.T) {
	cases := []struct{ og, n, c, kh, kw, plane, rowStep, colStep, ldy int }{
		{16, 96, 6, 5, 5, 156, 12, 1, 96}, // LeNet-5's second layer
		{6, 672, 1, 5, 5, 812, 28, 1, 672},
		{1, 5, 2, 1, 1, 9, 0, 0, 5},
		{3, 33, 2, 3, 2, 80, 10, 2, 40},
		{9, 17, 3, 2, 3, 50, 7, 1, 17},
		{15, 16, 1, 2, 2, 40, 9, 1, 20},
		{17, 40, 2, 2, 2, 70, 11, 1, 40},
	}
	r := rand.New(rand.NewPCG(13, 14))
	for _, c := range cases {
		t.Run(fmt.Sprintf("og=%d/n=%d/c=%d/%dx%d", c.og, c.n, c.c, c.kh, c.kw), func(t *testing.T) {
			dy := randFloats[float32](r, (c.og-1)*c.ldy+c.n)
			wt := randFloats[float32](r, c.kw*c.kh*c.c*c.og)
			size := (c.c-1)*c.plane + (c.kh-1)*c.rowStep + (c.kw-1)*c.colStep + c.n + 7
			init := randFloats[float32](r, size)
			want, mag := make([]float64, size), make([]float64, size)
			for i, v := range init {
				want[i], mag[i] = float64(v), math.Abs(float64(v))
			}
			for kj := range c.kw {
				for ki := range c.kh {
					for ci := range c.c {
						w := wt[((kj*c.kh+ki)*c.c+ci)*c.og:]
						for tt := range c.n {
							i := ci*c.plane + ki*c.rowStep + kj*c.colStep + tt
							for oc := range c.og {
								p := float64(w[oc]) * float64(dy[oc*c.ldy+tt])
								want[i] += p
								mag[i] += math.Abs(p)
							}
						}
					}
				}
			}
			got := append([]float32(nil), init...)
			TapRows(got, dy, c.ldy, c.og, wt, c.n, c.c, c.kh, c.kw, c.plane, c.rowStep, c.colStep)
			twin := append([]float32(nil), init...)
			tapRowsGo(twin, dy, c.ldy, c.og, wt, c.n, c.c, c.kh, c.kw, c.plane, c.rowStep, c.colStep)
			for i := range want {
				tol := 1e-6 * (mag[i] + 1)
				if math.Abs(float64(got[i])-want[i]) > tol || math.Abs(float64(twin[i])-want[i]) > tol {
					t.Fatalf("dx[%d] = %v, twin %v, want %v", i, got[i], twin[i], want[i])
				}
			}
		})
	}
}

// BenchmarkDotRows times DotRowsBatch on the filter gradients of
// LeNet-5's two layers, one call per window row and input channel over a
// run of 16 images as the framework makes them, and reports GFLOP/s of
// the multiply-adds done (the pitch's thrown-away columns included).
func BenchmarkDotRows(b *testing.B) {
	for _, c := range []struct {
		name                    string
		og, cin, kh, kw, wp, oh int
		plane                   int
	}{{"conv1", 6, 1, 5, 5, 28, 24, 29 * 28}, {"conv2", 16, 6, 5, 5, 12, 8, 13 * 12}} {
		b.Run(c.name, func(b *testing.B) {
			const run = 16
			r := rand.New(rand.NewPCG(15, 16))
			np := c.oh * c.wp
			dy := randFloats[float32](r, run*c.og*np)
			x := randFloats[float32](r, run*c.cin*c.plane)
			kk := c.cin * c.kh * c.kw
			part := make([]float32, c.og*kk*16)
			b.SetBytes(0)
			for b.Loop() {
				for ci := range c.cin {
					for ki := range c.kh {
						DotRowsBatch(part[(ci*c.kh+ki)*c.kw*16:], kk*16, dy, np, c.og, x[ci*c.plane+ki*c.wp:], 1, c.kw, np, run, c.og*np, c.cin*c.plane)
					}
				}
			}
			flops := 2 * float64(run*c.og*kk*np)
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
