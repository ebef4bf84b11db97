package ops_test

import (
	"math"
	"testing"

	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// TestLosses checks each loss and reduction against values worked out by
// hand, and that misuse is refused naming the op and the fault.
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
	testkit.MustPanic(t, func() { ops.CrossEntropy(logits, tensor.FromSlice([]int32{3, 0}, 2), "mean") }, "CrossEntropy", "label 3", "3 classes")
	testkit.MustPanic(t, func() { ops.CrossEntropy(logits, tensor.FromSlice([]int32{-1, 0}, 2), "mean") }, "out of range")
	testkit.MustPanic(t, func() { ops.CrossEntropy(logits, tensor.FromSlice([]int32{1, 0, 0}, 3), "mean") }, "[2 3]", "[3]")
	testkit.MustPanic(t, func() { ops.CrossEntropy(logits, f64([]float64{1, 0}, 2), "mean") }, "Int32 or Int64", "Float64")
	testkit.MustPanic(t, func() { ops.CrossEntropy(logits, labels, "avg") }, "unknown reduction", "avg")
	testkit.MustPanic(t, func() { ops.CrossEntropyProbs(logits, f64([]float64{1, 0}, 1, 2), "mean") }, "CrossEntropyProbs", "[1 2]")
	testkit.MustPanic(t, func() { ops.MSE(pred, target, "") }, "MSE", "unknown reduction")
	testkit.MustPanic(t, func() { ops.MSE(pred, f64([]float64{1, 2, 3}, 3), "mean") }, "[2 2]", "[3]")
	testkit.MustPanic(t, func() { ops.CrossEntropy(tensor.Zeros(tensor.Float64, 0, 3), tensor.Zeros(tensor.Int32, 0), "mean") }, "empty batch")
}

// TestLossGradients checks the losses' gradients against finite differences (and second
// derivatives where marked).
func TestLossGradients(t *testing.T) {
	x := randT(1, -2, 2, 3, 4)
	labels := tensor.FromSlice([]int64{3, 0, 2}, 3)
	probs := ops.Softmax(randT(2, -1, 1, 3, 4), -1)
	checkGradCases(t, []gradCase{
		{"ce mean", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.CrossEntropy(v[0], labels, "mean") }, []*tensor.Tensor{x}, true},
		{"ce none", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.CrossEntropy(v[0], labels, "none") }, []*tensor.Tensor{x}, true},
		{"ce probs", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.CrossEntropyProbs(v[0], v[1], "sum") }, []*tensor.Tensor{x, probs}, true},
		{"mse", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.MSE(v[0], v[1], "mean") }, []*tensor.Tensor{x, randT(10, -1, 1, 4)}, false},
	})
}
