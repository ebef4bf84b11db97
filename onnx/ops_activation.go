package onnx

import (
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Activations beyond the ones spore has as ops (Relu, Sigmoid, Gelu,
// LeakyRelu elsewhere), composed from elementwise ops, most with
// attributes: the ELU family, hard sigmoid, softsign, PReLU, Mish,
// thresholded ReLU and Shrink.

func init() {
	register("Elu", 1, 0, func(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := c.need(ins, 0, "X")
		if err != nil {
			return nil, err
		}
		alpha := float64(c.Float("alpha", 1))
		neg := ops.MulScalar(ops.SubScalar(ops.Exp(x), 1), alpha)
		return one(ops.Select(ops.Less(x, ops.ScalarLike(x, 0)), neg, x))
	})
	register("Selu", 6, 0, func(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := c.need(ins, 0, "X")
		if err != nil {
			return nil, err
		}
		alpha := float64(c.Float("alpha", 1.67326319217681884765625))
		gamma := float64(c.Float("gamma", 1.05070102214813232421875))
		neg := ops.MulScalar(ops.SubScalar(ops.Exp(x), 1), alpha)
		return one(ops.MulScalar(ops.Select(ops.LessEqual(x, ops.ScalarLike(x, 0)), neg, x), gamma))
	})
	register("HardSigmoid", 1, 0, func(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := c.need(ins, 0, "X")
		if err != nil {
			return nil, err
		}
		alpha, beta := float64(c.Float("alpha", 0.2)), float64(c.Float("beta", 0.5))
		return one(ops.Clip(ops.AddScalar(ops.MulScalar(x, alpha), beta), 0, 1))
	})
	register("HardSwish", 14, 0, unaryOp(ops.Hardswish))
	register("Softsign", 1, 0, unaryOp(func(x *tensor.Tensor) *tensor.Tensor {
		return ops.Div(x, ops.AddScalar(ops.Abs(x), 1))
	}))
	register("PRelu", 7, 0, func(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		req, err := c.needs(ins, "X", "slope")
		if err != nil {
			return nil, err
		}
		x, slope := req[0], req[1]
		return one(ops.Select(ops.Less(x, ops.ScalarLike(x, 0)), ops.Mul(x, slope), x))
	})
	register("ThresholdedRelu", 10, 0, func(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := c.need(ins, 0, "X")
		if err != nil {
			return nil, err
		}
		alpha := float64(c.Float("alpha", 1))
		return one(ops.Select(ops.Greater(x, ops.ScalarLike(x, alpha)), x, ops.ScalarLike(x, 0)))
	})
	register("Celu", 12, 0, func(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := c.need(ins, 0, "X")
		if err != nil {
			return nil, err
		}
		alpha := float64(c.Float("alpha", 1))
		neg := ops.MulScalar(ops.SubScalar(ops.Exp(ops.DivScalar(x, alpha)), 1), alpha)
		return one(ops.Select(ops.Less(x, ops.ScalarLike(x, 0)), neg, x))
	})
	register("Mish", 18, 0, unaryOp(func(x *tensor.Tensor) *tensor.Tensor {
		return ops.Mul(x, ops.Tanh(ops.Softplus(x)))
	}))
	register("Shrink", 9, 0, func(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := c.need(ins, 0, "input")
		if err != nil {
			return nil, err
		}
		lambd, bias := float64(c.Float("lambd", 0.5)), float64(c.Float("bias", 0))
		zero := ops.ScalarLike(x, 0)
		y := ops.Select(ops.Less(x, ops.ScalarLike(x, -lambd)), ops.AddScalar(x, bias), zero)
		return one(ops.Select(ops.Greater(x, ops.ScalarLike(x, lambd)), ops.SubScalar(x, bias), y))
	})
}
