package ops

import (
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// The softmax family: plain Go over primitives (a max, an exponential, a
// sum), so their gradients of any order come from the primitives' VJPs and
// the compiler can fuse every step.

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
