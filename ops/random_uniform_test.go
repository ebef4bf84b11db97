package ops_test

import (
	"math"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// TestRandomUniformLike checks the draws' range, shape and dtype, that
// their mean and variance are those of the uniform distribution within a
// few standard errors, that a seed fixes them in both modes, and that
// unseeded draws are fresh on every run of a compiled plan.
func TestRandomUniformLike(t *testing.T) {
	const n = 20000
	for _, tc := range []struct {
		name   string
		dt     tensor.DType
		lo, hi float64
	}{
		{"float32 unit", tensor.Float32, 0, 1},
		{"float64 shifted", tensor.Float64, -2, 3},
		{"float32 narrow", tensor.Float32, 1, 1.0000001},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tensor.SetSeed(5)
			x := tensor.Zeros(tc.dt, 4, n/4)
			y := ops.RandomUniformLike(x, tc.lo, tc.hi)
			if y.DType() != tc.dt || !y.Shape().Equal(x.Shape()) {
				t.Fatalf("got %v %v, want %v %v", y.DType(), y.Shape(), tc.dt, x.Shape())
			}
			sum, sq := 0.0, 0.0
			for _, v := range y.Float64s() {
				if v < tc.lo || v >= tc.hi {
					t.Fatalf("value %v outside [%v, %v)", v, tc.lo, tc.hi)
				}
				sum += v
				sq += v * v
			}
			mean, w := sum/n, tc.hi-tc.lo
			variance := sq/n - mean*mean
			// The mean's standard error is w/√(12n); allow five of them,
			// and a tenth of the variance w²/12.
			if want := (tc.lo + tc.hi) / 2; math.Abs(mean-want) > 5*w/math.Sqrt(12*n)+1e-6 {
				t.Errorf("mean %v, want %v", mean, want)
			}
			if want := w * w / 12; math.Abs(variance-want) > 0.1*want+1e-12 {
				t.Errorf("variance %v, want %v", variance, want)
			}
		})
	}

	x := tensor.Zeros(tensor.Float32, 3, 5)
	seeded := func(xs []*tensor.Tensor) []*tensor.Tensor {
		return []*tensor.Tensor{ops.RandomUniformLikeSeeded(xs[0], -1, 1, 3.5)}
	}
	jitSeeded := spore.Jit(seeded)
	a, b := seeded([]*tensor.Tensor{x})[0], jitSeeded([]*tensor.Tensor{x})[0]
	if err := testkit.CheckClose(b, a, 0); err != nil {
		t.Errorf("seeded: Graph against PyNative: %v", err)
	}
	if err := testkit.CheckClose(jitSeeded([]*tensor.Tensor{x})[0], b, 0); err != nil {
		t.Errorf("seeded: a second run differs: %v", err)
	}
	fresh := spore.Jit(func(xs []*tensor.Tensor) []*tensor.Tensor {
		return []*tensor.Tensor{ops.RandomUniformLike(xs[0], 0, 1)}
	})
	if testkit.CheckClose(fresh([]*tensor.Tensor{x})[0], fresh([]*tensor.Tensor{x})[0], 0) == nil {
		t.Error("two runs of a compiled plan drew the same values")
	}

	testkit.MustPanic(t, func() { ops.RandomUniformLike(tensor.Zeros(tensor.Int64, 2), 0, 1) }, "RandomUniformLike", "Int64")
	testkit.MustPanic(t, func() { ops.RandomUniformLike(x, 2, 1) }, "RandomUniformLike", "not a finite interval")
}
