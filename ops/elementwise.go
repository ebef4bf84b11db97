package ops

import (
	"math"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/kernels/vec"
	"github.com/sporeml/spore/tensor"
)

// unary describes an elementwise op of one input. Each dtype the op accepts
// gets its own Go function, so kernels run without conversions; a nil entry
// means the dtype is rejected at inference time.
type unary struct {
	f32  func(float32) float32
	f64  func(float64) float64
	ints intOp                  // the integer types' operation (intarith.go), intNone for none
	vec  func(dst, x []float32) // optional vectorised float32 kernel
	grad func(x, y, g *tensor.Tensor) *tensor.Tensor
}

// defUnary builds the Prim of an elementwise unary op.
func defUnary(name string, cost int, u unary) *core.Prim {
	p := core.Define(&core.Prim{Name: name, Traits: core.Traits{Elementwise: true, Cost: cost}})
	p.Batch = batchBroadcasting(&p)
	b := u.bodies()
	p.Infer = func(_ any, in []*tensor.Tensor) tensor.Meta {
		x := in[0]
		if b.at(x.DType()) == nil {
			core.Panicf(name, "unsupported dtype %v (input shape %v)", x.DType(), x.Shape())
		}
		return x.Meta()
	}
	p.Elementwise = &core.Elementwise{Body: b.byFirst}
	registerUnary(p, b)
	if u.grad != nil {
		p.VJP = func(_ any, in []*tensor.Tensor, out, g *tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{u.grad(in[0], out, g)}
		}
		// An elementwise op's Jacobian is diagonal, so it is its own
		// transpose: grad(x, y, g) = f'(x)·g is also the tangent of the
		// result for an input tangent g.
		p.JVP = func(_ any, in, t []*tensor.Tensor, out *tensor.Tensor) *tensor.Tensor {
			return u.grad(in[0], out, t[0])
		}
	}
	return p
}

// bodies is the op's block function per dtype: the vectorised float32
// kernel when there is one, else the scalar functions lifted to blocks.
func (u unary) bodies() *bodyTable {
	b := &bodyTable{
		tensor.Float32: orBody(u.vec, u.f32),
		tensor.Float64: lift1(u.f64),
	}
	if u.ints != intNone {
		for _, t := range intTypes {
			b[t.dtype()] = t.unaryBody(u.ints)
		}
	}
	return b
}

// viaF64 lifts a float64 function to float32, for ops whose float32 result
// is the correctly rounded float64 one.
func viaF64(f func(float64) float64) func(float32) float32 {
	return func(x float32) float32 { return float32(f(float64(x))) }
}

// binary describes an elementwise op of two inputs with NumPy broadcasting.
// Both inputs must have the same dtype: spore never promotes silently,
// except a 16-bit float meeting another float (promoteHalf, in apply2).
type binary struct {
	f32 func(a, b float32) float32
	f64 func(a, b float64) float64
	// ints is the integer types' operation (intarith.go), intNone for
	// none: one generic definition for Int8 through Uint64.
	ints intOp
	vec  func(dst, a, b []float32) // optional vectorised kernel for equal shapes
	// Optional vectorised float32 kernels for a scalar second operand
	// (vecScalar(dst, a, s) computes a op s; for commutative ops it also
	// serves a scalar first operand) and for a row broadcast along the last
	// axis (the bias add).
	vecScalar func(dst, a []float32, s float32)
	vecRow    func(dst, a, row []float32)
	grad      func(a, b, out, g *tensor.Tensor) (ga, gb *tensor.Tensor)
	// jvp returns the result's tangent given the inputs' tangents ta, tb
	// (either nil for zero); defBinary broadcasts it to the result's shape.
	jvp func(a, b, out, ta, tb *tensor.Tensor) *tensor.Tensor
}

// defBinary builds the Prim of an elementwise binary op. Its VJP reduces
// each input's gradient back over the axes broadcasting stretched.
func defBinary(name string, cost int, commutative bool, u binary) *core.Prim {
	p := core.Define(&core.Prim{Name: name, Traits: core.Traits{Elementwise: true, Commutative: commutative, Cost: cost}})
	p.Batch = batchBroadcasting(&p)
	bodies := u.bodies()
	p.Infer = func(_ any, in []*tensor.Tensor) tensor.Meta {
		a, b := in[0], in[1]
		if a.DType() != b.DType() {
			core.Panicf(name, "dtypes differ: %v %v and %v %v (cast one with ops.Cast)", a.Shape(), a.DType(), b.Shape(), b.DType())
		}
		if bodies.at(a.DType()) == nil {
			core.Panicf(name, "unsupported dtype %v (shapes %v and %v)", a.DType(), a.Shape(), b.Shape())
		}
		return tensor.Meta{Shape: BroadcastShapes(name, a.Shape(), b.Shape()), DType: a.DType()}
	}
	p.Elementwise = &core.Elementwise{Body: bodies.byFirst}
	if u.vecScalar != nil {
		p.Elementwise.Scalar = func(_ any, in []tensor.DType, s float64) any {
			if in[0] != tensor.Float32 {
				return nil
			}
			return func(d, a []float32) { u.vecScalar(d, a, float32(s)) }
		}
	}
	if f, ok := bodies.at(tensor.Float32).(func(d, a, b []float32)); ok {
		p.Register(tensor.Float32, core.CPU, binaryKernel(f, u.f32, u.vecScalar, u.vecRow, commutative))
	}
	if u.f64 != nil {
		p.Register(tensor.Float64, core.CPU, binaryKernel(bodies.at(tensor.Float64).(func(d, a, b []float64)), u.f64, nil, nil, commutative))
	}
	if u.ints != intNone {
		for _, t := range intTypes {
			if k := t.binaryKernel(u.ints, commutative); k != nil {
				p.Register(t.dtype(), core.CPU, k)
			}
		}
	}
	if u.grad != nil {
		p.VJP = func(_ any, in []*tensor.Tensor, out, g *tensor.Tensor) []*tensor.Tensor {
			ga, gb := u.grad(in[0], in[1], out, g)
			if ga != nil {
				ga = sumTo(ga, in[0].Shape())
			}
			if gb != nil {
				gb = sumTo(gb, in[1].Shape())
			}
			return []*tensor.Tensor{ga, gb}
		}
	}
	if u.jvp != nil {
		p.JVP = func(_ any, in, t []*tensor.Tensor, out *tensor.Tensor) *tensor.Tensor {
			return tshape(u.jvp(in[0], in[1], out, t[0], t[1]), out.Shape())
		}
	}
	return p
}

// isRow reports whether shape s is a single row: [n], [1, n], [1, 1, n]...
func isRow(s tensor.Shape) bool {
	for _, d := range s[:max(len(s)-1, 0)] {
		if d != 1 {
			return false
		}
	}
	return len(s) > 0
}

// bodies is the op's block function per dtype: the vectorised float32
// kernel when there is one, else the scalar functions lifted to blocks.
// The vectorised forms compute the same IEEE operation as f32, so the
// eager kernel's broadcasting fallback (f32 itself) agrees with them.
func (u binary) bodies() *bodyTable {
	b := &bodyTable{
		tensor.Float32: lift2(u.f32),
		tensor.Float64: lift2(u.f64),
	}
	if u.ints != intNone {
		for _, t := range intTypes {
			b[t.dtype()] = t.binaryBody(u.ints)
		}
	}
	if u.vec != nil {
		b[tensor.Float32] = u.vec
	}
	return b
}

func apply1(p *core.Prim, x *tensor.Tensor) *tensor.Tensor { return core.Apply(p, nil, x) }
func apply2(p *core.Prim, a, b *tensor.Tensor) *tensor.Tensor {
	a, b = promoteHalf(a, b)
	return core.Apply(p, nil, a, b)
}

// The arithmetic primitives.
var AddPrim, SubPrim, MulPrim, DivPrim, NegPrim, ExpPrim, LogPrim, TanhPrim, ReluPrim, ReluGradPrim *core.Prim

func init() {
	AddPrim = defBinary("Add", 1, true, binary{
		vec:       vec.Add,
		vecScalar: vec.AddScalar,
		vecRow:    vec.AddRow,
		f32:       func(a, b float32) float32 { return a + b },
		f64:       func(a, b float64) float64 { return a + b },
		ints:      intAdd,
		jvp:       func(_, _, _, ta, tb *tensor.Tensor) *tensor.Tensor { return tadd(ta, tb) },
		grad: func(_, _, _, g *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor) {
			return g, g
		},
	})
	SubPrim = defBinary("Sub", 1, false, binary{
		vec: vec.Sub,
		// a - s is a + (-s) exactly: negation is exact in IEEE arithmetic.
		vecScalar: func(dst, a []float32, s float32) { vec.AddScalar(dst, a, -s) },
		f32:       func(a, b float32) float32 { return a - b },
		f64:       func(a, b float64) float64 { return a - b },
		ints:      intSub,
		jvp:       func(_, _, _, ta, tb *tensor.Tensor) *tensor.Tensor { return tsub(ta, tb) },
		grad: func(_, _, _, g *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor) {
			return g, Neg(g)
		},
	})
	MulPrim = defBinary("Mul", 1, true, binary{
		vec:       vec.Mul,
		vecScalar: vec.MulScalar,
		f32:       func(a, b float32) float32 { return a * b },
		f64:       func(a, b float64) float64 { return a * b },
		ints:      intMul,
		jvp:       func(a, b, _, ta, tb *tensor.Tensor) *tensor.Tensor { return tadd(tmul(ta, b), tmul(tb, a)) },
		grad: func(a, b, _, g *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor) {
			return Mul(g, b), Mul(g, a)
		},
	})
	DivPrim = defBinary("Div", 4, false, binary{
		vec: vec.Div,
		f32: func(a, b float32) float32 { return a / b },
		f64: func(a, b float64) float64 { return a / b },
		// Integers truncate toward zero, as C and ONNX's Div do.
		ints: intDiv,
		// d(a/b) = (da - db·a/b)/b
		jvp: func(_, b, out, ta, tb *tensor.Tensor) *tensor.Tensor { return Div(tsub(ta, tmul(tb, out)), b) },
		grad: func(a, b, out, g *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor) {
			ga := Div(g, b)
			return ga, Neg(Mul(ga, out))
		},
	})
	NegPrim = defUnary("Neg", 1, unary{
		// A plain loop rather than the lifted f32: no call per element.
		vec: func(d, x []float32) {
			x = x[:len(d)]
			for i, v := range x {
				d[i] = -v
			}
		},
		f32:  func(x float32) float32 { return -x },
		f64:  func(x float64) float64 { return -x },
		ints: intNeg,
		grad: func(_, _, g *tensor.Tensor) *tensor.Tensor {
			return Neg(g)
		},
	})
	ExpPrim = defUnary("Exp", 8, unary{
		vec:  vec.Exp, // within about 1 ulp; see package vec
		f32:  viaF64(math.Exp),
		f64:  math.Exp,
		grad: func(_, y, g *tensor.Tensor) *tensor.Tensor { return Mul(g, y) },
	})
	LogPrim = defUnary("Log", 8, unary{
		f32:  viaF64(math.Log),
		f64:  math.Log,
		grad: func(x, _, g *tensor.Tensor) *tensor.Tensor { return Div(g, x) },
	})
	TanhPrim = defUnary("Tanh", 10, unary{
		vec: vec.Tanh, // within about 1.3 ulp; see package vec
		f32: viaF64(math.Tanh),
		f64: math.Tanh,
		grad: func(_, y, g *tensor.Tensor) *tensor.Tensor {
			// d tanh = 1 - y²
			return Mul(g, Sub(ScalarLike(y, 1), Mul(y, y)))
		},
	})
	ReluPrim = defUnary("ReLU", 1, unary{
		vec:  vec.Relu,
		f32:  func(x float32) float32 { return max(x, 0) },
		f64:  func(x float64) float64 { return max(x, 0) },
		ints: intRelu,
		grad: func(x, _, g *tensor.Tensor) *tensor.Tensor {
			return apply2(ReluGradPrim, x, g)
		},
	})
	// ReluGradPrim passes g where x > 0: the ReLU backward as one fusable
	// elementwise op rather than a compare, a select and a zeros tensor.
	ReluGradPrim = defBinary("ReLUGrad", 1, false, binary{
		vec:  vec.ReluGrad,
		f32:  func(x, g float32) float32 { return reluGrad(x, g) },
		f64:  func(x, g float64) float64 { return reluGrad(x, g) },
		ints: intReluGrad,
		// Linear in g; the mask is piecewise constant in x.
		jvp: func(x, _, _, _, tg *tensor.Tensor) *tensor.Tensor {
			if tg == nil {
				return nil
			}
			return apply2(ReluGradPrim, x, tg)
		},
		grad: func(x, _, _, gg *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor) {
			return nil, apply2(ReluGradPrim, x, gg)
		},
	})
}

func reluGrad[T tensor.Number](x, g T) T {
	if x > 0 {
		return g
	}
	return 0
}

// Add returns a + b, broadcasting.
func Add(a, b *tensor.Tensor) *tensor.Tensor { return apply2(AddPrim, a, b) }

// Sub returns a - b, broadcasting.
func Sub(a, b *tensor.Tensor) *tensor.Tensor { return apply2(SubPrim, a, b) }

// Mul returns a * b elementwise, broadcasting.
func Mul(a, b *tensor.Tensor) *tensor.Tensor { return apply2(MulPrim, a, b) }

// Div returns a / b elementwise, broadcasting. Integer division truncates
// toward zero (-7 / 2 = -3), as C and ONNX's Div do (FloorDiv rounds
// toward -∞); an integer division by zero panics.
func Div(a, b *tensor.Tensor) *tensor.Tensor { return apply2(DivPrim, a, b) }

// Neg returns -x.
func Neg(x *tensor.Tensor) *tensor.Tensor { return apply1(NegPrim, x) }

// Exp returns eˣ elementwise.
func Exp(x *tensor.Tensor) *tensor.Tensor { return apply1(ExpPrim, x) }

// Log returns the natural logarithm elementwise.
func Log(x *tensor.Tensor) *tensor.Tensor { return apply1(LogPrim, x) }

// Tanh returns the hyperbolic tangent elementwise.
func Tanh(x *tensor.Tensor) *tensor.Tensor { return apply1(TanhPrim, x) }

// ReLU returns max(x, 0) elementwise. Its gradient at 0 is 0, as in
// MindSpore and PyTorch.
func ReLU(x *tensor.Tensor) *tensor.Tensor { return apply1(ReluPrim, x) }

// checkFloat rejects an operand that is not floating point, for the ops
// (and composites) defined only on floats.
func checkFloat(op string, x *tensor.Tensor) {
	if !x.DType().IsFloat() {
		core.Panicf(op, "unsupported dtype %v (shape %v); want Float32 or Float64", x.DType(), x.Shape())
	}
}
