package conv

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The pitched column matrix holds Im2Col's matrix in its first outW
// columns of every output row, and the pitched adjoints (Col2ImPitched then
// CropPlanes) give Col2Im's gradient, on every stride-1 geometry of the
// shared table (padding, dilation, kernels larger than the image).
func testPitched[T Float](t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, g := range geoms {
		g.sH, g.sW = 1, 1
		oh, ow := g.out()
		if oh == 0 || ow == 0 {
			continue
		}
		hp, wp := Pitch(g.h, g.w, g.kh, g.kw, g.padT, g.padL, g.dH, g.dW, oh, ow)
		plane := (hp + 1) * wp
		src := randFloats[T](r, g.c*g.h*g.w)
		rows := g.c * g.kh * g.kw
		want := make([]T, rows*oh*ow)
		Im2Col(want, src, g.c, g.h, g.w, g.kh, g.kw, g.padT, g.padL, 1, 1, g.dH, g.dW, oh, ow)

		padded := randFloats[T](r, g.c*plane) // garbage: every element is written
		PadPlanes(padded, src, g.c, g.h, g.w, g.padT, g.padL, hp, wp)
		ld := oh*wp + 3 // a row stride past the run, as in a batch of images
		col := randFloats[T](r, (rows-1)*ld+oh*wp)
		Im2ColPitched(col, ld, padded, g.c, hp, wp, g.kh, g.kw, g.dH, g.dW, oh)
		dense := make([]T, rows*oh*ow)
		for row := 0; row < rows; row++ {
			UnpitchRows(dense[row*oh*ow:(row+1)*oh*ow], col[row*ld:row*ld+oh*wp], 1, oh, ow, wp)
		}
		for i := range want {
			if dense[i] != want[i] {
				t.Fatalf("%+v: pitched col[%d] = %v, want %v", g, i, dense[i], want[i])
			}
		}

		// The adjoint: a column gradient that is zero in the thrown-away
		// columns (PitchRows) scatters back as Col2Im scatters its
		// dense form.
		dcol := randFloats[T](r, rows*oh*ow)
		wantDx := make([]T, len(src))
		Col2Im(wantDx, dcol, g.c, g.h, g.w, g.kh, g.kw, g.padT, g.padL, 1, 1, g.dH, g.dW, oh, ow)
		pcol := make([]T, (rows-1)*ld+oh*wp)
		for row := 0; row < rows; row++ {
			PitchRows(pcol[row*ld:row*ld+oh*wp], dcol[row*oh*ow:(row+1)*oh*ow], 1, oh, ow, wp)
		}
		for _, add := range []func(dst, a, b []T){nil, func(dst, a, b []T) {
			for i := range dst {
				dst[i] = a[i] + b[i]
			}
		}} {
			pgrad := make([]T, g.c*plane)
			Col2ImPitched(pgrad, pcol, ld, g.c, hp, wp, g.kh, g.kw, g.dH, g.dW, oh, add)
			dx := randFloats[T](r, len(src)) // overwritten
			CropPlanes(dx, pgrad, g.c, g.h, g.w, g.padT, g.padL, hp, wp)
			for i := range wantDx {
				if math.Abs(float64(dx[i]-wantDx[i])) > 1e-5*(1+math.Abs(float64(wantDx[i]))) {
					t.Fatalf("%+v add=%v: pitched dx[%d] = %v, want %v", g, add != nil, i, dx[i], wantDx[i])
				}
			}
		}
	}
}

func TestPitched(t *testing.T) {
	t.Run("float32", testPitched[float32])
	t.Run("float64", testPitched[float64])
}

// PitchRows writes zeros past outW and UnpitchRows undoes it.
func TestPitchRowsRoundTrip(t *testing.T) {
	for _, c := range []struct{ planes, oh, ow, wp int }{{2, 3, 4, 4}, {3, 2, 5, 9}, {1, 1, 1, 3}} {
		src := make([]float32, c.planes*c.oh*c.ow)
		for i := range src {
			src[i] = float32(i + 1)
		}
		p := make([]float32, c.planes*c.oh*c.wp)
		for i := range p {
			p[i] = -1
		}
		PitchRows(p, src, c.planes, c.oh, c.ow, c.wp)
		for i, v := range p {
			if i%c.wp >= c.ow && v != 0 {
				t.Fatalf("%+v: pitched[%d] = %v, want 0 past the row", c, i, v)
			}
		}
		back := make([]float32, len(src))
		UnpitchRows(back, p, c.planes, c.oh, c.ow, c.wp)
		for i := range src {
			if back[i] != src[i] {
				t.Fatalf("%+v: round trip [%d] = %v, want %v", c, i, back[i], src[i])
			}
		}
	}
}
