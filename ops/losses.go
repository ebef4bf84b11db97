package ops

import (
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// The composite neural-network functions: plain Go over primitives, so
// their gradients (of any order) come from the primitives' VJPs and the
// graph compiler sees, and can fuse, every step.

func checkFloat(op string, x *tensor.Tensor) {
	if !x.DType().IsFloat() {
		core.Panicf(op, "unsupported dtype %v (shape %v); want Float32 or Float64", x.DType(), x.Shape())
	}
}

// meanKeep is the mean over axes keeping them, as a sum and a scale (one
// fewer primitive to depend on than a mean op, and the same graph).
func meanKeep(x *tensor.Tensor, axes []int) *tensor.Tensor {
	n := 1
	for _, a := range axes {
		n *= x.Shape()[a]
	}
	return Mul(SumKeepDims(x, axes...), ScalarLike(x, 1/float64(max(n, 1))))
}

// Softmax returns exp(x) / Σ exp(x) along axis (negative counts from the
// end). It subtracts the maximum along axis first, which leaves the result
// unchanged but keeps exp from overflowing; the maximum's own gradient
// contributions cancel exactly.
func Softmax(x *tensor.Tensor, axis int) *tensor.Tensor {
	checkFloat("Softmax", x)
	ax := core.NormAxis("Softmax", axis, x.Rank())
	e := Exp(Sub(x, MaxKeepDims(x, ax)))
	return Div(e, SumKeepDims(e, ax))
}

// LogSoftmax returns log(Softmax(x, axis)), computed stably as
// z − log Σ exp(z) with z = x − max(x).
func LogSoftmax(x *tensor.Tensor, axis int) *tensor.Tensor {
	checkFloat("LogSoftmax", x)
	ax := core.NormAxis("LogSoftmax", axis, x.Rank())
	z := Sub(x, MaxKeepDims(x, ax))
	return Sub(z, Log(SumKeepDims(Exp(z), ax)))
}

// LogSumExp returns log Σ exp(x) over axes (all axes when none are given),
// computed stably as m + log Σ exp(x − m) with m the maximum; keepDims
// keeps the folded axes with extent 1.
func LogSumExp(x *tensor.Tensor, axes []int, keepDims bool) *tensor.Tensor {
	checkFloat("LogSumExp", x)
	a := reduceAttrs("LogSumExp", x.Rank(), true, axes)
	m := MaxKeepDims(x, a.Axes...)
	y := Add(Log(SumKeepDims(Exp(Sub(x, m)), a.Axes...)), m)
	if !keepDims {
		y = Reshape(y, reducedShape(x.Shape(), ReduceAttrs{Axes: a.Axes})...)
	}
	return y
}

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

// BatchNorm normalises x per channel, MindSpore's nn.BatchNorm1d/2d: x is
// [N, C] or NCHW [N, C, H, W], and gamma, beta, runningMean, runningVar are
// [C].
//
// Training uses the batch statistics (over N, or N, H, W) — the biased
// variance to normalise — and returns the updated running statistics with
// MindSpore's momentum convention (0.9 is its default):
//
//	newMean = momentum·runningMean + (1 − momentum)·mean
//	newVar  = momentum·runningVar  + (1 − momentum)·var·m/(m − 1)
//
// where m is the number of values per channel: the running variance takes
// the unbiased estimate, as MindSpore's GPU/Ascend kernels (cuDNN) and
// PyTorch do. The caller assigns the new statistics to its parameters.
//
// Inference (training false) normalises with the running statistics and
// returns them unchanged.
func BatchNorm(x, gamma, beta, runningMean, runningVar *tensor.Tensor, training bool, momentum, eps float64) (y, newMean, newVar *tensor.Tensor) {
	const op = "BatchNorm"
	checkFloat(op, x)
	xs := x.Shape()
	if len(xs) != 2 && len(xs) != 4 {
		core.Panicf(op, "want x of shape [N C] or [N C H W], got %v", xs)
	}
	c := xs[1]
	for _, p := range []*tensor.Tensor{gamma, beta, runningMean, runningVar} {
		if !p.Shape().Equal(tensor.Shape{c}) || p.DType() != x.DType() {
			core.Panicf(op, "gamma, beta and running statistics must be [%d] %v for x %v, got %v %v", c, x.DType(), xs, p.Shape(), p.DType())
		}
	}
	axes := []int{0}
	bshape := []int{1, c}
	if len(xs) == 4 {
		axes = []int{0, 2, 3}
		bshape = []int{1, c, 1, 1}
	}
	per := func(p *tensor.Tensor) *tensor.Tensor { return Reshape(p, bshape...) }
	scaleShift := func(xhat *tensor.Tensor) *tensor.Tensor {
		return Add(Mul(xhat, per(gamma)), per(beta))
	}
	if !training {
		// One scale and one shift per channel, computed on [C] vectors, so
		// that the full-size tensor is touched twice rather than four times
		// (PyTorch's CPU inference kernel folds it the same way).
		scale := Mul(gamma, Rsqrt(Add(runningVar, ScalarLike(runningVar, eps))))
		shift := Sub(beta, Mul(runningMean, scale))
		return Add(Mul(x, per(scale)), per(shift)), runningMean, runningVar
	}
	m := 1
	for _, a := range axes {
		m *= xs[a]
	}
	if m < 2 {
		core.Panicf(op, "training needs more than one value per channel, got x %v", xs)
	}
	mean := meanKeep(x, axes)
	d := Sub(x, mean)
	v := meanKeep(Mul(d, d), axes)
	y = scaleShift(Mul(d, Rsqrt(Add(v, ScalarLike(v, eps)))))
	mom := ScalarLike(x, momentum)
	rest := ScalarLike(x, 1-momentum)
	bm := Reshape(mean, c)
	bv := Mul(Reshape(v, c), ScalarLike(x, float64(m)/float64(m-1)))
	newMean = Add(Mul(mom, runningMean), Mul(rest, bm))
	newVar = Add(Mul(mom, runningVar), Mul(rest, bv))
	return y, newMean, newVar
}
