package ops

import (
	"fmt"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// Reductions beyond Sum: Mean (a composite), Max, Min, Prod, the Bool
// reductions Any and All, and ArgMax/ArgMin.

// Mean returns the arithmetic mean of x over the given axes (all axes when
// none are given), dropping them. Negative axes count from the end. x must
// be a floating-point tensor; the mean over an empty axis is NaN, as in
// NumPy.
func Mean(x *tensor.Tensor, axes ...int) *tensor.Tensor { return meanOf(x, false, axes) }

// MeanKeepDims is Mean keeping the folded axes with extent 1.
func MeanKeepDims(x *tensor.Tensor, axes ...int) *tensor.Tensor { return meanOf(x, true, axes) }

// meanKeep is the mean over axes keeping them, as a sum and a scale (one
// fewer primitive to depend on than a mean op, and the same graph).
func meanKeep(x *tensor.Tensor, axes []int) *tensor.Tensor {
	n := 1
	for _, a := range axes {
		n *= x.Shape()[a]
	}
	return Mul(SumKeepDims(x, axes...), ScalarLike(x, 1/float64(max(n, 1))))
}

// meanOf divides a Sum by the element count, so Mean needs no primitive of
// its own: its gradient, at any order, is Sum's scaled.
func meanOf(x *tensor.Tensor, keep bool, axes []int) *tensor.Tensor {
	if !x.DType().IsFloat() {
		core.Panicf("ReduceMean", "unsupported dtype %v (shape %v): the mean needs a float type; Cast first", x.DType(), x.Shape())
	}
	a := reduceAttrs("ReduceMean", x.Rank(), keep, axes)
	n := 1
	for _, ax := range a.Axes {
		n *= x.Shape()[ax]
	}
	s := core.Apply(SumPrim, a, x)
	return Div(s, ScalarLike(s, float64(n)))
}

var MaxPrim, MinPrim, ProdPrim, AnyPrim, AllPrim, ArgMaxPrim, ArgMinPrim *core.Prim

// inferNonEmptyReduce is inferReduce for reductions without an identity
// element (Max, Min): folding an empty axis has no answer, so it is an
// error, as in NumPy.
func inferNonEmptyReduce(name string) func(any, []*tensor.Tensor) tensor.Meta {
	infer := inferReduce(name, false)
	return func(attrs any, in []*tensor.Tensor) tensor.Meta {
		m := infer(attrs, in)
		xs := in[0].Shape()
		for _, ax := range attrs.(ReduceAttrs).Axes {
			if xs[ax] == 0 {
				core.Panicf(name, "cannot reduce empty axis %d of %v: no identity element", ax, xs)
			}
		}
		return m
	}
}

// extremumInto folds x into out with Go's max or min, which propagate NaN
// as NumPy's amax/amin do. Folding trailing axes (the common last-axis
// case) runs as a direct loop over contiguous rows rather than through
// reduceInto's function value.
func extremumInto[T tensor.Number](out, x []T, xs tensor.Shape, axes []int, isMax bool, lowest, highest T) {
	if len(x) > 0 && trailingAxes(axes, len(xs)) {
		inner := len(x) / len(out)
		for o := range out {
			out[o] = extremumRow(x[o*inner:(o+1)*inner], isMax)
		}
		return
	}
	if isMax {
		for i := range out {
			out[i] = lowest
		}
		reduceInto(out, x, xs, axes, func(a, v T) T { return max(a, v) })
		return
	}
	for i := range out {
		out[i] = highest
	}
	reduceInto(out, x, xs, axes, func(a, v T) T { return min(a, v) })
}

// extremumRow folds a non-empty row with four independent accumulators,
// so that consecutive max/min steps do not wait on each other.
func extremumRow[T tensor.Number](row []T, isMax bool) T {
	a0, a1, a2, a3 := row[0], row[0], row[0], row[0]
	i := 0
	if isMax {
		for ; i+4 <= len(row); i += 4 {
			a0, a1, a2, a3 = max(a0, row[i]), max(a1, row[i+1]), max(a2, row[i+2]), max(a3, row[i+3])
		}
		for ; i < len(row); i++ {
			a0 = max(a0, row[i])
		}
		return max(a0, a1, a2, a3)
	}
	for ; i+4 <= len(row); i += 4 {
		a0, a1, a2, a3 = min(a0, row[i]), min(a1, row[i+1]), min(a2, row[i+2]), min(a3, row[i+3])
	}
	for ; i < len(row); i++ {
		a0 = min(a0, row[i])
	}
	return min(a0, a1, a2, a3)
}

// trailingAxes reports whether axes (ascending) are the last len(axes) of
// rank r.
func trailingAxes(axes []int, r int) bool {
	for i, a := range axes {
		if a != r-len(axes)+i {
			return false
		}
	}
	return true
}

func defExtremum(name string, isMax bool) *core.Prim {
	p := core.Define(&core.Prim{
		Name:   name,
		Traits: core.Traits{Reduction: true, Cost: 1},
		Infer:  inferNonEmptyReduce(name),
		JVP:    extremumReduceJVP,
		VJP:    extremumVJP,
	})
	p.Batch = batchReduce(&p)
	registerNumbers(p, func(t numberType) core.KernelFunc { return t.extremum(isMax) })
	return p
}

// extremumKernel returns ReduceMax's (isMax) or ReduceMin's kernel for T,
// whose smallest and largest values are lo and hi.
func extremumKernel[T tensor.Number](isMax bool, lo, hi T) core.KernelFunc {
	return func(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
		extremumInto(out.Data().([]T), in[0].Data().([]T), in[0].Shape(), attrs.(ReduceAttrs).Axes, isMax, lo, hi)
	}
}

// extremumVJP routes the gradient to the elements equal to the result,
// split evenly among ties (as MindSpore and TensorFlow do), so the
// gradient of a constant tensor's max is the mean's.
func extremumVJP(attrs any, in []*tensor.Tensor, out, g *tensor.Tensor) []*tensor.Tensor {
	x := in[0]
	if !x.DType().IsFloat() {
		return []*tensor.Tensor{nil}
	}
	a := attrs.(ReduceAttrs)
	ks := keptShape(x.Shape(), a)
	hit := Cast(Equal(x, Reshape(out, ks...)), x.DType())
	share := Div(Reshape(g, ks...), core.Apply(SumPrim, ReduceAttrs{Axes: a.Axes, KeepDims: true}, hit))
	return []*tensor.Tensor{Mul(hit, share)}
}

// extremumReduceJVP is extremumVJP's transpose: the result's tangent is
// the mean of the tangents at the elements equal to the result.
func extremumReduceJVP(attrs any, in, t []*tensor.Tensor, out *tensor.Tensor) *tensor.Tensor {
	x := in[0]
	if !x.DType().IsFloat() {
		return nil
	}
	a := attrs.(ReduceAttrs)
	hit := Cast(Equal(x, Reshape(out, keptShape(x.Shape(), a)...)), x.DType())
	return Div(core.Apply(SumPrim, a, Mul(hit, t[0])), core.Apply(SumPrim, a, hit))
}

func init() {
	MaxPrim = defExtremum("ReduceMax", true)
	MinPrim = defExtremum("ReduceMin", false)
	ProdPrim = core.Define(&core.Prim{
		Name:   "ReduceProd",
		Batch:  batchReduce(&ProdPrim),
		Traits: core.Traits{Reduction: true, Cost: 1},
		Infer:  inferReduce("ReduceProd", true),
		JVP:    prodJVP,
		VJP:    prodVJP,
	})
	registerNumbers(ProdPrim, numberType.prod)
	AnyPrim = defBoolReduce("ReduceAny", false, func(a, v bool) bool { return a || v })
	AllPrim = defBoolReduce("ReduceAll", true, func(a, v bool) bool { return a && v })
	ArgMaxPrim = defArg("ArgMax", true)
	ArgMinPrim = defArg("ArgMin", false)
}

// prodKernel is ReduceProd's kernel for T.
func prodKernel[T tensor.Number](attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
	prodInto(out.Data().([]T), in[0].Data().([]T), in[0].Shape(), attrs.(ReduceAttrs).Axes)
}

func prodInto[T tensor.Number](out, x []T, xs tensor.Shape, axes []int) {
	for i := range out {
		out[i] = 1
	}
	reduceInto(out, x, xs, axes, func(a, v T) T { return a * v })
}

// prodVJP never divides by a zero element. With P' the product of a
// group's non-zero elements and z the number of zeros in it, ∂P/∂xᵢ is
// P'/xᵢ when z = 0, P' at the zero when z = 1, and 0 otherwise. Zeros are
// replaced by ones before dividing, so no NaN reaches even the unselected
// branch (whose gradient would otherwise be NaN·0). Second derivatives are
// exact wherever no element is zero.
func prodVJP(attrs any, in []*tensor.Tensor, _, g *tensor.Tensor) []*tensor.Tensor {
	x := in[0]
	if !x.DType().IsFloat() {
		return []*tensor.Tensor{nil}
	}
	a := attrs.(ReduceAttrs)
	return []*tensor.Tensor{Mul(prodPartials(x, a), Reshape(g, keptShape(x.Shape(), a)...))}
}

// prodJVP sums the tangent weighted by the same partial derivatives ∂P/∂xᵢ
// as prodVJP, which never divide by a zero element.
func prodJVP(attrs any, in, t []*tensor.Tensor, _ *tensor.Tensor) *tensor.Tensor {
	x := in[0]
	if !x.DType().IsFloat() {
		return nil
	}
	a := attrs.(ReduceAttrs)
	return core.Apply(SumPrim, a, Mul(prodPartials(x, a), t[0]))
}

// prodPartials returns ∂P/∂xᵢ for the product P of each group of x folded
// by a, shaped like x (see prodVJP).
func prodPartials(x *tensor.Tensor, a ReduceAttrs) *tensor.Tensor {
	keep := ReduceAttrs{Axes: a.Axes, KeepDims: true}
	zero, one := ScalarLike(x, 0), ScalarLike(x, 1)
	isZero := Equal(x, zero)
	safe := Select(isZero, one, x)
	nonZeroProd := core.Apply(ProdPrim, keep, safe)
	zeros := core.Apply(SumPrim, keep, Cast(isZero, x.DType()))
	live := LogicalOr(Equal(zeros, zero), LogicalAnd(Equal(zeros, one), isZero))
	return Select(live, Div(nonZeroProd, safe), zero)
}

func defBoolReduce(name string, init bool, f func(a, v bool) bool) *core.Prim {
	p := core.Define(&core.Prim{
		Name:   name,
		Traits: core.Traits{Reduction: true, Cost: 1},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			x := in[0]
			if x.DType() != tensor.Bool {
				core.Panicf(name, "want a Bool input, got %v %v", x.Shape(), x.DType())
			}
			return tensor.Meta{Shape: reducedShape(x.Shape(), attrs.(ReduceAttrs)), DType: tensor.Bool}
		},
	})
	p.Batch = batchReduce(&p)
	register[bool](p, func(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
		o := out.Data().([]bool)
		for i := range o {
			o[i] = init
		}
		reduceInto(o, in[0].Data().([]bool), in[0].Shape(), attrs.(ReduceAttrs).Axes, f)
	})
	return p
}

// Max returns the maximum of x over the given axes (all axes when none are
// given), dropping them. NaN propagates. Reducing an empty axis is an
// error. The gradient goes to the maximal elements, split evenly among
// ties.
func Max(x *tensor.Tensor, axes ...int) *tensor.Tensor {
	return core.Apply(MaxPrim, reduceAttrs("ReduceMax", x.Rank(), false, axes), x)
}

// MaxKeepDims is Max keeping the folded axes with extent 1.
func MaxKeepDims(x *tensor.Tensor, axes ...int) *tensor.Tensor {
	return core.Apply(MaxPrim, reduceAttrs("ReduceMax", x.Rank(), true, axes), x)
}

// Min returns the minimum of x over the given axes (all axes when none are
// given), dropping them; see Max.
func Min(x *tensor.Tensor, axes ...int) *tensor.Tensor {
	return core.Apply(MinPrim, reduceAttrs("ReduceMin", x.Rank(), false, axes), x)
}

// MinKeepDims is Min keeping the folded axes with extent 1.
func MinKeepDims(x *tensor.Tensor, axes ...int) *tensor.Tensor {
	return core.Apply(MinPrim, reduceAttrs("ReduceMin", x.Rank(), true, axes), x)
}

// Prod returns the product of x over the given axes (all axes when none are
// given), dropping them; the product over an empty axis is 1. Its gradient
// is exact when elements are zero (it never divides by them).
func Prod(x *tensor.Tensor, axes ...int) *tensor.Tensor {
	return core.Apply(ProdPrim, reduceAttrs("ReduceProd", x.Rank(), false, axes), x)
}

// ProdKeepDims is Prod keeping the folded axes with extent 1.
func ProdKeepDims(x *tensor.Tensor, axes ...int) *tensor.Tensor {
	return core.Apply(ProdPrim, reduceAttrs("ReduceProd", x.Rank(), true, axes), x)
}

// Any reports, over the given axes of a Bool tensor (all axes when none
// are given), whether any element is true; over an empty axis it is false.
func Any(x *tensor.Tensor, axes ...int) *tensor.Tensor {
	return core.Apply(AnyPrim, reduceAttrs("ReduceAny", x.Rank(), false, axes), x)
}

// AnyKeepDims is Any keeping the folded axes with extent 1.
func AnyKeepDims(x *tensor.Tensor, axes ...int) *tensor.Tensor {
	return core.Apply(AnyPrim, reduceAttrs("ReduceAny", x.Rank(), true, axes), x)
}

// All reports, over the given axes of a Bool tensor (all axes when none
// are given), whether every element is true; over an empty axis it is true.
func All(x *tensor.Tensor, axes ...int) *tensor.Tensor {
	return core.Apply(AllPrim, reduceAttrs("ReduceAll", x.Rank(), false, axes), x)
}

// AllKeepDims is All keeping the folded axes with extent 1.
func AllKeepDims(x *tensor.Tensor, axes ...int) *tensor.Tensor {
	return core.Apply(AllPrim, reduceAttrs("ReduceAll", x.Rank(), true, axes), x)
}

// ArgAttrs are the attributes of ArgMax and ArgMin: the (normalised) axis
// searched and whether it is kept with extent 1.
type ArgAttrs struct {
	Axis     int
	KeepDims bool
}

// String prints every attribute, for IR dumps and CSE keys.
func (a ArgAttrs) String() string { return fmt.Sprintf("axis=%d keep=%v", a.Axis, a.KeepDims) }

func defArg(name string, isMax bool) *core.Prim {
	p := core.Define(&core.Prim{
		Name:   name,
		Traits: core.Traits{Reduction: true, Cost: 1},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			a := attrs.(ArgAttrs)
			x := in[0]
			if x.DType() == tensor.Bool || x.DType() == tensor.Invalid {
				core.Panicf(name, "unsupported dtype %v (shape %v)", x.DType(), x.Shape())
			}
			xs := x.Shape()
			if a.Axis < 0 || a.Axis >= len(xs) {
				core.Panicf(name, "axis %d out of range for shape %v", a.Axis, xs)
			}
			if xs[a.Axis] == 0 {
				core.Panicf(name, "cannot search empty axis %d of %v", a.Axis, xs)
			}
			return tensor.Meta{Shape: reducedShape(xs, ReduceAttrs{Axes: []int{a.Axis}, KeepDims: a.KeepDims}), DType: tensor.Int64}
		},
	})
	p.Batch = batchArg(&p)
	registerNumbers(p, func(t numberType) core.KernelFunc { return t.arg(isMax) })
	return p
}

// argKernel returns ArgMax's (isMax) or ArgMin's kernel for T.
func argKernel[T tensor.Number](isMax bool) core.KernelFunc {
	return func(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
		ax := attrs.(ArgAttrs).Axis
		xs := in[0].Shape()
		outer, n, inner := xs[:ax].Size(), xs[ax], xs[ax+1:].Size()
		argInto(out.Data().([]int64), in[0].Data().([]T), outer, n, inner, isMax)
	}
}

// argInto writes, for each (outer, inner) position, the index of the first
// extreme element along the middle axis of extent n. A NaN beats every
// number, so the first NaN wins, as in NumPy. The middle axis is walked
// in the outer loop, so each pass reads a contiguous row.
func argInto[T tensor.Number](out []int64, x []T, outer, n, inner int, isMax bool) {
	for o := range outer {
		base := o * n * inner
		res := out[o*inner : (o+1)*inner]
		clear(res)
		for j := 1; j < n; j++ {
			row := x[base+j*inner : base+(j+1)*inner]
			for i, v := range row {
				best := x[base+int(res[i])*inner+i]
				if best != best {
					continue // NaN found first
				}
				if v != v || (isMax && v > best) || (!isMax && v < best) {
					res[i] = int64(j)
				}
			}
		}
	}
}

func argOf(p *core.Prim, x *tensor.Tensor, axis int, keep bool) *tensor.Tensor {
	return core.Apply(p, ArgAttrs{Axis: core.NormAxis(p.Name, axis, x.Rank()), KeepDims: keep}, x)
}

// ArgMax returns, as Int64, the index of the largest element of x along
// axis (negative counts from the end), dropping that axis. On ties the
// first occurrence wins, and a NaN counts as the largest, as in NumPy. It
// is not differentiable.
func ArgMax(x *tensor.Tensor, axis int) *tensor.Tensor { return argOf(ArgMaxPrim, x, axis, false) }

// ArgMaxKeepDims is ArgMax keeping the searched axis with extent 1.
func ArgMaxKeepDims(x *tensor.Tensor, axis int) *tensor.Tensor {
	return argOf(ArgMaxPrim, x, axis, true)
}

// ArgMin returns, as Int64, the index of the smallest element of x along
// axis, dropping that axis; see ArgMax.
func ArgMin(x *tensor.Tensor, axis int) *tensor.Tensor { return argOf(ArgMinPrim, x, axis, false) }

// ArgMinKeepDims is ArgMin keeping the searched axis with extent 1.
func ArgMinKeepDims(x *tensor.Tensor, axis int) *tensor.Tensor {
	return argOf(ArgMinPrim, x, axis, true)
}
