package vec

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sporeml/spore/internal/testkit"
)

func randRow(r *rand.Rand, n int, scale, shift float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64()*scale + shift)
	}
	return x
}

// TestLayerNormRowsMatchTwins checks the layer-norm row kernels (assembly
// where the build has it) against their pure-Go twins and against float64
// arithmetic, at widths around the vector length and its unrolled
// multiples, so every loop and the masked tail run; the elements past the
// row are never written.
func TestLayerNormRowsMatchTwins(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 3, 15, 16, 17, 31, 33, 63, 64, 65, 100, 257} {
		x, dy := randRow(r, n+1, 2, 3), randRow(r, n+1, 1, 0)
		g, b := randRow(r, n+1, 1, 1), randRow(r, n+1, 1, 0)
		x, dy, g, b = x[:n], dy[:n], g[:n], b[:n]
		mean, rstd := float32(2.9), float32(0.6)
		// Σ (x − mean)².
		want := 0.0
		for _, v := range x {
			want += (float64(v) - float64(mean)) * (float64(v) - float64(mean))
		}
		if got := sqDevSumGo(x, mean); !testkit.Within(float64(got), want, want, 1e-5) {
			t.Errorf("n=%d: Σ(x − mean)² %v, want %v", n, got, want)
		}
		// The row's statistics, against float64.
		wm, wv := 0.0, 0.0
		for _, v := range x {
			wm += float64(v)
		}
		wm /= float64(n)
		for _, v := range x {
			wv += (float64(v) - wm) * (float64(v) - wm)
		}
		wr := 1 / math.Sqrt(wv/float64(n)+1e-5)
		for _, f := range []func([]float32, float32) (float32, float32){LayerNormStats, lnStatsGo} {
			m, r := f(x, 1e-5)
			if !testkit.Within(float64(m), wm, math.Abs(wm)+1, 1e-6) || !testkit.Within(float64(r), wr, wr, 1e-5) {
				t.Errorf("n=%d: mean, rstd %v, %v; want %v, %v", n, m, r, wm, wr)
			}
		}
		// The row and its gradient's two passes, each written to a
		// slice one longer whose last element must stay untouched.
		const guard = 12345
		y, yGo := make([]float32, n+1), make([]float32, n+1)
		y[n], yGo[n] = guard, guard
		LayerNormRow(y[:n], x, g, b, mean, rstd)
		lnRowGo(yGo[:n], x, g, b, mean, rstd)
		pg, pb := make([]float32, n+1), make([]float32, n+1)
		pgGo, pbGo := make([]float32, n+1), make([]float32, n+1)
		for i := range pg {
			pg[i], pgGo[i] = float32(i), float32(i)
			pb[i], pbGo[i] = -float32(i), -float32(i)
		}
		sg, sgx := LayerNormGradSums(x, dy, g, pg[:n], pb[:n], mean, rstd)
		sgGo, sgxGo := lnGradSumsGo(x, dy, g, pgGo[:n], pbGo[:n], mean, rstd)
		dx, dxGo := make([]float32, n+1), make([]float32, n+1)
		dx[n], dxGo[n] = guard, guard
		LayerNormGradRow(dx[:n], x, dy, g, mean, rstd, 0.3, -0.7)
		lnGradRowGo(dxGo[:n], x, dy, g, mean, rstd, 0.3, -0.7)
		var wsg, wsgx, scale float64
		for i := range n {
			xh := (float64(x[i]) - float64(mean)) * float64(rstd)
			gg := float64(dy[i]) * float64(g[i])
			wsg += gg
			wsgx += gg * xh
			scale += math.Abs(gg) * (1 + math.Abs(xh))
		}
		for _, c := range []struct {
			name      string
			got, want float64
		}{{"Σg", float64(sg), wsg}, {"Σg·x̂", float64(sgx), wsgx}, {"Σg (Go)", float64(sgGo), wsg}, {"Σg·x̂ (Go)", float64(sgxGo), wsgx}} {
			if !testkit.Within(c.got, c.want, scale, 1e-5) {
				t.Errorf("n=%d: %s = %v, want %v", n, c.name, c.got, c.want)
			}
		}
		for _, c := range []struct {
			name      string
			got, want []float32
		}{{"y", y, yGo}, {"pg", pg, pgGo}, {"pb", pb, pbGo}, {"dx", dx, dxGo}} {
			for i := range c.want {
				if !testkit.Within(float64(c.got[i]), float64(c.want[i]), 1+math.Abs(float64(c.want[i])), 1e-6) {
					t.Fatalf("n=%d: %s[%d] = %v, Go twin %v", n, c.name, i, c.got[i], c.want[i])
				}
			}
		}
		if y[n] != guard || dx[n] != guard || pg[n] != float32(n) || pb[n] != -float32(n) {
			t.Errorf("n=%d: an element past the row was written", n)
		}
	}
}

// BenchmarkLayerNormRows times one row of 64 (a ViT token) through the
// forward pass's two calls and the gradient's three.
func BenchmarkLayerNormRows(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	const n = 64
	x, dy, g, be := randRow(r, n, 1, 0), randRow(r, n, 1, 0), randRow(r, n, 1, 1), randRow(r, n, 1, 0)
	y, pg, pb := make([]float32, n), make([]float32, n), make([]float32, n)
	b.Run("Forward", func(b *testing.B) {
		for b.Loop() {
			m, rs := LayerNormStats(x, 1e-5)
			LayerNormRow(y, x, g, be, m, rs)
		}
	})
	b.Run("Backward", func(b *testing.B) {
		for b.Loop() {
			m, rs := LayerNormStats(x, 1e-5)
			sg, sgx := LayerNormGradSums(x, dy, g, pg, pb, m, rs)
			LayerNormGradRow(y, x, dy, g, m, rs, sg/n, sgx/n)
		}
	})
}

// TestLayerNormF64 checks the float64 row passes, which package norm's
// float64 kernels run, against the formulas written out per element, at
// widths on either side of their four-way unrolling.
func TestLayerNormF64(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 3, 4, 5, 8, 13} {
		row := func(scale, shift float64) []float64 {
			s := make([]float64, n)
			for i := range s {
				s[i] = r.NormFloat64()*scale + shift
			}
			return s
		}
		x, dy, g, b := row(2, 3), row(1, 0), row(1, 1), row(1, 0)
		const eps = 1e-5
		var wm, wv float64
		for _, v := range x {
			wm += v
		}
		wm /= float64(n)
		for _, v := range x {
			wv += (v - wm) * (v - wm)
		}
		wr := 1 / math.Sqrt(wv/float64(n)+eps)
		mean, rstd := LayerNormStatsF64(x, eps)
		if !testkit.Within(mean, wm, math.Abs(wm)+1, 1e-14) || !testkit.Within(rstd, wr, wr, 1e-12) {
			t.Errorf("n=%d: mean, rstd %v, %v; want %v, %v", n, mean, rstd, wm, wr)
		}
		y, pg, pb, dx := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
		LayerNormRowF64(y, x, g, b, mean, rstd)
		sg, sgx := LayerNormGradSumsF64(x, dy, g, pg, pb, mean, rstd)
		const a, c = 0.3, -0.7
		LayerNormGradRowF64(dx, x, dy, g, mean, rstd, a, c)
		var wsg, wsgx float64
		for i, v := range x {
			xh := (v - mean) * rstd
			gg := dy[i] * g[i]
			wsg += gg
			wsgx += gg * xh
			for _, e := range []struct {
				name      string
				got, want float64
			}{
				{"y", y[i], xh*g[i] + b[i]},
				{"pg", pg[i], dy[i] * xh},
				{"pb", pb[i], dy[i]},
				{"dx", dx[i], rstd * (gg - a - c*xh)},
			} {
				if !testkit.Within(e.got, e.want, 1+math.Abs(e.want), 1e-14) {
					t.Errorf("n=%d: %s[%d] = %v, want %v", n, e.name, i, e.got, e.want)
				}
			}
		}
		if !testkit.Within(sg, wsg, 1+math.Abs(wsg), 1e-13) || !testkit.Within(sgx, wsgx, 1+math.Abs(wsgx), 1e-13) {
			t.Errorf("n=%d: Σg, Σg·x̂ = %v, %v; want %v, %v", n, sg, sgx, wsg, wsgx)
		}
	}
}
