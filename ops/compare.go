package ops

import (
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

type cmpKind uint8

const (
	cmpEq cmpKind = iota
	cmpNe
	cmpLt
	cmpLe
	cmpGt
	cmpGe
)

func cmpFunc[T tensor.Number](k cmpKind) func(a, b T) bool {
	switch k {
	case cmpEq:
		return func(a, b T) bool { return a == b }
	case cmpNe:
		return func(a, b T) bool { return a != b }
	case cmpLt:
		return func(a, b T) bool { return a < b }
	case cmpLe:
		return func(a, b T) bool { return a <= b }
	case cmpGt:
		return func(a, b T) bool { return a > b }
	}
	return func(a, b T) bool { return a >= b }
}

// defCompare builds a comparison Prim: same-dtype numeric inputs, broadcast,
// a Bool result, no gradient (comparisons are piecewise constant).
func defCompare(name string, k cmpKind) *core.Prim {
	p := &core.Prim{
		Name:   name,
		Traits: core.Traits{Elementwise: true, Commutative: k == cmpEq || k == cmpNe, Cost: 1},
		Infer: func(_ any, in []*tensor.Tensor) tensor.Meta {
			a, b := in[0], in[1]
			if a.DType() != b.DType() || a.DType() == tensor.Bool {
				core.Panicf(name, "want two inputs of one numeric dtype, got %v %v and %v %v", a.Shape(), a.DType(), b.Shape(), b.DType())
			}
			return tensor.Meta{Shape: BroadcastShapes(name, a.Shape(), b.Shape()), DType: tensor.Bool}
		},
	}
	p.Batch = batchBroadcasting(&p)
	b := &bodyTable{}
	for _, t := range numberTypes {
		t.compare(p, k, b)
	}
	p.Elementwise = &core.Elementwise{Body: b.byFirst}
	core.Define(p)
	return p
}

// defLogical builds a logical Prim over Bool inputs; a unary one
// (LogicalNot) reads only f's first operand.
func defLogical(name string, unary bool, f func(a, b bool) bool) *core.Prim {
	p := &core.Prim{
		Name:   name,
		Traits: core.Traits{Elementwise: true, Commutative: true, Cost: 1},
		Infer: func(_ any, in []*tensor.Tensor) tensor.Meta {
			for _, x := range in {
				if x.DType() != tensor.Bool {
					core.Panicf(name, "want Bool inputs, got %v %v", x.Shape(), x.DType())
				}
			}
			s := in[0].Shape()
			if len(in) == 2 {
				s = BroadcastShapes(name, s, in[1].Shape())
			}
			return tensor.Meta{Shape: s, DType: tensor.Bool}
		},
	}
	p.Batch = batchBroadcasting(&p)
	var b bodyTable
	if unary {
		b[tensor.Bool] = func(d, a []bool) {
			a = a[:len(d)]
			for i, v := range a {
				d[i] = f(v, false)
			}
		}
		registerUnary(p, &b)
	} else {
		body := lift2(f).(func(d []bool, a, b []bool))
		b[tensor.Bool] = body
		p.Register(tensor.Bool, core.CPU, predicateKernel(body, f))
	}
	p.Elementwise = &core.Elementwise{Body: b.byFirst}
	core.Define(p)
	return p
}

var EqualPrim, NotEqualPrim, LessPrim, LessEqualPrim, GreaterPrim, GreaterEqualPrim, LogicalAndPrim, LogicalOrPrim, LogicalNotPrim, SelectPrim, CastPrim *core.Prim

func init() {
	EqualPrim = defCompare("Equal", cmpEq)
	NotEqualPrim = defCompare("NotEqual", cmpNe)
	LessPrim = defCompare("Less", cmpLt)
	LessEqualPrim = defCompare("LessEqual", cmpLe)
	GreaterPrim = defCompare("Greater", cmpGt)
	GreaterEqualPrim = defCompare("GreaterEqual", cmpGe)
	LogicalAndPrim = defLogical("LogicalAnd", false, func(a, b bool) bool { return a && b })
	LogicalOrPrim = defLogical("LogicalOr", false, func(a, b bool) bool { return a || b })
	LogicalNotPrim = defLogical("LogicalNot", true, func(a, _ bool) bool { return !a })
}

// Equal returns a == b elementwise as Bool, broadcasting.
func Equal(a, b *tensor.Tensor) *tensor.Tensor { return apply2(EqualPrim, a, b) }

// NotEqual returns a != b elementwise as Bool, broadcasting.
func NotEqual(a, b *tensor.Tensor) *tensor.Tensor { return apply2(NotEqualPrim, a, b) }

// Less returns a < b elementwise as Bool, broadcasting.
func Less(a, b *tensor.Tensor) *tensor.Tensor { return apply2(LessPrim, a, b) }

// LessEqual returns a <= b elementwise as Bool, broadcasting.
func LessEqual(a, b *tensor.Tensor) *tensor.Tensor { return apply2(LessEqualPrim, a, b) }

// Greater returns a > b elementwise as Bool, broadcasting.
func Greater(a, b *tensor.Tensor) *tensor.Tensor { return apply2(GreaterPrim, a, b) }

// GreaterEqual returns a >= b elementwise as Bool, broadcasting.
func GreaterEqual(a, b *tensor.Tensor) *tensor.Tensor { return apply2(GreaterEqualPrim, a, b) }

// LogicalAnd returns a && b elementwise over Bool tensors, broadcasting.
func LogicalAnd(a, b *tensor.Tensor) *tensor.Tensor { return apply2(LogicalAndPrim, a, b) }

// LogicalOr returns a || b elementwise over Bool tensors, broadcasting.
func LogicalOr(a, b *tensor.Tensor) *tensor.Tensor { return apply2(LogicalOrPrim, a, b) }

// LogicalNot returns !a elementwise over a Bool tensor.
func LogicalNot(a *tensor.Tensor) *tensor.Tensor { return apply1(LogicalNotPrim, a) }

// SelectPrim is where(cond, a, b): a where cond holds, else b.
func init() {
	SelectPrim = &core.Prim{
		Name:   "Select",
		Traits: core.Traits{Elementwise: true, Cost: 1},
		Batch:  batchBroadcasting(&SelectPrim),
		Infer: func(_ any, in []*tensor.Tensor) tensor.Meta {
			c, a, b := in[0], in[1], in[2]
			if c.DType() != tensor.Bool {
				core.Panicf("Select", "condition must be Bool, got %v %v", c.Shape(), c.DType())
			}
			if a.DType() != b.DType() {
				core.Panicf("Select", "branches differ in dtype: %v %v and %v %v", a.Shape(), a.DType(), b.Shape(), b.DType())
			}
			s := BroadcastShapes("Select", c.Shape(), BroadcastShapes("Select", a.Shape(), b.Shape()))
			return tensor.Meta{Shape: s, DType: a.DType()}
		},
		JVP: func(attrs any, in, t []*tensor.Tensor, out *tensor.Tensor) *tensor.Tensor {
			c, a, b := in[0], in[1], in[2]
			ta, tb := t[1], t[2]
			if ta == nil {
				ta = ScalarLike(a, 0)
			}
			if tb == nil {
				tb = ScalarLike(b, 0)
			}
			return tshape(Select(c, ta, tb), out.Shape())
		},
		VJP: func(_ any, in []*tensor.Tensor, _, g *tensor.Tensor) []*tensor.Tensor {
			c, a, b := in[0], in[1], in[2]
			z := ScalarLike(g, 0)
			return []*tensor.Tensor{nil, sumTo(Select(c, g, z), a.Shape()), sumTo(Select(c, z, g), b.Shape())}
		},
	}
}

// Select's body is chosen by the branches' dtype (the condition is always
// Bool), and so is its kernel: the kernel table keys Select by its first
// input, the Bool condition, so that one kernel indexes a table by the
// branches' dtype (an index, not a type switch).
var selBodies bodyTable
var selKernels [nDT]core.KernelFunc

func init() {
	for _, t := range elemTypes {
		t.sel()
	}
	SelectPrim.Elementwise = &core.Elementwise{Body: func(_ any, in []tensor.DType) any { return selBodies.at(in[1]) }}
	SelectPrim.Register(tensor.Bool, core.CPU, func(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
		selKernels[in[1].DType()](attrs, in, out)
	})
	core.Define(SelectPrim)
}

func regSelect[T core.Elem]() {
	dt := core.DTypeOf[T]()
	body := func(d []T, c []bool, a, b []T) {
		c, a, b = c[:len(d)], a[:len(d)], b[:len(d)]
		for i := range d {
			d[i] = sel(c[i], a[i], b[i])
		}
	}
	selBodies[dt] = body
	selKernels[dt] = func(_ any, in []*tensor.Tensor, out *tensor.Tensor) {
		c, a, b, o := in[0].Data().([]bool), in[1].Data().([]T), in[2].Data().([]T), out.Data().([]T)
		if len(c) == len(o) && len(a) == len(o) && len(b) == len(o) {
			body(o, c, a, b)
			return
		}
		map3(o, c, a, b, in[0].Shape(), in[1].Shape(), in[2].Shape(), out.Shape(), sel[T])
	}
}

// regCompare records comparison k's body for dtype T in b and registers
// its kernel.
func regCompare[T tensor.Number](p *core.Prim, k cmpKind, b *bodyTable) {
	dt := core.DTypeOf[T]()
	b[dt] = lift2(cmpFunc[T](k))
	p.Register(dt, core.CPU, predicateKernel(b.at(dt).(func(d []bool, a, b []T)), cmpFunc[T](k)))
}

func sel[T any](c bool, a, b T) T {
	if c {
		return a
	}
	return b
}

// Select returns a where cond is true and b elsewhere (NumPy's where),
// broadcasting all three.
func Select(cond, a, b *tensor.Tensor) *tensor.Tensor {
	return core.Apply(SelectPrim, nil, cond, a, b)
}

// Where is Select under NumPy's name.
func Where(cond, a, b *tensor.Tensor) *tensor.Tensor { return Select(cond, a, b) }

// CastPrim converts between dtypes; its attribute is the target DType.
func init() {
	CastPrim = &core.Prim{
		Name:   "Cast",
		Traits: core.Traits{Elementwise: true, Cost: 1},
		Batch:  batchBroadcasting(&CastPrim),
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			return tensor.Meta{Shape: in[0].Shape(), DType: attrs.(tensor.DType)}
		},
		JVP: func(attrs any, in, t []*tensor.Tensor, out *tensor.Tensor) *tensor.Tensor {
			if !in[0].DType().IsFloat() || !out.DType().IsFloat() {
				return nil
			}
			return Cast(t[0], out.DType())
		},
		VJP: func(_ any, in []*tensor.Tensor, _, g *tensor.Tensor) []*tensor.Tensor {
			if !in[0].DType().IsFloat() || !g.DType().IsFloat() {
				return []*tensor.Tensor{nil}
			}
			return []*tensor.Tensor{Cast(g, in[0].DType())}
		},
	}
}

// castBodies[from][to] is the block function converting dtype from to
// dtype to, and castKernels the eager kernels running them. Integers
// convert to integers as C does (wrapping to the narrower type); floats
// convert to integers truncating toward zero, reaching the types narrower
// than 32 bits through int64 (so that -1.0 wraps to 255 rather than
// meeting Go's unspecified out-of-range conversion; see floatTo); non-zero
// is true; true is 1.
// BFloat16 and Float16 values convert through float32, which holds each
// of them exactly: a cast from them is exact into the floats and behaves
// as a float32's into the others; a cast to them rounds the float32 value
// to nearest, ties to even (from Float64 and large integers, which are
// first rounded to float32, this can differ from a single rounding in
// the last place, rarely).
var (
	castBodies  [nDT]bodyTable
	castKernels [nDT][nDT]core.KernelFunc
)

func init() {
	castNumber[float32]()
	castNumber[float64]()
	castNumber[int8]()
	castNumber[int16]()
	castNumber[int32]()
	castNumber[int64]()
	castNumber[uint8]()
	castNumber[uint16]()
	castNumber[uint32]()
	castNumber[uint64]()
	castEntry(func(d, a []bool) { copy(d, a) })
	castHalf()
	CastPrim.Elementwise = &core.Elementwise{Body: func(attrs any, in []tensor.DType) any {
		to, _ := attrs.(tensor.DType)
		if int(in[0]) >= nDT || int(to) >= nDT {
			return nil
		}
		return castBodies[in[0]][to]
	}}
	for from := range castKernels {
		ks := &castKernels[from]
		if from == int(tensor.Invalid) {
			continue
		}
		CastPrim.Register(tensor.DType(from), core.CPU, func(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
			ks[attrs.(tensor.DType)](attrs, in, out)
		})
	}
	core.Define(CastPrim)
}

// castEntry records the body converting T to U and its eager kernel.
func castEntry[T, U core.Elem](f func(d []U, a []T)) {
	from, to := core.DTypeOf[T](), core.DTypeOf[U]()
	castBodies[from][to] = f
	castKernels[from][to] = func(_ any, in []*tensor.Tensor, out *tensor.Tensor) {
		f(out.Data().([]U), in[0].Data().([]T))
	}
}

// castNumber records the casts from the number type T to every dtype, and
// from Bool to T.
func castNumber[T tensor.Number]() {
	castEntry(toHalf[core.BF16, T])
	castEntry(toHalf[core.F16, T])
	castEntry(convert[T, float32])
	castEntry(convert[T, float64])
	castEntry(convert[T, int8])
	castEntry(convert[T, int16])
	castEntry(convert[T, int32])
	castEntry(convert[T, int64])
	castEntry(convert[T, uint8])
	castEntry(convert[T, uint16])
	castEntry(convert[T, uint32])
	castEntry(convert[T, uint64])
	castEntry(func(d []bool, a []T) {
		a = a[:len(d)]
		for i, v := range a {
			d[i] = v != 0
		}
	})
	castEntry(fromBool[T])
}

// isFloatType reports whether T is float32 or float64.
func isFloatType[T tensor.Number]() bool {
	switch any(*new(T)).(type) {
	case float32, float64:
		return true
	}
	return false
}

// convert converts a's values to U: Go's conversion, but for a float
// meeting an integer type, which goes through floatTo.
func convert[T, U tensor.Number](d []U, a []T) {
	a = a[:len(d)]
	if isFloatType[T]() && !isFloatType[U]() {
		// Int64 and Int32, the index types, get loops of their own
		// rather than a call per element.
		switch o := any(d).(type) {
		case []int64:
			for i, v := range a {
				o[i] = core.FloatToInt64(float64(v))
			}
		case []int32:
			for i, v := range a {
				o[i] = int32(v)
			}
		default:
			f := floatTo[U]()
			for i, v := range a {
				d[i] = f(float64(v))
			}
		}
		return
	}
	for i, v := range a {
		d[i] = U(v)
	}
}

// floatTo returns the conversion of a float to U: Go's for the floats
// and Int32 (truncating toward zero); core.FloatToInt64 for Int64, and
// through it for the narrower integers, so that an out-of-range value
// wraps as C's conversions do on common hardware; core.FloatToUint64 for
// Uint64.
func floatTo[U tensor.Number]() func(float64) U {
	switch any(*new(U)).(type) {
	case float32, float64, int32:
		return func(f float64) U { return U(f) }
	case uint64:
		return func(f float64) U { return U(core.FloatToUint64(f)) }
	}
	return func(f float64) U { return U(core.FloatToInt64(f)) }
}

func fromBool[U tensor.Number](d []U, a []bool) {
	a = a[:len(d)]
	for i, v := range a {
		if v {
			d[i] = 1
		} else {
			d[i] = 0
		}
	}
}

// Cast converts x to dtype dt (float to int truncates toward zero; non-zero
// to Bool is true; to BFloat16 or Float16 rounds to nearest, ties to even).
// Gradients flow between floating-point types only, the 16-bit ones
// included: the gradient of a cast is the cotangent cast back, so a
// float32 parameter cast to BFloat16 for a forward pass gets a float32
// gradient.
func Cast(x *tensor.Tensor, dt tensor.DType) *tensor.Tensor {
	if dt == tensor.Invalid || int(dt) >= core.NumDTypes {
		core.Panicf("Cast", "invalid target dtype %v", dt)
	}
	return core.Apply(CastPrim, dt, x)
}
