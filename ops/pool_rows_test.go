package ops_test

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/kernels/parallel"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// refPool is the window-at-a-time pooling the padded kernels replaced, kept
// as the reference: each output reads its window clipped to the input; the
// maximum is the value at the first maximum in row-major order (the first
// NaN wins), the mean the row-major sum over the real cells divided by the
// window (countPad) or by the real cells.
func refPool[T float32 | float64](x []T, nc, h, w, kh, kw, sh, sw, pt, pb, pl, pr int, avg, countPad bool) ([]T, int, int) {
	oh, ow := (h+pt+pb-kh)/sh+1, (w+pl+pr-kw)/sw+1
	out := make([]T, nc*oh*ow)
	refPoolPlanes(x, out, 0, nc, h, w, kh, kw, sh, sw, pt, pl, oh, ow, avg, countPad)
	return out, oh, ow
}

// refPoolPlanes is refPool on planes [lo, hi), into out.
func refPoolPlanes[T float32 | float64](x, out []T, lo, hi, h, w, kh, kw, sh, sw, pt, pl, oh, ow int, avg, countPad bool) {
	for c := lo; c < hi; c++ {
		xc := x[c*h*w : (c+1)*h*w]
		for oy := range oh {
			for ox := range ow {
				y0, x0 := oy*sh-pt, ox*sw-pl
				y1, x1 := min(y0+kh, h), min(x0+kw, w)
				y0, x0 = max(y0, 0), max(x0, 0)
				if avg {
					var s T
					for y := y0; y < y1; y++ {
						for _, v := range xc[y*w+x0 : y*w+x1] {
							s += v
						}
					}
					n := (y1 - y0) * (x1 - x0)
					if countPad {
						n = kh * kw
					}
					out[(c*oh+oy)*ow+ox] = s / T(n)
					continue
				}
				best := y0*w + x0
				bv := xc[best]
				for y := y0; y < y1; y++ {
					for i := y*w + x0; i < y*w+x1; i++ {
						if v := xc[i]; v > bv || (v != v && bv == bv) {
							best, bv = i, v
						}
					}
				}
				out[(c*oh+oy)*ow+ox] = xc[best]
			}
		}
	}
}

// bits is v's bit pattern, so that zeros of either sign and NaN payloads
// compare exactly.
func bits[T float32 | float64](v T) uint64 {
	if f, ok := any(v).(float32); ok {
		return uint64(math.Float32bits(f))
	}
	return math.Float64bits(float64(v))
}

// poolData draws values that exercise ties, zero signs and NaNs.
func poolData[T float32 | float64](r *rand.Rand, n int) []T {
	x := make([]T, n)
	for i := range x {
		switch q := r.Intn(16); {
		case q == 0:
			x[i] = T(math.NaN())
		case q < 3:
			x[i] = T(math.Copysign(0, -1))
		case q < 5:
			x[i] = 0
		case q < 9:
			x[i] = T(r.Intn(4) - 2)
		default:
			x[i] = T(r.NormFloat64())
		}
	}
	return x
}

func testPoolForwardExact[T float32 | float64](t *testing.T) {
	r := rand.New(rand.NewSource(5))
	type geom struct{ n, c, h, w, kh, kw, sh, sw, pt, pb, pl, pr int }
	cases := []geom{
		{1, 4, 112, 112, 3, 3, 2, 2, 1, 1, 1, 1}, // resnet's stem pool
		{2, 3, 56, 56, 3, 3, 1, 1, 1, 1, 1, 1},
		{1, 2, 17, 17, 3, 3, 2, 2, 0, 1, 0, 1}, // ceil mode as ONNX imports it
		{1, 2, 28, 28, 2, 2, 2, 2, 0, 0, 0, 0}, // LeNet, no padding
		{1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},
		{1, 1, 1, 1, 3, 3, 1, 1, 1, 1, 1, 1},
		{1, 2, 7, 3, 4, 2, 3, 1, 2, 3, 1, 0},
	}
	for len(cases) < 200 {
		g := geom{n: 1 + r.Intn(2), c: 1 + r.Intn(3), h: 1 + r.Intn(17), w: 1 + r.Intn(17),
			kh: 1 + r.Intn(4), kw: 1 + r.Intn(4), sh: 1 + r.Intn(3), sw: 1 + r.Intn(3)}
		g.pt, g.pb, g.pl, g.pr = r.Intn(g.kh), r.Intn(g.kh), r.Intn(g.kw), r.Intn(g.kw)
		if g.h+g.pt+g.pb >= g.kh && g.w+g.pl+g.pr >= g.kw {
			cases = append(cases, g)
		}
	}
	for _, g := range cases {
		x := poolData[T](r, g.n*g.c*g.h*g.w)
		xt := tensor.FromSlice(x, g.n, g.c, g.h, g.w)
		k, s, p := [2]int{g.kh, g.kw}, [2]int{g.sh, g.sw}, ops.ExplicitPad(g.pt, g.pb, g.pl, g.pr)
		for _, op := range []string{"max", "avg", "avg count_pad"} {
			pool := func(x *spore.Tensor) *spore.Tensor {
				switch op {
				case "max":
					return ops.MaxPool2D(x, k, s, p)
				case "avg":
					return ops.AvgPool2D(x, k, s, p, ops.CountIncludePad(false))
				}
				return ops.AvgPool2D(x, k, s, p, ops.CountIncludePad(true))
			}
			want, oh, ow := refPool(x, g.n*g.c, g.h, g.w, g.kh, g.kw, g.sh, g.sw, g.pt, g.pb, g.pl, g.pr, op != "max", op == "avg count_pad")
			// No window reaches the padding (the extra bottom or right pad of
			// ceil mode may go unused).
			valid := g.pt == 0 && g.pl == 0 && (oh-1)*g.sh+g.kh <= g.h && (ow-1)*g.sw+g.kw <= g.w
			for _, mode := range []string{"PyNative", "Graph"} {
				var y *spore.Tensor
				if mode == "PyNative" {
					y = pool(xt)
				} else {
					y = spore.Jit(pool)(xt)
				}
				if want := (tensor.Shape{g.n, g.c, oh, ow}); !y.Shape().Equal(want) {
					t.Fatalf("%s %s %+v: shape %v, want %v", mode, op, g, y.Shape(), want)
				}
				got := y.Data().([]T)
				for i := range want {
					// Without padding the maximum takes the valid-window kernels,
					// which may give +0 for a window of mixed zeros and another
					// NaN's payload, and the 2×2 mean its own summation order;
					// their bits are checked by package conv's tests.
					if valid && (want[i] == 0 || want[i] != want[i] || op != "max") {
						if got[i] == want[i] || (got[i] != got[i] && want[i] != want[i]) ||
							math.Abs(float64(got[i]-want[i])) <= 1e-6*(1+math.Abs(float64(want[i]))) {
							continue
						}
					}
					if bits(got[i]) != bits(want[i]) {
						t.Fatalf("%s %s %+v: out[%d] = %v (%#x), want %v (%#x)", mode, op, g, i, got[i], bits(got[i]), want[i], bits(want[i]))
					}
				}
			}
		}
	}
}

// TestPoolForwardExact checks MaxPool2D and AvgPool2D in both modes against
// the window-at-a-time reference over a table of geometries (odd extents,
// kernels 1–4, strides 1–3, uneven pads), with ties, zeros of both signs and
// NaNs in the input: bit for bit wherever a window reaches the padding.
func TestPoolForwardExact(t *testing.T) {
	t.Run("float32", testPoolForwardExact[float32])
	t.Run("float64", testPoolForwardExact[float64])
}

// BenchmarkPoolForward times MaxPool2D and AvgPool2D through the op
// against the window-at-a-time reference, both on all cores, on resnet's stem pool at
// batch 1 and 16 and LeNet's 2×2 pools.
func BenchmarkPoolForward(b *testing.B) {
	type geom struct{ n, c, h, w, k, s, p int }
	for _, g := range []geom{{1, 64, 112, 112, 3, 2, 1}, {16, 64, 112, 112, 3, 2, 1}, {1, 6, 28, 28, 2, 2, 0}, {1, 16, 10, 10, 2, 2, 0}} {
		// A ReLU's output, as in the networks: half zeros, no NaN.
		r := rand.New(rand.NewSource(1))
		x := make([]float32, g.n*g.c*g.h*g.w)
		for i := range x {
			x[i] = max(float32(r.NormFloat64()), 0)
		}
		xt := tensor.FromSlice(x, g.n, g.c, g.h, g.w)
		k, s, p := [2]int{g.k, g.k}, [2]int{g.s, g.s}, ops.ExplicitPad(g.p, g.p, g.p, g.p)
		name := fmt.Sprintf("%dx%dx%dx%d_k%d_s%d_p%d", g.n, g.c, g.h, g.w, g.k, g.s, g.p)
		oh, ow := (g.h+2*g.p-g.k)/g.s+1, (g.w+2*g.p-g.k)/g.s+1
		out := make([]float32, g.n*g.c*oh*ow)
		// The reference split over the cores as the op splits its planes.
		old := func(avg bool) {
			parallel.For(g.n*g.c, max(1, (1<<15)/(oh*ow*g.k*g.k)), func(lo, hi int) {
				refPoolPlanes(x, out, lo, hi, g.h, g.w, g.k, g.k, g.s, g.s, g.p, g.p, oh, ow, avg, true)
			})
		}
		b.Run(name+"/max/old", func(b *testing.B) {
			for b.Loop() {
				old(false)
			}
		})
		b.Run(name+"/max/new", func(b *testing.B) {
			for b.Loop() {
				ops.MaxPool2D(xt, k, s, p)
			}
		})
		b.Run(name+"/avg/old", func(b *testing.B) {
			for b.Loop() {
				old(true)
			}
		})
		b.Run(name+"/avg/new", func(b *testing.B) {
			for b.Loop() {
				ops.AvgPool2D(xt, k, s, p)
			}
		})
	}
}
