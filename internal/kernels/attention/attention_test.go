package attention

import (
	"math"
	"math/rand/v2"
	"testing"
)

// naive computes attention and its gradients the textbook way, in float64,
// holding every L×S matrix: the reference the tiled kernels must match.
func naive(p *Params[float64], q, k, v, dout, dlse []float64) (out, lse, dq, dk, dv, ds []float64) {
	L, S, E, Ev := p.L, p.S, p.E, p.Ev
	out, lse = make([]float64, p.B*L*Ev), make([]float64, p.B*L)
	dq, dk, dv = make([]float64, p.B*L*E), make([]float64, p.B*S*E), make([]float64, p.B*S*Ev)
	ds = make([]float64, p.B*L*S)
	for b := range p.B {
		for i := range L {
			s := make([]float64, S)
			m := math.Inf(-1)
			for j := range S {
				x := 0.0
				for e := range E {
					x += q[(b*L+i)*E+e] * k[(b*S+j)*E+e]
				}
				x *= p.Scale
				mo := p.maskOffset(b) + i*p.MaskStrides[len(p.Batch)] + j*p.MaskStrides[len(p.Batch)+1]
				if p.AddMask != nil {
					x += p.AddMask[mo]
				}
				if (p.BoolMask != nil && !p.BoolMask[mo]) || (p.Causal && j > i) {
					x = math.Inf(-1)
				}
				s[j] = x
				m = math.Max(m, x)
			}
			pr := make([]float64, S)
			z := make([]float64, S)
			sum := 0.0
			for j := range S {
				if m > math.Inf(-1) {
					pr[j] = math.Exp(s[j] - m)
				}
				sum += pr[j]
				if Keep(p.Seed, b, i, j, L, S, p.P) {
					z[j] = 1 / (1 - p.P)
				}
			}
			lse[b*L+i] = math.Inf(1)
			if sum > 0 {
				lse[b*L+i] = m + math.Log(sum)
				for j := range S {
					pr[j] /= sum
				}
			}
			for j := range S {
				for e := range Ev {
					out[(b*L+i)*Ev+e] += pr[j] * z[j] * v[(b*S+j)*Ev+e]
				}
			}
			// Backward, row i.
			dp := make([]float64, S)
			dsum := 0.0
			for j := range S {
				for e := range Ev {
					dp[j] += dout[(b*L+i)*Ev+e] * v[(b*S+j)*Ev+e]
				}
				dp[j] *= z[j]
				dsum += pr[j] * dp[j]
			}
			for j := range S {
				d := pr[j] * (dp[j] - dsum + dlse[b*L+i])
				ds[(b*L+i)*S+j] = d
				for e := range Ev {
					dv[(b*S+j)*Ev+e] += pr[j] * z[j] * dout[(b*L+i)*Ev+e]
				}
				for e := range E {
					dq[(b*L+i)*E+e] += p.Scale * d * k[(b*S+j)*E+e]
					dk[(b*S+j)*E+e] += p.Scale * d * q[(b*L+i)*E+e]
				}
			}
		}
	}
	return
}

func randSlice(r *rand.Rand, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = 2*r.Float64() - 1
	}
	return x
}

func maxDiff(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	for i := range want {
		if math.IsInf(want[i], 1) && math.IsInf(got[i], 1) {
			continue
		}
		if d := math.Abs(got[i] - want[i]); !(d <= tol*(1+math.Abs(want[i]))) {
			t.Fatalf("%s[%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

// TestKernelsMatchNaive runs the tiled float64 kernels against the naive
// reference across tile boundaries, masks (broadcast along batch slices),
// causal masking, dropout, fully masked rows and an lse cotangent; and the
// float32 kernels against the same reference at float32 accuracy.
func TestKernelsMatchNaive(t *testing.T) {
	for _, c := range []struct {
		name        string
		batch       []int
		l, s, e, ev int
		mask        string // "", "bool", "add"
		causal      bool
		p           float64
	}{
		{"small", []int{1}, 3, 4, 2, 3, "", false, 0},
		{"tiles", []int{2}, 130, 67, 5, 4, "", false, 0},
		{"causal", []int{3}, 129, 129, 4, 2, "", true, 0},
		{"bool", []int{2, 2}, 70, 65, 3, 3, "bool", false, 0},
		{"add-causal", []int{2}, 66, 80, 4, 3, "add", true, 0},
		{"dropout", []int{2}, 65, 70, 4, 5, "bool", true, 0.4},
		// One tile per batch slice: the small-shape path.
		{"one-tile-bool", []int{2, 2}, 17, 17, 16, 16, "bool", false, 0},
		{"one-tile-add-causal", []int{3}, 20, 17, 4, 3, "add", true, 0},
		{"one-tile-dropout", []int{2}, 17, 19, 4, 5, "bool", true, 0.4},
		{"one-tile-full", []int{2}, 64, 64, 3, 2, "", false, 0},
		// Heads wider than the four registers a product row takes at once.
		{"one-tile-wide", []int{2}, 9, 12, 80, 70, "add", false, 0},
		{"one-tile-wide-dropout", []int{3}, 5, 33, 66, 17, "bool", true, 0.2},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			B := 1
			for _, d := range c.batch {
				B *= d
			}
			p := &Params[float64]{B: B, L: c.l, S: c.s, E: c.e, Ev: c.ev, Scale: 0.8, Causal: c.causal, P: c.p, Seed: 99,
				Batch: c.batch}
			// The mask is [L, S], shared by every batch slice except the
			// last axis, which it varies along when there are two.
			p.MaskStrides[len(c.batch)] = c.s
			p.MaskStrides[len(c.batch)+1] = 1
			nm := c.l * c.s
			if len(c.batch) == 2 {
				p.MaskStrides[1] = nm
				nm *= c.batch[1]
			}
			switch c.mask {
			case "bool":
				p.BoolMask = make([]bool, nm)
				for i := range p.BoolMask {
					p.BoolMask[i] = r.Float64() < 0.7
				}
				// Row 1 attends nothing.
				for j := range c.s {
					p.BoolMask[c.s+j] = false
				}
			case "add":
				p.AddMask = randSlice(r, nm)
				for j := range c.s {
					p.AddMask[2*c.s+j] = math.Inf(-1)
				}
			}
			q, k, v := randSlice(r, B*c.l*c.e), randSlice(r, B*c.s*c.e), randSlice(r, B*c.s*c.ev)
			dout, dlse := randSlice(r, B*c.l*c.ev), randSlice(r, B*c.l)
			wo, wl, wq, wk, wv, wds := naive(p, q, k, v, dout, dlse)
			out, lse := make([]float64, len(wo)), make([]float64, len(wl))
			Float64.Forward(p, q, k, v, out, lse)
			maxDiff(t, "out", out, wo, 1e-12)
			maxDiff(t, "lse", lse, wl, 1e-12)
			dq, dk, dv, ds := make([]float64, len(wq)), make([]float64, len(wk)), make([]float64, len(wv)), make([]float64, len(wds))
			Float64.Backward(p, q, k, v, out, lse, dout, dlse, dq, dk, dv, ds)
			maxDiff(t, "dq", dq, wq, 1e-11)
			maxDiff(t, "dk", dk, wk, 1e-11)
			maxDiff(t, "dv", dv, wv, 1e-11)
			maxDiff(t, "dmask", ds, wds, 1e-11)

			f := func(x []float64) []float32 {
				y := make([]float32, len(x))
				for i, v := range x {
					y[i] = float32(v)
				}
				return y
			}
			g := func(x []float32) []float64 {
				y := make([]float64, len(x))
				for i, v := range x {
					y[i] = float64(v)
				}
				return y
			}
			p32 := &Params[float32]{B: p.B, L: p.L, S: p.S, E: p.E, Ev: p.Ev, Scale: float32(p.Scale), Causal: p.Causal, P: p.P, Seed: p.Seed,
				BoolMask: p.BoolMask, Batch: p.Batch, MaskStrides: p.MaskStrides}
			if p.AddMask != nil {
				p32.AddMask = f(p.AddMask)
			}
			out32, lse32 := make([]float32, len(wo)), make([]float32, len(wl))
			Float32.Forward(p32, f(q), f(k), f(v), out32, lse32)
			maxDiff(t, "out32", g(out32), wo, 1e-5)
			dq32, dk32, dv32 := make([]float32, len(wq)), make([]float32, len(wk)), make([]float32, len(wv))
			Float32.Backward(p32, f(q), f(k), f(v), out32, lse32, f(dout), f(dlse), dq32, dk32, dv32, nil)
			maxDiff(t, "dq32", g(dq32), wq, 1e-4)
			maxDiff(t, "dv32", g(dv32), wv, 1e-4)
		})
	}
}

// TestKeepRate checks that dropout drops about a fraction p of the
// weights, and that the mask depends on the seed.
func TestKeepRate(t *testing.T) {
	const n = 200000
	kept, same := 0, 0
	for i := range n {
		a := Keep(5, 1, i/400, i%400, 500, 400, 0.3)
		if a {
			kept++
		}
		if a == Keep(6, 1, i/400, i%400, 500, 400, 0.3) {
			same++
		}
	}
	if f := float64(kept) / n; math.Abs(f-0.7) > 0.01 {
		t.Errorf("kept %.4f of the weights, want 0.7", f)
	}
	if f := float64(same) / n; f > 0.7 {
		t.Errorf("seeds 5 and 6 agree on %.3f of the weights (independent masks agree on 0.58)", f)
	}
}

// TestShortSlicesPanic checks that a slice too short for the sizes given
// panics with a message naming it.
func TestShortSlicesPanic(t *testing.T) {
	defer func() {
		if r, _ := recover().(string); r == "" || !contains(r, "lse has 1 elements") {
			t.Fatalf("panic %q, want one naming lse", r)
		}
	}()
	p := &Params[float32]{B: 1, L: 2, S: 2, E: 1, Ev: 1, Scale: 1}
	Float32.Forward(p, make([]float32, 2), make([]float32, 2), make([]float32, 2), make([]float32, 2), make([]float32, 1))
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// BenchmarkSmall times a forward and backward pass at the ViT's shapes:
// 512 batch·head slices of 17 tokens with heads of 16, one tile each.
func BenchmarkSmall(b *testing.B) {
	const B, L, E = 512, 17, 16
	r := rand.New(rand.NewPCG(1, 2))
	f32 := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		return x
	}
	p := &Params[float32]{B: B, L: L, S: L, E: E, Ev: E, Scale: 0.25}
	q, k, v, dout := f32(B*L*E), f32(B*L*E), f32(B*L*E), f32(B*L*E)
	out, lse := make([]float32, B*L*E), make([]float32, B*L)
	dq, dk, dv := make([]float32, B*L*E), make([]float32, B*L*E), make([]float32, B*L*E)
	for b.Loop() {
		Float32.Forward(p, q, k, v, out, lse)
		Float32.Backward(p, q, k, v, out, lse, dout, nil, dq, dk, dv, nil)
	}
}

// TestOneTileNaN checks that a NaN score reaches the output on the
// one-tile path, whose row maximum skips NaN, as it does on the tiled one:
// a NaN in key 0 makes every query's output and lse NaN, also when every
// other key of a query is masked off (its maximum is then -Inf).
func TestOneTileNaN(t *testing.T) {
	const l, s, e = 3, 4, 2
	p := &Params[float64]{B: 1, L: l, S: s, E: e, Ev: e, Scale: 1, Batch: []int{1}}
	p.MaskStrides[1], p.MaskStrides[2] = s, 1
	p.BoolMask = make([]bool, l*s)
	for i := range p.BoolMask {
		p.BoolMask[i] = true
	}
	// Query 1 attends key 0 only.
	for j := 1; j < s; j++ {
		p.BoolMask[s+j] = false
	}
	q, k, v := make([]float64, l*e), make([]float64, s*e), make([]float64, s*e)
	for i := range q {
		q[i] = 1
	}
	k[0] = math.NaN()
	out, lse := make([]float64, l*e), make([]float64, l)
	Float64.Forward(p, q, k, v, out, lse)
	for i := range l {
		if !math.IsNaN(lse[i]) || !math.IsNaN(out[i*e]) {
			t.Errorf("query %d: out %v, lse %v; want NaN", i, out[i*e:(i+1)*e], lse[i])
		}
	}
}
