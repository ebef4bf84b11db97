package conv

import (
	"math"
	"math/rand/v2"
	"testing"
)

// MaxPoolValid and MaxPoolValidBackward agree with MaxPool2D and
// MaxPool2DBackward (the reference) on unpadded geometries, with ties,
// signed zeros, NaN and -Inf planted in the input: the gradient bit for
// bit, the maximum bit for bit but for the sign of a zero maximum and the
// payload of a NaN one (see MaxPoolValid).
func testMaxPoolValid[T Float](t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	nan, inf := T(math.NaN()), T(math.Inf(-1))
	for _, c := range []struct {
		name                 string
		planes, h, w, kh, kw int
		sH, sW               int
	}{
		{"2x2 s2 LeNet pool1", 6, 24, 24, 2, 2, 2, 2},
		{"2x2 s2 LeNet pool2", 16, 8, 8, 2, 2, 2, 2},
		{"2x2 s2 odd plane", 3, 7, 9, 2, 2, 2, 2},
		{"2x2 s2 one full vector", 2, 4, 32, 2, 2, 2, 2},
		{"2x2 s2 wide tail", 2, 5, 30, 2, 2, 2, 2},
		{"2x2 s2 two vectors and a tail", 3, 6, 71, 2, 2, 2, 2},
		{"3x3 s2 overlapping", 2, 9, 11, 3, 3, 2, 2},
		{"3x2 s1", 2, 5, 6, 3, 2, 1, 1},
		{"1x1 s1", 1, 3, 4, 1, 1, 1, 1},
		{"whole plane", 4, 5, 3, 5, 3, 1, 1},
		{"2x3 s(3,1) ragged", 3, 8, 7, 2, 3, 3, 1},
	} {
		for _, special := range []bool{false, true} {
			oh, ow := OutSize(c.h, c.kh, 0, 0, c.sH, 1), OutSize(c.w, c.kw, 0, 0, c.sW, 1)
			n := c.planes * c.h * c.w
			src := randFloats[T](r, n)
			if special {
				// Small integers make many ties; then signed zeros,
				// -Inf and NaN in a few places.
				for i := range src {
					src[i] = T(r.IntN(3))
				}
				for i := 0; i < n; i += 7 {
					src[i] = 0
					src[(i+1)%n] = T(math.Copysign(0, -1))
				}
				src[n/3], src[n/2] = nan, inf
				src[(2*n)/3] = -nan
			}
			want, am := make([]T, c.planes*oh*ow), make([]int32, c.planes*oh*ow)
			MaxPool2D(want, am, src, c.planes, c.h, c.w, c.kh, c.kw, 0, 0, c.sH, c.sW, oh, ow)
			got := make([]T, len(want))
			for i := range got {
				got[i] = 42 // every output must be written
			}
			MaxPoolValid(got, src, c.planes, c.h, c.w, c.kh, c.kw, c.sH, c.sW, oh, ow)
			for i := range want {
				same := got[i] == want[i] && (got[i] != 0 || math.Signbit(float64(got[i])) == math.Signbit(float64(want[i])))
				switch {
				case got[i] != got[i] || want[i] != want[i]:
					same = got[i] != got[i] && want[i] != want[i]
				case want[i] == 0 && got[i] == 0:
					// +0 wherever the window holds a +0 among its zero
					// maxima; the reference's first zero may be -0.
					same = !math.Signbit(float64(got[i])) || math.Signbit(float64(want[i]))
				}
				if !same {
					t.Fatalf("%s special=%v: max[%d] = %v, want %v", c.name, special, i, got[i], want[i])
				}
			}
			g := randFloats[T](r, len(want))
			wantDx, gotDx := make([]T, n), make([]T, n)
			for i := range wantDx {
				wantDx[i] = T(i % 5) // accumulated into, not overwritten
				gotDx[i] = wantDx[i]
			}
			MaxPool2DBackward(wantDx, g, am, c.planes, c.h, c.w, oh, ow)
			MaxPoolValidBackward(gotDx, src, g, c.planes, c.h, c.w, c.kh, c.kw, c.sH, c.sW, oh, ow)
			for i := range wantDx {
				if gotDx[i] != wantDx[i] {
					t.Fatalf("%s special=%v: dx[%d] = %v, want %v", c.name, special, i, gotDx[i], wantDx[i])
				}
			}

			// The ReLU-masked gradient is the plain one (into zeros)
			// with the ReLU gradient's mask applied after.
			wantR, gotR := make([]T, n), make([]T, n)
			MaxPool2DBackward(wantR, g, am, c.planes, c.h, c.w, oh, ow)
			for i, v := range src {
				if !(v > 0) {
					wantR[i] = 0
				}
			}
			MaxPoolValidBackwardReLU(gotR, src, g, c.planes, c.h, c.w, c.kh, c.kw, c.sH, c.sW, oh, ow)
			for i := range wantR {
				if math.Float64bits(float64(gotR[i])) != math.Float64bits(float64(wantR[i])) {
					t.Fatalf("%s special=%v: ReLU-masked dx[%d] = %v, want %v", c.name, special, i, gotR[i], wantR[i])
				}
			}
		}
	}
}

func TestMaxPoolValid(t *testing.T) {
	t.Run("float32", testMaxPoolValid[float32])
	t.Run("float64", testMaxPoolValid[float64])
}

// A window reaching past the plane is refused, not read out of bounds.
func TestMaxPoolValidRefusesPadding(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("MaxPoolValid accepted a window past the plane")
		}
	}()
	MaxPoolValid(make([]float32, 4), make([]float32, 9), 1, 3, 3, 2, 2, 2, 2, 2, 2)
}
