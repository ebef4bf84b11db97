package conv

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sporeml/spore/internal/kernels/vec"
)

// AffineReLU gives the bits of the unfused chain it replaces — vec's
// AddScalar, MulScalar, AddScalar and Relu, each skipped where its operand
// says so — and, on AVX-512, the kernel gives its Go twin's bits, at every
// length around the vector and its masked tail, with signed zeros,
// infinities and NaN among the inputs. It writes nothing past its slice.
func TestAffineReLU(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	negZero := float32(math.Copysign(0, -1))
	for n := 0; n <= 140; n += 1 + n/16 {
		for _, c := range []struct {
			name               string
			bias, scale, shift float32
			relu               bool
		}{
			{"all", 0.25, -1.5, 3, true},
			{"all, no ReLU", -0.75, 2.5, -1, false},
			{"bias and ReLU", 1.5, 1, NoAdd, true},
			{"scale and shift", NoAdd, 0.5, -0.125, false},
			{"ReLU only", NoAdd, 1, NoAdd, true},
			{"nothing", NoAdd, 1, NoAdd, false},
		} {
			src := make([]float32, n)
			for i := range src {
				src[i] = float32(r.NormFloat64())
				switch i % 11 {
				case 3:
					src[i] = negZero
				case 5:
					src[i] = 0
				case 7:
					src[i] = float32(math.NaN())
				case 9:
					src[i] = float32(math.Inf(1 - 2*(i%2)))
				}
			}
			// The chain, as the unfused ops compute it.
			want := append([]float32(nil), src...)
			if !isNoAdd(c.bias) {
				vec.AddScalar(want, want, c.bias)
			}
			if c.scale != 1 {
				vec.MulScalar(want, want, c.scale)
			}
			if !isNoAdd(c.shift) {
				vec.AddScalar(want, want, c.shift)
			}
			if c.relu {
				vec.Relu(want, want)
			}
			const guard = 5
			buf := make([]float32, n+guard)
			copy(buf, src)
			for i := n; i < len(buf); i++ {
				buf[i] = 42
			}
			AffineReLU(buf[:n], c.bias, c.scale, c.shift, c.relu)
			twin := append([]float32(nil), src...)
			floor := float32(math.Inf(-1))
			if c.relu {
				floor = 0
			}
			affineGo(twin, c.bias, c.scale, c.shift, floor)
			for i := range n {
				if !sameBits(buf[i], twin[i]) {
					t.Fatalf("%s n=%d: [%d] = %v (%#x), Go twin %v (%#x)", c.name, n, i, buf[i], math.Float32bits(buf[i]), twin[i], math.Float32bits(twin[i]))
				}
				// vec.Relu's Go twin (under noasm) turns -0 into +0;
				// its kernel and AffineReLU keep it. Compare values
				// there, bits elsewhere.
				same := sameBits(buf[i], want[i]) || (buf[i] == 0 && want[i] == 0 && !useAsm)
				if !same {
					t.Fatalf("%s n=%d: [%d] = %v (%#x), the unfused chain gives %v (%#x)", c.name, n, i, buf[i], math.Float32bits(buf[i]), want[i], math.Float32bits(want[i]))
				}
			}
			for i := n; i < len(buf); i++ {
				if buf[i] != 42 {
					t.Fatalf("%s n=%d: wrote past the slice at %d", c.name, n, i)
				}
			}
		}
	}
}

// isNoAdd reports whether v is NoAdd, -0 (which == tells from nothing).
func isNoAdd(v float32) bool { return v == 0 && math.Signbit(float64(v)) }
