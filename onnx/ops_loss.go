package onnx

import (
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// The training losses: NegativeLogLikelihoodLoss and
// SoftmaxCrossEntropyLoss. Both are composed of spore's ops (a one-hot
// comparison with the class indices, Select, Sum, LogSoftmax), so that
// they trace in Graph mode and their gradients come from the primitives'.
// Picking the target's entry by comparison rather than by an index read
// keeps an ignored target that lies outside [0, C) (ignore_index -1, or
// one past the classes) harmless: it matches no class and picks nothing.

func init() {
	register("NegativeLogLikelihoodLoss", 12, 0, nllLossOp)
	register("SoftmaxCrossEntropyLoss", 12, 0, sceLossOp)
}

// nllLossOp is NegativeLogLikelihoodLoss: input [N, C, d1, ...] of log
// probabilities, target [N, d1, ...] of class indices, optional weight [C].
func nllLossOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	req, err := c.needs(ins, "input", "target")
	if err != nil {
		return nil, err
	}
	loss, err := nllLoss(c, req[0], req[1], c.In(ins, 2))
	if err != nil {
		return nil, err
	}
	return one(loss)
}

// sceLossOp is SoftmaxCrossEntropyLoss: the NLL loss of LogSoftmax(scores)
// along the class axis, with log_prob as an optional second output.
func sceLossOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	req, err := c.needs(ins, "scores", "labels")
	if err != nil {
		return nil, err
	}
	scores := req[0]
	if scores.Rank() < 2 {
		return nil, c.Errorf("scores must be [N, C, d1, ...], got shape %v", scores.Shape())
	}
	if !isFloat(scores.DType()) {
		return nil, c.Errorf("scores has dtype %v, want a float dtype", scores.DType())
	}
	logp := ops.LogSoftmax(scores, 1)
	loss, err := nllLoss(c, logp, req[1], c.In(ins, 2))
	if err != nil {
		return nil, err
	}
	if c.wantOutput(1) {
		return []*tensor.Tensor{loss, logp}, nil
	}
	return one(loss)
}

// nllLoss is −input[n, target[n, d...], d...] weighted by weight[target]
// (1 without weight), 0 where target equals ignore_index, reduced by the
// node's reduction: "none" keeps the [N, d1, ...] losses, "sum" adds them,
// "mean" (the default) divides their sum by the sum of the weights of the
// targets not ignored.
func nllLoss(c *nodeCtx, input, target, weight *tensor.Tensor) (*tensor.Tensor, error) {
	reduction := c.String("reduction", "mean")
	if reduction != "none" && reduction != "sum" && reduction != "mean" {
		return nil, c.Errorf("reduction %q is not one of none, sum, mean", reduction)
	}
	is, ts := input.Shape(), target.Shape()
	if len(is) < 2 {
		return nil, c.Errorf("input must be [N, C, d1, ...], got shape %v", is)
	}
	if !isFloat(input.DType()) {
		return nil, c.Errorf("input has dtype %v, want a float dtype", input.DType())
	}
	if target.DType() != tensor.Int64 && target.DType() != tensor.Int32 {
		return nil, c.Errorf("target has dtype %v, want int64 or int32", target.DType())
	}
	want := append([]int{is[0]}, is[2:]...)
	if !ts.Equal(tensor.Shape(want)) {
		return nil, c.Errorf("target shape %v does not match input %v (want %v)", ts, is, want)
	}
	dt, classes := input.DType(), is[1]
	if weight != nil && (weight.Rank() != 1 || weight.Dim(0) != classes || weight.DType() != dt) {
		return nil, c.Errorf("weight must be [%d] of %v, got %v %v", classes, dt, weight.Shape(), weight.DType())
	}
	// hot[n, k, d...] is target[n, d...] == k.
	classShape := make([]int, len(is))
	for i := range classShape {
		classShape[i] = 1
	}
	classShape[1] = classes
	ks := ops.Reshape(tensor.Arange(target.DType(), 0, float64(classes), 1), classShape...)
	hot := ops.Equal(ops.ExpandDims(target, 1), ks)
	zero := scalarOf(dt, 0)
	picked := ops.Sum(ops.Select(hot, input, zero), 1)
	loss := ops.Neg(picked)

	var w *tensor.Tensor // the weight of each target, nil for all 1
	if weight != nil {
		w = ops.Sum(ops.Select(hot, ops.Reshape(weight, classShape...), zero), 1)
	}
	if c.Has("ignore_index") {
		keep := ops.NotEqual(target, scalarOf(target.DType(), float64(c.Int("ignore_index", 0))))
		if w == nil {
			w = ops.Cast(keep, dt)
		} else {
			w = ops.Select(keep, w, zero)
		}
	}
	if w != nil {
		loss = ops.Mul(loss, w)
	}
	switch reduction {
	case "sum":
		return ops.Sum(loss), nil
	case "mean":
		if w == nil {
			return ops.Mean(loss), nil
		}
		return ops.Div(ops.Sum(loss), ops.Sum(w)), nil
	}
	return loss, nil
}
