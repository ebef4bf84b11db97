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
	f32, f64, i32, i64, u8 := cmpFunc[float32](k), cmpFunc[float64](k), cmpFunc[int32](k), cmpFunc[int64](k), cmpFunc[uint8](k)
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
		Kernel: func(_ any, in []*tensor.Tensor, out *tensor.Tensor) {
			a, b := in[0], in[1]
			as, bs, os := a.Shape(), b.Shape(), out.Shape()
			o := out.Data().([]bool)
			switch x := a.Data().(type) {
			case []float32:
				map2(o, x, b.Data().([]float32), as, bs, os, f32)
			case []float64:
				map2(o, x, b.Data().([]float64), as, bs, os, f64)
			case []int32:
				map2(o, x, b.Data().([]int32), as, bs, os, i32)
			case []int64:
				map2(o, x, b.Data().([]int64), as, bs, os, i64)
			case []uint8:
				map2(o, x, b.Data().([]uint8), as, bs, os, u8)
			}
		},
	}
	p.Batch = batchBroadcasting(&p)
	return p
}

// defLogical builds a logical Prim over Bool inputs.
func defLogical(name string, f func(a, b bool) bool) *core.Prim {
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
		Kernel: func(_ any, in []*tensor.Tensor, out *tensor.Tensor) {
			a := in[0].Data().([]bool)
			o := out.Data().([]bool)
			if len(in) == 1 {
				for i, v := range a {
					o[i] = f(v, false)
				}
				return
			}
			map2(o, a, in[1].Data().([]bool), in[0].Shape(), in[1].Shape(), out.Shape(), f)
		},
	}
	p.Batch = batchBroadcasting(&p)
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
	LogicalAndPrim = defLogical("LogicalAnd", func(a, b bool) bool { return a && b })
	LogicalOrPrim = defLogical("LogicalOr", func(a, b bool) bool { return a || b })
	LogicalNotPrim = defLogical("LogicalNot", func(a, _ bool) bool { return !a })
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
		Batch:  batchBroadcasting(&SelectPrim),
		Traits: core.Traits{Elementwise: true, Cost: 1},
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
		Kernel: func(_ any, in []*tensor.Tensor, out *tensor.Tensor) {
			c, a, b := in[0], in[1], in[2]
			cs, as, bs, os := c.Shape(), a.Shape(), b.Shape(), out.Shape()
			cd := c.Data().([]bool)
			switch x := a.Data().(type) {
			case []float32:
				map3(out.Data().([]float32), cd, x, b.Data().([]float32), cs, as, bs, os, sel[float32])
			case []float64:
				map3(out.Data().([]float64), cd, x, b.Data().([]float64), cs, as, bs, os, sel[float64])
			case []int32:
				map3(out.Data().([]int32), cd, x, b.Data().([]int32), cs, as, bs, os, sel[int32])
			case []int64:
				map3(out.Data().([]int64), cd, x, b.Data().([]int64), cs, as, bs, os, sel[int64])
			case []uint8:
				map3(out.Data().([]uint8), cd, x, b.Data().([]uint8), cs, as, bs, os, sel[uint8])
			case []bool:
				map3(out.Data().([]bool), cd, x, b.Data().([]bool), cs, as, bs, os, sel[bool])
			}
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
		Batch:  batchBroadcasting(&CastPrim),
		Traits: core.Traits{Elementwise: true, Cost: 1},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			return tensor.Meta{Shape: in[0].Shape(), DType: attrs.(tensor.DType)}
		},
		Kernel: func(_ any, in []*tensor.Tensor, out *tensor.Tensor) {
			o := out.Data()
			switch x := in[0].Data().(type) {
			case []float32:
				castInto(o, x)
			case []float64:
				castInto(o, x)
			case []int32:
				castInto(o, x)
			case []int64:
				castInto(o, x)
			case []uint8:
				castInto(o, x)
			case []bool:
				castBoolInto(o, x)
			}
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

// castInto converts x elementwise into the buffer o of any dtype, without
// allocating. Values reach Uint8 through int64, so that -1.0 wraps to 255
// rather than meeting Go's unspecified float-to-uint8 conversion.
func castInto[T tensor.Number](o any, x []T) {
	switch o := o.(type) {
	case []float32:
		o = o[:len(x)]
		for i, v := range x {
			o[i] = float32(v)
		}
	case []float64:
		o = o[:len(x)]
		for i, v := range x {
			o[i] = float64(v)
		}
	case []int32:
		o = o[:len(x)]
		for i, v := range x {
			o[i] = int32(v)
		}
	case []int64:
		o = o[:len(x)]
		for i, v := range x {
			o[i] = int64(v)
		}
	case []uint8:
		o = o[:len(x)]
		for i, v := range x {
			o[i] = uint8(int64(v))
		}
	case []bool:
		o = o[:len(x)]
		for i, v := range x {
			o[i] = v != 0
		}
	}
}

// castBoolInto converts Bool x to o's dtype: true is 1, false is 0.
func castBoolInto(o any, x []bool) {
	if ob, ok := o.([]bool); ok {
		copy(ob, x)
		return
	}
	switch o := o.(type) {
	case []float32:
		fillBool(o, x)
	case []float64:
		fillBool(o, x)
	case []int32:
		fillBool(o, x)
	case []int64:
		fillBool(o, x)
	case []uint8:
		fillBool(o, x)
	}
}

func fillBool[T tensor.Number](o []T, x []bool) {
	o = o[:len(x)]
	for i, v := range x {
		if v {
			o[i] = 1
		} else {
			o[i] = 0
		}
	}
}

// Cast converts x to dtype dt (float to int truncates toward zero; non-zero
// to Bool is true). Gradients flow between floating-point types only.
func Cast(x *tensor.Tensor, dt tensor.DType) *tensor.Tensor {
	if dt == tensor.Invalid || dt > tensor.Uint8 {
		core.Panicf("Cast", "invalid target dtype %v", dt)
	}
	return core.Apply(CastPrim, dt, x)
}
