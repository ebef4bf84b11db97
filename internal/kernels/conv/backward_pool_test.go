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
		t.Run(fmt.Sprintf("%dx%d/%dx%d/s%dx%d/wp=%d", c.h, c.w, c.kh, c.kw, c.sH, c.sW, c.wp), func(t *testing.T) {
			oh, ow := (c.h-c.kh)/c.sH+1, (c.w-c.kw)/c.sW+1
			x := make([]float32, c.planes*c.h*c.w)
			for i := range x {
				x[i] = values[r.IntN(len(values))]
				if r.IntN(8) != 0 && x[i] != x[i] {
					x[i] = 1 // NaN in one window of eight or so
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
