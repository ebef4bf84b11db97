package ops

import (
	"fmt"
	"math"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/kernels/vec"
	"github.com/sporeml/spore/tensor"
)

// Rounding and clipping: Floor, Ceil, Round, Trunc, FloorDiv, Mod (Python's
// floor semantics), Clip and ClipTensor.

var FloorPrim, CeilPrim, RoundPrim, TruncPrim, FloorDivPrim, FloorModPrim, ClipPrim, ClipTensorPrim *core.Prim

// zeroGrad is the gradient of a piecewise-constant op. It is a zeros
// tensor rather than nil, as in PyTorch, so that a chain through the op
// still reaches its inputs (with zeros) instead of cutting the tape.
func zeroGrad(x, _, _ *tensor.Tensor) *tensor.Tensor { return ZerosLike(x) }

// identity is the integer kernel of the rounding ops: integers are already
// whole, so rounding them changes nothing (PyTorch's behaviour).
func identity[T any](x T) T { return x }

func init() {
	FloorPrim = defUnary("Floor", 1, unary{
		f32: viaF64(math.Floor), f64: math.Floor, ints: intIdentity, grad: zeroGrad,
	})
	CeilPrim = defUnary("Ceil", 1, unary{
		f32: viaF64(math.Ceil), f64: math.Ceil, ints: intIdentity, grad: zeroGrad,
	})
	RoundPrim = defUnary("Round", 1, unary{
		f32: viaF64(math.RoundToEven), f64: math.RoundToEven, ints: intIdentity, grad: zeroGrad,
	})
	TruncPrim = defUnary("Trunc", 1, unary{
		f32: viaF64(math.Trunc), f64: math.Trunc, ints: intIdentity, grad: zeroGrad,
	})
	FloorDivPrim = defBinary("FloorDiv", 6, false, binary{
		f32:  floorDivFloat[float32],
		f64:  floorDivFloat[float64],
		ints: intFloorDiv,
		// Piecewise constant: a zero tangent.
		jvp: func(_, _, out, _, _ *tensor.Tensor) *tensor.Tensor { return ZerosLike(out) },
		grad: func(a, b, _, _ *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor) {
			return ZerosLike(a), ZerosLike(b)
		},
	})
	FloorModPrim = defBinary("FloorMod", 6, false, binary{
		f32:  floorModFloat[float32],
		f64:  floorModFloat[float64],
		ints: intFloorMod,
		// d(a - b·⌊a/b⌋) = da - db·⌊a/b⌋
		jvp: func(a, b, out, ta, tb *tensor.Tensor) *tensor.Tensor {
			if !a.DType().IsFloat() {
				return ZerosLike(out)
			}
			if tb == nil {
				return ta
			}
			return tsub(ta, Mul(tb, FloorDiv(a, b)))
		},
		grad: func(a, b, _, g *tensor.Tensor) (ga, gb *tensor.Tensor) {
			// a mod b = a - b·⌊a/b⌋, and ⌊a/b⌋ is piecewise constant.
			if !a.DType().IsFloat() {
				return nil, nil
			}
			if core.NeedsGrad(a) {
				ga = g
			}
			if core.NeedsGrad(b) {
				gb = Neg(Mul(g, FloorDiv(a, b)))
			}
			return ga, gb
		},
	})
}

// divmod is NumPy's npy_divmod: the floor quotient and the remainder with
// the divisor's sign. It starts from fmod, which is exact, rather than from
// ⌊a/b⌋, whose rounded quotient can be one off (1 // 0.1 is 9, not 10).
// b must not be 0.
func divmod[T float32 | float64](a, b T) (div, mod T) {
	mod = T(math.Mod(float64(a), float64(b)))
	q := (a - mod) / b
	if mod != 0 {
		if (b < 0) != (mod < 0) {
			mod += b
			q--
		}
	} else {
		mod = T(math.Copysign(0, float64(b)))
	}
	if q != 0 {
		div = T(math.Floor(float64(q)))
		if q-div > 0.5 {
			div++
		}
	} else {
		div = T(math.Copysign(0, float64(a/b)))
	}
	return div, mod
}

func floorDivFloat[T float32 | float64](a, b T) T {
	if b == 0 {
		return a / b // ±Inf or NaN, as NumPy gives
	}
	d, _ := divmod(a, b)
	return d
}

func floorModFloat[T float32 | float64](a, b T) T {
	if b == 0 {
		return T(math.NaN())
	}
	_, m := divmod(a, b)
	return m
}

// intDivByZero reports an integer division by zero: NumPy quietly returns
// 0 there, which is a wrong answer, so spore refuses.
//
//go:noinline
func intDivByZero(op string) {
	core.Panicf(op, "integer division by zero")
}

func floorDivInt[T core.Int](a, b T) T {
	if b == 0 {
		intDivByZero("FloorDiv")
	}
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorModInt[T core.Int](a, b T) T {
	if b == 0 {
		intDivByZero("FloorMod")
	}
	m := a % b
	if m != 0 && ((m < 0) != (b < 0)) {
		m += b
	}
	return m
}

// Floor returns the largest integer not greater than x, elementwise
// (integer inputs are returned unchanged). Its gradient is zero.
func Floor(x *tensor.Tensor) *tensor.Tensor { return apply1(FloorPrim, x) }

// Ceil returns the smallest integer not less than x, elementwise (integer
// inputs are returned unchanged). Its gradient is zero.
func Ceil(x *tensor.Tensor) *tensor.Tensor { return apply1(CeilPrim, x) }

// Round rounds x to the nearest integer elementwise, halves to even
// (NumPy's round and MindSpore's ops.round: 0.5 → 0, 1.5 → 2, -2.5 → -2).
// Integer inputs are returned unchanged. Its gradient is zero.
func Round(x *tensor.Tensor) *tensor.Tensor { return apply1(RoundPrim, x) }

// Trunc rounds x toward zero elementwise (integer inputs are returned
// unchanged). Its gradient is zero.
func Trunc(x *tensor.Tensor) *tensor.Tensor { return apply1(TruncPrim, x) }

// FloorDiv returns ⌊a/b⌋ elementwise with broadcasting, in Python's and
// NumPy's floor_divide semantics: it rounds toward -∞ for ints and floats
// alike (-7 // 2 = -4), and for floats it is exact where ⌊a/b⌋ of the
// rounded quotient is not (1 // 0.1 = 9). A float division by zero gives
// ±Inf or NaN; an integer one panics. Its gradient is zero.
func FloorDiv(a, b *tensor.Tensor) *tensor.Tensor { return apply2(FloorDivPrim, a, b) }

// Mod returns the remainder a - b·⌊a/b⌋ elementwise with broadcasting: the
// result has the sign of the divisor, as Python's % and NumPy's mod, and
// MindSpore's FloorMod and ops.remainder (-7 mod 2 = 1, 7 mod -2 = -1). A
// float modulus of zero gives NaN; an integer one panics. Its gradient is
// 1 for a and -⌊a/b⌋ for b.
func Mod(a, b *tensor.Tensor) *tensor.Tensor { return apply2(FloorModPrim, a, b) }

// ClipAttrs are Clip's attributes: the bounds, in float64 whatever the
// input's dtype.
type ClipAttrs struct {
	Lo, Hi float64
}

// String prints every attribute, for IR dumps and CSE keys.
func (a ClipAttrs) String() string { return fmt.Sprintf("lo=%v hi=%v", a.Lo, a.Hi) }

// clipInts converts the bounds to an integer type of range [minV, maxV]:
// the integers within [lo, hi] are those within [⌈lo⌉, ⌊hi⌋].
func clipInts[T tensor.Number](a ClipAttrs, minV, maxV T) (lo, hi T) {
	l, h := math.Ceil(a.Lo), math.Floor(a.Hi)
	lo, hi = minV, maxV
	if l > float64(minV) {
		lo = maxV
		if l < float64(maxV) {
			lo = T(l)
		}
	}
	if h < float64(maxV) {
		hi = minV
		if h > float64(minV) {
			hi = T(h)
		}
	}
	return lo, hi
}

// clipBounds converts Clip's bounds to T: as they are for the floats,
// rounded inward to T's integers within T's range for the integers.
func clipBounds[T tensor.Number](a ClipAttrs) (lo, hi T) {
	if isFloatType[T]() {
		return T(a.Lo), T(a.Hi)
	}
	minV, maxV := rangeOf[T]()
	return clipInts(a, minV, maxV)
}

// clampInto writes min(max(x, lo), hi): when lo > hi every element becomes
// hi, as in NumPy and PyTorch, and NaN stays NaN (Go's min and max
// propagate it).
func clampInto[T tensor.Number](out, x []T, lo, hi T) {
	out = out[:len(x)]
	for i, v := range x {
		out[i] = min(max(v, lo), hi)
	}
}

func clamp3[T tensor.Number](x, lo, hi T) T { return min(max(x, lo), hi) }

func init() {
	ClipPrim = &core.Prim{
		Name:   "Clip",
		Batch:  batchBroadcasting(&ClipPrim),
		Traits: core.Traits{Elementwise: true, Cost: 1},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			x := in[0]
			if d := x.DType(); !d.IsFloat() && !d.IsInt() {
				core.Panicf("Clip", "unsupported dtype %v (shape %v)", d, x.Shape())
			}
			return x.Meta()
		},
		JVP: func(attrs any, in, t []*tensor.Tensor, out *tensor.Tensor) *tensor.Tensor {
			a := attrs.(ClipAttrs)
			x := in[0]
			if !x.DType().IsFloat() {
				return nil
			}
			inside := LogicalAnd(GreaterEqual(x, ScalarLike(x, a.Lo)), LessEqual(x, ScalarLike(x, a.Hi)))
			return Select(inside, t[0], ScalarLike(out, 0))
		},
		VJP: func(attrs any, in []*tensor.Tensor, _, g *tensor.Tensor) []*tensor.Tensor {
			a := attrs.(ClipAttrs)
			x := in[0]
			if !x.DType().IsFloat() {
				return []*tensor.Tensor{nil}
			}
			// PyTorch's rule: the gradient passes where lo <= x <= hi,
			// bounds included.
			inside := LogicalAnd(GreaterEqual(x, ScalarLike(x, a.Lo)), LessEqual(x, ScalarLike(x, a.Hi)))
			return []*tensor.Tensor{Select(inside, g, ScalarLike(g, 0))}
		},
	}
	ClipTensorPrim = &core.Prim{
		Name:   "ClipTensor",
		Batch:  batchBroadcasting(&ClipTensorPrim),
		Traits: core.Traits{Elementwise: true, Cost: 2},
		Infer: func(_ any, in []*tensor.Tensor) tensor.Meta {
			x, lo, hi := in[0], in[1], in[2]
			d := x.DType()
			if lo.DType() != d || hi.DType() != d {
				core.Panicf("ClipTensor", "dtypes differ: x %v %v, lo %v %v, hi %v %v", x.Shape(), d, lo.Shape(), lo.DType(), hi.Shape(), hi.DType())
			}
			if !d.IsFloat() && !d.IsInt() {
				core.Panicf("ClipTensor", "unsupported dtype %v (shape %v)", d, x.Shape())
			}
			s := BroadcastShapes("ClipTensor", x.Shape(), BroadcastShapes("ClipTensor", lo.Shape(), hi.Shape()))
			return tensor.Meta{Shape: s, DType: d}
		},
		JVP: clipTensorJVP,
		VJP: clipTensorVJP,
	}
}

// clipTensorJVP is clipTensorVJP's transpose: the result's tangent is the
// tangent of whichever input the result is.
func clipTensorJVP(_ any, in, t []*tensor.Tensor, out *tensor.Tensor) *tensor.Tensor {
	x, lo, hi := in[0], in[1], in[2]
	if !x.DType().IsFloat() {
		return nil
	}
	z := ScalarLike(out, 0)
	var r *tensor.Tensor
	if t[0] != nil {
		r = Select(LogicalAnd(GreaterEqual(x, lo), LessEqual(x, hi)), t[0], z)
	}
	if t[1] != nil {
		r = tadd(r, Select(LogicalAnd(Less(x, lo), LessEqual(lo, hi)), t[1], z))
	}
	if t[2] != nil {
		r = tadd(r, Select(LogicalOr(Greater(x, hi), Greater(lo, hi)), t[2], z))
	}
	return tshape(r, out.Shape())
}

// Clip's body is clampInto with the bounds of its attributes converted to
// the input's dtype; ClipTensor's is clamp3 over three blocks.
func init() {
	for _, t := range numberTypes {
		t.clip()
	}
	ClipPrim.Elementwise = &core.Elementwise{Body: func(attrs any, in []tensor.DType) any {
		a, ok := attrs.(ClipAttrs)
		if !ok || int(in[0]) >= nDT || clipBodies[in[0]] == nil {
			return nil
		}
		return clipBodies[in[0]](a)
	}}
	core.Define(ClipPrim)

	var b bodyTable
	for _, t := range numberTypes {
		t.clipTensor(&b)
	}
	ClipTensorPrim.Elementwise = &core.Elementwise{Body: b.byFirst}
	core.Define(ClipTensorPrim)
}

// clipBodies[dt] returns Clip's body for given bounds.
var clipBodies [nDT]func(ClipAttrs) any

func regClip[T tensor.Number](bounds func(ClipAttrs) (T, T)) {
	dt := core.DTypeOf[T]()
	body := clampInto[T]
	if f, ok := any(vec.Clamp).(func(d, x []T, lo, hi T)); ok {
		// float32: the vector kernel, bit for bit clampInto (NaN and
		// signed zeros included), about ten times as fast.
		body = f
	}
	clipBodies[dt] = func(a ClipAttrs) any {
		lo, hi := bounds(a)
		return func(d, x []T) { body(d, x, lo, hi) }
	}
	ClipPrim.Register(dt, core.CPU, func(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
		lo, hi := bounds(attrs.(ClipAttrs))
		body(out.Data().([]T), in[0].Data().([]T), lo, hi)
	})
}

func regClipTensor[T tensor.Number](b *bodyTable) {
	dt := core.DTypeOf[T]()
	body := lift3(clamp3[T]).(func(d, x, lo, hi []T))
	b[dt] = body
	ClipTensorPrim.Register(dt, core.CPU, ternaryKernel(body, clamp3[T]))
}

// clipTensorVJP gives g to whichever input the result is, as PyTorch's
// clamp does: x where lo <= x <= hi (bounds included), lo where x < lo <=
// hi, hi where x > hi or lo > hi (then every result is hi). Where any
// input is NaN, nobody gets it.
func clipTensorVJP(_ any, in []*tensor.Tensor, _, g *tensor.Tensor) []*tensor.Tensor {
	x, lo, hi := in[0], in[1], in[2]
	gs := make([]*tensor.Tensor, 3)
	if !x.DType().IsFloat() {
		return gs
	}
	z := ScalarLike(g, 0)
	if core.NeedsGrad(x) {
		gs[0] = sumTo(Select(LogicalAnd(GreaterEqual(x, lo), LessEqual(x, hi)), g, z), x.Shape())
	}
	if core.NeedsGrad(lo) {
		gs[1] = sumTo(Select(LogicalAnd(Less(x, lo), LessEqual(lo, hi)), g, z), lo.Shape())
	}
	if core.NeedsGrad(hi) {
		gs[2] = sumTo(Select(LogicalOr(Greater(x, hi), Greater(lo, hi)), g, z), hi.Shape())
	}
	return gs
}

// Clip limits x to [lo, hi] elementwise: min(max(x, lo), hi), MindSpore's
// ops.clip_by_value and ops.clamp with number bounds (use ±Inf for a side
// without bound). When lo > hi every element becomes hi, as in NumPy and
// PyTorch; NaN stays NaN. For integer x the bounds are rounded inward to
// integers. The gradient passes where lo <= x <= hi, bounds included
// (PyTorch's convention), and is zero elsewhere. NaN bounds are an error.
func Clip(x *tensor.Tensor, lo, hi float64) *tensor.Tensor {
	if math.IsNaN(lo) || math.IsNaN(hi) {
		core.Panicf("Clip", "NaN bound: lo=%v hi=%v (input %v)", lo, hi, x.Shape())
	}
	return core.Apply(ClipPrim, ClipAttrs{Lo: lo, Hi: hi}, x)
}

// ClipTensor limits x to [lo, hi] elementwise where the bounds are tensors
// of x's dtype, all three broadcast together (MindSpore's ops.clamp with
// tensor bounds). The result is min(max(x, lo), hi); the gradient goes to
// whichever of x, lo or hi the result equals (x on ties with a bound, and
// hi everywhere where lo > hi), as in PyTorch.
func ClipTensor(x, lo, hi *tensor.Tensor) *tensor.Tensor {
	return core.Apply(ClipTensorPrim, nil, x, lo, hi)
}
