package ops

import (
	"math"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// The remaining binary elementwise primitives, all with NumPy broadcasting.
var PowPrim, MaximumPrim, MinimumPrim *core.Prim

func init() {
	PowPrim = defBinary("Pow", 12, false, binary{
		f32: func(a, b float32) float32 { return float32(math.Pow(float64(a), float64(b))) },
		f64: math.Pow,
		jvp: powJVP,
		grad: func(a, b, out, g *tensor.Tensor) (ga, gb *tensor.Tensor) {
			// Each side costs several ops, so it is built only when its
			// input is being differentiated: PowScalar's exponent never is.
			if core.NeedsGrad(a) {
				// y·x^(y-1). At x = y = 0 that is 0·Inf, while x⁰ is flat
				// in x (PyTorch's rule gives 0): there the power reads a
				// safe exponent 1, so the result is 0·0 and no NaN enters
				// the tape. Everywhere else the formula is exact, so
				// higher-order gradients stay exact too.
				one := ScalarLike(b, 1)
				zero := ScalarLike(b, 0)
				at00 := LogicalAnd(Equal(a, zero), Equal(b, zero))
				ga = Mul(g, Mul(b, Pow(a, Select(at00, one, Sub(b, one)))))
			}
			if core.NeedsGrad(b) {
				// log(x)·x^y where x > 0 and 0 elsewhere: for x < 0, x^y is
				// real only at integer y, and x^y is flat in y at x = 0. The
				// log reads a safe 1 where x <= 0 so that no NaN or Inf
				// enters the tape, where a higher-order gradient could
				// multiply it by 0.
				pos := Greater(a, ScalarLike(a, 0))
				safe := Select(pos, a, ScalarLike(a, 1))
				gb = Select(pos, Mul(g, Mul(Log(safe), out)), ScalarLike(g, 0))
			}
			return ga, gb
		},
	})
	MaximumPrim = defBinary("Maximum", 1, true, binary{
		// Go's max returns NaN if either operand is NaN, as NumPy's maximum
		// does, and orders -0 below +0.
		f32:  func(a, b float32) float32 { return max(a, b) },
		f64:  func(a, b float64) float64 { return max(a, b) },
		ints: intMax,
		jvp:  func(a, b, _, ta, tb *tensor.Tensor) *tensor.Tensor { return extremumJVP(a, b, ta, tb, true) },
		grad: func(a, b, _, g *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor) { return extremumGrad(a, b, g, true) },
	})
	MinimumPrim = defBinary("Minimum", 1, true, binary{
		f32:  func(a, b float32) float32 { return min(a, b) },
		f64:  func(a, b float64) float64 { return min(a, b) },
		ints: intMin,
		jvp:  func(a, b, _, ta, tb *tensor.Tensor) *tensor.Tensor { return extremumJVP(a, b, ta, tb, false) },
		grad: func(a, b, _, g *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor) { return extremumGrad(a, b, g, false) },
	})
}

// extremumGrad routes g to the input Maximum (isMax) or Minimum selected.
// Ties split it half and half, as PyTorch does, so that the gradient of
// Maximum(x, x) is that of x. Where an input is NaN neither comparison
// holds and both inputs get g, again as in PyTorch.
func extremumGrad(a, b, g *tensor.Tensor, isMax bool) (ga, gb *tensor.Tensor) {
	z := ScalarLike(g, 0)
	shared := Select(Equal(a, b), Mul(g, ScalarLike(g, 0.5)), g)
	aLoses, bLoses := Less(a, b), Greater(a, b)
	if !isMax {
		aLoses, bLoses = bLoses, aLoses
	}
	return Select(aLoses, z, shared), Select(bLoses, z, shared)
}

// extremumJVP is extremumGrad's transpose: each input's tangent counts
// where that input wins, half of each where they tie, both where either is
// NaN.
func extremumJVP(a, b, ta, tb *tensor.Tensor, isMax bool) *tensor.Tensor {
	z := ScalarLike(a, 0)
	shared := Select(Equal(a, b), ScalarLike(a, 0.5), ScalarLike(a, 1))
	aLoses, bLoses := Less(a, b), Greater(a, b)
	if !isMax {
		aLoses, bLoses = bLoses, aLoses
	}
	var wa, wb *tensor.Tensor
	if ta != nil {
		wa = Select(aLoses, z, shared)
	}
	if tb != nil {
		wb = Select(bLoses, z, shared)
	}
	return tadd(tmul(ta, wa), tmul(tb, wb))
}

// powJVP is Pow's derivative applied to tangents, with the same guards as
// its VJP: y·x^(y-1) reads a safe exponent at 0⁰, and the log term counts
// only where x > 0.
func powJVP(a, b, out, ta, tb *tensor.Tensor) *tensor.Tensor {
	var t *tensor.Tensor
	if ta != nil {
		one, zero := ScalarLike(b, 1), ScalarLike(b, 0)
		at00 := LogicalAnd(Equal(a, zero), Equal(b, zero))
		t = Mul(ta, Mul(b, Pow(a, Select(at00, one, Sub(b, one)))))
	}
	if tb != nil {
		pos := Greater(a, ScalarLike(a, 0))
		safe := Select(pos, a, ScalarLike(a, 1))
		t = tadd(t, Select(pos, Mul(tb, Mul(Log(safe), out)), ScalarLike(out, 0)))
	}
	return t
}

// Pow returns x^y elementwise, broadcasting (floating-point types only; a
// negative x to a non-integer y gives NaN, as math.Pow does). The gradient
// with respect to y is taken as 0 where x <= 0 (where x^y is not
// differentiable in y), and the one with respect to x as 0 at 0⁰.
func Pow(x, y *tensor.Tensor) *tensor.Tensor { return apply2(PowPrim, x, y) }

// Maximum returns the larger of a and b elementwise, broadcasting. A NaN in
// either input gives NaN, as NumPy's maximum does. On ties the gradient is
// split equally between the inputs (PyTorch's choice).
func Maximum(a, b *tensor.Tensor) *tensor.Tensor { return apply2(MaximumPrim, a, b) }

// Minimum returns the smaller of a and b elementwise, broadcasting. A NaN in
// either input gives NaN, as NumPy's minimum does. On ties the gradient is
// split equally between the inputs (PyTorch's choice).
func Minimum(a, b *tensor.Tensor) *tensor.Tensor { return apply2(MinimumPrim, a, b) }

// AddScalar returns x + s, with s converted to x's dtype.
func AddScalar(x *tensor.Tensor, s float64) *tensor.Tensor { return Add(x, ScalarLike(x, s)) }

// SubScalar returns x - s, with s converted to x's dtype.
func SubScalar(x *tensor.Tensor, s float64) *tensor.Tensor { return Sub(x, ScalarLike(x, s)) }

// MulScalar returns x · s, with s converted to x's dtype.
func MulScalar(x *tensor.Tensor, s float64) *tensor.Tensor { return Mul(x, ScalarLike(x, s)) }

// DivScalar returns x / s (floating-point types only).
func DivScalar(x *tensor.Tensor, s float64) *tensor.Tensor { return Div(x, ScalarLike(x, s)) }

// PowScalar returns x^p elementwise (floating-point types only).
func PowScalar(x *tensor.Tensor, p float64) *tensor.Tensor { return Pow(x, ScalarLike(x, p)) }
