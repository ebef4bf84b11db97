package ops_test

import (
	"math"
	"testing"

	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

func softmaxRef(v []float64) []float64 {
	m := math.Inf(-1)
	for _, x := range v {
		m = max(m, x)
	}
	s := 0.0
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = math.Exp(x - m)
		s += out[i]
	}
	for i := range out {
		out[i] /= s
	}
	return out
}

func TestSoftmaxValues(t *testing.T) {
	x := f64([]float64{1, 2, 3, 0, 0, 0}, 2, 3)
	want := append(softmaxRef([]float64{1, 2, 3}), 1.0/3, 1.0/3, 1.0/3)
	assertClose(t, "softmax -1", ops.Softmax(x, -1), []int{2, 3}, want, 1e-12)
	// Along axis 0, each column is a pair.
	p := 1 / (1 + math.Exp(-1))
	q := 1 / (1 + math.Exp(-2))
	r := 1 / (1 + math.Exp(-3))
	assertClose(t, "softmax 0", ops.Softmax(x, 0), []int{2, 3}, []float64{p, q, r, 1 - p, 1 - q, 1 - r}, 1e-12)
	// Large logits do not overflow.
	big := f64([]float64{1000, 1001}, 1, 2)
	l := math.Log1p(math.Exp(-1))
	assertClose(t, "softmax big", ops.Softmax(big, 1), []int{1, 2}, []float64{1 - 1/(1+math.Exp(-1)), 1 / (1 + math.Exp(-1))}, 1e-12)
	assertClose(t, "logsoftmax big", ops.LogSoftmax(big, -1), []int{1, 2}, []float64{-1 - l, -l}, 1e-12)
	// float32 keeps its dtype.
	s32 := ops.Softmax(tensor.FromSlice([]float32{1, 2, 3}, 3), 0)
	if s32.DType() != tensor.Float32 {
		t.Fatalf("dtype %v", s32.DType())
	}
	assertClose(t, "softmax f32", s32, []int{3}, softmaxRef([]float64{1, 2, 3}), 1e-6)
	// LogSumExp over several axes, kept or dropped.
	y := f64([]float64{1, 2, 3, 4, 5, 6}, 1, 2, 3)
	lse := func(v ...float64) float64 {
		s := 0.0
		for _, x := range v {
			s += math.Exp(x)
		}
		return math.Log(s)
	}
	assertClose(t, "lse all", ops.LogSumExp(y, nil, false), []int{}, []float64{lse(1, 2, 3, 4, 5, 6)}, 1e-12)
	assertClose(t, "lse -1 keep", ops.LogSumExp(y, []int{-1}, true), []int{1, 2, 1}, []float64{lse(1, 2, 3), lse(4, 5, 6)}, 1e-12)
	assertClose(t, "lse 0 1", ops.LogSumExp(y, []int{0, 1}, false), []int{3}, []float64{lse(1, 4), lse(2, 5), lse(3, 6)}, 1e-12)
	assertClose(t, "lse big", ops.LogSumExp(big, []int{1}, false), []int{1}, []float64{1001 + l}, 1e-12)

	mustPanic(t, func() { ops.Softmax(tensor.Ones(tensor.Int32, 3), 0) }, "Softmax", "Int32")
	mustPanic(t, func() { ops.LogSoftmax(x, 2) }, "LogSoftmax", "axis 2")
	mustPanic(t, func() { ops.LogSumExp(x, []int{1, -1}, false) }, "repeated axis")
}

func TestLosses(t *testing.T) {
	logits := f64([]float64{1, 2, 3, 1, 1, 1}, 2, 3)
	lse := math.Log(math.Exp(1) + math.Exp(2) + math.Exp(3))
	l0, l1 := lse-3, math.Log(3)
	for _, dt := range []tensor.DType{tensor.Int32, tensor.Int64} {
		labels := ops.Cast(tensor.FromSlice([]int64{2, 0}, 2), dt)
		assertClose(t, "ce none", ops.CrossEntropy(logits, labels, "none"), []int{2}, []float64{l0, l1}, 1e-12)
		assertClose(t, "ce sum", ops.CrossEntropy(logits, labels, "sum"), []int{}, []float64{l0 + l1}, 1e-12)
		assertClose(t, "ce mean", ops.CrossEntropy(logits, labels, "mean"), []int{}, []float64{(l0 + l1) / 2}, 1e-12)
	}
	probs := f64([]float64{0, 0.5, 0.5, 1, 0, 0}, 2, 3)
	assertClose(t, "ce probs", ops.CrossEntropyProbs(logits, probs, "none"), []int{2}, []float64{lse - 2.5, l1}, 1e-12)
	// Hard probabilities agree with integer labels.
	hard := f64([]float64{0, 0, 1, 1, 0, 0}, 2, 3)
	assertClose(t, "ce probs mean", ops.CrossEntropyProbs(logits, hard, "mean"), []int{}, []float64{(l0 + l1) / 2}, 1e-12)

	pred := f64([]float64{1, 2, 3, 4}, 2, 2)
	target := f64([]float64{1, 0, 5, 4}, 2, 2)
	assertClose(t, "mse none", ops.MSE(pred, target, "none"), []int{2, 2}, []float64{0, 4, 4, 0}, 1e-12)
	assertClose(t, "mse mean", ops.MSE(pred, target, "mean"), []int{}, []float64{2}, 1e-12)
	assertClose(t, "mse sum bcast", ops.MSE(pred, f64([]float64{1, 2}, 2), "sum"), []int{}, []float64{0 + 0 + 4 + 4}, 1e-12)

	labels := tensor.FromSlice([]int32{2, 0}, 2)
	mustPanic(t, func() { ops.CrossEntropy(logits, tensor.FromSlice([]int32{3, 0}, 2), "mean") }, "CrossEntropy", "label 3", "3 classes")
	mustPanic(t, func() { ops.CrossEntropy(logits, tensor.FromSlice([]int32{-1, 0}, 2), "mean") }, "out of range")
	mustPanic(t, func() { ops.CrossEntropy(logits, tensor.FromSlice([]int32{1, 0, 0}, 3), "mean") }, "[2 3]", "[3]")
	mustPanic(t, func() { ops.CrossEntropy(logits, f64([]float64{1, 0}, 2), "mean") }, "Int32 or Int64", "Float64")
	mustPanic(t, func() { ops.CrossEntropy(logits, labels, "avg") }, "unknown reduction", "avg")
	mustPanic(t, func() { ops.CrossEntropyProbs(logits, f64([]float64{1, 0}, 1, 2), "mean") }, "CrossEntropyProbs", "[1 2]")
	mustPanic(t, func() { ops.MSE(pred, target, "") }, "MSE", "unknown reduction")
	mustPanic(t, func() { ops.MSE(pred, f64([]float64{1, 2, 3}, 3), "mean") }, "[2 2]", "[3]")
	mustPanic(t, func() { ops.CrossEntropy(tensor.Zeros(tensor.Float64, 0, 3), tensor.Zeros(tensor.Int32, 0), "mean") }, "empty batch")
}

func TestLayerNorm(t *testing.T) {
	x := f64([]float64{1, 2, 3, 2, 2, 5}, 2, 3)
	eps := 1e-5
	s0 := 1 / math.Sqrt(2.0/3+eps)
	s1 := 1 / math.Sqrt(2+eps) // row 2: mean 3, deviations −1 −1 2, var 2
	gamma := f64([]float64{1, 2, 3}, 3)
	beta := f64([]float64{0, 1, -1}, 3)
	assertClose(t, "last axis", ops.LayerNorm(x, gamma, beta, -1, eps), []int{2, 3},
		[]float64{-s0, 1, 3*s0 - 1, -s1, 1 - 2*s1, 6*s1 - 1}, 1e-12)
	// begin_norm_axis 0 normalises over everything: mean 2.5, var 19/12.
	all := 1 / math.Sqrt(19.0/12+eps)
	ones, zeros := tensor.Ones(tensor.Float64, 2, 3), tensor.Zeros(tensor.Float64, 2, 3)
	assertClose(t, "all axes", ops.LayerNorm(x, ones, zeros, 0, eps), []int{2, 3},
		[]float64{-1.5 * all, -0.5 * all, 0.5 * all, -0.5 * all, -0.5 * all, 2.5 * all}, 1e-12)
	mustPanic(t, func() { ops.LayerNorm(x, ones, beta, -1, eps) }, "LayerNorm", "[3]", "[2 3]")
	mustPanic(t, func() { ops.LayerNorm(x, gamma, beta, 2, eps) }, "LayerNorm", "axis 2")
}

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
		if !close(nm4.At(c), 0.8*rm.At(c)+0.2*mean, 1e-12) || !close(nv4.At(c), 0.8*rv.At(c)+0.2*vr*18/17, 1e-12) {
			t.Fatalf("channel %d running stats %v %v", c, nm4.At(c), nv4.At(c))
		}
	}
	assertClose(t, "4-D", y4, []int{3, 2, 2, 3}, want, 1e-12)

	mustPanic(t, func() { ops.BatchNorm(x, f64([]float64{1}, 1), beta, rm, rv, true, 0.9, eps) }, "BatchNorm", "[1]", "[2 2]")
	mustPanic(t, func() { ops.BatchNorm(f64([]float64{1, 2}, 2), gamma, beta, rm, rv, true, 0.9, eps) }, "BatchNorm", "[2]")
	mustPanic(t, func() { ops.BatchNorm(f64([]float64{1, 2}, 1, 2), gamma, beta, rm, rv, true, 0.9, eps) }, "more than one value")
}

func TestNNGradients(t *testing.T) {
	x := randT(1, -2, 2, 3, 4)
	labels := tensor.FromSlice([]int64{3, 0, 2}, 3)
	probs := ops.Softmax(randT(2, -1, 1, 3, 4), -1)
	gamma := randT(3, 0.5, 1.5, 4)
	beta := randT(4, -1, 1, 4)
	x4 := randT(5, -2, 2, 2, 3, 2, 2)
	g3, b3 := randT(6, 0.5, 1.5, 3), randT(7, -1, 1, 3)
	rm, rv := randT(8, -1, 1, 3), randT(9, 0.5, 1.5, 3)
	cases := []struct {
		name string
		f    func(...*tensor.Tensor) *tensor.Tensor
		xs   []*tensor.Tensor
		ord2 bool
	}{
		{"softmax", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Softmax(v[0], -1) }, []*tensor.Tensor{x}, true},
		{"softmax axis0", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Softmax(v[0], 0) }, []*tensor.Tensor{x}, true},
		{"logsoftmax", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.LogSoftmax(v[0], 1) }, []*tensor.Tensor{x}, true},
		{"logsumexp", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.LogSumExp(v[0], []int{0}, false) }, []*tensor.Tensor{x}, true},
		{"logsumexp all keep", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.LogSumExp(v[0], nil, true) }, []*tensor.Tensor{x}, false},
		{"ce mean", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.CrossEntropy(v[0], labels, "mean") }, []*tensor.Tensor{x}, true},
		{"ce none", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.CrossEntropy(v[0], labels, "none") }, []*tensor.Tensor{x}, true},
		{"ce probs", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.CrossEntropyProbs(v[0], v[1], "sum") }, []*tensor.Tensor{x, probs}, true},
		{"mse", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.MSE(v[0], v[1], "mean") }, []*tensor.Tensor{x, randT(10, -1, 1, 4)}, false},
		{"layernorm", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.LayerNorm(v[0], v[1], v[2], -1, 1e-5) }, []*tensor.Tensor{x, gamma, beta}, false},
		{"layernorm axis0", func(v ...*tensor.Tensor) *tensor.Tensor {
			return ops.LayerNorm(v[0], v[1], v[2], 0, 1e-5)
		}, []*tensor.Tensor{x, randT(11, 0.5, 1.5, 3, 4), randT(12, -1, 1, 3, 4)}, false},
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
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkGrad(t, c.name, c.f, c.xs...)
			if c.ord2 {
				checkGrad2(t, c.name, c.f, c.xs...)
			}
		})
	}
}
