package onnx

import (
	"math"

	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Elementwise arithmetic (Mod and Round among it), comparison, logic and
// the NaN and infinity tests, and the matrix products.
// Every op broadcasts as NumPy does (ONNX's multidirectional
// broadcasting), which spore's binary ops do already.

func init() {
	unary := map[string]func(*tensor.Tensor) *tensor.Tensor{
		"Relu":       ops.ReLU,
		"Sigmoid":    ops.Sigmoid,
		"Tanh":       ops.Tanh,
		"Erf":        ops.Erf,
		"Sqrt":       ops.Sqrt,
		"Exp":        ops.Exp,
		"Log":        ops.Log,
		"Neg":        ops.Neg,
		"Abs":        ops.Abs,
		"Reciprocal": ops.Reciprocal,
		"Floor":      ops.Floor,
		"Ceil":       ops.Ceil,
		"Sin":        ops.Sin,
		"Cos":        ops.Cos,
		"Softplus":   ops.Softplus,
		"Sign":       ops.Sign,
		"Not":        ops.LogicalNot,
	}
	for name, f := range unary {
		register(name, firstOpset(name), 0, unaryOp(f))
	}
	binary := map[string]func(a, b *tensor.Tensor) *tensor.Tensor{
		"Add":            ops.Add,
		"Sub":            ops.Sub,
		"Mul":            ops.Mul,
		"Equal":          equalOp,
		"Less":           ops.Less,
		"Greater":        ops.Greater,
		"LessOrEqual":    ops.LessEqual,
		"GreaterOrEqual": ops.GreaterEqual,
		"And":            ops.LogicalAnd,
		"Or":             ops.LogicalOr,
		"Xor":            xorOp,
	}
	for name, f := range binary {
		register(name, firstOpset(name), 0, binaryOp(f))
	}
	register("Div", 7, 0, refuseZeroDivisor(binaryOp(divOp)))
	register("Pow", 7, 0, powOp)
	register("Identity", 1, 0, func(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := c.need(ins, 0, "input")
		if err != nil {
			return nil, err
		}
		return one(x)
	})
	register("LeakyRelu", 1, 0, func(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := c.need(ins, 0, "X")
		if err != nil {
			return nil, err
		}
		alpha := float64(c.Float("alpha", 0.01))
		return one(ops.Select(ops.Less(x, ops.ScalarLike(x, 0)), ops.MulScalar(x, alpha), x))
	})
	register("Clip", 11, 0, clipOp)
	register("Min", 1, 0, variadic(ops.Minimum))
	register("Max", 1, 0, variadic(ops.Maximum))
	register("Sum", 1, 0, variadic(ops.Add))
	register("Mean", 1, 0, func(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		s, err := variadic(ops.Add)(c, ins)
		if err != nil {
			return nil, err
		}
		return one(ops.DivScalar(s[0], float64(len(ins))))
	})
	register("Where", 9, 0, func(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		req, err := c.needs(ins, "condition", "X", "Y")
		if err != nil {
			return nil, err
		}
		cond, a, b := req[0], req[1], req[2]
		if cond.DType() != tensor.Bool {
			return nil, c.Errorf("condition has dtype %v, want bool", cond.DType())
		}
		return one(ops.Select(cond, a, b))
	})
	register("Gemm", 7, 0, gemmOp)
	register("MatMul", 1, 0, func(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		req, err := c.needs(ins, "A", "B")
		if err != nil {
			return nil, err
		}
		a, b := req[0], req[1]
		return one(matMul(c, a, b))
	})
	register("Round", 11, 0, unaryOp(ops.Round))
	register("IsNaN", 9, 0, unaryOp(func(x *tensor.Tensor) *tensor.Tensor { return ops.NotEqual(x, x) }))
	register("Mod", 10, 0, refuseZeroDivisor(modOp))
	register("IsInf", 10, 0, func(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := c.need(ins, 0, "X")
		if err != nil {
			return nil, err
		}
		pos, neg := c.Int("detect_positive", 1) != 0, c.Int("detect_negative", 1) != 0
		y := ops.Equal(x, ops.ScalarLike(x, math.Inf(1)))
		if !pos {
			y = ops.LogicalAnd(y, ops.Less(x, ops.ScalarLike(x, 0)))
		}
		yn := ops.Equal(x, ops.ScalarLike(x, math.Inf(-1)))
		if !neg {
			yn = ops.LogicalAnd(yn, ops.Greater(x, ops.ScalarLike(x, 0)))
		}
		return one(ops.LogicalOr(y, yn))
	})
}

// unaryOp applies f to the node's single input.
func unaryOp(f func(*tensor.Tensor) *tensor.Tensor) opFunc {
	return func(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := c.need(ins, 0, "X")
		if err != nil {
			return nil, err
		}
		return one(f(x))
	}
}

// binaryOp applies f to the node's two inputs, which must share a dtype.
func binaryOp(f func(a, b *tensor.Tensor) *tensor.Tensor) opFunc {
	return func(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		a, b, err := sameDTypePair(c, ins)
		if err != nil {
			return nil, err
		}
		return one(f(a, b))
	}
}

// sameDTypePair returns the node's two inputs A and B, which must share a
// dtype (ONNX's elementwise binary ops have one type parameter).
func sameDTypePair(c *nodeCtx, ins []*tensor.Tensor) (a, b *tensor.Tensor, err error) {
	req, err := c.needs(ins, "A", "B")
	if err != nil {
		return nil, nil, err
	}
	a, b = req[0], req[1]
	if a.DType() != b.DType() {
		return nil, nil, c.Errorf("inputs have dtypes %v and %v; ONNX wants one", a.DType(), b.DType())
	}
	return a, b, nil
}

// variadic folds f over one or more inputs (Min, Max, Sum).
func variadic(f func(a, b *tensor.Tensor) *tensor.Tensor) opFunc {
	return func(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		if len(ins) == 0 || ins[0] == nil {
			return nil, c.Errorf("needs at least one input")
		}
		acc := ins[0]
		for i, x := range ins[1:] {
			if x == nil {
				return nil, c.Errorf("input %d is missing", i+1)
			}
			if x.DType() != acc.DType() {
				return nil, c.Errorf("inputs have dtypes %v and %v; ONNX wants one", acc.DType(), x.DType())
			}
			acc = f(acc, x)
		}
		return one(acc)
	}
}

// divOp divides; integer division truncates toward zero as ONNX (and C)
// say, where spore's FloorDiv rounds toward −∞, so the floored quotient
// is corrected by one where the remainder is non-zero and the operands'
// signs differ. The same ops run on concrete shape values and on traced
// ones.
func divOp(a, b *tensor.Tensor) *tensor.Tensor {
	if isFloat(a.DType()) {
		return ops.Div(a, b)
	}
	q := ops.FloorDiv(a, b)
	r := ops.Mod(a, b)
	zero := ops.ScalarLike(a, 0)
	fix := ops.LogicalAnd(ops.NotEqual(r, zero), xorOp(ops.Less(a, zero), ops.Less(b, zero)))
	return ops.Add(q, ops.Cast(fix, a.DType()))
}

// refuseZeroDivisor wraps op (Div, Mod), whose input B divides input A,
// so that an integer division by zero is reported as the node's own
// error. Spore's kernels refuse it too, but in the name of the primitive
// that divides (FloorDiv, FloorMod), which is not an op of the model.
// Only a divisor known while the node runs can be checked: in Graph mode
// a divisor computed from the model's inputs is still refused, when the
// compiled graph runs, by the kernel.
func refuseZeroDivisor(op opFunc) opFunc {
	return func(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		a, b := c.In(ins, 0), c.In(ins, 1)
		// Mismatched dtypes are op's error to report.
		if a != nil && b != nil && a.DType() == b.DType() && !b.IsSymbolic() {
			if b.DType().IsInt() {
				for _, v := range b.Int64s() {
					if v == 0 {
						return nil, c.Errorf("integer division by zero: divisor B %v holds a zero", b.Shape())
					}
				}
			}
		}
		return op(c, ins)
	}
}

// equalOp compares; spore's Equal takes numbers, so booleans compare as
// "not exclusive or".
func equalOp(a, b *tensor.Tensor) *tensor.Tensor {
	if a.DType() == tensor.Bool {
		return ops.LogicalNot(xorOp(a, b))
	}
	return ops.Equal(a, b)
}

// xorOp is "not equal" on booleans, compared as bytes.
func xorOp(a, b *tensor.Tensor) *tensor.Tensor {
	return ops.NotEqual(ops.Cast(a, tensor.Uint8), ops.Cast(b, tensor.Uint8))
}

// powOp raises X to Y. ONNX lets the exponent's dtype differ from the
// base's; it is cast to the base's. Integer powers go through float64,
// exact for the magnitudes integer tensors hold in practice.
func powOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	req, err := c.needs(ins, "X", "Y")
	if err != nil {
		return nil, err
	}
	x, y := req[0], req[1]
	if isFloat(x.DType()) {
		if y.DType() != x.DType() {
			y = ops.Cast(y, x.DType())
		}
		return one(ops.Pow(x, y))
	}
	r := ops.Round(ops.Pow(ops.Cast(x, tensor.Float64), ops.Cast(y, tensor.Float64)))
	return one(ops.Cast(r, x.DType()))
}

// clipOp limits X to [min, max]; from opset 11 the bounds are optional
// scalar inputs. Concrete bounds (the usual case: initializers) become
// constants of the op; traced ones use ClipTensor.
func clipOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "input")
	if err != nil {
		return nil, err
	}
	lo, hi := c.In(ins, 1), c.In(ins, 2)
	for _, b := range []*tensor.Tensor{lo, hi} {
		if b != nil && b.Size() != 1 {
			return nil, c.Errorf("bounds must be scalars, got shape %v", b.Shape())
		}
	}
	// Bounds that are plain constants become constants of the op; bounds
	// from the data (traced in Graph mode, so in both modes) and
	// Parameters (float initializers, which training may change) stay
	// tensors.
	live := func(b *tensor.Tensor) bool { return b != nil && (c.dynamic(b) || b.IsParameter()) }
	if !live(lo) && !live(hi) {
		l, h := lowest(x.DType()), highest(x.DType())
		if lo != nil {
			if l, err = c.scalarValue(lo, "min"); err != nil {
				return nil, err
			}
		}
		if hi != nil {
			if h, err = c.scalarValue(hi, "max"); err != nil {
				return nil, err
			}
		}
		return one(ops.Clip(x, l, h))
	}
	for _, b := range []*tensor.Tensor{lo, hi} {
		if b != nil && b.DType() != x.DType() {
			return nil, c.Errorf("bounds have dtype %v, input %v; ONNX wants one", b.DType(), x.DType())
		}
	}
	if lo == nil {
		lo = scalarOf(x.DType(), lowest(x.DType()))
	}
	if hi == nil {
		hi = scalarOf(x.DType(), highest(x.DType()))
	}
	return one(ops.ClipTensor(x, ops.Reshape(lo), ops.Reshape(hi)))
}

// matMul is NumPy's matmul: batched with broadcasting over leading axes,
// and a 1-D operand is a row (left) or column (right) vector whose unit
// axis is dropped from the result.
func matMul(c *nodeCtx, a, b *tensor.Tensor) *tensor.Tensor {
	ra, rb := a.Rank(), b.Rank()
	if ra == 1 {
		a = ops.ExpandDims(a, 0)
	}
	if rb == 1 {
		b = ops.ExpandDims(b, -1)
	}
	y := ops.MatMul(a, b)
	if ra == 1 {
		y = ops.Squeeze(y, y.Rank()-2)
	}
	if rb == 1 {
		y = ops.Squeeze(y, y.Rank()-1)
	}
	return y
}

// gemmOp is Y = alpha·A'·B' + beta·C with A' and B' optionally
// transposed; C broadcasts to the product's shape.
func gemmOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	req, err := c.needs(ins, "A", "B")
	if err != nil {
		return nil, err
	}
	a, b := req[0], req[1]
	if a.Rank() != 2 || b.Rank() != 2 {
		return nil, c.Errorf("A and B must be matrices, got shapes %v and %v", a.Shape(), b.Shape())
	}
	alpha, beta := float64(c.Float("alpha", 1)), float64(c.Float("beta", 1))
	y := ops.MatMulT(a, b, c.Int("transA", 0) != 0, c.Int("transB", 0) != 0)
	if alpha != 1 {
		y = ops.MulScalar(y, alpha)
	}
	if cc := c.In(ins, 2); cc != nil && beta != 0 {
		if beta != 1 {
			cc = ops.MulScalar(cc, beta)
		}
		y = ops.Add(y, cc)
	}
	return one(y)
}

// modOp is Mod: with fmod=1 the remainder has the dividend's sign (C's
// fmod), else the divisor's (Python's %, spore's Mod).
func modOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	a, b, err := sameDTypePair(c, ins)
	if err != nil {
		return nil, err
	}
	if c.Int("fmod", 0) == 0 {
		if isFloat(a.DType()) {
			return nil, c.Errorf("fmod=0 on floating-point inputs is invalid ONNX; use fmod=1")
		}
		return one(ops.Mod(a, b))
	}
	if isFloat(a.DType()) {
		// a − trunc(a/b)·b
		return one(ops.Sub(a, ops.Mul(ops.Trunc(ops.Div(a, b)), b)))
	}
	return one(ops.Sub(a, ops.Mul(divOp(a, b), b)))
}
