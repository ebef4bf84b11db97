// Package optest is the shared catalogue of primitive test cases: for every
// primitive of package ops, a function that applies it and deterministic
// inputs in its domain. Tests that must hold for every primitive (forward
// mode agrees with reverse mode, Vmap equals a loop, every elementwise op
// fuses) range over Cases instead of keeping lists of their own; a test of
// this package fails when an ops.XxxPrim handle has no case.
package optest

import (
	"math"

	"github.com/sporeml/spore/comm"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Case is one primitive applied to concrete inputs.
type Case struct {
	// Prim is the primitive under test; Name names the case (a primitive
	// may have several, e.g. with and without broadcasting).
	Prim *core.Prim
	Name string
	// Fn applies the primitive (through its public op, or core.Apply with
	// attributes for the internal ones such as gradients). For a
	// multi-result primitive it returns result Out of FnN.
	Fn func(xs ...*tensor.Tensor) *tensor.Tensor
	// FnN is set for multi-result primitives and returns every result.
	FnN func(xs ...*tensor.Tensor) []*tensor.Tensor
	// Inputs returns deterministic inputs in the op's domain for the
	// floating-point dtype dt (Float32 or Float64); integer inputs
	// (indices, labels) keep their integer dtype.
	Inputs func(dt tensor.DType) []*tensor.Tensor
	// Differentiable says whether the primitive has a gradient; Diff lists
	// the inputs it is differentiable in (floating-point inputs the
	// gradient reaches).
	Differentiable bool
	Diff           []int
}

// Vals returns a tensor of dtype dt and the given shape whose elements are
// distinct, deterministic values in [lo, hi): a low-discrepancy sequence
// started at seed, so that no two elements tie (maxima, sorts and kinks are
// then well defined and away from ties).
func Vals(dt tensor.DType, lo, hi float64, seed int, shape ...int) *tensor.Tensor {
	n := tensor.Shape(shape).Size()
	v := make([]float64, n)
	for i := range v {
		f := float64(i+seed+1) * 0.6180339887498949
		v[i] = lo + (hi-lo)*(f-math.Floor(f))
	}
	return FromFloat64s(dt, v, shape...)
}

// FromFloat64s converts v to a tensor of dtype dt.
func FromFloat64s(dt tensor.DType, v []float64, shape ...int) *tensor.Tensor {
	switch dt {
	case tensor.Float32:
		f := make([]float32, len(v))
		for i, x := range v {
			f[i] = float32(x)
		}
		return tensor.FromSlice(f, shape...)
	case tensor.Float64:
		return tensor.FromSlice(append([]float64(nil), v...), shape...)
	case tensor.Int32:
		f := make([]int32, len(v))
		for i, x := range v {
			f[i] = int32(x)
		}
		return tensor.FromSlice(f, shape...)
	case tensor.Int64:
		f := make([]int64, len(v))
		for i, x := range v {
			f[i] = int64(x)
		}
		return tensor.FromSlice(f, shape...)
	}
	panic("optest: unsupported dtype " + dt.String())
}

// ints returns an Int32 tensor.
func ints(v []int32, shape ...int) *tensor.Tensor { return tensor.FromSlice(v, shape...) }

// in builds an Inputs function from per-input generators.
func in(gens ...func(dt tensor.DType) *tensor.Tensor) func(tensor.DType) []*tensor.Tensor {
	return func(dt tensor.DType) []*tensor.Tensor {
		out := make([]*tensor.Tensor, len(gens))
		for i, g := range gens {
			out[i] = g(dt)
		}
		return out
	}
}

// u returns a generator of values in [lo, hi) of the given shape.
func u(lo, hi float64, seed int, shape ...int) func(tensor.DType) *tensor.Tensor {
	return func(dt tensor.DType) *tensor.Tensor { return Vals(dt, lo, hi, seed, shape...) }
}

// fixed returns a generator ignoring dt.
func fixed(t func() *tensor.Tensor) func(tensor.DType) *tensor.Tensor {
	return func(tensor.DType) *tensor.Tensor { return t() }
}

// boolOf returns a generator of a Bool tensor: x > 0 for the values of u.
func boolOf(seed int, shape ...int) func(tensor.DType) *tensor.Tensor {
	return func(tensor.DType) *tensor.Tensor {
		return ops.Greater(Vals(tensor.Float64, -1, 1, seed, shape...), tensor.Scalar(0.0))
	}
}

func un(p *core.Prim, f func(*tensor.Tensor) *tensor.Tensor, lo, hi float64, diff bool) Case {
	c := Case{Prim: p, Name: p.Name, Fn: func(xs ...*tensor.Tensor) *tensor.Tensor { return f(xs[0]) },
		Inputs: in(u(lo, hi, 0, 2, 3)), Differentiable: diff}
	if diff {
		c.Diff = []int{0}
	}
	return c
}

func bin(p *core.Prim, f func(a, b *tensor.Tensor) *tensor.Tensor, lo, hi float64, diff []int) []Case {
	fn := func(xs ...*tensor.Tensor) *tensor.Tensor { return f(xs[0], xs[1]) }
	d := len(diff) > 0
	return []Case{
		{Prim: p, Name: p.Name, Fn: fn, Inputs: in(u(lo, hi, 0, 2, 3), u(lo, hi, 7, 2, 3)), Differentiable: d, Diff: diff},
		// Broadcasting both ways: [2, 1] against [3].
		{Prim: p, Name: p.Name + "/broadcast", Fn: fn, Inputs: in(u(lo, hi, 3, 2, 1), u(lo, hi, 11, 3)), Differentiable: d, Diff: diff},
	}
}

func pool() ops.PoolAttrs { return ops.PoolAttrs{Kernel: [2]int{2, 2}, Stride: [2]int{1, 1}} }

func conv() ops.ConvAttrs {
	return ops.ConvAttrs{Stride: [2]int{1, 1}, Pads: [4]int{1, 0, 0, 1}, Dilation: [2]int{1, 1}, Groups: 1}
}

// Cases returns the catalogue: at least one case for every primitive of
// package ops.
func Cases() []Case {
	var cs []Case
	add := func(c ...Case) { cs = append(cs, c...) }
	// Unary elementwise ops, each on a domain where it is smooth.
	add(
		un(ops.NegPrim, ops.Neg, -2, 2, true),
		un(ops.ExpPrim, ops.Exp, -2, 2, true),
		un(ops.LogPrim, ops.Log, 0.5, 3, true),
		un(ops.TanhPrim, ops.Tanh, -2, 2, true),
		un(ops.ReluPrim, ops.ReLU, -2, 2, true),
		un(ops.AbsPrim, ops.Abs, -2, 2, true),
		un(ops.SignPrim, ops.Sign, -2, 2, false),
		un(ops.Log1pPrim, ops.Log1p, -0.5, 2, true),
		un(ops.SqrtPrim, ops.Sqrt, 0.5, 3, true),
		un(ops.RsqrtPrim, ops.Rsqrt, 0.5, 3, true),
		un(ops.SquarePrim, ops.Square, -2, 2, true),
		un(ops.ReciprocalPrim, ops.Reciprocal, 0.5, 3, true),
		un(ops.SinPrim, ops.Sin, -2, 2, true),
		un(ops.CosPrim, ops.Cos, -2, 2, true),
		un(ops.TanPrim, ops.Tan, -1.2, 1.2, true),
		un(ops.AsinPrim, ops.Asin, -0.8, 0.8, true),
		un(ops.AcosPrim, ops.Acos, -0.8, 0.8, true),
		un(ops.AtanPrim, ops.Atan, -2, 2, true),
		un(ops.SinhPrim, ops.Sinh, -2, 2, true),
		un(ops.CoshPrim, ops.Cosh, -2, 2, true),
		un(ops.AsinhPrim, ops.Asinh, -2, 2, true),
		un(ops.AcoshPrim, ops.Acosh, 1.2, 3, true),
		un(ops.AtanhPrim, ops.Atanh, -0.8, 0.8, true),
		un(ops.SigmoidPrim, ops.Sigmoid, -2, 2, true),
		un(ops.ErfPrim, ops.Erf, -2, 2, true),
		un(ops.GeluPrim, ops.GELU, -2, 2, true),
		un(ops.SoftplusPrim, ops.Softplus, -2, 2, true),
		un(ops.FloorPrim, ops.Floor, -2.9, 2.9, true),
		un(ops.CeilPrim, ops.Ceil, -2.9, 2.9, true),
		un(ops.RoundPrim, ops.Round, -2.9, 2.9, true),
		un(ops.TruncPrim, ops.Trunc, -2.9, 2.9, true),
		un(ops.CastPrim, func(x *tensor.Tensor) *tensor.Tensor {
			// A float-to-float cast: to the other float dtype and back
			// would be two casts; one cast to Float64 is differentiable
			// from both float dtypes.
			return ops.Cast(x, tensor.Float64)
		}, -2, 2, true),
		un(ops.ClipPrim, func(x *tensor.Tensor) *tensor.Tensor { return ops.Clip(x, -0.95, 1.05) }, -2, 2, true),
	)
	// Binary elementwise ops.
	add(bin(ops.AddPrim, ops.Add, -2, 2, []int{0, 1})...)
	add(bin(ops.SubPrim, ops.Sub, -2, 2, []int{0, 1})...)
	add(bin(ops.MulPrim, ops.Mul, -2, 2, []int{0, 1})...)
	add(bin(ops.DivPrim, ops.Div, 0.5, 3, []int{0, 1})...)
	add(bin(ops.PowPrim, ops.Pow, 0.5, 2, []int{0, 1})...)
	add(bin(ops.MaximumPrim, ops.Maximum, -2, 2, []int{0, 1})...)
	add(bin(ops.MinimumPrim, ops.Minimum, -2, 2, []int{0, 1})...)
	add(bin(ops.FloorDivPrim, ops.FloorDiv, 0.5, 3, []int{0, 1})...)
	add(bin(ops.FloorModPrim, ops.Mod, 0.5, 3, []int{0, 1})...)
	add(bin(ops.ReluGradPrim, func(x, g *tensor.Tensor) *tensor.Tensor {
		return core.Apply(ops.ReluGradPrim, nil, x, g)
	}, -1, 2, []int{1})...)
	// Comparisons and logic: Bool results, no gradient.
	for _, p := range []struct {
		p *core.Prim
		f func(a, b *tensor.Tensor) *tensor.Tensor
	}{{ops.EqualPrim, ops.Equal}, {ops.NotEqualPrim, ops.NotEqual}, {ops.LessPrim, ops.Less},
		{ops.LessEqualPrim, ops.LessEqual}, {ops.GreaterPrim, ops.Greater}, {ops.GreaterEqualPrim, ops.GreaterEqual}} {
		add(bin(p.p, p.f, -2, 2, nil)...)
	}
	for _, p := range []struct {
		p *core.Prim
		f func(a, b *tensor.Tensor) *tensor.Tensor
	}{{ops.LogicalAndPrim, ops.LogicalAnd}, {ops.LogicalOrPrim, ops.LogicalOr}} {
		f := p.f
		add(Case{Prim: p.p, Name: p.p.Name, Fn: func(xs ...*tensor.Tensor) *tensor.Tensor { return f(xs[0], xs[1]) },
			Inputs: in(boolOf(0, 2, 3), boolOf(5, 2, 3))})
	}
	// Bitwise ops and shifts: integers, no gradient (shifts take unsigned
	// integers, as ONNX's BitShift).
	i32s := func(seed int) func(tensor.DType) *tensor.Tensor {
		return fixed(func() *tensor.Tensor { return Vals(tensor.Int32, -50, 50, seed, 2, 3) })
	}
	for _, p := range []struct {
		p *core.Prim
		f func(a, b *tensor.Tensor) *tensor.Tensor
	}{{ops.BitwiseAndPrim, ops.BitwiseAnd}, {ops.BitwiseOrPrim, ops.BitwiseOr}, {ops.BitwiseXorPrim, ops.BitwiseXor}} {
		f := p.f
		add(Case{Prim: p.p, Name: p.p.Name, Fn: func(xs ...*tensor.Tensor) *tensor.Tensor { return f(xs[0], xs[1]) },
			Inputs: in(i32s(0), i32s(5))})
	}
	add(Case{Prim: ops.BitwiseNotPrim, Name: "BitwiseNot", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor { return ops.BitwiseNot(xs[0]) },
		Inputs: in(i32s(0))})
	u8s := func(v ...uint8) func(tensor.DType) *tensor.Tensor {
		return fixed(func() *tensor.Tensor { return tensor.FromSlice(v, 2, 3) })
	}
	for _, p := range []struct {
		p *core.Prim
		f func(a, b *tensor.Tensor) *tensor.Tensor
	}{{ops.ShiftLeftPrim, ops.ShiftLeft}, {ops.ShiftRightPrim, ops.ShiftRight}} {
		f := p.f
		add(Case{Prim: p.p, Name: p.p.Name, Fn: func(xs ...*tensor.Tensor) *tensor.Tensor { return f(xs[0], xs[1]) },
			Inputs: in(u8s(1, 16, 255, 7, 128, 3), u8s(0, 1, 3, 7, 2, 5))})
	}
	add(un(ops.TruncBFloat16Prim, ops.TruncBFloat16, -2, 2, false))
	add(Case{Prim: ops.LogicalNotPrim, Name: "LogicalNot", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor { return ops.LogicalNot(xs[0]) },
		Inputs: in(boolOf(0, 2, 3))})
	add(Case{Prim: ops.SelectPrim, Name: "Select", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor { return ops.Select(xs[0], xs[1], xs[2]) },
		Inputs: in(boolOf(0, 2, 3), u(-2, 2, 1, 2, 3), u(-2, 2, 9, 3)), Differentiable: true, Diff: []int{1, 2}})
	add(Case{Prim: ops.ClipTensorPrim, Name: "ClipTensor", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor { return ops.ClipTensor(xs[0], xs[1], xs[2]) },
		Inputs: in(u(-2, 2, 0, 2, 3), u(-1.5, -0.5, 4, 3), u(0.5, 1.5, 8, 2, 1)), Differentiable: true, Diff: []int{0, 1, 2}})
	// Shape and layout.
	add(
		Case{Prim: ops.ReshapePrim, Name: "Reshape", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor { return ops.Reshape(xs[0], 3, 2) },
			Inputs: in(u(-2, 2, 0, 2, 3)), Differentiable: true, Diff: []int{0}},
		Case{Prim: ops.BroadcastToPrim, Name: "BroadcastTo", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor { return ops.BroadcastTo(xs[0], 2, 4, 3) },
			Inputs: in(u(-2, 2, 0, 4, 1)), Differentiable: true, Diff: []int{0}},
		Case{Prim: ops.TransposePrim, Name: "Transpose", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor { return ops.Transpose(xs[0], 2, 0, 1) },
			Inputs: in(u(-2, 2, 0, 2, 3, 4)), Differentiable: true, Diff: []int{0}},
		Case{Prim: ops.ConcatPrim, Name: "Concat", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor { return ops.Concat(1, xs...) },
			Inputs: in(u(-2, 2, 0, 2, 3), u(-2, 2, 5, 2, 1), u(-2, 2, 9, 2, 2)), Differentiable: true, Diff: []int{0, 1, 2}},
		Case{Prim: ops.StridedSlicePrim, Name: "StridedSlice", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor {
			return ops.StridedSlice(xs[0], []int{3, 0}, []int{0, 5}, []int{-1, 2})
		}, Inputs: in(u(-2, 2, 0, 4, 5)), Differentiable: true, Diff: []int{0}},
		Case{Prim: ops.StridedSliceGradPrim, Name: "StridedSliceGrad", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor {
			return ops.Pad(xs[0], [][2]int{{1, 0}, {0, 2}})
		}, Inputs: in(u(-2, 2, 0, 2, 3)), Differentiable: true, Diff: []int{0}},
		Case{Prim: ops.UnstackPrim, Name: "Unstack",
			FnN:    func(xs ...*tensor.Tensor) []*tensor.Tensor { return ops.Unstack(xs[0], 1) },
			Fn:     func(xs ...*tensor.Tensor) *tensor.Tensor { return ops.Unstack(xs[0], 1)[1] },
			Inputs: in(u(-2, 2, 0, 2, 3)), Differentiable: true, Diff: []int{0}},
	)
	// Indexing.
	idx := fixed(func() *tensor.Tensor { return ints([]int32{2, 0, -1, 2}, 2, 2) })
	along := fixed(func() *tensor.Tensor { return ints([]int32{2, 0, 1, 1, 0, 0}, 2, 3) })
	add(
		Case{Prim: ops.GatherPrim, Name: "Gather", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor { return ops.Gather(xs[0], xs[1], 1) },
			Inputs: in(u(-2, 2, 0, 2, 3), idx), Differentiable: true, Diff: []int{0}},
		Case{Prim: ops.GatherGradPrim, Name: "GatherGrad", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor {
			return core.Apply(ops.GatherGradPrim, ops.ScatterAttrs{Axis: 1, Extent: 3}, xs[0], xs[1])
		}, Inputs: in(u(-2, 2, 0, 2, 2, 2), idx), Differentiable: true, Diff: []int{0}},
		Case{Prim: ops.ResizePrim, Name: "Resize linear", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor { return ops.Resize(xs[0], resizeLinear) },
			Inputs: in(u(-2, 2, 0, 2, 3)), Differentiable: true, Diff: []int{0}},
		Case{Prim: ops.ResizePrim, Name: "Resize nearest", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor { return ops.Resize(xs[0], resizeNearest) },
			Inputs: in(u(-2, 2, 0, 2, 3)), Differentiable: true, Diff: []int{0}},
		Case{Prim: ops.ResizeGradPrim, Name: "ResizeGrad", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor {
			return core.Apply(ops.ResizeGradPrim, resizeLinear, xs[0])
		}, Inputs: in(u(-2, 2, 0, 3, 5)), Differentiable: true, Diff: []int{0}},
		Case{Prim: ops.TakeAlongAxisPrim, Name: "TakeAlongAxis", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor { return ops.TakeAlongAxis(xs[0], xs[1], 0) },
			Inputs: in(u(-2, 2, 0, 3, 3), along), Differentiable: true, Diff: []int{0}},
		Case{Prim: ops.TakeAlongAxisGradPrim, Name: "TakeAlongAxisGrad", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor {
			return core.Apply(ops.TakeAlongAxisGradPrim, ops.ScatterAttrs{Axis: 0, Extent: 3}, xs[0], xs[1])
		}, Inputs: in(u(-2, 2, 0, 2, 3), along), Differentiable: true, Diff: []int{0}},
		Case{Prim: ops.OneHotPrim, Name: "OneHot", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor { return ops.OneHot(xs[0], 4, tensor.Float64) },
			Inputs: in(fixed(func() *tensor.Tensor { return ints([]int32{0, 3, 1}, 3) }))},
		Case{Prim: ops.CheckIndicesPrim, Name: "CheckIndices", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor {
			return core.Apply(ops.CheckIndicesPrim, ops.IndexCheckAttrs{Op: "Gather", Axis: 0, Extent: 3}, xs[0])
		}, Inputs: in(idx)},
		Case{Prim: ops.CheckLabelsPrim, Name: "CheckLabels", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor {
			return ops.CheckLabels("CrossEntropy", tensor.Zeros(tensor.Float32, 3, 4), xs[0])
		}, Inputs: in(fixed(func() *tensor.Tensor { return ints([]int32{0, 3, 1}, 3) }))},
	)
	// Reductions.
	red := func(p *core.Prim, f func(*tensor.Tensor) *tensor.Tensor, lo, hi float64, diff bool) Case {
		c := Case{Prim: p, Name: p.Name, Fn: func(xs ...*tensor.Tensor) *tensor.Tensor { return f(xs[0]) },
			Inputs: in(u(lo, hi, 0, 2, 3, 2)), Differentiable: diff}
		if diff {
			c.Diff = []int{0}
		}
		return c
	}
	add(
		red(ops.SumPrim, func(x *tensor.Tensor) *tensor.Tensor { return ops.Sum(x, 1) }, -2, 2, true),
		red(ops.MaxPrim, func(x *tensor.Tensor) *tensor.Tensor { return ops.Max(x, 0, 2) }, -2, 2, true),
		red(ops.MinPrim, func(x *tensor.Tensor) *tensor.Tensor { return ops.MinKeepDims(x, 1) }, -2, 2, true),
		red(ops.ProdPrim, func(x *tensor.Tensor) *tensor.Tensor { return ops.Prod(x, 1) }, 0.5, 1.5, true),
		red(ops.ArgMaxPrim, func(x *tensor.Tensor) *tensor.Tensor { return ops.ArgMax(x, 1) }, -2, 2, false),
		red(ops.ArgMinPrim, func(x *tensor.Tensor) *tensor.Tensor { return ops.ArgMin(x, 2) }, -2, 2, false),
		red(ops.ArgSortPrim, func(x *tensor.Tensor) *tensor.Tensor { return ops.ArgSort(x, 1, true) }, -2, 2, false),
		red(ops.ArgTopKPrim, func(x *tensor.Tensor) *tensor.Tensor { _, i := ops.TopK(x, 1); return i }, -2, 2, false),
		red(ops.CumSumPrim, func(x *tensor.Tensor) *tensor.Tensor { return ops.CumSum(x, 1, true, true) }, -2, 2, true),
		red(ops.CumProdPrim, func(x *tensor.Tensor) *tensor.Tensor { return ops.CumProd(x, 1) }, -2, 2, true),
		Case{Prim: ops.AnyPrim, Name: "ReduceAny", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor { return ops.Any(xs[0], 1) },
			Inputs: in(boolOf(0, 2, 3))},
		Case{Prim: ops.AllPrim, Name: "ReduceAll", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor { return ops.All(xs[0], 0) },
			Inputs: in(boolOf(0, 2, 3))},
		Case{Prim: ops.LinearRecurrencePrim, Name: "LinearRecurrence", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor {
			return core.Apply(ops.LinearRecurrencePrim, ops.RecurrenceAttrs{Axis: 1}, xs[0], xs[1])
		}, Inputs: in(u(-1.5, 1.5, 0, 2, 4), u(-2, 2, 5, 2, 4)), Differentiable: true, Diff: []int{0, 1}},
		Case{Prim: ops.LinearRecurrencePrim, Name: "LinearRecurrence/reverse", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor {
			return core.Apply(ops.LinearRecurrencePrim, ops.RecurrenceAttrs{Axis: 0, Reverse: true}, xs[0], xs[1])
		}, Inputs: in(u(-1.5, 1.5, 0, 4, 2), u(-2, 2, 5, 4, 2)), Differentiable: true, Diff: []int{0, 1}},
	)
	// Linear algebra, convolution and pooling.
	ca := conv()
	x4 := u(-2, 2, 0, 1, 2, 4, 4)
	add(
		Case{Prim: ops.MatMulPrim, Name: "MatMul", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor { return ops.MatMul(xs[0], xs[1]) },
			Inputs: in(u(-2, 2, 0, 2, 3), u(-2, 2, 5, 3, 4)), Differentiable: true, Diff: []int{0, 1}},
		Case{Prim: ops.MatMulPrim, Name: "MatMul/transposed-batched", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor {
			return ops.MatMulT(xs[0], xs[1], true, true)
		}, Inputs: in(u(-2, 2, 0, 2, 3, 2), u(-2, 2, 5, 4, 3)), Differentiable: true, Diff: []int{0, 1}},
		Case{Prim: ops.Conv2DPrim, Name: "Conv2D", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor {
			return ops.Conv2D(xs[0], xs[1], ops.Conv2DOpts{Padding: ops.ExplicitPad(1, 0, 0, 1)})
		}, Inputs: in(x4, u(-1, 1, 3, 3, 2, 2, 2)), Differentiable: true, Diff: []int{0, 1}},
		Case{Prim: ops.Conv2DBackpropInputPrim, Name: "Conv2DBackpropInput", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor {
			return ops.Conv2DBackpropInput(xs[0], xs[1], ops.ConvGradAttrs{ConvAttrs: ca, Shape: tensor.Shape{1, 2, 4, 4}})
		}, Inputs: in(u(-2, 2, 0, 1, 3, 4, 4), u(-1, 1, 3, 3, 2, 2, 2)), Differentiable: true, Diff: []int{0, 1}},
		Case{Prim: ops.Conv2DBackpropFilterPrim, Name: "Conv2DBackpropFilter", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor {
			return ops.Conv2DBackpropFilter(xs[0], xs[1], ops.ConvGradAttrs{ConvAttrs: ca, Shape: tensor.Shape{3, 2, 2, 2}})
		}, Inputs: in(x4, u(-2, 2, 3, 1, 3, 4, 4)), Differentiable: true, Diff: []int{0, 1}},
		Case{Prim: ops.MaxPoolPrim, Name: "MaxPool2D", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor {
			return ops.MaxPool2D(xs[0], [2]int{2, 2}, [2]int{1, 1})
		}, Inputs: in(x4), Differentiable: true, Diff: []int{0}},
		Case{Prim: ops.MaxPoolGradPrim, Name: "MaxPool2DGrad", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor {
			return core.Apply(ops.MaxPoolGradPrim, pool(), xs[0], xs[1])
		}, Inputs: in(x4, u(-2, 2, 5, 1, 2, 3, 3)), Differentiable: true, Diff: []int{1}},
		Case{Prim: ops.MaxPoolGatherPrim, Name: "MaxPool2DGather", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor {
			return core.Apply(ops.MaxPoolGatherPrim, pool(), xs[0], xs[1])
		}, Inputs: in(x4, u(-2, 2, 5, 1, 2, 4, 4)), Differentiable: true, Diff: []int{1}},
		Case{Prim: ops.AvgPoolPrim, Name: "AvgPool2D", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor {
			return ops.AvgPool2D(xs[0], [2]int{2, 2}, [2]int{2, 1}, ops.SamePad())
		}, Inputs: in(x4), Differentiable: true, Diff: []int{0}},
		Case{Prim: ops.AvgPoolGradPrim, Name: "AvgPool2DGrad", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor {
			a := pool()
			a.Shape = tensor.Shape{1, 2, 4, 4}
			return core.Apply(ops.AvgPoolGradPrim, a, xs[0])
		}, Inputs: in(u(-2, 2, 5, 1, 2, 3, 3)), Differentiable: true, Diff: []int{0}},
	)
	// Collectives: in one process (the default build) an all-reduce is the
	// identity, and its gradient the same all-reduce of the cotangent.
	for _, op := range []comm.ReduceOp{comm.Sum, comm.Mean} {
		add(Case{Prim: comm.AllReducePrim, Name: "AllReduce/" + op.String(), Fn: func(xs ...*tensor.Tensor) *tensor.Tensor {
			return comm.AllReduce(xs[0], op)
		}, Inputs: in(u(-2, 2, 0, 2, 3)), Differentiable: true, Diff: []int{0}})
	}
	for _, c := range []struct {
		p  *core.Prim
		fn func(*tensor.Tensor) *tensor.Tensor
	}{
		{comm.BroadcastPrim, func(x *tensor.Tensor) *tensor.Tensor { return comm.Broadcast(x, 0) }},
		{comm.ReducePrim, func(x *tensor.Tensor) *tensor.Tensor { return comm.Reduce(x, 0) }},
		{comm.AllGatherPrim, comm.AllGather},
		{comm.ReduceScatterPrim, comm.ReduceScatter},
	} {
		add(Case{Prim: c.p, Name: c.p.Name, Fn: func(xs ...*tensor.Tensor) *tensor.Tensor { return c.fn(xs[0]) },
			Inputs: in(u(-2, 2, 0, 2, 3)), Differentiable: true, Diff: []int{0}})
	}
	// Randomness: the mask does not depend on its input's values.
	add(Case{Prim: ops.RandomMaskPrim, Name: "RandomMask", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor {
		return core.Apply(ops.RandomMaskPrim, ops.RandomMaskAttrs{P: 0.5, Seed: 7}, xs[0])
	}, Inputs: in(u(-2, 2, 0, 2, 3))})
	add(Case{Prim: ops.RandomUniformLikePrim, Name: "RandomUniformLike", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor {
		return ops.RandomUniformLikeSeeded(xs[0], -1, 1, 7)
	}, Inputs: in(u(-2, 2, 0, 2, 3))})
	add(Case{Prim: ops.AttentionSeedPrim, Name: "AttentionSeed", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor {
		return core.Apply(ops.AttentionSeedPrim, nil, xs[0])
	}, Inputs: in(u(-2, 2, 0, 2, 3))})
	// Attention: an additive mask and the causal triangle, so that every
	// operand and the masked positions take part; the gradient primitive
	// also returns the scores' gradient.
	qkv := in(u(-2, 2, 0, 2, 3, 4), u(-2, 2, 5, 2, 5, 4), u(-1, 1, 9, 2, 5, 3), u(-1, 1, 13, 3, 5))
	attn := ops.AttentionAttrs{Scale: 0.6, Causal: true, HasMask: true}
	add(Case{Prim: ops.ScaledDotProductAttentionPrim, Name: "ScaledDotProductAttention",
		Fn: func(xs ...*tensor.Tensor) *tensor.Tensor {
			return ops.ScaledDotProductAttention(xs[0], xs[1], xs[2], ops.AttentionOptions{Mask: xs[3], Causal: true, Scale: 0.6})
		},
		FnN: func(xs ...*tensor.Tensor) []*tensor.Tensor {
			return core.ApplyN(ops.ScaledDotProductAttentionPrim, attn, xs...)
		},
		Inputs: qkv, Differentiable: true, Diff: []int{0, 1, 2, 3}})
	attnGrad := attn
	attnGrad.MaskGrad = true
	add(Case{Prim: ops.ScaledDotProductAttentionGradPrim, Name: "ScaledDotProductAttentionGrad",
		Fn: func(xs ...*tensor.Tensor) *tensor.Tensor {
			return core.ApplyN(ops.ScaledDotProductAttentionGradPrim, attnGrad, xs...)[0]
		},
		FnN: func(xs ...*tensor.Tensor) []*tensor.Tensor {
			return core.ApplyN(ops.ScaledDotProductAttentionGradPrim, attnGrad, xs...)
		},
		// q, k, v, out, lse, dout, dlse, mask.
		Inputs: in(u(-2, 2, 0, 2, 3, 4), u(-2, 2, 5, 2, 5, 4), u(-1, 1, 9, 2, 5, 3), u(-1, 1, 17, 2, 3, 3),
			u(0.5, 1.5, 21, 2, 3), u(-1, 1, 25, 2, 3, 3), u(-1, 1, 29, 2, 3), u(-1, 1, 13, 3, 5)),
		Differentiable: true, Diff: []int{0, 1, 2, 3, 4, 5, 6, 7}})
	// Self-attention on a packed projection [N, L, 3·H·D] (N 2, L 3, H 2,
	// D 2) with an additive mask, and its gradient primitive (qkv, out,
	// lse, dout, dlse, mask).
	packed := ops.AttentionAttrs{Scale: 0.6, Causal: true, HasMask: true, Packed: 2}
	add(Case{Prim: ops.ScaledDotProductAttentionPrim, Name: "ScaledDotProductAttention/packed",
		Fn: func(xs ...*tensor.Tensor) *tensor.Tensor {
			return ops.PackedSelfAttention(xs[0], 2, false, ops.AttentionOptions{Mask: xs[1], Causal: true, Scale: 0.6})
		},
		FnN: func(xs ...*tensor.Tensor) []*tensor.Tensor {
			return core.ApplyN(ops.ScaledDotProductAttentionPrim, packed, xs...)
		},
		Inputs: in(u(-2, 2, 0, 2, 3, 12), u(-1, 1, 13, 2, 1, 3, 3)), Differentiable: true, Diff: []int{0, 1}})
	packedGrad := packed
	packedGrad.MaskGrad = true
	add(Case{Prim: ops.ScaledDotProductAttentionGradPrim, Name: "ScaledDotProductAttentionGrad/packed",
		Fn: func(xs ...*tensor.Tensor) *tensor.Tensor {
			return core.ApplyN(ops.ScaledDotProductAttentionGradPrim, packedGrad, xs...)[0]
		},
		FnN: func(xs ...*tensor.Tensor) []*tensor.Tensor {
			return core.ApplyN(ops.ScaledDotProductAttentionGradPrim, packedGrad, xs...)
		},
		Inputs: in(u(-2, 2, 0, 2, 3, 12), u(-1, 1, 17, 2, 3, 4), u(0.5, 1.5, 21, 2, 2, 3), u(-1, 1, 25, 2, 3, 4),
			u(-1, 1, 29, 2, 2, 3), u(-1, 1, 13, 2, 1, 3, 3)),
		Differentiable: true, Diff: []int{0, 1, 2, 3, 4, 5}})
	// Layer normalisation over the last two axes, and its gradient
	// primitive (x, gamma, dy).
	ln := ops.LayerNormAttrs{Begin: 1, Eps: 1e-3}
	add(Case{Prim: ops.LayerNormPrim, Name: "LayerNorm", Fn: func(xs ...*tensor.Tensor) *tensor.Tensor {
		return ops.LayerNorm(xs[0], xs[1], xs[2], 1, 1e-3)
	}, Inputs: in(u(-2, 2, 0, 2, 3, 4), u(0.5, 1.5, 3, 3, 4), u(-1, 1, 7, 3, 4)), Differentiable: true, Diff: []int{0, 1, 2}})
	add(Case{Prim: ops.LayerNormGradPrim, Name: "LayerNormGrad",
		Fn: func(xs ...*tensor.Tensor) *tensor.Tensor {
			return core.ApplyN(ops.LayerNormGradPrim, ln, xs...)[0]
		},
		FnN: func(xs ...*tensor.Tensor) []*tensor.Tensor {
			return core.ApplyN(ops.LayerNormGradPrim, ln, xs...)
		},
		Inputs: in(u(-2, 2, 0, 2, 3, 4), u(0.5, 1.5, 3, 3, 4), u(-1, 1, 11, 2, 3, 4)), Differentiable: true, Diff: []int{0, 1, 2}})
	return append(cs, defaultCases(cs)...)
}

// defaultCases covers the elementwise primitives that no case above names:
// applied to inputs in [-2, 2) (of one or two operands, whichever the op
// takes), differentiable where the op has a VJP. So a new elementwise op
// whose domain is the whole real line needs no edit here to be checked by
// every test that ranges over the catalogue; one with a narrower domain
// gets an explicit case above.
func defaultCases(named []Case) []Case {
	covered := map[*core.Prim]bool{}
	for _, c := range named {
		covered[c.Prim] = true
	}
	var cs []Case
	for _, p := range core.Prims() {
		if covered[p] || !p.Traits.Elementwise || p.Elementwise == nil {
			continue
		}
		for arity := 1; arity <= 2; arity++ {
			gens := make([]func(tensor.DType) *tensor.Tensor, arity)
			diff := make([]int, arity)
			for k := range gens {
				gens[k] = u(-2, 2, 7*k, 2, 3)
				diff[k] = k
			}
			if !accepts(p, in(gens...)(tensor.Float64)) {
				continue
			}
			c := Case{Prim: p, Name: p.Name, Inputs: in(gens...), Differentiable: p.VJP != nil,
				Fn: func(xs ...*tensor.Tensor) *tensor.Tensor { return core.Apply(p, nil, xs...) }}
			if c.Differentiable {
				c.Diff = diff
			}
			cs = append(cs, c)
			break
		}
	}
	return cs
}

// accepts reports whether p's shape and dtype inference takes xs without
// attributes.
func accepts(p *core.Prim, xs []*tensor.Tensor) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	p.Meta(nil, xs)
	return true
}

// resizeLinear resizes [2 3] to [3 5] linearly along both axes, and
// resizeNearest the last axis of [2 3] to 4 (tables as ONNX's Resize
// builds them, written out).
var (
	resizeLinear = ops.ResizeAttrs{Linear: true, Axes: []ops.ResizeAxis{
		{Axis: 0, In: 2, I0: []int32{0, 0, 1}, I1: []int32{1, 1, 1}, W0: []float32{1, 0.5, 1}, W1: []float32{0, 0.5, 0}},
		{Axis: 1, In: 3, I0: []int32{0, 0, 1, 1, 2}, I1: []int32{1, 1, 2, 2, 2}, W0: []float32{1, 0.3, 0.9, 0.1, 1}, W1: []float32{0, 0.7, 0.1, 0.9, 0}},
	}}
	resizeNearest = ops.ResizeAttrs{Axes: []ops.ResizeAxis{{Axis: 1, In: 3, I0: []int32{0, 1, 1, 2}}}}
)
