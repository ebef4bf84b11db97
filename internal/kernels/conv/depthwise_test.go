package conv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestIm2ColRows checks that every block of output rows is the matching
// slice of Im2Col's column matrix, bit for bit, on the table's geometries
// and at a row pitch wider than the block.
func TestIm2ColRows(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, g := range geoms {
		outH, outW := g.out()
		if outH <= 0 || outW <= 0 {
			continue
		}
		src := randFloats[float32](r, g.c*g.h*g.w)
		k, p := g.c*g.kh*g.kw, outH*outW
		want := make([]float32, k*p)
		Im2Col(want, src, g.c, g.h, g.w, g.kh, g.kw, g.padT, g.padL, g.sH, g.sW, g.dH, g.dW, outH, outW)
		for rows := 1; rows <= outH; rows++ {
			for r0 := 0; r0 < outH; r0 += rows {
				r1 := min(outH, r0+rows)
				ld := (r1-r0)*outW + 3
				got := make([]float32, k*ld)
				for i := range got {
					got[i] = float32(math.NaN())
				}
				Im2ColRows(got, ld, src, g.c, g.h, g.w, g.kh, g.kw, g.padT, g.padL, g.sH, g.sW, g.dH, g.dW, outH, outW, r0, r1)
				for row := range k {
					for j := range (r1 - r0) * outW {
						if a, b := got[row*ld+j], want[row*p+r0*outW+j]; a != b {
							t.Fatalf("%+v rows [%d, %d): col[%d][%d] = %v, want %v", g, r0, r1, row, j, a, b)
						}
					}
				}
			}
		}
	}
}

// depthwiseRef is the definition of Depthwise, one output at a time, its
// taps summed in the same order.
func depthwiseRef(dst, src, wt []float32, planes, mult, h, w, kh, kw, padT, padL, sH, sW, dH, dW, outH, outW int) {
	for p := range planes {
		img := src[(p/mult)*h*w:]
		for oy := range outH {
			for ox := range outW {
				var s float32
				for ki := range kh {
					for kj := range kw {
						iy, ix := oy*sH+ki*dH-padT, ox*sW+kj*dW-padL
						if iy >= 0 && iy < h && ix >= 0 && ix < w {
							s += wt[(p*kh+ki)*kw+kj] * img[iy*w+ix]
						}
					}
				}
				dst[(p*outH+oy)*outW+ox] = s
			}
		}
	}
}

// TestDepthwise checks Depthwise against its definition on the table's
// geometries, the 3×3, 5×5 and 7×7 windows of the vision models at
// strides 1 and 2, and rows longer than one accumulator block. The
// vector multiply-add may be fused (one rounding) where the reference
// rounds twice, so the bound is 1e-6 of Σ|w·x|.
func TestDepthwise(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	gs := append([]geom{}, geoms...)
	for _, k := range []int{3, 5, 7} {
		for _, s := range []int{1, 2} {
			for _, hw := range []int{1, 7, 17, 56, 113} {
				gs = append(gs, geom{3, hw, hw + 1, k, k, k / 2, k / 2, k / 2, k / 2, s, s, 1, 1})
				gs = append(gs, geom{2, hw, hw, k, k, k - 1, 1, 0, k - 1, s, s, 2, 1})
			}
		}
	}
	for _, g := range gs {
		outH, outW := g.out()
		if outH <= 0 || outW <= 0 {
			continue
		}
		for _, mult := range []int{1, 2} {
			t.Run(fmt.Sprintf("%+v/mult%d", g, mult), func(t *testing.T) {
				planes := g.c * mult
				src := randFloats[float32](r, g.c*g.h*g.w)
				wt := randFloats[float32](r, planes*g.kh*g.kw)
				want, mag := make([]float32, planes*outH*outW), make([]float32, planes*outH*outW)
				depthwiseRef(want, src, wt, planes, mult, g.h, g.w, g.kh, g.kw, g.padT, g.padL, g.sH, g.sW, g.dH, g.dW, outH, outW)
				abs := func(x []float32) []float32 {
					a := make([]float32, len(x))
					for i, v := range x {
						a[i] = float32(math.Abs(float64(v)))
					}
					return a
				}
				depthwiseRef(mag, abs(src), abs(wt), planes, mult, g.h, g.w, g.kh, g.kw, g.padT, g.padL, g.sH, g.sW, g.dH, g.dW, outH, outW)
				got := make([]float32, planes*outH*outW)
				scratch := make([]float32, DepthwiseScratch(g.h, g.w, g.kh, g.kw, g.padT, g.padL, g.sH, g.sW, g.dH, g.dW, outH, outW))
				Depthwise(got, src, wt, scratch, planes, mult, g.h, g.w, g.kh, g.kw, g.padT, g.padL, g.sH, g.sW, g.dH, g.dW, outH, outW)
				for i := range got {
					if d := math.Abs(float64(got[i] - want[i])); !(d <= 1e-6*float64(mag[i])) {
						t.Fatalf("output %d = %v, want %v", i, got[i], want[i])
					}
				}
			})
		}
	}
}
