package ops_test

import (
	"math"
	"testing"

	"github.com/sporeml/spore/internal/testkit"
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

	testkit.MustPanic(t, func() { ops.Softmax(tensor.Ones(tensor.Int32, 3), 0) }, "Softmax", "Int32")
	testkit.MustPanic(t, func() { ops.LogSoftmax(x, 2) }, "LogSoftmax", "axis 2")
	testkit.MustPanic(t, func() { ops.LogSumExp(x, []int{1, -1}, false) }, "repeated axis")
}

// TestSoftmaxGradients checks the softmax family's gradients against finite differences (and second
// derivatives where marked).
func TestSoftmaxGradients(t *testing.T) {
	x := randT(1, -2, 2, 3, 4)
	checkGradCases(t, []gradCase{
		{"softmax", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Softmax(v[0], -1) }, []*tensor.Tensor{x}, true},
		{"softmax axis0", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Softmax(v[0], 0) }, []*tensor.Tensor{x}, true},
		{"logsoftmax", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.LogSoftmax(v[0], 1) }, []*tensor.Tensor{x}, true},
		{"logsumexp", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.LogSumExp(v[0], []int{0}, false) }, []*tensor.Tensor{x}, true},
		{"logsumexp all keep", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.LogSumExp(v[0], nil, true) }, []*tensor.Tensor{x}, false},
	})
}
