package ops

import (
	"fmt"
	"slices"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/kernels/vec"
	"github.com/sporeml/spore/tensor"
)

// ReduceAttrs are the attributes of the reduction primitives: the axes
// folded (normalised, ascending, unique) and whether they are kept as
// extent-1 axes.
type ReduceAttrs struct {
	Axes     []int
	KeepDims bool
}

// String prints every attribute, for IR dumps and CSE keys.
func (a ReduceAttrs) String() string { return fmt.Sprintf("axes=%v keep=%v", a.Axes, a.KeepDims) }

// reduceAttrs normalises user axes for op over a tensor of rank r; no axes
// means all of them.
func reduceAttrs(op string, r int, keep bool, axes []int) ReduceAttrs {
	if len(axes) == 0 {
		all := make([]int, r)
		for i := range all {
			all[i] = i
		}
		return ReduceAttrs{Axes: all, KeepDims: keep}
	}
	norm := make([]int, len(axes))
	for i, a := range axes {
		norm[i] = core.NormAxis(op, a, r)
	}
	slices.Sort(norm)
	if len(slices.Compact(slices.Clone(norm))) != len(norm) {
		core.Panicf(op, "repeated axis in %v", axes)
	}
	return ReduceAttrs{Axes: norm, KeepDims: keep}
}

// reducedShape is the output shape of a reduction of s.
func reducedShape(s tensor.Shape, a ReduceAttrs) tensor.Shape {
	out := make(tensor.Shape, 0, len(s))
	j := 0
	for i, d := range s {
		if j < len(a.Axes) && a.Axes[j] == i {
			j++
			if a.KeepDims {
				out = append(out, 1)
			}
			continue
		}
		out = append(out, d)
	}
	return out
}

// keptShape is the reduced shape with the folded axes kept as 1: the shape
// a gradient takes before it is broadcast back over the input.
func keptShape(s tensor.Shape, a ReduceAttrs) tensor.Shape {
	return reducedShape(s, ReduceAttrs{Axes: a.Axes, KeepDims: true})
}

// reduceInto folds x (shape xs) along axes into out, which must hold init
// already. The common layouts — folding trailing axes (rows) or leading
// axes (columns) — are plain loops; others walk an odometer.
func reduceInto[T any](out, x []T, xs tensor.Shape, axes []int, f func(acc, v T) T) {
	if len(x) == 0 {
		return
	}
	r := len(xs)
	trailing, leading := true, true
	for i, a := range axes {
		if a != r-len(axes)+i {
			trailing = false
		}
		if a != i {
			leading = false
		}
	}
	switch {
	case trailing:
		inner := len(x) / max(len(out), 1)
		for o := range out {
			acc := out[o]
			for _, v := range x[o*inner : (o+1)*inner] {
				acc = f(acc, v)
			}
			out[o] = acc
		}
		return
	case leading:
		n := len(out)
		for i := 0; i < len(x); i += n {
			row := x[i : i+n]
			for j, v := range row {
				out[j] = f(out[j], v)
			}
		}
		return
	}
	// General case: out stride per input axis, 0 on folded axes.
	ost := make([]int, r)
	k := 1
	for i := r - 1; i >= 0; i-- {
		if slices.Contains(axes, i) {
			continue
		}
		ost[i] = k
		k *= xs[i]
	}
	idx := make([]int, r)
	off := 0
	for i := range x {
		out[off] = f(out[off], x[i])
		for ax := r - 1; ax >= 0; ax-- {
			idx[ax]++
			off += ost[ax]
			if idx[ax] < xs[ax] {
				break
			}
			off -= ost[ax] * xs[ax]
			idx[ax] = 0
		}
	}
}

// inferReduce is the Infer shared by value-preserving reductions.
func inferReduce(name string, numericOnly bool) func(any, []*tensor.Tensor) tensor.Meta {
	return func(attrs any, in []*tensor.Tensor) tensor.Meta {
		x := in[0]
		if x.DType() == tensor.Bool || (numericOnly && !x.DType().IsFloat() && !x.DType().IsInt()) {
			core.Panicf(name, "unsupported dtype %v (shape %v)", x.DType(), x.Shape())
		}
		return tensor.Meta{Shape: reducedShape(x.Shape(), attrs.(ReduceAttrs)), DType: x.DType()}
	}
}

var SumPrim *core.Prim

func init() {
	SumPrim = core.Define(&core.Prim{
		Name:   "ReduceSum",
		Batch:  batchReduce(&SumPrim),
		Traits: core.Traits{Reduction: true, Cost: 1},
		Infer:  inferReduce("ReduceSum", true),
		JVP:    linearJVP(&SumPrim, 0),
		VJP: func(attrs any, in []*tensor.Tensor, _, g *tensor.Tensor) []*tensor.Tensor {
			a := attrs.(ReduceAttrs)
			xs := in[0].Shape()
			return []*tensor.Tensor{BroadcastTo(Reshape(g, keptShape(xs, a)...), xs...)}
		},
	})
	registerNumbers(SumPrim, numberType.sum)
	// Float32 sums have a vectorised path.
	register[float32](SumPrim, sumKernel(sumF32))
}

// sumKernel returns ReduceSum's kernel for T; fast, when not nil, is a
// vectorised sum for the layouts it handles (it reports whether it did).
func sumKernel[T tensor.Number](fast func(o, x []T, xs tensor.Shape, axes []int) bool) core.KernelFunc {
	return func(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
		axes := attrs.(ReduceAttrs).Axes
		xs := in[0].Shape()
		x, o := in[0].Data().([]T), out.Data().([]T)
		clear(o)
		if fast != nil && fast(o, x, xs, axes) {
			return
		}
		reduceInto(o, x, xs, axes, func(a, v T) T { return a + v })
	}
}

// Sum returns the sum of x over the given axes (all axes when none are
// given), dropping them. Negative axes count from the end.
func Sum(x *tensor.Tensor, axes ...int) *tensor.Tensor {
	return core.Apply(SumPrim, reduceAttrs("ReduceSum", x.Rank(), false, axes), x)
}

// SumKeepDims is Sum keeping the folded axes with extent 1.
func SumKeepDims(x *tensor.Tensor, axes ...int) *tensor.Tensor {
	return core.Apply(SumPrim, reduceAttrs("ReduceSum", x.Rank(), true, axes), x)
}

// sumF32 sums float32 over trailing axes (rows: pairwise vectorised sums)
// or leading axes (vectorised row accumulation), reporting whether the
// layout was one of those.
func sumF32(o, x []float32, xs tensor.Shape, axes []int) bool {
	if len(x) == 0 || len(o) == 0 {
		return false
	}
	r := len(xs)
	trailing, leading := true, true
	for i, a := range axes {
		trailing = trailing && a == r-len(axes)+i
		leading = leading && a == i
	}
	switch {
	case trailing:
		inner := len(x) / len(o)
		for i := range o {
			o[i] = vec.Sum(x[i*inner : (i+1)*inner])
		}
	case leading:
		n := len(o)
		for i := 0; i < len(x); i += n {
			vec.Add(o, o, x[i:i+n])
		}
	default:
		return false
	}
	return true
}
