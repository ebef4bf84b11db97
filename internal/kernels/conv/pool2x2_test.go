package conv

import (
	"math"
	"math/rand/v2"
	"testing"
)

// sameBits reports whether a and b are the same float32, any NaN matching
// any NaN.
func sameBits(a, b float32) bool {
	if a != a || b != b {
		return a != a && b != b
	}
	return math.Float32bits(a) == math.Float32bits(b)
}

// The AVX-512 2×2 pooling kernels give their Go twins' bits (NaN payloads
// aside) at every row length around the 16-output vector and its masked
// tail, on rows wider than their windows (a pitched plane), with ties,
// signed zeros, infinities and NaN planted; and they write nothing past
// their outputs. Without assembly the test has nothing to compare.
func TestPool2x2Conformance(t *testing.T) {
	if !useAsm {
		t.Skip("no AVX-512 pooling kernels in this build (noasm, or the CPU lacks AVX-512): the Go twins run")
	}
	r := rand.New(rand.NewPCG(11, 12))
	kernels := []struct {
		name string
		asm  func(dst, src *float32, outH, outW, w int)
		twin func(d, img []float32, outH, outW, w int)
	}{
		{"max", maxPool2x2AVX512, maxPool2x2Plane[float32]},
		{"avg", avgPool2x2AVX512, avgPool2x2Plane[float32]},
	}
	for _, k := range kernels {
		for outW := 1; outW <= 40; outW++ {
			for _, extra := range []int{0, 1, 3} { // row pitch past the windows
				for _, special := range []bool{false, true} {
					outH, w := 3, 2*outW+extra
					h := 2*outH + extra%2
					src := randFloats[float32](r, h*w)
					if special {
						for i := range src {
							src[i] = float32(r.IntN(3) - 1)
						}
						for i := 0; i < len(src); i += 5 {
							src[i] = float32(math.Copysign(0, -1))
						}
						src[len(src)/3] = float32(math.NaN())
						src[len(src)/2] = float32(math.Inf(1))
						src[len(src)/4] = float32(math.Inf(-1))
					}
					const guard = 17
					want := make([]float32, outH*outW)
					got := make([]float32, outH*outW+guard)
					for i := range got {
						got[i] = 42
					}
					k.twin(want, src, outH, outW, w)
					k.asm(&got[0], &src[0], outH, outW, w)
					for i := range want {
						if !sameBits(got[i], want[i]) {
							t.Fatalf("%s outW=%d pitch=%d special=%v: out[%d] = %v (%#x), want %v (%#x)",
								k.name, outW, w, special, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
						}
					}
					for i := len(want); i < len(got); i++ {
						if got[i] != 42 {
							t.Fatalf("%s outW=%d: wrote past its outputs at %d", k.name, outW, i)
						}
					}
				}
			}
		}
	}
}

// AvgPoolValid agrees with AvgPool2D (the reference, which sums each
// window on its own) to rounding on unpadded geometries, and writes every
// output.
func testAvgPoolValid[T Float](t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	tol := 1e-6
	var zero T
	if _, ok := any(zero).(float64); ok {
		tol = 1e-14
	}
	for _, c := range []struct {
		name                 string
		planes, h, w, kh, kw int
		sH, sW               int
	}{
		{"2x2 s2 CNN fixture pool2", 16, 14, 14, 2, 2, 2, 2},
		{"2x2 s2 odd plane", 3, 7, 9, 2, 2, 2, 2},
		{"2x2 s2 two vectors and a tail", 3, 6, 71, 2, 2, 2, 2},
		{"3x3 s2 overlapping", 2, 9, 11, 3, 3, 2, 2},
		{"3x2 s1", 2, 5, 6, 3, 2, 1, 1},
		{"1x1 s1", 1, 3, 4, 1, 1, 1, 1},
		{"whole plane", 4, 5, 3, 5, 3, 1, 1},
		{"2x3 s(3,1) ragged", 3, 8, 7, 2, 3, 3, 1},
	} {
		oh, ow := OutSize(c.h, c.kh, 0, 0, c.sH, 1), OutSize(c.w, c.kw, 0, 0, c.sW, 1)
		src := randFloats[T](r, c.planes*c.h*c.w)
		want := make([]T, c.planes*oh*ow)
		AvgPool2D(want, src, c.planes, c.h, c.w, c.kh, c.kw, 0, 0, c.sH, c.sW, oh, ow, false)
		got := make([]T, len(want))
		for i := range got {
			got[i] = 42
		}
		AvgPoolValid(got, src, c.planes, c.h, c.w, c.kh, c.kw, c.sH, c.sW, oh, ow)
		for i := range want {
			if d := math.Abs(float64(got[i] - want[i])); d > tol*(1+math.Abs(float64(want[i]))) {
				t.Fatalf("%s: avg[%d] = %v, want %v", c.name, i, got[i], want[i])
			}
		}
	}
}

func TestAvgPoolValid(t *testing.T) {
	t.Run("float32", testAvgPoolValid[float32])
	t.Run("float64", testAvgPoolValid[float64])
}

// A window reaching past the plane is refused, not read out of bounds.
func TestAvgPoolValidRefusesPadding(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("AvgPoolValid accepted a window past the plane")
		}
	}()
	AvgPoolValid(make([]float32, 4), make([]float32, 9), 1, 3, 3, 2, 2, 2, 2, 2, 2)
}

// BenchmarkPool2x2 times 2×2 stride-2 max and average pooling over the CNN
// fixture's first pooled layer at batch 64 (512 planes of 28×28), the
// kernel against its Go twin in one run.
func BenchmarkPool2x2(b *testing.B) {
	const planes, h, w = 512, 28, 28
	src := randFloats[float32](rand.New(rand.NewPCG(1, 2)), planes*h*w)
	dst := make([]float32, planes*h*w/4)
	for _, c := range []struct {
		name string
		run  func()
	}{
		{"max/kernel", func() { maxPool2x2(dst, src, planes, h, w, h/2, w/2) }},
		{"max/go", func() {
			for p := range planes {
				maxPool2x2Plane(dst[p*h*w/4:], src[p*h*w:], h/2, w/2, w)
			}
		}},
		{"avg/kernel", func() { avgPool2x2(dst, src, planes, h, w, h/2, w/2) }},
		{"avg/go", func() {
			for p := range planes {
				avgPool2x2Plane(dst[p*h*w/4:], src[p*h*w:], h/2, w/2, w)
			}
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				c.run()
			}
		})
	}
}
