package vec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestSoftmaxBackRows checks SoftmaxBackRows and its twin against float64
// math on tiles around the vector widths, with padded rows left alone.
func TestSoftmaxBackRows(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct{ rows, cols int }{{1, 1}, {17, 17}, {3, 16}, {5, 33}, {2, 64}, {4, 70}} {
		t.Run(fmt.Sprintf("%dx%d", c.rows, c.cols), func(t *testing.T) {
			ld := c.cols + 3
			p0, g0 := make([]float32, c.rows*ld), make([]float32, c.rows*ld)
			for i := range p0 {
				p0[i], g0[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
			}
			lse, d := make([]float32, c.rows), make([]float32, c.rows)
			for i := range lse {
				lse[i], d[i] = float32(2+r.NormFloat64()), float32(r.NormFloat64())
			}
			for name, f := range map[string]func(p, dp []float32, rows, cols, ld int, lse, d []float32){
				"SoftmaxBackRows": SoftmaxBackRows, "twin": softmaxBackRowsGo} {
				p, g := append([]float32(nil), p0...), append([]float32(nil), g0...)
				f(p, g, c.rows, c.cols, ld, lse, d)
				for i := range c.rows {
					for j := range ld {
						k := i*ld + j
						if j >= c.cols {
							if p[k] != p0[k] || g[k] != g0[k] {
								t.Fatalf("%s: padding [%d][%d] written", name, i, j)
							}
							continue
						}
						// The argument rounded to float32 first, as the
						// kernels round it.
						w := math.Exp(float64(p0[k] - lse[i]))
						wg := w * (float64(g0[k] - d[i]))
						if math.Abs(float64(p[k])-w) > 3e-7*w {
							t.Fatalf("%s: p[%d][%d] = %v, want %v", name, i, j, p[k], w)
						}
						if math.Abs(float64(g[k])-wg) > 5e-7*math.Abs(wg) {
							t.Fatalf("%s: dp[%d][%d] = %v, want %v", name, i, j, g[k], wg)
						}
					}
				}
			}
		})
	}
}
