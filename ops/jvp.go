package ops

import (
	"github.com/sporeml/spore/tensor"
)

// Helpers of the forward-mode (JVP) rules. A rule receives one tangent per
// input, nil where that tangent is zero, so these helpers treat nil as an
// exact zero and build no ops for it.

// tadd returns a + b for tangents, either possibly nil.
func tadd(a, b *tensor.Tensor) *tensor.Tensor {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return Add(a, b)
}

// tsub returns a - b for tangents, either possibly nil.
func tsub(a, b *tensor.Tensor) *tensor.Tensor {
	switch {
	case b == nil:
		return a
	case a == nil:
		return Neg(b)
	}
	return Sub(a, b)
}

// tmul returns t·f for a tangent t (nil stays nil).
func tmul(t, f *tensor.Tensor) *tensor.Tensor {
	if t == nil {
		return nil
	}
	return Mul(t, f)
}

// tshape broadcasts tangent t to the result's shape s: a binary op's
// tangent built from one input alone has that input's shape.
func tshape(t *tensor.Tensor, s tensor.Shape) *tensor.Tensor {
	if t == nil || t.Shape().Equal(s) {
		return t
	}
	return BroadcastTo(t, s...)
}

// orZeros returns t, or zeros shaped like x when t is nil: for rules of
// ops that need a tangent for every input (a linear op of several inputs).
func orZeros(t, x *tensor.Tensor) *tensor.Tensor {
	if t == nil {
		return ZerosLike(x)
	}
	return t
}
