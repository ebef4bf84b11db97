package onnx

import (
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Reductions, and CumSum's running sum. ReduceSum takes its axes as an
// input from opset 13, the other reductions from opset 18; before, they
// are an attribute.

func init() {
	type reduction struct {
		name     string
		f        func(*tensor.Tensor, ...int) *tensor.Tensor
		inputsAt int64 // first opset with axes as an input
	}
	for _, r := range []reduction{
		{"ReduceSum", ops.Sum, 13},
		{"ReduceMean", ops.Mean, 18},
		{"ReduceMax", ops.Max, 18},
		{"ReduceMin", ops.Min, 18},
		{"ReduceProd", ops.Prod, 18},
	} {
		register(r.name, 1, 0, reduceOp(r.f, r.inputsAt))
	}
	register("ArgMax", 1, 0, argMaxOp)
	register("CumSum", 11, 0, cumSumOp)
	sq := func(x *tensor.Tensor) *tensor.Tensor { return ops.Mul(x, x) }
	for _, r := range []struct {
		name string
		pre  func(*tensor.Tensor) *tensor.Tensor
		post func(*tensor.Tensor) *tensor.Tensor
	}{
		{"ReduceL1", ops.Abs, nil},
		{"ReduceL2", sq, ops.Sqrt},
		{"ReduceSumSquare", sq, nil},
		{"ReduceLogSum", nil, ops.Log},
	} {
		pre, post := r.pre, r.post
		register(r.name, 1, 0, reduceOp(func(x *tensor.Tensor, axes ...int) *tensor.Tensor {
			if pre != nil {
				x = pre(x)
			}
			y := ops.Sum(x, axes...)
			if post != nil {
				y = post(y)
			}
			return y
		}, 18))
	}
	// Stably: log Σ exp(x − max) + max.
	register("ReduceLogSumExp", 1, 0, reduceOp(func(x *tensor.Tensor, axes ...int) *tensor.Tensor {
		return ops.LogSumExp(x, axes, false)
	}, 18))
}

// reduceOp reduces over the node's axes (from the axes input from opset
// inputsAt, else the attribute), all axes when there are none, unless
// noop_with_empty_axes makes that the identity; keepdims keeps the
// reduced axes as extent 1.
func reduceOp(f func(*tensor.Tensor, ...int) *tensor.Tensor, inputsAt int64) opFunc {
	return func(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := c.need(ins, 0, "data")
		if err != nil {
			return nil, err
		}
		var av []int64
		if c.Opset >= inputsAt {
			if a := c.In(ins, 1); a != nil {
				if av, err = c.Ints(a, "axes"); err != nil {
					return nil, err
				}
			}
		} else {
			av = c.IntsAttr("axes", nil)
		}
		axes, err := c.axes(av, x.Rank(), "axes")
		if err != nil {
			return nil, err
		}
		if len(axes) == 0 {
			if c.Int("noop_with_empty_axes", 0) != 0 {
				return one(x)
			}
			axes = make([]int, x.Rank())
			for i := range axes {
				axes[i] = i
			}
		}
		y := f(x, axes...)
		if c.Int("keepdims", 1) != 0 {
			shape := append([]int(nil), x.Shape()...)
			for _, a := range axes {
				shape[a] = 1
			}
			y = ops.Reshape(y, shape...)
		}
		return one(y)
	}
}

// argMaxOp is ArgMax along axis; select_last_index picks the last of
// equal maxima, found as the first one of the reversed axis.
func argMaxOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return argExtremumOp(c, ins, ops.ArgMaxKeepDims, ops.ArgMax)
}

// argMinOp is ArgMin, as argMaxOp is ArgMax.
func argMinOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return argExtremumOp(c, ins, ops.ArgMinKeepDims, ops.ArgMin)
}

// argExtremumOp is ArgMax or ArgMin along axis, by keep (keepdims) or
// drop: with select_last_index the last of equal extrema, found as the
// first one of the reversed axis.
func argExtremumOp(c *nodeCtx, ins []*tensor.Tensor, keep, drop func(*tensor.Tensor, int) *tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "data")
	if err != nil {
		return nil, err
	}
	ax, err := c.axis(c.Int("axis", 0), x.Rank(), "axis")
	if err != nil {
		return nil, err
	}
	last := c.Int("select_last_index", 0) != 0
	if last {
		x = reverseAxis(x, ax)
	}
	var y *tensor.Tensor
	if c.Int("keepdims", 1) != 0 {
		y = keep(x, ax)
	} else {
		y = drop(x, ax)
	}
	if y.DType() != tensor.Int64 {
		y = ops.Cast(y, tensor.Int64)
	}
	if last {
		// Index i of the reversed axis is n−1−i of the original.
		y = ops.Sub(tensor.Scalar(int64(x.Dim(ax)-1)), y)
	}
	return one(y)
}

// cumSumOp is CumSum along a concrete axis, with exclusive and reverse.
func cumSumOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "x")
	if err != nil {
		return nil, err
	}
	av, err := c.Ints(c.In(ins, 1), "axis")
	if err != nil {
		return nil, err
	}
	if len(av) != 1 {
		return nil, c.Errorf("axis must hold one value, got %v", av)
	}
	ax, err := c.axis(av[0], x.Rank(), "axis")
	if err != nil {
		return nil, err
	}
	return one(ops.CumSum(x, ax, c.Int("exclusive", 0) != 0, c.Int("reverse", 0) != 0))
}
