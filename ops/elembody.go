package ops

import (
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// Block bodies of the elementwise ops (core.Elementwise). An op's
// arithmetic is written once, as a block function per dtype (or a scalar
// function lifted to one); its eager kernels, registered per dtype, call
// that body, and the compiler's loop fusion strings the same body into
// fused programs. The helpers here build both from an op's definition, so
// that a new elementwise op declares its body in its own definition and
// nothing else.

// nDT bounds the tables of bodies indexed by dtype.
const nDT = core.NumDTypes

// bodyTable holds an op's block function for each input dtype (nil: the
// dtype is not accepted).
type bodyTable [nDT]any

// at returns the body for inputs of dtype d, nil if there is none.
func (b *bodyTable) at(d tensor.DType) any {
	if int(d) < nDT {
		return b[d]
	}
	return nil
}

// byFirst is a core.Elementwise.Body choosing by the first input's dtype.
func (b *bodyTable) byFirst(_ any, in []tensor.DType) any { return b.at(in[0]) }

// lift1 turns a scalar function into a unary block body; nil stays nil
// (as an untyped nil, so that a missing dtype reads as no body).
func lift1[T any](f func(T) T) any {
	if f == nil {
		return nil
	}
	return func(d, x []T) {
		x = x[:len(d)]
		for i, v := range x {
			d[i] = f(v)
		}
	}
}

// lift2 turns a scalar function of two operands into a block body.
func lift2[T, U any](f func(a, b T) U) any {
	if f == nil {
		return nil
	}
	return func(d []U, a, b []T) {
		a, b = a[:len(d)], b[:len(d)]
		for i := range d {
			d[i] = f(a[i], b[i])
		}
	}
}

// lift3 turns a scalar function of three operands into a block body.
func lift3[T any](f func(a, b, c T) T) any {
	if f == nil {
		return nil
	}
	return func(d, a, b, c []T) {
		a, b, c = a[:len(d)], b[:len(d)], c[:len(d)]
		for i := range d {
			d[i] = f(a[i], b[i], c[i])
		}
	}
}

// orBody returns the block function v when it is set, else the lifted
// scalar one.
func orBody[T any](v func(d, x []T), f func(T) T) any {
	if v != nil {
		return v
	}
	return lift1(f)
}

// registerUnary installs, for every dtype with a body in b, a kernel that
// runs the body over the whole tensor.
func registerUnary(p *core.Prim, b *bodyTable) {
	for _, t := range elemTypes {
		t.regUnary(p, b)
	}
}

func regUnary[T core.Elem](p *core.Prim, b *bodyTable) {
	dt := core.DTypeOf[T]()
	f, ok := b.at(dt).(func(d, x []T))
	if !ok {
		return
	}
	p.Register(dt, core.CPU, func(_ any, in []*tensor.Tensor, out *tensor.Tensor) {
		f(out.Data().([]T), in[0].Data().([]T))
	})
}

// binaryKernel is the eager kernel of a binary op over dtype T: the body
// when the operands have the result's size; the vectorised scalar or row
// form (when the op has one) for a scalar operand or a bias; runs of either
// for an operand broadcast over trailing axes (a per-channel [1 C 1 1]);
// else the scalar function f over the broadcast.
func binaryKernel[T core.Elem](body func(d, a, b []T), f func(a, b T) T, scal func(d, a []T, s T), row func(d, a, r []T), commutative bool) core.KernelFunc {
	return func(_ any, in []*tensor.Tensor, out *tensor.Tensor) {
		x, y, o := in[0].Data().([]T), in[1].Data().([]T), out.Data().([]T)
		switch {
		case len(x) == len(o) && len(y) == len(o):
			body(o, x, y)
		case scal != nil && len(y) == 1 && len(x) == len(o):
			scal(o, x, y[0])
		case scal != nil && commutative && len(x) == 1 && len(y) == len(o):
			scal(o, y, x[0])
		case row != nil && len(x) == len(o) && len(y) > 0 && len(y) == lastDim(out.Shape()) && isRow(in[1].Shape()):
			row(o, x, y)
		case len(x) == len(o) && mapRuns(o, x, y, in[1].Shape(), out.Shape(), body, scal):
		case commutative && len(y) == len(o) && mapRuns(o, y, x, in[0].Shape(), out.Shape(), body, scal):
		default:
			map2(o, x, y, in[0].Shape(), in[1].Shape(), out.Shape(), f)
		}
	}
}

// lastDim is the extent of s's last axis (0 for a scalar shape).
func lastDim(s tensor.Shape) int {
	if len(s) == 0 {
		return 0
	}
	return s[len(s)-1]
}

// predicateKernel is the eager kernel of a comparison over dtype T: the
// body on equal sizes, else f over the broadcast.
func predicateKernel[T core.Elem](body func(d []bool, a, b []T), f func(a, b T) bool) core.KernelFunc {
	return func(_ any, in []*tensor.Tensor, out *tensor.Tensor) {
		x, y, o := in[0].Data().([]T), in[1].Data().([]T), out.Data().([]bool)
		if len(x) == len(o) && len(y) == len(o) {
			body(o, x, y)
			return
		}
		map2(o, x, y, in[0].Shape(), in[1].Shape(), out.Shape(), f)
	}
}

// ternaryKernel is the eager kernel of a ternary op of one dtype
// (ClipTensor): the body on equal sizes, else f over the broadcast.
func ternaryKernel[T core.Elem](body func(d, a, b, c []T), f func(a, b, c T) T) core.KernelFunc {
	return func(_ any, in []*tensor.Tensor, out *tensor.Tensor) {
		a, b, c, o := in[0].Data().([]T), in[1].Data().([]T), in[2].Data().([]T), out.Data().([]T)
		if len(a) == len(o) && len(b) == len(o) && len(c) == len(o) {
			body(o, a, b, c)
			return
		}
		map3(o, a, b, c, in[0].Shape(), in[1].Shape(), in[2].Shape(), out.Shape(), f)
	}
}
