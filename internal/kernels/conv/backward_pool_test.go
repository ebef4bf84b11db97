package conv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestMaxPoolReLUGradPitched checks the one-pass pitched gradient against
// the two passes it replaces (MaxPoolValidBackwardReLU into a zeroed
// buffer, then PitchRows), bit for bit, on data with ties, zeros of both
// signs, negatives and NaN, for 2×2 windows and others, with planes whose
// extent leaves rows and columns outside every window.
func TestMaxPoolReLUGradPitched(t *testing.T) {
	cases := []struct{ planes, h, w, kh, kw, sH, sW, wp int }{
		{3, 24, 24, 2, 2, 2, 2, 28},
		{2, 8, 8, 2, 2, 2, 2, 12},
		{2, 7, 9, 2, 2, 2, 2, 9},
		{1, 9, 10, 3, 3, 3, 3, 13},
		{2, 8, 11, 2, 3, 3, 4, 11},
		{1, 5, 5, 1, 1, 1, 1, 6},
	}
	r := rand.New(rand.NewPCG(5, 6))
	values := []float32{-2, -1, float32(math.Copysign(0, -1)), 0, 1, 2, 3, float32(math.NaN())}
	for _, c := range cases {
		for _, nan := range []bool{false, true} {
			t.Run(fmt.Sprintf("%dx%d/%dx%d/s%dx%d/wp=%d/nan=%v", c.h, c.w, c.kh, c.kw, c.sH, c.sW, c.wp, nan), func(t *testing.T) {
				oh, ow := (c.h-c.kh)/c.sH+1, (c.w-c.kw)/c.sW+1
				x := make([]float32, c.planes*c.h*c.w)
				for i := range x {
					x[i] = values[r.IntN(len(values))]
					if x[i] != x[i] && (!nan || r.IntN(16) != 0) {
						x[i] = 1 // with nan, NaN in about one row pair of eight
					}
				}
				g := randFloats[float32](r, c.planes*oh*ow)
				g[0] = float32(math.Copysign(0, -1))
				dense := make([]float32, len(x))
				MaxPoolValidBackwardReLU(dense, x, g, c.planes, c.h, c.w, c.kh, c.kw, c.sH, c.sW, oh, ow)
				want := make([]float32, c.planes*c.h*c.wp)
				PitchRows(want, dense, c.planes, c.h, c.w, c.wp)
				got := make([]float32, len(want))
				for i := range got {
					got[i] = 42 // every element must be written
				}
				MaxPoolReLUGradPitched(got, c.wp, x, g, c.planes, c.h, c.w, c.kh, c.kw, c.sH, c.sW, oh, ow)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("element %d (plane %d, row %d, column %d) = %v, want %v", i, i/(c.h*c.wp), i/c.wp%c.h, i%c.wp, got[i], want[i])
					}
				}
			})
		}
	}
}

// TestMaxPoolReLUGrad2x2Twin checks the float32 2×2 kernel (AVX-512 where
// the CPU has it) against its pure-Go twin, rows2x2F32, bit for bit, on
// random data without NaN (which the assembly hands to the twin), at
// pitches that take one and two 16-lane steps and over 32 (the twin only).
func TestMaxPoolReLUGrad2x2Twin(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, c := range []struct{ h, w, wp int }{{24, 24, 28}, {8, 8, 12}, {4, 30, 32}, {6, 6, 16}, {2, 40, 44}, {9, 17, 20}} {
		t.Run(fmt.Sprintf("%dx%d/wp=%d", c.h, c.w, c.wp), func(t *testing.T) {
			const planes = 3
			oh, ow := c.h/2, c.w/2
			x := randFloats[float32](r, planes*c.h*c.w)
			for i := range x {
				if r.IntN(4) == 0 {
					x[i] = float32(r.IntN(2)) // ties and zeros
				}
			}
			g := randFloats[float32](r, planes*oh*ow)
			got := make([]float32, planes*c.h*c.wp)
			maxPoolReLUGradPitched2x2F32(got, c.wp, x, g, planes, c.h, c.w, oh, ow)
			want := make([]float32, len(got))
			for p := range planes {
				rows2x2F32(want[p*c.h*c.wp:], c.wp, x[p*c.h*c.w:], g[p*oh*ow:], c.w, ow, 0, oh)
			}
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("element %d = %v, twin %v", i, got[i], want[i])
				}
			}
		})
	}
}

// TestMaxPoolReLUGradPitchedOverlap checks that overlapping windows, whose
// gradients would have to be added, are refused.
func TestMaxPoolReLUGradPitchedOverlap(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("3×3 windows at stride 2 did not panic")
		}
	}()
	x, g, d := make([]float32, 25), make([]float32, 4), make([]float32, 25)
	MaxPoolReLUGradPitched(d, 5, x, g, 1, 5, 5, 3, 3, 2, 2, 2, 2)
}

// BenchmarkMaxPoolReLUGrad compares, on LeNet-5's first pooling at batch
// 64 (6 channels, 24×24 → 12×12, pitch 28), the two passes that the
// compiled training step used to make (the accumulating gradient into a
// zeroed buffer, then the copy at the pitch) with the one-pass kernel.
func BenchmarkMaxPoolReLUGrad(b *testing.B) {
	const planes, h, w, wp = 64 * 6, 24, 24, 28
	r := rand.New(rand.NewPCG(7, 8))
	x := randFloats[float32](r, planes*h*w)
	g := randFloats[float32](r, planes*h/2*w/2)
	dense, dst := make([]float32, planes*h*w), make([]float32, planes*h*wp)
	b.Run("two-pass", func(b *testing.B) {
		for b.Loop() {
			clear(dense)
			MaxPoolValidBackwardReLU(dense, x, g, planes, h, w, 2, 2, 2, 2, h/2, w/2)
			PitchRows(dst, dense, planes, h, w, wp)
		}
	})
	b.Run("pitched", func(b *testing.B) {
		for b.Loop() {
			MaxPoolReLUGradPitched(dst, wp, x, g, planes, h, w, 2, 2, 2, 2, h/2, w/2)
		}
	})
}
