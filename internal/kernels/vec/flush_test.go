package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

// flushRef is the definition FlushSubnormal follows, written with math
// rather than bit masks: a nonzero number smaller in magnitude than the
// smallest normal float32 becomes a zero of its sign.
func flushRef(v float32) float32 {
	if v != 0 && math.Abs(float64(v)) < 0x1p-126 {
		return float32(math.Copysign(0, float64(v)))
	}
	return v
}

func TestFlushSubnormal(t *testing.T) {
	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	special := []float32{0, float32(math.Copysign(0, -1)), 0x1p-149, -0x1p-149, 0x1p-127, -0x1.fffffcp-127,
		0x1p-126, -0x1p-126, 1, -2.5, math.MaxFloat32, inf, -inf, nan}
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		name    string
		n       int
		inPlace bool
	}{{"empty", 0, false}, {"one", 1, false}, {"tail", 15, false}, {"vector", 16, false},
		{"vector+tail", 37, false}, {"long", 1000, false}, {"in place", 53, true}} {
		t.Run(c.name, func(t *testing.T) {
			x := make([]float32, c.n)
			for i := range x {
				switch r.IntN(3) {
				case 0:
					x[i] = special[r.IntN(len(special))]
				case 1: // subnormal, either sign
					x[i] = math.Float32frombits(r.Uint32()&0x807fffff | 1)
				default:
					x[i] = float32(r.NormFloat64())
				}
			}
			want := make([]float32, c.n)
			for i, v := range x {
				want[i] = flushRef(v)
			}
			for _, k := range []struct {
				name string
				f    func(dst, x []float32)
			}{{"kernel", FlushSubnormal}, {"Go twin", flushSubnormalGo}} {
				src := append([]float32(nil), x...)
				dst := make([]float32, c.n)
				if c.inPlace {
					dst = src
				}
				k.f(dst, src)
				for i := range want {
					if math.Float32bits(dst[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s: element %d: %g (%#x) gives %#x, want %#x", k.name, i, x[i], math.Float32bits(x[i]), math.Float32bits(dst[i]), math.Float32bits(want[i]))
					}
				}
			}
		})
	}
}

func TestFlushSubnormalF64(t *testing.T) {
	x := []float64{0, math.Copysign(0, -1), 0x1p-1074, -0x1p-1030, 0x1p-1022, -1, math.Inf(-1), math.NaN(), 0x1p-126}
	want := []uint64{0, 1 << 63, 0, 1 << 63, math.Float64bits(0x1p-1022), math.Float64bits(-1),
		math.Float64bits(math.Inf(-1)), math.Float64bits(math.NaN()), math.Float64bits(0x1p-126)}
	dst := make([]float64, len(x))
	FlushSubnormalF64(dst, x)
	for i := range x {
		if math.Float64bits(dst[i]) != want[i] {
			t.Errorf("element %d: %g gives %#x, want %#x", i, x[i], math.Float64bits(dst[i]), want[i])
		}
	}
}

// MulScalar on subnormal operands against the same after FlushSubnormal:
// the case optimiser state decaying towards zero falls into.
//
//	go test -run XXX -bench MulScalarSubnormal ./internal/kernels/vec
func BenchmarkMulScalarSubnormal(b *testing.B) {
	x := make([]float32, 1<<16)
	for i := range x {
		x[i] = 0x1p-140
	}
	d := make([]float32, len(x))
	b.Run("subnormal", func(b *testing.B) {
		for b.Loop() {
			MulScalar(d, x, 0.9)
		}
	})
	b.Run("flushed", func(b *testing.B) {
		for b.Loop() {
			FlushSubnormal(d, x)
			MulScalar(d, d, 0.9)
		}
	})
}
