package onnx

import (
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// The inverse trigonometric, tangent and hyperbolic ops: ONNX defines them
// once each, for the floating-point types, Acos, Asin, Atan and Tan at
// opset 7 and the hyperbolic ones at opset 9. Each maps to one elementwise
// primitive of package ops, which refuses integer inputs by name.

func init() {
	for _, op := range []struct {
		name  string
		opset int64
		f     func(*tensor.Tensor) *tensor.Tensor
	}{
		{"Acos", 7, ops.Acos}, {"Asin", 7, ops.Asin}, {"Atan", 7, ops.Atan}, {"Tan", 7, ops.Tan},
		{"Sinh", 9, ops.Sinh}, {"Cosh", 9, ops.Cosh},
		{"Asinh", 9, ops.Asinh}, {"Acosh", 9, ops.Acosh}, {"Atanh", 9, ops.Atanh},
	} {
		register(op.name, op.opset, 0, unaryOp(op.f))
	}
}
