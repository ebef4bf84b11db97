package vec

import (
	"math"
	"math/rand"
	"testing"
)

// clampInputs is a table of inputs of several lengths (odd ones, and
// around the 16-lane vector) holding the values where Go's min and max
// differ from the bare instructions — NaN, ±0, ±Inf, the bounds
// themselves — among random ones.
func clampInputs() [][]float32 {
	specials := []float32{float32(math.NaN()), 0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		-3, 3, 6, -6, 1, -1, 0.5, 2.999999, -2.999999, 1e-30, -1e-30}
	r := rand.New(rand.NewSource(1))
	var out [][]float32
	for _, n := range []int{0, 1, 3, 7, 15, 16, 17, 31, 33, 100, 1027} {
		x := make([]float32, n)
		for i := range x {
			if r.Intn(3) == 0 {
				x[i] = specials[r.Intn(len(specials))]
			} else {
				x[i] = float32(r.NormFloat64() * 4)
			}
		}
		out = append(out, x)
	}
	return out
}

// sameBits reports whether a and b are the same float32 bit for bit, any
// NaN matching any NaN.
func sameBits(a, b float32) bool {
	if a != a && b != b {
		return true
	}
	return math.Float32bits(a) == math.Float32bits(b)
}

func TestClampMatchesBuiltins(t *testing.T) {
	negz := float32(math.Copysign(0, -1))
	bounds := [][2]float32{{0, 6}, {0, 1}, {negz, 1}, {-1, negz}, {-1, 0}, {negz, 0}, {0, negz}, {2, -2},
		{float32(math.Inf(-1)), 0}, {0, float32(math.Inf(1))}, {-3, 3}}
	for _, b := range bounds {
		for _, x := range clampInputs() {
			got := make([]float32, len(x))
			twin := make([]float32, len(x))
			Clamp(got, x, b[0], b[1])
			clampGo(twin, x, b[0], b[1])
			for i, v := range x {
				want := min(max(v, b[0]), b[1])
				if !sameBits(got[i], want) || !sameBits(twin[i], want) {
					t.Fatalf("Clamp(%v, lo=%v, hi=%v) at n=%d: got %v (twin %v), want %v", v, b[0], b[1], len(x), got[i], twin[i], want)
				}
			}
		}
	}
}

func TestHardswishMatchesScalar(t *testing.T) {
	ref := func(v float32) float32 {
		switch {
		case v <= -3:
			return 0
		case v >= 3:
			return v
		}
		return v * (v + 3) / 6
	}
	for _, x := range clampInputs() {
		got := make([]float32, len(x))
		twin := make([]float32, len(x))
		Hardswish(got, x)
		hardswishGo(twin, x)
		for i, v := range x {
			if want := ref(v); !sameBits(got[i], want) || !sameBits(twin[i], want) {
				t.Fatalf("Hardswish(%v) at n=%d: got %v (twin %v), want %v", v, len(x), got[i], twin[i], want)
			}
		}
		// In place, as the executor runs it over a dying operand.
		y := append([]float32(nil), x...)
		Hardswish(y, y)
		for i := range y {
			if !sameBits(y[i], got[i]) {
				t.Fatalf("Hardswish in place differs at %d: %v vs %v", i, y[i], got[i])
			}
		}
	}
}

// BenchmarkClampHardswish compares the kernels with their Go twins on a
// MobileNetV3 activation (56×56×64).
func BenchmarkClampHardswish(b *testing.B) {
	x := make([]float32, 56*56*64)
	r := rand.New(rand.NewSource(1))
	for i := range x {
		x[i] = float32(r.NormFloat64() * 3)
	}
	d := make([]float32, len(x))
	b.Run("clamp/go", func(b *testing.B) {
		for b.Loop() {
			clampGo(d, x, 0, 6)
		}
	})
	b.Run("clamp/kernel", func(b *testing.B) {
		for b.Loop() {
			Clamp(d, x, 0, 6)
		}
	})
	b.Run("hardswish/go", func(b *testing.B) {
		for b.Loop() {
			hardswishGo(d, x)
		}
	})
	b.Run("hardswish/kernel", func(b *testing.B) {
		for b.Loop() {
			Hardswish(d, x)
		}
	})
}
