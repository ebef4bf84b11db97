package ops_test

import (
	"math"
	"testing"

	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

func TestBatchNorm(t *testing.T) {
	x := f64([]float64{1, 2, 3, 6}, 2, 2) // channel means 2, 4; biased var 1, 4
	gamma := f64([]float64{1, 2}, 2)
	beta := f64([]float64{0, 1}, 2)
	rm := f64([]float64{0.5, -1}, 2)
	rv := f64([]float64{1, 2}, 2)
	eps := 1e-3
	y, nm, nv := ops.BatchNorm(x, gamma, beta, rm, rv, true, 0.9, eps)
	a, b := 1/math.Sqrt(1+eps), 2/math.Sqrt(4+eps)
	assertClose(t, "train y", y, []int{2, 2}, []float64{-a, -2*b + 1, a, 2*b + 1}, 1e-12)
	assertClose(t, "new mean", nm, []int{2}, []float64{0.9*0.5 + 0.1*2, 0.9*-1 + 0.1*4}, 1e-12)
	// Unbiased batch variances 2 and 8.
	assertClose(t, "new var", nv, []int{2}, []float64{0.9*1 + 0.1*2, 0.9*2 + 0.1*8}, 1e-12)
	// Inference uses the running statistics and leaves them as they are.
	yi, m2, v2 := ops.BatchNorm(x, gamma, beta, rm, rv, false, 0.9, eps)
	c0, c1 := 1/math.Sqrt(1+eps), 2/math.Sqrt(2+eps)
	assertClose(t, "infer y", yi, []int{2, 2}, []float64{0.5 * c0, 3*c1 + 1, 2.5 * c0, 7*c1 + 1}, 1e-12)
	if m2 != rm || v2 != rv {
		t.Fatal("inference changed the running statistics")
	}
	// 4-D: statistics over N, H, W per channel, against a direct loop.
	x4 := randT(20, -2, 2, 3, 2, 2, 3)
	y4, nm4, nv4 := ops.BatchNorm(x4, gamma, beta, rm, rv, true, 0.8, eps)
	xv := x4.Float64s()
	want := make([]float64, len(xv))
	for c := range 2 {
		var idx []int
		for n := range 3 {
			for i := range 6 {
				idx = append(idx, (n*2+c)*6+i)
			}
		}
		mean, vr := 0.0, 0.0
		for _, i := range idx {
			mean += xv[i]
		}
		mean /= 18
		for _, i := range idx {
			vr += (xv[i] - mean) * (xv[i] - mean)
		}
		vr /= 18
		g, bb := gamma.At(c), beta.At(c)
		for _, i := range idx {
			want[i] = (xv[i]-mean)/math.Sqrt(vr+eps)*g + bb
		}
		if !testkit.Close(nm4.At(c), 0.8*rm.At(c)+0.2*mean, 1e-12) || !testkit.Close(nv4.At(c), 0.8*rv.At(c)+0.2*vr*18/17, 1e-12) {
			t.Fatalf("channel %d running stats %v %v", c, nm4.At(c), nv4.At(c))
		}
	}
	assertClose(t, "4-D", y4, []int{3, 2, 2, 3}, want, 1e-12)

	testkit.MustPanic(t, func() { ops.BatchNorm(x, f64([]float64{1}, 1), beta, rm, rv, true, 0.9, eps) }, "BatchNorm", "[1]", "[2 2]")
	testkit.MustPanic(t, func() { ops.BatchNorm(f64([]float64{1, 2}, 2), gamma, beta, rm, rv, true, 0.9, eps) }, "BatchNorm", "[2]")
	testkit.MustPanic(t, func() { ops.BatchNorm(f64([]float64{1, 2}, 1, 2), gamma, beta, rm, rv, true, 0.9, eps) }, "more than one value")
}

// TestBatchNormGradients checks BatchNorm's gradients, training and inference, of its output and running statistics against finite differences (and second
// derivatives where marked).
func TestBatchNormGradients(t *testing.T) {
	x := randT(1, -2, 2, 3, 4)
	gamma := randT(3, 0.5, 1.5, 4)
	beta := randT(4, -1, 1, 4)
	x4 := randT(5, -2, 2, 2, 3, 2, 2)
	g3, b3 := randT(6, 0.5, 1.5, 3), randT(7, -1, 1, 3)
	rm, rv := randT(8, -1, 1, 3), randT(9, 0.5, 1.5, 3)
	checkGradCases(t, []gradCase{
		{"batchnorm train", func(v ...*tensor.Tensor) *tensor.Tensor {
			y, _, _ := ops.BatchNorm(v[0], v[1], v[2], rm, rv, true, 0.9, 1e-5)
			return y
		}, []*tensor.Tensor{x4, g3, b3}, false},
		{"batchnorm 2d", func(v ...*tensor.Tensor) *tensor.Tensor {
			y, _, _ := ops.BatchNorm(v[0], v[1], v[2], randT(13, -1, 1, 4), randT(14, 0.5, 1.5, 4), true, 0.9, 1e-5)
			return y
		}, []*tensor.Tensor{x, gamma, beta}, false},
		{"batchnorm infer", func(v ...*tensor.Tensor) *tensor.Tensor {
			y, _, _ := ops.BatchNorm(v[0], v[1], v[2], v[3], v[4], false, 0.9, 1e-5)
			return y
		}, []*tensor.Tensor{x4, g3, b3, rm, rv}, false},
		{"batchnorm running", func(v ...*tensor.Tensor) *tensor.Tensor {
			_, m, s := ops.BatchNorm(v[0], g3, b3, v[1], v[2], true, 0.9, 1e-5)
			return ops.Add(m, s)
		}, []*tensor.Tensor{x4, rm, rv}, false},
	})
}
