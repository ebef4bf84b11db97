package vec

import (
	"fmt"
	"testing"
)

// TestTranspose checks Transpose and its twin on sizes around the 16×16
// blocks, with padded strides: every element lands where it belongs and
// nothing past a row is written.
func TestTranspose(t *testing.T) {
	for _, c := range []struct{ rows, cols int }{
		{1, 1}, {17, 16}, {16, 17}, {3, 5}, {16, 16}, {33, 7}, {64, 64}, {5, 40},
	} {
		t.Run(fmt.Sprintf("%dx%d", c.rows, c.cols), func(t *testing.T) {
			lds, ldd := c.cols+3, c.rows+2
			src := make([]float32, c.rows*lds)
			for i := range src {
				src[i] = float32(i) + 0.5
			}
			for name, f := range map[string]func([]float32, int, []float32, int, int, int){
				"Transpose": Transpose, "twin": transposeGo[float32]} {
				dst := make([]float32, c.cols*ldd)
				for i := range dst {
					dst[i] = -1
				}
				f(dst, ldd, src, lds, c.rows, c.cols)
				for e := range c.cols {
					for j := range ldd {
						want := float32(-1)
						if j < c.rows {
							want = src[j*lds+e]
						}
						if got := dst[e*ldd+j]; got != want {
							t.Fatalf("%s: dst[%d][%d] = %v, want %v", name, e, j, got, want)
						}
					}
				}
			}
		})
	}
}
