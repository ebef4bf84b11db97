package conv

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// poolCase is one pooling geometry: planes of h×w, a kh×kw window at stride
// sH×sW, pads top/bottom/left/right (bottom and right only set the output
// extent, as ONNX's ceil mode does with an extra pad).
type poolCase struct {
	planes, h, w, kh, kw, sH, sW, pT, pB, pL, pR int
}

func (c poolCase) out() (int, int) {
	return OutSize(c.h, c.kh, c.pT, c.pB, c.sH, 1), OutSize(c.w, c.kw, c.pL, c.pR, c.sW, 1)
}

func (c poolCase) String() string {
	return fmt.Sprintf("%dx%dx%d_k%dx%d_s%dx%d_p%d%d%d%d", c.planes, c.h, c.w, c.kh, c.kw, c.sH, c.sW, c.pT, c.pB, c.pL, c.pR)
}

// poolCases is a table of geometries: every small extent with the common
// windows, the networks' shapes, and a deterministic random sample of the
// rest (kernels 1–4, strides 1–3, pads below the kernel).
func poolCases() []poolCase {
	cs := []poolCase{
		{2, 112, 112, 3, 3, 2, 2, 1, 1, 1, 1}, // resnet's stem pool
		{2, 56, 56, 3, 3, 2, 2, 1, 1, 1, 1},
		{2, 56, 56, 3, 3, 1, 1, 1, 1, 1, 1},
		{3, 28, 28, 2, 2, 2, 2, 0, 0, 0, 0}, // LeNet
		{3, 10, 10, 2, 2, 2, 2, 0, 0, 0, 0},
		{2, 112, 112, 3, 3, 2, 2, 1, 2, 1, 2}, // ceil mode
		{2, 17, 17, 3, 3, 2, 2, 0, 1, 0, 1},
		{2, 3, colBuf + 89, 3, 3, 2, 2, 1, 1, 1, 1}, // wider than the column buffer
		{1, 4, colBuf + 1, 2, 3, 1, 1, 1, 0, 2, 1},
	}
	for h := 1; h <= 17; h++ {
		for w := 1; w <= 17; w += 2 {
			for _, k := range []int{2, 3} {
				for s := 1; s <= 2; s++ {
					for p := 0; p < k; p++ {
						c := poolCase{2, h, w, k, k, s, s, p, p, p, p}
						if h+2*p >= k && w+2*p >= k {
							cs = append(cs, c)
						}
					}
				}
			}
		}
	}
	r := rand.New(rand.NewSource(1))
	ext := []int{1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17, 56}
	for len(cs) < 3000 {
		c := poolCase{planes: 1 + r.Intn(3), h: ext[r.Intn(len(ext))], w: ext[r.Intn(len(ext))],
			kh: 1 + r.Intn(4), kw: 1 + r.Intn(4), sH: 1 + r.Intn(3), sW: 1 + r.Intn(3)}
		c.pT, c.pB, c.pL, c.pR = r.Intn(c.kh), r.Intn(c.kh), r.Intn(c.kw), r.Intn(c.kw)
		if oh, ow := c.out(); oh > 0 && ow > 0 {
			cs = append(cs, c)
		}
	}
	return cs
}

// poolInput fills n values drawn to exercise the maximum's tie, zero-sign
// and NaN rules: small integers (many ties), zeros of both signs, NaNs with
// different payloads and infinities, in proportions set by mode.
func poolInput[T Float](r *rand.Rand, n, mode int) []T {
	x := make([]T, n)
	for i := range x {
		switch q := r.Intn(20); {
		case mode == 0:
			x[i] = T(r.NormFloat64())
		case mode == 1 && q < 6:
			x[i] = T(math.Copysign(0, -1))
		case mode == 1 && q < 12:
			x[i] = 0
		case mode == 1:
			x[i] = T(-r.Intn(3))
		case q == 0:
			x[i] = T(math.Float64frombits(0x7ff8000000000000 | uint64(r.Intn(1000))))
		case q == 1:
			x[i] = T(math.Inf(1 - 2*r.Intn(2)))
		default:
			x[i] = T(r.Intn(5) - 2)
		}
	}
	if mode == 2 {
		// float32 NaN payloads survive the conversion only through bits.
		if f, ok := any(x).([]float32); ok {
			for i := range f {
				if f[i] != f[i] {
					f[i] = math.Float32frombits(0x7fc00000 | uint32(r.Intn(1000)))
				}
			}
		}
	}
	return x
}

func bitsOf[T Float](v T) uint64 {
	switch v := any(v).(type) {
	case float32:
		return uint64(math.Float32bits(v))
	case float64:
		return math.Float64bits(v)
	}
	return 0
}

func testPoolRows[T Float](t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for _, c := range poolCases() {
		oh, ow := c.out()
		for mode := 0; mode < 3; mode++ {
			x := poolInput[T](r, c.planes*c.h*c.w, mode)
			want := make([]T, c.planes*oh*ow)
			got := make([]T, len(want))
			MaxPool2D(want, nil, x, c.planes, c.h, c.w, c.kh, c.kw, c.pT, c.pL, c.sH, c.sW, oh, ow)
			MaxPool2DRows(got, x, c.planes, c.h, c.w, c.kh, c.kw, c.pT, c.pL, c.sH, c.sW, oh, ow)
			for i := range want {
				if bitsOf(got[i]) != bitsOf(want[i]) {
					t.Fatalf("MaxPool2DRows %v mode %d: out[%d] = %v (%#x), MaxPool2D gives %v (%#x)",
						c, mode, i, got[i], bitsOf(got[i]), want[i], bitsOf(want[i]))
				}
			}
			for _, cip := range []bool{false, true} {
				AvgPool2D(want, x, c.planes, c.h, c.w, c.kh, c.kw, c.pT, c.pL, c.sH, c.sW, oh, ow, cip)
				AvgPool2DRows(got, x, c.planes, c.h, c.w, c.kh, c.kw, c.pT, c.pL, c.sH, c.sW, oh, ow, cip)
				for i := range want {
					// Sums holding NaN or opposite infinities are NaN in both; the
					// payload of a sum of NaNs follows the hardware's operand order,
					// which both kernels share, so the bits must match too.
					if bitsOf(got[i]) != bitsOf(want[i]) {
						t.Fatalf("AvgPool2DRows %v mode %d count_pad %v: out[%d] = %v (%#x), AvgPool2D gives %v (%#x)",
							c, mode, cip, i, got[i], bitsOf(got[i]), want[i], bitsOf(want[i]))
					}
				}
			}
		}
	}
}

// TestPool2DRows checks the row kernels against MaxPool2D and AvgPool2D bit
// for bit over the geometry table, on random, zero-signed and NaN-laden
// inputs.
func TestPool2DRows(t *testing.T) {
	t.Run("float32", testPoolRows[float32])
	t.Run("float64", testPoolRows[float64])
}

// TestPool2DRowsOversized checks output extents past the padded input, which
// give windows wholly in the padding: -Inf for the maximum, 0 for the mean,
// as MaxPool2D and AvgPool2D give.
func TestPool2DRowsOversized(t *testing.T) {
	x := []float64{1, 2, 3, 4, 5, 6}
	for _, c := range []struct{ oh, ow int }{{4, 2}, {2, 5}, {5, 5}} {
		want := make([]float64, c.oh*c.ow)
		got := make([]float64, len(want))
		MaxPool2D(want, nil, x, 1, 2, 3, 2, 2, 1, 1, 1, 1, c.oh, c.ow)
		MaxPool2DRows(got, x, 1, 2, 3, 2, 2, 1, 1, 1, 1, c.oh, c.ow)
		for i := range want {
			if bitsOf(got[i]) != bitsOf(want[i]) {
				t.Fatalf("max %dx%d: out[%d] = %v, want %v", c.oh, c.ow, i, got[i], want[i])
			}
		}
		AvgPool2D(want, x, 1, 2, 3, 2, 2, 1, 1, 1, 1, c.oh, c.ow, false)
		AvgPool2DRows(got, x, 1, 2, 3, 2, 2, 1, 1, 1, 1, c.oh, c.ow, false)
		for i := range want {
			if bitsOf(got[i]) != bitsOf(want[i]) {
				t.Fatalf("avg %dx%d: out[%d] = %v, want %v", c.oh, c.ow, i, got[i], want[i])
			}
		}
	}
}

// BenchmarkPool2DRows compares the row kernels with MaxPool2D and AvgPool2D
// (the scalar window-at-a-time reference) on one core, on the networks'
// pooling shapes.
func BenchmarkPool2DRows(b *testing.B) {
	for _, c := range []poolCase{
		{64, 112, 112, 3, 3, 2, 2, 1, 1, 1, 1},
		{6, 28, 28, 2, 2, 2, 2, 0, 0, 0, 0},
		{64, 56, 56, 3, 3, 1, 1, 1, 1, 1, 1},
	} {
		oh, ow := c.out()
		r := rand.New(rand.NewSource(3))
		x := poolInput[float32](r, c.planes*c.h*c.w, 0)
		for i := range x {
			x[i] = max(x[i], 0) // a ReLU's output, as in the networks
		}
		d := make([]float32, c.planes*oh*ow)
		b.Run(c.String()+"/max/old", func(b *testing.B) {
			for b.Loop() {
				MaxPool2D(d, nil, x, c.planes, c.h, c.w, c.kh, c.kw, c.pT, c.pL, c.sH, c.sW, oh, ow)
			}
		})
		b.Run(c.String()+"/max/new", func(b *testing.B) {
			for b.Loop() {
				MaxPool2DRows(d, x, c.planes, c.h, c.w, c.kh, c.kw, c.pT, c.pL, c.sH, c.sW, oh, ow)
			}
		})
		b.Run(c.String()+"/avg/old", func(b *testing.B) {
			for b.Loop() {
				AvgPool2D(d, x, c.planes, c.h, c.w, c.kh, c.kw, c.pT, c.pL, c.sH, c.sW, oh, ow, false)
			}
		})
		b.Run(c.String()+"/avg/new", func(b *testing.B) {
			for b.Loop() {
				AvgPool2DRows(d, x, c.planes, c.h, c.w, c.kh, c.kw, c.pT, c.pL, c.sH, c.sW, oh, ow, false)
			}
		})
	}
}
