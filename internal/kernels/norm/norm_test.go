package norm_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sporeml/spore/internal/kernels/norm"
	"github.com/sporeml/spore/internal/kernels/parallel"
)

// reference computes the layer norm, its input gradient and the
// parameters' gradients in float64 by the textbook formulas, one row at a
// time.
func reference(rows, d int, eps float64, x, gamma, beta, dy []float64) (y, dx, dgamma, dbeta []float64) {
	y, dx = make([]float64, rows*d), make([]float64, rows*d)
	dgamma, dbeta = make([]float64, d), make([]float64, d)
	for r := range rows {
		xr := x[r*d : (r+1)*d]
		mean, v := 0.0, 0.0
		for _, e := range xr {
			mean += e
		}
		mean /= float64(d)
		for _, e := range xr {
			v += (e - mean) * (e - mean)
		}
		v /= float64(d)
		rstd := 1 / math.Sqrt(v+eps)
		xhat := make([]float64, d)
		a, c := 0.0, 0.0
		for i, e := range xr {
			xhat[i] = (e - mean) * rstd
			y[r*d+i] = xhat[i]*gamma[i] + beta[i]
			g := dy[r*d+i] * gamma[i]
			a += g
			c += g * xhat[i]
			dgamma[i] += dy[r*d+i] * xhat[i]
			dbeta[i] += dy[r*d+i]
		}
		a /= float64(d)
		c /= float64(d)
		for i := range xr {
			dx[r*d+i] = rstd * (dy[r*d+i]*gamma[i] - a - c*xhat[i])
		}
	}
	return
}

func randSlice(r *rand.Rand, n int, scale, shift float64) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = r.NormFloat64()*scale + shift
	}
	return s
}

func to32(s []float64) []float32 {
	o := make([]float32, len(s))
	for i, v := range s {
		o[i] = float32(v)
	}
	return o
}

// maxRel returns the largest |got − want| relative to the largest |want|.
func maxRel[T float32 | float64](got []T, want []float64) float64 {
	m, scale := 0.0, 0.0
	for i := range want {
		m = math.Max(m, math.Abs(float64(got[i])-want[i]))
		scale = math.Max(scale, math.Abs(want[i]))
	}
	return m / math.Max(scale, 1e-30)
}

func TestLayerNormMatchesReference(t *testing.T) {
	for _, c := range []struct {
		name    string
		rows, d int
		eps     float64
		shift   float64
	}{
		{"one row", 1, 7, 1e-5, 0},
		{"fewer rows than a block", 5, 64, 1e-5, 0},
		{"ViT activations", 2176, 64, 1e-5, 0},
		{"offset rows", 300, 33, 1e-7, 100},
		{"wide rows", 40, 1000, 1e-5, -3},
		{"one column", 50, 1, 1e-5, 0},
		{"no rows", 0, 8, 1e-5, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(c.rows*c.d)))
			n := c.rows * c.d
			x := randSlice(r, n, 2, c.shift)
			gamma, beta := randSlice(r, c.d, 1, 1), randSlice(r, c.d, 1, 0)
			dy := randSlice(r, n, 1, 0)
			y, dx, dg, db := reference(c.rows, c.d, c.eps, x, gamma, beta, dy)
			for _, threads := range []int{1, 2, 3} {
				old := parallel.SetWorkers(threads)
				y64, dx64 := make([]float64, n), make([]float64, n)
				dg64, db64 := make([]float64, c.d), make([]float64, c.d)
				norm.Float64.LayerNorm(c.rows, c.d, c.eps, x, gamma, beta, y64)
				norm.Float64.LayerNormGrad(c.rows, c.d, c.eps, x, gamma, dy, dx64, dg64, db64)
				y32, dx32 := make([]float32, n), make([]float32, n)
				dg32, db32 := make([]float32, c.d), make([]float32, c.d)
				norm.Float32.LayerNorm(c.rows, c.d, c.eps, to32(x), to32(gamma), to32(beta), y32)
				norm.Float32.LayerNormGrad(c.rows, c.d, c.eps, to32(x), to32(gamma), to32(dy), dx32, dg32, db32)
				parallel.SetWorkers(old)
				for _, e := range []struct {
					name string
					rel  float64
					tol  float64
				}{
					{"y float64", maxRel(y64, y), 1e-12},
					{"dx float64", maxRel(dx64, dx), 1e-11},
					{"dgamma float64", maxRel(dg64, dg), 1e-12},
					{"dbeta float64", maxRel(db64, db), 1e-12},
					{"y float32", maxRel(y32, y), 1e-5},
					{"dx float32", maxRel(dx32, dx), 3e-5},
					{"dgamma float32", maxRel(dg32, dg), 1e-5},
					{"dbeta float32", maxRel(db32, db), 1e-5},
				} {
					if e.rel > e.tol || math.IsNaN(e.rel) {
						t.Errorf("%d threads: %s off by %.3g relative, want at most %g", threads, e.name, e.rel, e.tol)
					}
				}
			}
		})
	}
}

// The parameters' gradients are summed per block of rows in a fixed
// order, so they are the same bits at any thread count.
func TestLayerNormGradDeterministic(t *testing.T) {
	const rows, d = 1000, 48
	r := rand.New(rand.NewPCG(2, 3))
	x, gamma, dy := to32(randSlice(r, rows*d, 1, 0)), to32(randSlice(r, d, 1, 1)), to32(randSlice(r, rows*d, 1, 0))
	var first []float32
	for _, threads := range []int{1, 2, 4, 1} {
		old := parallel.SetWorkers(threads)
		dx, dg, db := make([]float32, rows*d), make([]float32, d), make([]float32, d)
		norm.Float32.LayerNormGrad(rows, d, 1e-5, x, gamma, dy, dx, dg, db)
		parallel.SetWorkers(old)
		got := append(append(dg, db...), dx...)
		if first == nil {
			first = got
			continue
		}
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(first[i]) {
				t.Fatalf("%d threads: element %d is %v, at first %v", threads, i, got[i], first[i])
			}
		}
	}
}

func TestBadSizesPanic(t *testing.T) {
	x := make([]float32, 8)
	for _, c := range []struct {
		name string
		run  func()
		want string
	}{
		{"short y", func() { norm.Float32.LayerNorm(2, 4, 1e-5, x, x[:4], x[:4], x[:7]) }, "norm.LayerNorm: y has 7 elements, want 8"},
		{"short gamma", func() { norm.Float32.LayerNorm(2, 4, 1e-5, x, x[:3], x[:4], x) }, "norm.LayerNorm: gamma has 3 elements, want 4"},
		{"negative size", func() { norm.Float32.LayerNorm(-1, 4, 1e-5, x, x, x, x) }, "norm.LayerNorm: negative size"},
		{"bad eps", func() { norm.Float32.LayerNorm(2, 4, math.NaN(), x, x, x, x) }, "norm.LayerNorm: eps NaN"},
		{"short dbeta", func() {
			norm.Float32.LayerNormGrad(2, 4, 1e-5, x, x[:4], x, make([]float32, 8), make([]float32, 4), make([]float32, 2))
		}, "norm.LayerNormGrad: dbeta has 2 elements, want 4"},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if s, _ := r.(string); len(s) < len(c.want) || s[:len(c.want)] != c.want {
					t.Fatalf("panic %v, want it to start %q", r, c.want)
				}
			}()
			c.run()
		})
	}
}

// BenchmarkLayerNorm times the forward and backward kernels at the ViT's
// activation shape, [2176, 64].
func BenchmarkLayerNorm(b *testing.B) {
	const rows, d = 2176, 64
	r := rand.New(rand.NewPCG(4, 5))
	x, gamma, beta, dy := to32(randSlice(r, rows*d, 1, 0)), to32(randSlice(r, d, 1, 1)), to32(randSlice(r, d, 1, 0)), to32(randSlice(r, rows*d, 1, 0))
	y, dx, dg, db := make([]float32, rows*d), make([]float32, rows*d), make([]float32, d), make([]float32, d)
	b.Run("Forward", func(b *testing.B) {
		for b.Loop() {
			norm.Float32.LayerNorm(rows, d, 1e-5, x, gamma, beta, y)
		}
	})
	b.Run("Backward", func(b *testing.B) {
		for b.Loop() {
			norm.Float32.LayerNormGrad(rows, d, 1e-5, x, gamma, dy, dx, dg, db)
		}
	})
}
