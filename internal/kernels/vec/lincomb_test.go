package vec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestLinCombMatchesReference checks LinComb against a float64 reference
// and its Go twin, for plain (A·B) and transposed (Aᵀ·B) weights, widths
// around each register and chunk boundary, and row counts around the
// four-row blocks; and that a row's bits do not depend on the rows
// computed with it.
func TestLinCombMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		m, w, n int
		trans   bool
	}{
		{1, 1, 1, false}, {17, 17, 16, false}, {17, 16, 17, false}, {17, 16, 17, true},
		{4, 15, 3, false}, {5, 32, 7, true}, {9, 33, 5, false}, {3, 48, 2, true},
		{8, 49, 4, false}, {6, 64, 9, true}, {7, 65, 3, false}, {2, 130, 20, true},
		{64, 64, 64, false}, {3, 5, 0, false},
	} {
		t.Run(fmt.Sprintf("m%d_w%d_n%d_t%v", c.m, c.w, c.n, c.trans), func(t *testing.T) {
			// Padded strides, so that a kernel reading or writing past a
			// row shows.
			ldc, lda, ldb := c.w+3, c.n+2, c.w+5
			ar, at := lda, 1
			na := c.m * lda
			if c.trans {
				lda = c.m + 2
				ar, at, na = 1, lda, c.n*lda
			}
			a, b := make([]float32, na), make([]float32, c.n*ldb)
			for i := range a {
				a[i] = float32(r.NormFloat64())
			}
			for i := range b {
				b[i] = float32(r.NormFloat64())
			}
			const alpha = 0.37
			got, twin := make([]float32, c.m*ldc), make([]float32, c.m*ldc)
			for i := range got {
				got[i], twin[i] = -7, -7
			}
			LinComb(got, ldc, c.m, c.w, c.n, alpha, a, ar, at, b, ldb)
			linCombGo(twin, ldc, c.m, c.w, c.n, alpha, a, ar, at, b, ldb)
			for i := range c.m {
				for j := range ldc {
					g := got[i*ldc+j]
					if j >= c.w {
						if g != -7 {
							t.Fatalf("c[%d][%d] = %v past the row's end, want untouched", i, j, g)
						}
						continue
					}
					want, mag := 0.0, 0.0
					for k := range c.n {
						p := float64(a[i*ar+k*at]) * float64(b[k*ldb+j])
						want += p
						mag += math.Abs(p)
					}
					want *= alpha
					mag *= alpha
					if d := math.Abs(float64(g) - want); d > 1e-6*(mag+1) {
						t.Fatalf("c[%d][%d] = %v, want %v", i, j, g, want)
					}
					if d := math.Abs(float64(twin[i*ldc+j]) - want); d > 1e-6*(mag+1) {
						t.Fatalf("Go twin: c[%d][%d] = %v, want %v", i, j, twin[i*ldc+j], want)
					}
				}
			}
			// Row by row, the same bits.
			one := make([]float32, c.w)
			for i := range c.m {
				LinComb(one, c.w, 1, c.w, c.n, alpha, a[i*ar:], ar, at, b, ldb)
				for j, v := range one {
					if math.Float32bits(v) != math.Float32bits(got[i*ldc+j]) {
						t.Fatalf("row %d alone: c[%d] = %v, with the others %v", i, j, v, got[i*ldc+j])
					}
				}
			}
		})
	}
}

// TestLinCombBadArgsPanic checks that a short slice or a negative size
// panics with a message naming it.
func TestLinCombBadArgsPanic(t *testing.T) {
	x := make([]float32, 16)
	for _, c := range []struct {
		name string
		f    func()
		want string
	}{
		{"short c", func() { LinComb(x[:10], 4, 3, 4, 2, 1, x, 2, 1, x, 4) }, "c has 10 elements, want 12"},
		{"short a", func() { LinComb(x, 4, 3, 4, 2, 1, x[:5], 3, 1, x, 4) }, "a has 5 elements, want 8"},
		{"short b", func() { LinComb(x, 4, 3, 4, 5, 1, x, 1, 1, x, 4) }, "b has 16 elements, want 20"},
		{"negative", func() { LinComb(x, 4, -1, 4, 2, 1, x, 2, 1, x, 4) }, "negative size or stride"},
		{"overlapping rows", func() { LinComb(x, 2, 3, 4, 2, 1, x, 2, 1, x, 4) }, "rows of c overlap"},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), c.want) {
					t.Fatalf("panic %v, want %q", r, c.want)
				}
			}()
			c.f()
		})
	}
}

// BenchmarkLinComb times the attention head's products at the ViT's
// shapes (17 tokens, head width 16): scores against transposed keys,
// weights times values, and weights transposed times values.
func BenchmarkLinComb(b *testing.B) {
	const L, E = 17, 16
	x, y, c := make([]float32, 64*64), make([]float32, 64*64), make([]float32, 64*64)
	for _, s := range []struct {
		name        string
		m, w, n     int
		ar, at, ldb int
	}{
		{"QKt", L, L, E, E, 1, L},
		{"PV", L, E, L, L, 1, E},
		{"PtV", L, E, L, 1, L, E},
	} {
		b.Run(s.name, func(b *testing.B) {
			for b.Loop() {
				LinComb(c, s.w, s.m, s.w, s.n, 1, x, s.ar, s.at, y, s.ldb)
			}
		})
	}
}
