package attention

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestPackedLayoutMatchesContiguous runs the kernels on a packed
// self-attention projection [N, L, 3, H, D] with the output interleaved
// as [N, L, H, D], and on the same q, k and v copied out contiguous: the
// results must be the same bits, on the one-tile path and the tiled one,
// with a mask, the causal flag and dropout.
func TestPackedLayoutMatchesContiguous(t *testing.T) {
	for _, c := range []struct {
		n, l, h, d int
		causal     bool
		p          float64
		mask       bool
	}{
		{n: 3, l: 17, h: 4, d: 16},
		{n: 2, l: 5, h: 3, d: 7, causal: true, mask: true},
		{n: 2, l: 70, h: 2, d: 8, p: 0.3},
		{n: 1, l: 130, h: 3, d: 5, causal: true, mask: true},
	} {
		t.Run(fmt.Sprintf("N%d_L%d_H%d_D%d", c.n, c.l, c.h, c.d), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(c.l), uint64(c.d)))
			N, L, H, D := c.n, c.l, c.h, c.d
			B, HD := N*H, H*D
			packed := make([]float32, N*L*3*HD)
			for i := range packed {
				packed[i] = float32(r.NormFloat64())
			}
			dout := make([]float32, N*L*HD) // [N, L, H, D]
			for i := range dout {
				dout[i] = float32(r.NormFloat64())
			}
			// Contiguous copies: q, k, v and dout as [N, H, L, D].
			q, k, v, g := make([]float32, B*L*D), make([]float32, B*L*D), make([]float32, B*L*D), make([]float32, B*L*D)
			for n := range N {
				for i := range L {
					for h := range H {
						for e := range D {
							src := ((n*L+i)*3*H+h)*D + e
							dst := ((n*H+h)*L+i)*D + e
							q[dst], k[dst], v[dst] = packed[src], packed[src+HD], packed[src+2*HD]
							g[dst] = dout[((n*L+i)*H+h)*D+e]
						}
					}
				}
			}
			base := Params[float32]{B: B, L: L, S: L, E: D, Ev: D, Scale: 0.3, Causal: c.causal, P: c.p, Seed: 9}
			if c.mask {
				base.AddMask = make([]float32, L*L)
				for i := range base.AddMask {
					base.AddMask[i] = float32(r.NormFloat64())
				}
				base.Batch = []int{N, H}
				base.MaskStrides[2], base.MaskStrides[3] = L, 1
			}
			want := base
			out, lse := make([]float32, B*L*D), make([]float32, B*L)
			Float32.Forward(&want, q, k, v, out, lse)
			dq, dk, dv := make([]float32, B*L*D), make([]float32, B*L*D), make([]float32, B*L*D)
			Float32.Backward(&want, q, k, v, out, lse, g, nil, dq, dk, dv, nil)

			pk := base
			in := Layout{Heads: H, N: 3 * L * HD, Head: D, Row: 3 * HD}
			pk.Q, pk.K, pk.V = in, in, in
			pk.K.Base, pk.V.Base = HD, 2*HD
			pk.O = Layout{Heads: H, N: L * HD, Head: D, Row: HD}
			pout, plse := make([]float32, N*L*HD), make([]float32, B*L)
			Float32.Forward(&pk, packed, packed, packed, pout, plse)
			dqkv := make([]float32, len(packed))
			for i := range dqkv {
				dqkv[i] = float32(math.NaN()) // every element must be written
			}
			Float32.Backward(&pk, packed, packed, packed, pout, plse, dout, nil, dqkv, dqkv, dqkv, nil)

			same := func(what string, got, want float32) {
				t.Helper()
				if math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("%s: packed %v, contiguous %v", what, got, want)
				}
			}
			for i := range lse {
				same("lse", plse[i], lse[i])
			}
			for n := range N {
				for i := range L {
					for h := range H {
						for e := range D {
							cd := ((n*H+h)*L+i)*D + e
							same("out", pout[((n*L+i)*H+h)*D+e], out[cd])
							src := ((n*L+i)*3*H+h)*D + e
							same("dq", dqkv[src], dq[cd])
							same("dk", dqkv[src+HD], dk[cd])
							same("dv", dqkv[src+2*HD], dv[cd])
						}
					}
				}
			}
		})
	}
}

func TestBadLayoutPanics(t *testing.T) {
	x := make([]float32, 64)
	for _, c := range []struct {
		name string
		p    Params[float32]
		want string
	}{
		{"no heads", Params[float32]{B: 2, L: 2, S: 2, E: 2, Ev: 2, Q: Layout{Row: 2}}, "invalid layout of q"},
		{"short packed", Params[float32]{B: 4, L: 2, S: 2, E: 2, Ev: 2, K: Layout{Heads: 2, N: 48, Head: 2, Row: 12, Base: 4}}, "k has 64 elements, want 68"},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil || !contains(fmt.Sprint(r), c.want) {
					t.Fatalf("panic %v, want %q", r, c.want)
				}
			}()
			Float32.Forward(&c.p, x, x, x, x, x)
		})
	}
}

// BenchmarkSmallLayouts times the one-tile path at the ViT's shapes (128
// images, 4 heads, 17 tokens, head width 16), forward and backward, on
// contiguous q, k and v and on the packed projection with the output
// interleaved: compare the two within one run.
func BenchmarkSmallLayouts(b *testing.B) {
	const N, H, L, D = 128, 4, 17, 16
	const B, HD = N * H, H * D
	r := rand.New(rand.NewPCG(1, 2))
	f32 := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		return x
	}
	contiguous := Params[float32]{B: B, L: L, S: L, E: D, Ev: D, Scale: 0.25}
	packed := contiguous
	in := Layout{Heads: H, N: 3 * L * HD, Head: D, Row: 3 * HD}
	packed.Q, packed.K, packed.V = in, in, in
	packed.K.Base, packed.V.Base = HD, 2*HD
	packed.O = Layout{Heads: H, N: L * HD, Head: D, Row: HD}
	q, k, v, dout := f32(3*B*L*D), f32(B*L*D), f32(B*L*D), f32(B*L*D)
	out, lse := make([]float32, B*L*D), make([]float32, B*L)
	dq, dk, dv := make([]float32, 3*B*L*D), make([]float32, B*L*D), make([]float32, B*L*D)
	b.Run("Contiguous", func(b *testing.B) {
		p := contiguous
		for b.Loop() {
			Float32.Forward(&p, q, k, v, out, lse)
			Float32.Backward(&p, q, k, v, out, lse, dout, nil, dq, dk, dv, nil)
		}
	})
	b.Run("Packed", func(b *testing.B) {
		p := packed
		for b.Loop() {
			Float32.Forward(&p, q, q, q, out, lse)
			Float32.Backward(&p, q, q, q, out, lse, dout, nil, dq, dq, dq, nil)
		}
	})
}
