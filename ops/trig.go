package ops

import (
	"math"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// The inverse trigonometric, tangent and hyperbolic elementwise
// primitives. Each float32 kernel evaluates Go's float64 function and rounds
// once (viaF64), like Sin and Cos; the 16-bit float types reach them through
// the widening adapter. Their gradients are written with other primitives,
// so they are differentiable again (second order) and trace in Graph mode.
var TanPrim, AsinPrim, AcosPrim, AtanPrim, SinhPrim, CoshPrim, AsinhPrim, AcoshPrim, AtanhPrim *core.Prim

func init() {
	TanPrim = defUnary("Tan", 12, unary{
		f32: viaF64(math.Tan),
		f64: math.Tan,
		grad: func(_, y, g *tensor.Tensor) *tensor.Tensor {
			// d tan x = 1 + tan²x = 1 + y²
			return Mul(g, Add(ScalarLike(y, 1), Mul(y, y)))
		},
	})
	AsinPrim = defUnary("Asin", 12, unary{
		f32: viaF64(math.Asin),
		f64: math.Asin,
		grad: func(x, _, g *tensor.Tensor) *tensor.Tensor {
			// d asin x = 1/√(1-x²)
			return Mul(g, Rsqrt(Sub(ScalarLike(x, 1), Mul(x, x))))
		},
	})
	AcosPrim = defUnary("Acos", 12, unary{
		f32: viaF64(math.Acos),
		f64: math.Acos,
		grad: func(x, _, g *tensor.Tensor) *tensor.Tensor {
			// d acos x = -1/√(1-x²)
			return Neg(Mul(g, Rsqrt(Sub(ScalarLike(x, 1), Mul(x, x)))))
		},
	})
	AtanPrim = defUnary("Atan", 12, unary{
		f32: viaF64(math.Atan),
		f64: math.Atan,
		grad: func(x, _, g *tensor.Tensor) *tensor.Tensor {
			// d atan x = 1/(1+x²)
			return Div(g, Add(ScalarLike(x, 1), Mul(x, x)))
		},
	})
	SinhPrim = defUnary("Sinh", 10, unary{
		f32: viaF64(math.Sinh),
		f64: math.Sinh,
		grad: func(x, _, g *tensor.Tensor) *tensor.Tensor {
			return Mul(g, Cosh(x))
		},
	})
	CoshPrim = defUnary("Cosh", 10, unary{
		f32: viaF64(math.Cosh),
		f64: math.Cosh,
		grad: func(x, _, g *tensor.Tensor) *tensor.Tensor {
			return Mul(g, Sinh(x))
		},
	})
	AsinhPrim = defUnary("Asinh", 12, unary{
		f32: viaF64(math.Asinh),
		f64: math.Asinh,
		grad: func(x, _, g *tensor.Tensor) *tensor.Tensor {
			// d asinh x = 1/√(x²+1)
			return Mul(g, Rsqrt(Add(Mul(x, x), ScalarLike(x, 1))))
		},
	})
	AcoshPrim = defUnary("Acosh", 12, unary{
		f32: viaF64(math.Acosh),
		f64: math.Acosh,
		grad: func(x, _, g *tensor.Tensor) *tensor.Tensor {
			// d acosh x = 1/√(x²-1), for x > 1
			return Mul(g, Rsqrt(Sub(Mul(x, x), ScalarLike(x, 1))))
		},
	})
	AtanhPrim = defUnary("Atanh", 12, unary{
		f32: viaF64(math.Atanh),
		f64: math.Atanh,
		grad: func(x, _, g *tensor.Tensor) *tensor.Tensor {
			// d atanh x = 1/(1-x²), for |x| < 1
			return Div(g, Sub(ScalarLike(x, 1), Mul(x, x)))
		},
	})
}

// Tan returns the tangent of x (radians) elementwise (floating-point types
// only).
func Tan(x *tensor.Tensor) *tensor.Tensor { return apply1(TanPrim, x) }

// Asin returns the arcsine of x elementwise, in [-π/2, π/2]; |x| > 1 gives
// NaN (floating-point types only).
func Asin(x *tensor.Tensor) *tensor.Tensor { return apply1(AsinPrim, x) }

// Acos returns the arccosine of x elementwise, in [0, π]; |x| > 1 gives NaN
// (floating-point types only).
func Acos(x *tensor.Tensor) *tensor.Tensor { return apply1(AcosPrim, x) }

// Atan returns the arctangent of x elementwise, in (-π/2, π/2)
// (floating-point types only).
func Atan(x *tensor.Tensor) *tensor.Tensor { return apply1(AtanPrim, x) }

// Sinh returns the hyperbolic sine of x elementwise (floating-point types
// only).
func Sinh(x *tensor.Tensor) *tensor.Tensor { return apply1(SinhPrim, x) }

// Cosh returns the hyperbolic cosine of x elementwise (floating-point types
// only).
func Cosh(x *tensor.Tensor) *tensor.Tensor { return apply1(CoshPrim, x) }

// Asinh returns the inverse hyperbolic sine of x elementwise
// (floating-point types only).
func Asinh(x *tensor.Tensor) *tensor.Tensor { return apply1(AsinhPrim, x) }

// Acosh returns the inverse hyperbolic cosine of x elementwise; x < 1 gives
// NaN (floating-point types only).
func Acosh(x *tensor.Tensor) *tensor.Tensor { return apply1(AcoshPrim, x) }

// Atanh returns the inverse hyperbolic tangent of x elementwise; ±1 give
// ±Inf and |x| > 1 NaN (floating-point types only).
func Atanh(x *tensor.Tensor) *tensor.Tensor { return apply1(AtanhPrim, x) }
