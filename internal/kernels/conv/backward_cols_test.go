package conv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sporeml/spore/internal/kernels/vec"
)

// colCase is one convolution geometry for the piecewise column kernels.
type colCase struct {
	c, h, w, kh, kw, pt, pl, pb, pr, sh, sw, dh, dw int
}

var colCases = []colCase{
	{1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1},
	{3, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
	{2, 9, 8, 3, 3, 1, 1, 0, 2, 2, 2, 1, 1},
	{3, 11, 13, 3, 3, 2, 2, 2, 2, 1, 1, 2, 2},
	{5, 6, 5, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1},
	{4, 9, 9, 1, 1, 0, 0, 0, 0, 2, 2, 1, 1},
	{2, 17, 13, 7, 7, 3, 3, 3, 3, 2, 2, 1, 1},
	{3, 5, 7, 2, 3, 0, 2, 1, 0, 1, 3, 1, 1},
}

// TestColsRowsMatchWholeImage checks that Im2ColRows and Col2ImRows over
// pieces of output rows, written at a wider row stride, give what Im2Col
// and Col2Im give for the whole image, bit for bit (small integers, so
// the sums are exact whatever their order), with vec.Add and a scalar add
// for the unit-stride rows.
func TestColsRowsMatchWholeImage(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	scalarAdd := func(dst, a, b []float32) {
		for i := range dst {
			dst[i] = a[i] + b[i]
		}
	}
	for i, c := range colCases {
		oh := (c.h+c.pt+c.pb-(c.kh-1)*c.dh-1)/c.sh + 1
		ow := (c.w+c.pl+c.pr-(c.kw-1)*c.dw-1)/c.sw + 1
		rows, p := c.c*c.kh*c.kw, oh*ow
		x := make([]float32, c.c*c.h*c.w)
		for j := range x {
			x[j] = float32(r.IntN(9) - 4)
		}
		want := make([]float32, rows*p)
		Im2Col(want, x, c.c, c.h, c.w, c.kh, c.kw, c.pt, c.pl, c.sh, c.sw, c.dh, c.dw, oh, ow)
		dcol := make([]float32, rows*p)
		for j := range dcol {
			dcol[j] = float32(r.IntN(9) - 4)
		}
		wantDx := make([]float32, len(x))
		Col2Im(wantDx, dcol, c.c, c.h, c.w, c.kh, c.kw, c.pt, c.pl, c.sh, c.sw, c.dh, c.dw, oh, ow)
		for _, step := range []int{1, 2, oh} {
			for ai, add := range []func(dst, a, b []float32){vec.Add, scalarAdd} {
				t.Run(fmt.Sprintf("%d/rows=%d/add=%d", i, step, ai), func(t *testing.T) {
					dx := make([]float32, len(x))
					for oy0 := 0; oy0 < oh; oy0 += step {
						oy1 := min(oh, oy0+step)
						cols := (oy1 - oy0) * ow
						ld := cols + 3
						got := make([]float32, (rows-1)*ld+cols)
						for j := range got {
							got[j] = 99 // every written entry must be overwritten
						}
						Im2ColRows(got, ld, x, c.c, c.h, c.w, c.kh, c.kw, c.pt, c.pl, c.sh, c.sw, c.dh, c.dw, oh, ow, oy0, oy1)
						piece := make([]float32, (rows-1)*ld+cols)
						for row := range rows {
							for j := range cols {
								if g, w := got[row*ld+j], want[row*p+oy0*ow+j]; g != w {
									t.Fatalf("rows [%d,%d): column matrix row %d column %d is %v, want %v", oy0, oy1, row, j, g, w)
								}
								piece[row*ld+j] = dcol[row*p+oy0*ow+j]
							}
						}
						Col2ImRows(dx, piece, ld, c.c, c.h, c.w, c.kh, c.kw, c.pt, c.pl, c.sh, c.sw, c.dh, c.dw, ow, oy0, oy1, add)
					}
					for j := range dx {
						if dx[j] != wantDx[j] {
							t.Fatalf("input gradient %d is %v, want %v", j, dx[j], wantDx[j])
						}
					}
				})
			}
		}
	}
}

// TestMaxPoolBackward checks MaxPoolBackward against the plain loop over
// clipped windows, bit for bit (each gradient is added at one winner, in
// window order), over padded and unpadded windows 1 to 4 wide, strides
// that overlap the windows or leave gaps, ties, and NaNs.
func TestMaxPoolBackward(t *testing.T) {
	cases := []struct{ planes, h, w, kh, kw, sh, sw, pt, pb, pl, pr int }{
		{2, 112, 112, 3, 3, 2, 2, 1, 1, 1, 1},
		{3, 7, 9, 3, 3, 2, 2, 1, 1, 1, 1},
		{1, 5, 5, 3, 3, 1, 1, 1, 1, 1, 1},
		{2, 6, 7, 2, 2, 2, 2, 1, 1, 1, 0},
		{1, 9, 8, 4, 3, 3, 2, 2, 1, 0, 2},
		{2, 4, 4, 1, 1, 2, 2, 0, 0, 0, 0},
		{1, 3, 3, 3, 3, 1, 1, 2, 2, 2, 2},
		{1, 8, 5, 3, 1, 2, 1, 1, 1, 0, 0},
	}
	r := rand.New(rand.NewPCG(5, 6))
	for i, c := range cases {
		oh := (c.h+c.pt+c.pb-c.kh)/c.sh + 1
		ow := (c.w+c.pl+c.pr-c.kw)/c.sw + 1
		x := make([]float32, c.planes*c.h*c.w)
		for j := range x {
			x[j] = float32(r.IntN(5)) // ties
			if r.IntN(50) == 0 {
				x[j] = float32(math.NaN())
			}
		}
		g := make([]float32, c.planes*oh*ow)
		for j := range g {
			g[j] = float32(r.IntN(9) - 4)
		}
		want := make([]float32, len(x))
		for p := range c.planes {
			img := x[p*c.h*c.w:]
			for oy := range oh {
				for ox := range ow {
					y0, x0 := oy*c.sh-c.pt, ox*c.sw-c.pl
					ya, yb, xa, xb := max(y0, 0), min(y0+c.kh, c.h), max(x0, 0), min(x0+c.kw, c.w)
					best := ya*c.w + xa
					for y := ya; y < yb; y++ {
						for xx := xa; xx < xb; xx++ {
							v, bv := img[y*c.w+xx], img[best]
							if v > bv || (v != v && bv == bv) {
								best = y*c.w + xx
							}
						}
					}
					want[p*c.h*c.w+best] += g[(p*oh+oy)*ow+ox]
				}
			}
		}
		got := make([]float32, len(x))
		MaxPoolBackward(got, x, g, c.planes, c.h, c.w, c.kh, c.kw, c.sh, c.sw, c.pt, c.pl, oh, ow)
		for j := range got {
			if got[j] != want[j] {
				t.Fatalf("case %d %+v: dx[%d] = %v, want %v", i, c, j, got[j], want[j])
			}
		}
	}
}
