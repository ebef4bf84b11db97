package ops

import (
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// The losses: plain Go over primitives (LogSoftmax, Sum, Mul), so their
// gradients of any order come from the primitives' VJPs and the graph
// compiler sees, and can fuse, every step.

// reduceLoss applies a loss reduction to per-sample losses l.
func reduceLoss(op string, l *tensor.Tensor, reduction string) *tensor.Tensor {
	switch reduction {
	case "mean":
		if l.Size() == 0 {
			core.Panicf(op, "mean of an empty batch (losses %v)", l.Shape())
		}
		return Mul(Sum(l), ScalarLike(l, 1/float64(l.Size())))
	case "sum":
		return Sum(l)
	case "none":
		return l
	}
	core.Panicf(op, "unknown reduction %q (want \"mean\", \"sum\" or \"none\")", reduction)
	return nil
}

// checkReduction rejects a bad reduction before any work is done.
func checkReduction(op, reduction string) {
	if reduction != "mean" && reduction != "sum" && reduction != "none" {
		core.Panicf(op, "unknown reduction %q (want \"mean\", \"sum\" or \"none\")", reduction)
	}
}

// CrossEntropy returns the softmax cross-entropy of logits [N, C] against
// integer class labels [N] (Int32 or Int64, each in [0, C)), reduced by
// "mean" (over the batch), "sum" or "none" (the [N] losses), as MindSpore's
// ops.cross_entropy with class-index targets. A label out of range panics
// with the same *tensor.Error in PyNative and Graph mode (see CheckLabels).
func CrossEntropy(logits, labels *tensor.Tensor, reduction string) *tensor.Tensor {
	const op = "CrossEntropy"
	checkReduction(op, reduction)
	checkFloat(op, logits)
	ls, ys := logits.Shape(), labels.Shape()
	if len(ls) != 2 || len(ys) != 1 || ys[0] != ls[0] {
		core.Panicf(op, "want logits [N C] and labels [N], got %v and %v", ls, ys)
	}
	if labels.DType() != tensor.Int32 && labels.DType() != tensor.Int64 {
		core.Panicf(op, "labels must be Int32 or Int64, got %v %v", ys, labels.DType())
	}
	c := ls[1]
	labels = CheckLabels(op, logits, labels)
	// One-hot by comparison with the class indices: one broadcast Equal,
	// and the gradient is the familiar softmax − onehot.
	classes := tensor.Arange(labels.DType(), 0, float64(c), 1)
	onehot := Cast(Equal(Reshape(labels, ys[0], 1), classes), logits.DType())
	l := Neg(Sum(Mul(onehot, LogSoftmax(logits, -1)), -1))
	return reduceLoss(op, l, reduction)
}

// CrossEntropyProbs returns the softmax cross-entropy of logits [N, C]
// against class probabilities [N, C] (each row a distribution, e.g. with
// label smoothing applied), −Σ_c probs·log softmax(logits), reduced by
// "mean", "sum" or "none".
func CrossEntropyProbs(logits, probs *tensor.Tensor, reduction string) *tensor.Tensor {
	const op = "CrossEntropyProbs"
	checkReduction(op, reduction)
	checkFloat(op, logits)
	if len(logits.Shape()) != 2 || !logits.Shape().Equal(probs.Shape()) || logits.DType() != probs.DType() {
		core.Panicf(op, "want logits [N C] and probabilities of the same shape and dtype, got %v %v and %v %v",
			logits.Shape(), logits.DType(), probs.Shape(), probs.DType())
	}
	l := Neg(Sum(Mul(probs, LogSoftmax(logits, -1)), -1))
	return reduceLoss(op, l, reduction)
}

// MSE returns the squared error (pred − target)², broadcasting, reduced by
// "mean" (over all elements), "sum" or "none", as MindSpore's nn.MSELoss.
func MSE(pred, target *tensor.Tensor, reduction string) *tensor.Tensor {
	checkReduction("MSE", reduction)
	checkFloat("MSE", pred)
	d := Sub(pred, target)
	return reduceLoss("MSE", Mul(d, d), reduction)
}
