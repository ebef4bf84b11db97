package ops

import (
	"math"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// Kernel registration. A primitive's kernels are written once as a generic
// Go function over the element type T and instantiated per dtype here, so
// that the kernel table holds one function per (dtype, backend) and no
// kernel switches on its operands' type when it runs: the type is fixed
// when the kernel is looked up (once per compiled plan, or per eager call
// by indexing the table).
//
// Go instantiates a generic function only at types written out in the
// source, and cannot pass one uninstantiated. So the lists of types are
// written once, below, as values of a generic type (numberAt[T], intAt[T],
// elemAt[T]) behind an interface; a kernel family is one method of that
// type, returning its instantiation at T; and an op registers a family
// for every type of a list by naming the method:
//
//	registerNumbers(ArgSortPrim, numberType.argSort)
//
// A new dtype is one line in a list; a new family one method.

// numberType is one number element type: its dtype and the instantiations
// at it of the kernel families defined over every number type.
type numberType interface {
	dtype() tensor.DType
	argSort() core.KernelFunc
	topK() core.KernelFunc
	arg(isMax bool) core.KernelFunc
	extremum(isMax bool) core.KernelFunc
	prod() core.KernelFunc
	sum() core.KernelFunc
	scan(prod bool) core.KernelFunc
	compare(p *core.Prim, k cmpKind, b *bodyTable)
	clip()
	clipTensor(b *bodyTable)
	maxPool() core.KernelFunc
	scatterAdd(p *core.Prim, ix tensor.DType) core.KernelFunc
}

// numberAt is the numberType of T.
type numberAt[T tensor.Number] struct{}

func (numberAt[T]) dtype() tensor.DType            { return core.DTypeOf[T]() }
func (numberAt[T]) argSort() core.KernelFunc       { return argSortKernel[T]() }
func (numberAt[T]) topK() core.KernelFunc          { return topKKernel[T]() }
func (numberAt[T]) arg(isMax bool) core.KernelFunc { return argKernel[T](isMax) }
func (numberAt[T]) prod() core.KernelFunc          { return prodKernel[T] }
func (numberAt[T]) sum() core.KernelFunc           { return sumKernel[T](nil) }
func (numberAt[T]) scan(prod bool) core.KernelFunc { return scanKernel[T](prod) }
func (numberAt[T]) maxPool() core.KernelFunc       { return maxPoolIntKernel[T] }
func (numberAt[T]) clip()                          { regClip[T](clipBounds[T]) }
func (numberAt[T]) clipTensor(b *bodyTable)        { regClipTensor[T](b) }
func (numberAt[T]) extremum(isMax bool) core.KernelFunc {
	lo, hi := rangeOf[T]()
	return extremumKernel(isMax, lo, hi)
}
func (numberAt[T]) scatterAdd(p *core.Prim, ix tensor.DType) core.KernelFunc {
	return scatterAddKernel[T](p, ix)
}
func (numberAt[T]) compare(p *core.Prim, k cmpKind, b *bodyTable) {
	regCompare[T](p, k, b)
}

// The lists of number types: the floats, the integers (whose arithmetic
// wraps), and both.
var (
	floatTypes = []numberType{numberAt[float32]{}, numberAt[float64]{}}
	intTypes   = []intType{intAt[int8]{}, intAt[int16]{}, intAt[int32]{}, intAt[int64]{},
		intAt[uint8]{}, intAt[uint16]{}, intAt[uint32]{}, intAt[uint64]{}}
	numberTypes = append(append([]numberType(nil), floatTypes...), asNumbers(intTypes)...)
)

// asNumbers lists the integer types as numberTypes.
func asNumbers(ts []intType) []numberType {
	out := make([]numberType, len(ts))
	for i, t := range ts {
		out[i] = t
	}
	return out
}

// rangeOf returns the smallest and largest values of T (±Inf for floats).
func rangeOf[T tensor.Number]() (lo, hi T) {
	var l, h any
	switch any(*new(T)).(type) {
	case float32:
		l, h = float32(math.Inf(-1)), float32(math.Inf(1))
	case float64:
		l, h = math.Inf(-1), math.Inf(1)
	case int8:
		l, h = int8(math.MinInt8), int8(math.MaxInt8)
	case int16:
		l, h = int16(math.MinInt16), int16(math.MaxInt16)
	case int32:
		l, h = int32(math.MinInt32), int32(math.MaxInt32)
	case int64:
		l, h = int64(math.MinInt64), int64(math.MaxInt64)
	case uint8:
		l, h = uint8(0), uint8(math.MaxUint8)
	case uint16:
		l, h = uint16(0), uint16(math.MaxUint16)
	case uint32:
		l, h = uint32(0), uint32(math.MaxUint32)
	case uint64:
		l, h = uint64(0), uint64(math.MaxUint64)
	}
	return l.(T), h.(T)
}

// registerEach installs k's instantiation at every type of types as p's
// CPU kernel for that type.
func registerEach(p *core.Prim, types []numberType, k func(numberType) core.KernelFunc) {
	for _, t := range types {
		p.Register(t.dtype(), core.CPU, k(t))
	}
}

// registerNumbers installs k's instantiation at every number dtype.
func registerNumbers(p *core.Prim, k func(numberType) core.KernelFunc) {
	registerEach(p, numberTypes, k)
}

// registerInts installs k's instantiation at every integer dtype.
func registerInts(p *core.Prim, k func(numberType) core.KernelFunc) {
	registerEach(p, asNumbers(intTypes), k)
}

// elemType is one element type a kernel that only moves elements serves:
// every dtype but the 16-bit floats, whose kernels widen.go derives on
// demand.
type elemType interface {
	dtype() tensor.DType
	move(p *core.Prim, ix tensor.DType) core.KernelFunc
	unstack() core.KernelNFunc
	sel()
	regUnary(p *core.Prim, b *bodyTable)
}

// elemAt is the elemType of T.
type elemAt[T core.Elem] struct{}

func (elemAt[T]) dtype() tensor.DType { return core.DTypeOf[T]() }
func (elemAt[T]) move(p *core.Prim, ix tensor.DType) core.KernelFunc {
	return moveKernel[T](p, ix)
}
func (elemAt[T]) unstack() core.KernelNFunc { return unstackInto[T] }
func (elemAt[T]) sel()                      { regSelect[T]() }
func (elemAt[T]) regUnary(p *core.Prim, b *bodyTable) {
	regUnary[T](p, b)
}

// elemTypes lists the dtypes element-moving kernels are registered for.
var elemTypes = []elemType{
	elemAt[float32]{}, elemAt[float64]{}, elemAt[int8]{}, elemAt[int16]{}, elemAt[int32]{},
	elemAt[int64]{}, elemAt[uint8]{}, elemAt[uint16]{}, elemAt[uint32]{}, elemAt[uint64]{},
	elemAt[bool]{},
}

// register installs k, the instantiation at T of a generic kernel, as p's
// CPU kernel for T's dtype.
func register[T core.Elem](p *core.Prim, k core.KernelFunc) {
	p.Register(core.DTypeOf[T](), core.CPU, k)
}

// registerFloats installs the float32 and float64 instantiations of one
// generic kernel.
func registerFloats(p *core.Prim, f32, f64 core.KernelFunc) {
	register[float32](p, f32)
	register[float64](p, f64)
}

// registerMoves installs, for every dtype of elemTypes, the element-moving
// kernel of p (moveKernel): the kernels of the ops that move elements
// without computing on them (Reshape, Transpose, Concat, ...).
func registerMoves(p *core.Prim) {
	for _, t := range elemTypes {
		p.Register(t.dtype(), core.CPU, t.move(p, tensor.Invalid))
	}
}

// copyKernel copies the first operand's elements into the result.
func copyKernel[T core.Elem](_ any, in []*core.Tensor, out *core.Tensor) {
	copy(out.Data().([]T), in[0].Data().([]T))
}
