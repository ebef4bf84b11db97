package ops

import (
	"math"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/kernels/vec"
	"github.com/sporeml/spore/tensor"
)

// The remaining unary elementwise primitives. Float32 kernels evaluate in
// float64 and round once (viaF64) unless a plain float32 expression is
// already correctly rounded (Abs, Sign, Square, Reciprocal, Sqrt via a
// double-width intermediate).
var AbsPrim, SignPrim, Log1pPrim, SqrtPrim, RsqrtPrim, SquarePrim, ReciprocalPrim,
	SinPrim, CosPrim, SigmoidPrim, ErfPrim, GeluPrim, SoftplusPrim *core.Prim

const (
	invSqrt2   = 1 / math.Sqrt2
	invSqrt2Pi = 0.3989422804014327 // 1/√(2π)
	twoInvSqPi = 2 / math.SqrtPi    // d erf(x)/dx at 0
)

func init() {
	AbsPrim = defUnary("Abs", 1, unary{
		f32: func(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) },
		f64: math.Abs,
		// See intUnaryFn: the most negative integer maps to itself.
		ints: intAbs,
		grad: func(x, _, g *tensor.Tensor) *tensor.Tensor {
			// Sign(0) = 0, so the subgradient at the kink is 0, as in
			// MindSpore and PyTorch.
			return Mul(g, Sign(x))
		},
	})
	// Sign is piecewise constant: it has no VJP, so it cuts the tape and
	// gradients through it are zero.
	SignPrim = defUnary("Sign", 1, unary{
		f32:  signOf[float32],
		f64:  signOf[float64],
		ints: intSign,
	})
	Log1pPrim = defUnary("Log1p", 8, unary{
		f32: viaF64(math.Log1p),
		f64: math.Log1p,
		grad: func(x, _, g *tensor.Tensor) *tensor.Tensor {
			return Div(g, Add(x, ScalarLike(x, 1)))
		},
	})
	SqrtPrim = defUnary("Sqrt", 4, unary{
		// float64 has more than twice float32's precision, so rounding the
		// float64 root once more gives the correctly rounded float32 root.
		f32: viaF64(math.Sqrt),
		f64: math.Sqrt,
		grad: func(_, y, g *tensor.Tensor) *tensor.Tensor {
			// d √x = 1/(2y)
			return Div(Mul(g, ScalarLike(y, 0.5)), y)
		},
	})
	RsqrtPrim = defUnary("Rsqrt", 5, unary{
		f32: viaF64(rsqrt),
		f64: rsqrt,
		grad: func(_, y, g *tensor.Tensor) *tensor.Tensor {
			// d x^(-1/2) = -½ x^(-3/2) = -½ y³
			return Mul(g, Mul(ScalarLike(y, -0.5), Mul(y, Mul(y, y))))
		},
	})
	SquarePrim = defUnary("Square", 1, unary{
		vec:  func(d, x []float32) { vec.Mul(d, x, x) }, // x·x, rounded once as f32 is
		f32:  func(x float32) float32 { return x * x },
		f64:  func(x float64) float64 { return x * x },
		ints: intSquare,
		grad: func(x, _, g *tensor.Tensor) *tensor.Tensor {
			return Mul(g, Mul(x, ScalarLike(x, 2)))
		},
	})
	ReciprocalPrim = defUnary("Reciprocal", 4, unary{
		f32: func(x float32) float32 { return 1 / x },
		f64: func(x float64) float64 { return 1 / x },
		grad: func(_, y, g *tensor.Tensor) *tensor.Tensor {
			// d 1/x = -1/x² = -y²
			return Neg(Mul(g, Mul(y, y)))
		},
	})
	SinPrim = defUnary("Sin", 10, unary{
		f32: viaF64(math.Sin),
		f64: math.Sin,
		grad: func(x, _, g *tensor.Tensor) *tensor.Tensor {
			return Mul(g, Cos(x))
		},
	})
	CosPrim = defUnary("Cos", 10, unary{
		f32: viaF64(math.Cos),
		f64: math.Cos,
		grad: func(x, _, g *tensor.Tensor) *tensor.Tensor {
			return Neg(Mul(g, Sin(x)))
		},
	})
	SigmoidPrim = defUnary("Sigmoid", 10, unary{
		vec: vec.Sigmoid, // within about 2.4 ulp; see package vec
		f32: viaF64(sigmoid),
		f64: sigmoid,
		grad: func(_, y, g *tensor.Tensor) *tensor.Tensor {
			// d σ = y(1-y)
			return Mul(g, Mul(y, Sub(ScalarLike(y, 1), y)))
		},
	})
	// Erf has one float32 body, vec.Erf (vectorised, within 2.2 ulp of
	// math.Erf; see package vec), which eager kernels and fused loops both
	// run; its erfc core is GELU's. Float64 is Go's math.Erf.
	ErfPrim = defUnary("Erf", 12, unary{
		vec: vec.Erf,
		f64: math.Erf,
		grad: func(x, _, g *tensor.Tensor) *tensor.Tensor {
			// d erf = 2/√π · exp(-x²)
			return Mul(g, Mul(ScalarLike(x, twoInvSqPi), Exp(Neg(Mul(x, x)))))
		},
	})
	// GELU has one float32 body, vec.Gelu (on the erfc core of vec.Erf,
	// within 6.5 ulp of the exact value; see package vec), which fused loops and the
	// GEMM epilogue (gemm.ActGELU) run too, and one float64 body, gelu
	// below on Go's math.Erfc (within about 1 ulp).
	GeluPrim = defUnary("GELU", 20, unary{
		vec: vec.Gelu,
		f64: gelu,
		grad: func(x, _, g *tensor.Tensor) *tensor.Tensor {
			// d x·Φ(x) = Φ(x) + x·φ(x), with Φ(x) = ½(1 + erf(x/√2)) and
			// φ(x) = exp(-x²/2)/√(2π).
			half := ScalarLike(x, 0.5)
			cdf := Add(half, Mul(half, Erf(Mul(x, ScalarLike(x, invSqrt2)))))
			pdf := Mul(ScalarLike(x, invSqrt2Pi), Exp(Mul(ScalarLike(x, -0.5), Mul(x, x))))
			return Mul(g, Add(cdf, Mul(x, pdf)))
		},
	})
	SoftplusPrim = defUnary("Softplus", 12, unary{
		f32: viaF64(softplus),
		f64: softplus,
		grad: func(x, _, g *tensor.Tensor) *tensor.Tensor {
			return Mul(g, Sigmoid(x))
		},
	})
}

// signOf returns -1, 0 or 1; a zero keeps its sign and NaN stays NaN, as in
// NumPy.
func signOf[T float32 | float64](x T) T {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return x
}

func rsqrt(x float64) float64 { return 1 / math.Sqrt(x) }

// sigmoid evaluates exp only at non-positive arguments, so it neither
// overflows nor loses the tiny values of σ at very negative x.
func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// gelu is x·Φ(x) written with erfc, which keeps full relative precision in
// the far negative tail where 1+erf(x/√2) would cancel to zero.
func gelu(x float64) float64 {
	if math.IsInf(x, -1) {
		return 0 // the limit; -Inf·0 would give NaN
	}
	return 0.5 * x * math.Erfc(-x*invSqrt2)
}

// softplus is log(1+eˣ) in the form that overflows nowhere:
// log1p(exp(-|x|)) + max(x, 0).
func softplus(x float64) float64 {
	return math.Log1p(math.Exp(-math.Abs(x))) + max(x, 0)
}

// Abs returns |x| elementwise. Its gradient at 0 is 0.
func Abs(x *tensor.Tensor) *tensor.Tensor { return apply1(AbsPrim, x) }

// Sign returns -1, 0 or 1 according to the sign of each element (NaN stays
// NaN). It is piecewise constant, so no gradient flows through it.
func Sign(x *tensor.Tensor) *tensor.Tensor { return apply1(SignPrim, x) }

// Log1p returns log(1+x) elementwise, accurate for x near 0 (floating-point
// types only).
func Log1p(x *tensor.Tensor) *tensor.Tensor { return apply1(Log1pPrim, x) }

// Sqrt returns √x elementwise; negative elements give NaN (floating-point
// types only).
func Sqrt(x *tensor.Tensor) *tensor.Tensor { return apply1(SqrtPrim, x) }

// Rsqrt returns 1/√x elementwise (floating-point types only).
func Rsqrt(x *tensor.Tensor) *tensor.Tensor { return apply1(RsqrtPrim, x) }

// Square returns x² elementwise.
func Square(x *tensor.Tensor) *tensor.Tensor { return apply1(SquarePrim, x) }

// Reciprocal returns 1/x elementwise (floating-point types only).
func Reciprocal(x *tensor.Tensor) *tensor.Tensor { return apply1(ReciprocalPrim, x) }

// Sin returns the sine of x (radians) elementwise.
func Sin(x *tensor.Tensor) *tensor.Tensor { return apply1(SinPrim, x) }

// Cos returns the cosine of x (radians) elementwise.
func Cos(x *tensor.Tensor) *tensor.Tensor { return apply1(CosPrim, x) }

// Sigmoid returns the logistic function 1/(1+e⁻ˣ) elementwise.
func Sigmoid(x *tensor.Tensor) *tensor.Tensor { return apply1(SigmoidPrim, x) }

// Erf returns the error function 2/√π ∫₀ˣ e^(-t²) dt elementwise.
func Erf(x *tensor.Tensor) *tensor.Tensor { return apply1(ErfPrim, x) }

// GELU returns the Gaussian error linear unit x·Φ(x), with Φ the standard
// normal distribution function, in its exact erf form: MindSpore's
// ops.gelu with approximate='none', its default.
func GELU(x *tensor.Tensor) *tensor.Tensor { return apply1(GeluPrim, x) }

// GELUTanh returns GELU's tanh approximation
// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) elementwise: MindSpore's
// ops.gelu with approximate='tanh' (the default of its nn.GELU) and
// PyTorch's gelu(approximate='tanh'). It is composed of primitives, so its
// gradient and its Graph-mode form are theirs (floating-point types only).
func GELUTanh(x *tensor.Tensor) *tensor.Tensor {
	checkFloat("GELUTanh", x)
	inner := MulScalar(Add(x, MulScalar(Mul(Mul(x, x), x), 0.044715)), math.Sqrt(2/math.Pi))
	return Mul(MulScalar(x, 0.5), AddScalar(Tanh(inner), 1))
}

// Softplus returns log(1+eˣ) elementwise, computed so that it neither
// overflows for large x nor loses precision for very negative x. It is
// MindSpore's ops.softplus with beta=1 and no threshold: MindSpore's
// threshold returns x itself above it, a shortcut that differs from the
// exact value by less than e^-threshold.
func Softplus(x *tensor.Tensor) *tensor.Tensor { return apply1(SoftplusPrim, x) }
