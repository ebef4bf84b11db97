package ops

import "github.com/sporeml/spore/tensor"

// Zeros returns a float32 tensor of zeros of the given shape.
func Zeros(shape ...int) *tensor.Tensor { return tensor.Zeros(tensor.Float32, shape...) }

// Ones returns a float32 tensor of ones of the given shape.
func Ones(shape ...int) *tensor.Tensor { return tensor.Ones(tensor.Float32, shape...) }

// ZerosLike returns zeros with x's shape and dtype.
func ZerosLike(x *tensor.Tensor) *tensor.Tensor { return tensor.Zeros(x.DType(), x.Shape()...) }

// OnesLike returns ones with x's shape and dtype.
func OnesLike(x *tensor.Tensor) *tensor.Tensor { return tensor.Ones(x.DType(), x.Shape()...) }

// FullLike returns a tensor of x's shape and dtype filled with v.
func FullLike(x *tensor.Tensor, v float64) *tensor.Tensor {
	return tensor.Full(x.DType(), v, x.Shape()...)
}

// ScalarLike returns a rank-0 tensor of x's dtype holding v; it broadcasts
// against x in binary ops, so Mul(x, ScalarLike(x, 2)) doubles x.
func ScalarLike(x *tensor.Tensor, v float64) *tensor.Tensor { return tensor.Full(x.DType(), v) }
