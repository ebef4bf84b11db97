package vec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestExpSubMax checks ExpSubMaxRows and its Go twin against float64 math
// across lengths around the vector widths, with masked (-Inf) elements,
// all-masked and empty rows and a NaN.
func TestExpSubMax(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	inf := float32(math.Inf(1))
	for _, c := range []struct {
		n    int
		fill string // "", "masked" (some -Inf), "none" (all -Inf), "nan"
	}{
		{0, ""}, {1, ""}, {5, ""}, {16, ""}, {17, ""}, {33, "masked"}, {64, ""}, {65, "masked"},
		{200, ""}, {17, "none"}, {17, "nan"}, {70, "nan"},
	} {
		t.Run(fmt.Sprintf("n%d_%s", c.n, c.fill), func(t *testing.T) {
			x := make([]float32, c.n)
			for i := range x {
				x[i] = float32(4 * r.NormFloat64())
				switch {
				case c.fill == "none", c.fill == "masked" && i%3 == 1:
					x[i] = -inf
				}
			}
			if c.fill == "nan" {
				x[c.n/2] = float32(math.NaN())
			}
			one := func(f func([]float32, int, int, int, []float32, []float32)) func([]float32) (float32, float32) {
				// The row as the middle one of three, the others
				// all -Inf, 5 elements apart.
				return func(y []float32) (float32, float32) {
					ld := len(y) + 5
					z := make([]float32, 3*ld)
					for i := range z {
						z[i] = -inf
					}
					copy(z[ld:], y)
					m, sum := make([]float32, 3), make([]float32, 3)
					f(z, 3, len(y), ld, m, sum)
					copy(y, z[ld:])
					for _, i := range []int{0, 2} {
						if !math.IsInf(float64(m[i]), -1) || sum[i] != 0 {
							t.Fatalf("all -Inf row %d: m %v, sum %v", i, m[i], sum[i])
						}
					}
					for i, v := range z[2*ld-5 : 2*ld] {
						if v != -inf {
							t.Fatalf("gap element %d changed to %v", i, v)
						}
					}
					return m[1], sum[1]
				}
			}
			for name, f := range map[string]func([]float32) (float32, float32){"ExpSubMaxRows": one(ExpSubMaxRows), "twin": one(expSubMaxRowsGo)} {
				y := append([]float32(nil), x...)
				m, sum := f(y)
				if c.fill == "nan" {
					if m == m || sum == sum {
						t.Fatalf("%s: m %v, sum %v; want NaN", name, m, sum)
					}
					continue
				}
				if c.n == 0 || c.fill == "none" {
					if !math.IsInf(float64(m), -1) || sum != 0 {
						t.Fatalf("%s: m %v, sum %v; want -Inf, 0", name, m, sum)
					}
					for i := range y {
						if y[i] != x[i] {
							t.Fatalf("%s: x[%d] changed to %v", name, i, y[i])
						}
					}
					continue
				}
				wm := float32(math.Inf(-1))
				for _, v := range x {
					wm = max(wm, v)
				}
				if m != wm {
					t.Fatalf("%s: m %v, want %v", name, m, wm)
				}
				ws := 0.0
				for i, v := range x {
					// The argument is rounded to float32 first, as the
					// kernels round it.
					w := math.Exp(float64(v - wm))
					ws += w
					if d := math.Abs(float64(y[i]) - w); d > 3e-7*w {
						t.Fatalf("%s: x[%d] = %v, want %v", name, i, y[i], w)
					}
				}
				if d := math.Abs(float64(sum) - ws); d > 1e-6*ws {
					t.Fatalf("%s: sum %v, want %v", name, sum, ws)
				}
			}
		})
	}
}
