package ops

import (
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/kernels/vec"
	"github.com/sporeml/spore/tensor"
)

// HardswishPrim is the primitive of Hardswish. Its definition below is all
// there is to the op: the block body that its eager kernels and fused loops
// run, its VJP (which, the op being elementwise, is also its JVP) and, from
// defUnary, its batching rule and traits.
var HardswishPrim *core.Prim

func init() {
	HardswishPrim = defUnary("Hardswish", 4, unary{
		f32: hardswish[float32],
		f64: hardswish[float64],
		// The block kernel computes hardswish bit for bit, 16 lanes at a
		// time: the scalar body behind a function call per element took a
		// tenth of MobileNetV3's run.
		vec: vec.Hardswish,
		grad: func(x, _, g *tensor.Tensor) *tensor.Tensor {
			// d/dx = 0 below -3, x/3 + 1/2 on [-3, 3], 1 above: PyTorch's
			// choice at the two kinks (the right-hand slope at -3, the
			// left-hand one at 3).
			inner := Add(Mul(x, ScalarLike(x, 1.0/3)), ScalarLike(x, 0.5))
			d := Select(Less(x, ScalarLike(x, -3)), ScalarLike(x, 0),
				Select(LessEqual(x, ScalarLike(x, 3)), inner, ScalarLike(x, 1)))
			return Mul(g, d)
		},
	})
}

// hardswish is x·ReLU6(x+3)/6, written piecewise so that the flat parts
// are exact (0 below -3 even at -Inf, x itself above 3) and NaN stays NaN.
func hardswish[T float32 | float64](x T) T {
	switch {
	case x <= -3:
		return 0
	case x >= 3:
		return x
	}
	return x * (x + 3) / 6
}

// Hardswish returns x·ReLU6(x+3)/6 elementwise: MobileNetV3's cheap
// stand-in for x·sigmoid(x), MindSpore's ops.hardswish and PyTorch's
// F.hardswish. It is 0 below -3 and x above 3.
func Hardswish(x *tensor.Tensor) *tensor.Tensor { return apply1(HardswishPrim, x) }
