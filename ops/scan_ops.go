package ops

import (
	"fmt"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// Cumulative ops along an axis: CumSum, CumProd, and the first-order
// linear recurrence that carries CumProd's gradient without dividing.

// ScanAttrs are CumSum's attributes: the (normalised) axis, whether each
// result leaves out its own element (exclusive), and whether the scan runs
// from the end of the axis (reverse).
type ScanAttrs struct {
	Axis      int
	Exclusive bool
	Reverse   bool
}

// String prints every attribute, for IR dumps and CSE keys.
func (a ScanAttrs) String() string {
	return fmt.Sprintf("axis=%d exclusive=%v reverse=%v", a.Axis, a.Exclusive, a.Reverse)
}

// RecurrenceAttrs are the attributes of the linear recurrence primitive:
// the (normalised) axis and the direction.
type RecurrenceAttrs struct {
	Axis    int
	Reverse bool
}

// String prints every attribute, for IR dumps and CSE keys.
func (a RecurrenceAttrs) String() string { return fmt.Sprintf("axis=%d reverse=%v", a.Axis, a.Reverse) }

var CumSumPrim, CumProdPrim, LinearRecurrencePrim *core.Prim

// axisSplit returns the extents before, along and after axis ax of s.
func axisSplit(s tensor.Shape, ax int) (outer, n, inner int) {
	return s[:ax].Size(), s[ax], s[ax+1:].Size()
}

func inferScan(name string, floatOnly bool) func(any, []*tensor.Tensor) tensor.Meta {
	return func(attrs any, in []*tensor.Tensor) tensor.Meta {
		var ax int
		switch a := attrs.(type) {
		case ScanAttrs:
			ax = a.Axis
		case AxisAttr:
			ax = a.Axis
		case RecurrenceAttrs:
			ax = a.Axis
		}
		x := in[0]
		d := x.DType()
		if !d.IsFloat() && (floatOnly || !d.IsInt()) {
			core.Panicf(name, "unsupported dtype %v (shape %v)", d, x.Shape())
		}
		if ax < 0 || ax >= x.Rank() {
			core.Panicf(name, "axis %d out of range for input %v", ax, x.Shape())
		}
		for _, y := range in[1:] {
			if y.DType() != d || !y.Shape().Equal(x.Shape()) {
				core.Panicf(name, "inputs differ: %v %v and %v %v", x.Shape(), d, y.Shape(), y.DType())
			}
		}
		return x.Meta()
	}
}

// scanInto writes the running fold of x along the middle axis of
// [outer, n, inner] into out, whole rows of inner elements at a time so
// that every pass reads contiguous memory. id is the fold's identity (the
// first exclusive result).
func scanInto[T tensor.Number](out, x []T, outer, n, inner int, excl, rev bool, id T, f func(a, b T) T) {
	for o := range outer {
		base := o * n * inner
		row := func(j int) (int, int) { return base + j*inner, base + (j+1)*inner }
		for s := range n {
			j, prev := s, s-1
			if rev {
				j, prev = n-1-s, n-s
			}
			lo, hi := row(j)
			dst := out[lo:hi]
			if s == 0 {
				if excl {
					for i := range dst {
						dst[i] = id
					}
				} else {
					copy(dst, x[lo:hi])
				}
				continue
			}
			plo, phi := row(prev)
			acc := out[plo:phi]
			src := x[lo:hi]
			if excl {
				src = x[plo:phi]
			}
			for i := range dst {
				dst[i] = f(acc[i], src[i])
			}
		}
	}
}

// scanKernel returns the kernel of CumSum (prod false) or CumProd for T.
func scanKernel[T tensor.Number](prod bool) core.KernelFunc {
	// Literals: a generic function's value taken in generic code would be
	// called through a wrapper for every element.
	f := func(a, b T) T { return a + b }
	if prod {
		f = func(a, b T) T { return a * b }
	}
	id := identityOf[T](prod)
	return func(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
		var a ScanAttrs
		if prod {
			a.Axis = attrs.(AxisAttr).Axis
		} else {
			a = attrs.(ScanAttrs)
		}
		outer, n, inner := axisSplit(in[0].Shape(), a.Axis)
		scanInto(out.Data().([]T), in[0].Data().([]T), outer, n, inner, a.Exclusive, a.Reverse, id, f)
	}
}

// recurrenceKernel is LinearRecurrence's kernel for T.
func recurrenceKernel[T float32 | float64](attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
	r := attrs.(RecurrenceAttrs)
	outer, n, inner := axisSplit(in[0].Shape(), r.Axis)
	recurInto(out.Data().([]T), in[0].Data().([]T), in[1].Data().([]T), outer, n, inner, r.Reverse)
}

func identityOf[T tensor.Number](prod bool) T {
	if prod {
		return 1
	}
	return 0
}

func init() {
	CumSumPrim = core.Define(&core.Prim{
		Name:   "CumSum",
		Batch:  batchOne(&CumSumPrim, shiftScanAttrs),
		Traits: core.Traits{Cost: 1},
		Infer:  inferScan("CumSum", false),
		JVP:    linearJVP(&CumSumPrim, 0),
		VJP: func(attrs any, in []*tensor.Tensor, _, g *tensor.Tensor) []*tensor.Tensor {
			if !in[0].DType().IsFloat() {
				return []*tensor.Tensor{nil}
			}
			// Each x[i] adds to the results after it (and at it unless
			// exclusive), so its gradient is the same scan of g run the
			// other way.
			a := attrs.(ScanAttrs)
			a.Reverse = !a.Reverse
			return []*tensor.Tensor{core.Apply(CumSumPrim, a, g)}
		},
	})
	CumProdPrim = core.Define(&core.Prim{
		Name:   "CumProd",
		Batch:  batchOne(&CumProdPrim, shiftAxisAttr),
		Traits: core.Traits{Cost: 1},
		Infer:  inferScan("CumProd", false),
		JVP:    cumProdJVP,
		VJP:    cumProdVJP,
	})
	LinearRecurrencePrim = core.Define(&core.Prim{
		Name:   "LinearRecurrence",
		Batch:  batchAlong(&LinearRecurrencePrim, shiftRecurrenceAttrs),
		Traits: core.Traits{Cost: 2},
		Infer:  inferScan("LinearRecurrence", true),
		JVP:    recurrenceJVP,
		VJP:    recurrenceVJP,
	})
	registerNumbers(CumSumPrim, func(t numberType) core.KernelFunc { return t.scan(false) })
	registerNumbers(CumProdPrim, func(t numberType) core.KernelFunc { return t.scan(true) })
	registerFloats(LinearRecurrencePrim, recurrenceKernel[float32], recurrenceKernel[float64])
}

// cumProdVJP never divides by x, so it is exact at zeros. With y the
// cumulative product, ∂L/∂xᵢ = Σ_{j≥i} gⱼ ∏_{k≤j, k≠i} xₖ = Eᵢ·Rᵢ, where
// Eᵢ = ∏_{k<i} xₖ is y shifted by one (1 first) and Rᵢ = Σ_{j≥i} gⱼ
// ∏_{i<k≤j} xₖ obeys Rᵢ = gᵢ + xᵢ₊₁Rᵢ₊₁: a linear recurrence run from the
// end, whose own gradient is again a linear recurrence, so every order of
// differentiation stays division-free.
func cumProdVJP(attrs any, in []*tensor.Tensor, out, g *tensor.Tensor) []*tensor.Tensor {
	x := in[0]
	if !x.DType().IsFloat() {
		return []*tensor.Tensor{nil}
	}
	ax := attrs.(AxisAttr).Axis
	e := shiftAlong(out, ax, 1)
	r := core.Apply(LinearRecurrencePrim, RecurrenceAttrs{Axis: ax, Reverse: true}, x, g)
	return []*tensor.Tensor{Mul(e, r)}
}

// cumProdJVP differentiates yᵢ = yᵢ₋₁·xᵢ by the product rule,
// dyᵢ = xᵢ·dyᵢ₋₁ + yᵢ₋₁·dxᵢ: a forward linear recurrence, division-free
// like the VJP.
func cumProdJVP(attrs any, in, t []*tensor.Tensor, out *tensor.Tensor) *tensor.Tensor {
	x := in[0]
	if !x.DType().IsFloat() {
		return nil
	}
	ax := attrs.(AxisAttr).Axis
	return core.Apply(LinearRecurrencePrim, RecurrenceAttrs{Axis: ax}, x, Mul(shiftAlong(out, ax, 1), t[0]))
}

// recurrenceJVP differentiates the recurrence, which is linear in b and
// in s: forward, dsⱼ = aⱼdsⱼ₋₁ + (daⱼsⱼ₋₁ + dbⱼ); reverse,
// dsⱼ = aⱼ₊₁dsⱼ₊₁ + (daⱼ₊₁sⱼ₊₁ + dbⱼ). Either is the same recurrence with
// a new b.
func recurrenceJVP(attrs any, in, t []*tensor.Tensor, out *tensor.Tensor) *tensor.Tensor {
	r := attrs.(RecurrenceAttrs)
	a := in[0]
	b := t[1]
	if t[0] != nil {
		var da *tensor.Tensor
		if r.Reverse {
			da = shiftBack(Mul(t[0], out), r.Axis)
		} else {
			da = Mul(t[0], shiftAlong(out, r.Axis, 0))
		}
		b = tadd(b, da)
	}
	return core.Apply(LinearRecurrencePrim, r, a, b)
}

// shiftBack moves x one step toward the start of axis ax, dropping its
// first element and filling the last position with 0.
func shiftBack(x *tensor.Tensor, ax int) *tensor.Tensor {
	n := x.Shape()[ax]
	if n == 0 {
		return x
	}
	ts := x.Shape().Clone()
	ts[ax] = 1
	return Concat(ax, sliceAxis(x, ax, 1, n-1), tensor.Zeros(x.DType(), ts...))
}

// recurInto computes s along the middle axis of [outer, n, inner]:
// forward sⱼ = aⱼsⱼ₋₁ + bⱼ (s₋₁ = 0); reverse sⱼ = aⱼ₊₁sⱼ₊₁ + bⱼ (sₙ = 0,
// a₀ unused). The reverse form reads the coefficient one step ahead so
// that each direction is the other's transpose without shifting a.
func recurInto[T float32 | float64](out, a, b []T, outer, n, inner int, rev bool) {
	for o := range outer {
		base := o * n * inner
		for s := range n {
			j := s
			if rev {
				j = n - 1 - s
			}
			lo := base + j*inner
			dst, bj := out[lo:lo+inner], b[lo:lo+inner]
			if s == 0 {
				copy(dst, bj)
				continue
			}
			var prev, coef []T
			if rev {
				prev = out[lo+inner : lo+2*inner]
				coef = a[lo+inner : lo+2*inner]
			} else {
				prev = out[lo-inner : lo]
				coef = a[lo : lo+inner]
			}
			for i := range dst {
				dst[i] = coef[i]*prev[i] + bj[i]
			}
		}
	}
}

// recurrenceVJP transposes the recurrence. Forward (sⱼ = aⱼsⱼ₋₁ + bⱼ):
// λ = reverse recurrence of (a, g), ∂b = λ, ∂aⱼ = λⱼsⱼ₋₁. Reverse
// (sⱼ = aⱼ₊₁sⱼ₊₁ + bⱼ): λ = forward recurrence of (a, g), ∂b = λ,
// ∂aⱼ = λⱼ₋₁sⱼ.
func recurrenceVJP(attrs any, in []*tensor.Tensor, out, g *tensor.Tensor) []*tensor.Tensor {
	r := attrs.(RecurrenceAttrs)
	a := in[0]
	lam := core.Apply(LinearRecurrencePrim, RecurrenceAttrs{Axis: r.Axis, Reverse: !r.Reverse}, a, g)
	var ga *tensor.Tensor
	if core.NeedsGrad(a) {
		if r.Reverse {
			ga = Mul(shiftAlong(lam, r.Axis, 0), out)
		} else {
			ga = Mul(lam, shiftAlong(out, r.Axis, 0))
		}
	}
	return []*tensor.Tensor{ga, lam}
}

// shiftAlong moves x one step toward the end of axis ax, dropping its last
// element and filling the first position with fill.
func shiftAlong(x *tensor.Tensor, ax int, fill float64) *tensor.Tensor {
	n := x.Shape()[ax]
	if n == 0 {
		return x
	}
	hs := x.Shape().Clone()
	hs[ax] = 1
	head := tensor.Full(x.DType(), fill, hs...)
	return Concat(ax, head, sliceAxis(x, ax, 0, n-1))
}

// CumSum returns the running sums of x along axis (negative counts from
// the end): MindSpore's ops.cumsum and the CumSum primitive with its
// exclusive and reverse attributes. Exclusive leaves each element out of
// its own sum (the first result is 0); reverse sums from the end of the
// axis. Floats and Int32/Int64 are accepted; the sums accumulate in order,
// as NumPy's do. The gradient is the opposite scan of the cotangent.
func CumSum(x *tensor.Tensor, axis int, exclusive, reverse bool) *tensor.Tensor {
	if x.Rank() == 0 {
		core.Panicf("CumSum", "input is a scalar: it has no axis %d", axis)
	}
	a := ScanAttrs{Axis: core.NormAxis("CumSum", axis, x.Rank()), Exclusive: exclusive, Reverse: reverse}
	return core.Apply(CumSumPrim, a, x)
}

// CumProd returns the running products of x along axis (negative counts
// from the end): MindSpore's ops.cumprod. Floats and Int32/Int64 are
// accepted. The gradient never divides by x, so it is exact where elements
// are zero, at every order.
func CumProd(x *tensor.Tensor, axis int) *tensor.Tensor {
	if x.Rank() == 0 {
		core.Panicf("CumProd", "input is a scalar: it has no axis %d", axis)
	}
	return core.Apply(CumProdPrim, AxisAttr{core.NormAxis("CumProd", axis, x.Rank())}, x)
}
