package ops

import (
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// Integer arithmetic. The elementwise ops' integer kernels are one generic
// function per operation (intBinaryFn, intUnaryFn), named by an intOp in
// the op's definition and instantiated at every integer type of
// kernreg.go's lists, so that Int8 through Uint64 share one definition.
// Arithmetic wraps around as C's (and Go's) does on two's complement
// hardware: Int8 127+1 is -128, Uint8 0-1 is 255, MinInt/-1 is MinInt.

// intOp names an integer operation.
type intOp uint8

const (
	intNone intOp = iota
	// Binary operations.
	intAdd
	intSub
	intMul
	intDiv      // truncating toward zero, as C and ONNX's Div
	intFloorDiv // rounding toward -∞, as Python's //
	intFloorMod // the remainder with the divisor's sign, as Python's %
	intMax
	intMin
	intReluGrad
	intAnd
	intOr
	intXor
	intShl
	intShr
	// Unary operations.
	intNeg
	intAbs
	intSign
	intIdentity
	intRelu
	intSquare
	intNot
)

// isSigned reports whether T is a signed integer type.
func isSigned[T core.Int]() bool {
	var z T
	return ^z < 0
}

// intBinaryFn returns binary integer operation op at T, nil for a unary
// one and for a shift at a signed type (shifts, as ONNX's BitShift, take
// unsigned types only, so no count is negative). A division by zero
// (intDiv, intFloorDiv, intFloorMod) panics with an error naming the
// operation: ONNX leaves it undefined and NumPy's silent 0 is a wrong
// answer.
func intBinaryFn[T core.Int](op intOp) func(a, b T) T {
	switch op {
	case intAdd:
		return func(a, b T) T { return a + b }
	case intSub:
		return func(a, b T) T { return a - b }
	case intMul:
		return func(a, b T) T { return a * b }
	case intDiv:
		return func(a, b T) T {
			if b == 0 {
				intDivByZero("Div")
			}
			return a / b
		}
	case intFloorDiv:
		return floorDivInt[T]
	case intFloorMod:
		return floorModInt[T]
	case intMax:
		return func(a, b T) T { return max(a, b) }
	case intMin:
		return func(a, b T) T { return min(a, b) }
	case intReluGrad:
		return func(x, g T) T { return reluGrad(x, g) }
	case intAnd:
		return func(a, b T) T { return a & b }
	case intOr:
		return func(a, b T) T { return a | b }
	case intXor:
		return func(a, b T) T { return a ^ b }
	case intShl, intShr:
		if isSigned[T]() {
			return nil
		}
		if op == intShl {
			return func(a, b T) T { return a << b } // a count of the width or more gives 0
		}
		return func(a, b T) T { return a >> b }
	}
	return nil
}

// intUnaryFn returns unary integer operation op at T, nil for a binary
// one or for intNeg at an unsigned type (ONNX's Neg takes signed types
// only).
func intUnaryFn[T core.Int](op intOp) func(x T) T {
	switch op {
	case intNeg:
		if !isSigned[T]() {
			return nil
		}
		return func(x T) T { return -x }
	case intAbs:
		if !isSigned[T]() {
			return identity[T] // max(x, -x) would take the wrap of -x
		}
		// The most negative integer has no positive twin; it maps to
		// itself, as in NumPy and two's complement hardware.
		return func(x T) T { return max(x, -x) }
	case intSign:
		return func(x T) T {
			switch {
			case x > 0:
				return 1
			case x < 0:
				return ^T(0) // -1; the expression is valid for unsigned T too
			}
			return 0
		}
	case intIdentity:
		return identity[T]
	case intRelu:
		return func(x T) T { return max(x, 0) }
	case intSquare:
		return func(x T) T { return x * x }
	case intNot:
		return func(x T) T { return ^x }
	}
	return nil
}

// intType is one integer element type: a numberType with the
// instantiations of the integer operations at it.
type intType interface {
	numberType
	unaryBody(op intOp) any
	binaryBody(op intOp) any
	binaryKernel(op intOp, commutative bool) core.KernelFunc
}

// intAt is the intType of T.
type intAt[T core.Int] struct{ numberAt[T] }

// unaryBody is op's block function at T, nil when op has none at T.
func (intAt[T]) unaryBody(op intOp) any { return lift1(intUnaryFn[T](op)) }

// binaryBody is op's block function at T, nil when op has none.
func (intAt[T]) binaryBody(op intOp) any { return lift2(intBinaryFn[T](op)) }

// binaryKernel is op's eager kernel at T, broadcasting; nil when op has
// none at T.
func (intAt[T]) binaryKernel(op intOp, commutative bool) core.KernelFunc {
	f := intBinaryFn[T](op)
	if f == nil {
		return nil
	}
	return binaryKernel(lift2(f).(func(d, a, b []T)), f, nil, nil, commutative)
}

// The bitwise primitives, over the integer dtypes alone.
var BitwiseAndPrim, BitwiseOrPrim, BitwiseXorPrim, BitwiseNotPrim, ShiftLeftPrim, ShiftRightPrim *core.Prim

func init() {
	BitwiseAndPrim = defBinary("BitwiseAnd", 1, true, binary{ints: intAnd})
	BitwiseOrPrim = defBinary("BitwiseOr", 1, true, binary{ints: intOr})
	BitwiseXorPrim = defBinary("BitwiseXor", 1, true, binary{ints: intXor})
	BitwiseNotPrim = defUnary("BitwiseNot", 1, unary{ints: intNot})
	ShiftLeftPrim = defBinary("ShiftLeft", 1, false, binary{ints: intShl})
	ShiftRightPrim = defBinary("ShiftRight", 1, false, binary{ints: intShr})
}

// BitwiseAnd returns a & b elementwise over integers, broadcasting.
func BitwiseAnd(a, b *tensor.Tensor) *tensor.Tensor { return apply2(BitwiseAndPrim, a, b) }

// BitwiseOr returns a | b elementwise over integers, broadcasting.
func BitwiseOr(a, b *tensor.Tensor) *tensor.Tensor { return apply2(BitwiseOrPrim, a, b) }

// BitwiseXor returns a ^ b elementwise over integers, broadcasting.
func BitwiseXor(a, b *tensor.Tensor) *tensor.Tensor { return apply2(BitwiseXorPrim, a, b) }

// BitwiseNot returns ^x (every bit flipped) elementwise over integers.
func BitwiseNot(x *tensor.Tensor) *tensor.Tensor { return apply1(BitwiseNotPrim, x) }

// ShiftLeft returns x << n elementwise over unsigned integers of one
// dtype (ONNX's BitShift LEFT), broadcasting: bits shifted out are lost,
// and a count of the type's width or more gives 0.
func ShiftLeft(x, n *tensor.Tensor) *tensor.Tensor { return apply2(ShiftLeftPrim, x, n) }

// ShiftRight returns x >> n elementwise over unsigned integers of one
// dtype (ONNX's BitShift RIGHT), broadcasting: a logical shift, a count
// of the width or more giving 0.
func ShiftRight(x, n *tensor.Tensor) *tensor.Tensor { return apply2(ShiftRightPrim, x, n) }
