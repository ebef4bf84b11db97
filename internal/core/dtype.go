package core

import "fmt"

// DType is the element type of a tensor.
type DType uint8

// The element types. Float32 is the working type of networks; Float64 exists
// for gradient checks and numerically delicate work; the integer types hold
// labels and indices; Bool holds comparison results; Uint8 holds raw data
// such as images. BFloat16 and Float16 are the 16-bit floating-point types
// of mixed precision: BFloat16 keeps float32's exponent range with 8 bits
// of significand (a relative rounding error of at most 2^-8), Float16 is
// IEEE binary16 (11 bits of significand, largest finite value 65504).
// Their elements are held as raw bits (BF16, F16) and converted to and
// from float32 with round-to-nearest-even. Int8, Int16, Uint16, Uint32 and
// Uint64 complete the integer types of the ONNX and NumPy formats
// (quantized weights, bit fields, shifts); their arithmetic wraps around
// as C's does. They come after Float16 so that the older dtypes keep their
// values.
const (
	Invalid DType = iota
	Float32
	Float64
	Int32
	Int64
	Bool
	Uint8
	BFloat16
	Float16
	Int8
	Int16
	Uint16
	Uint32
	Uint64
	// numDTypes bounds the kernel table; a new dtype goes above it.
	numDTypes
)

var dtypeNames = [...]string{"Invalid", "Float32", "Float64", "Int32", "Int64", "Bool", "UInt8", "BFloat16", "Float16", "Int8", "Int16", "UInt16", "UInt32", "UInt64"}

// NumDTypes bounds the DType values (all are below it), for tables indexed
// by dtype.
const NumDTypes = int(numDTypes)

// String returns MindSpore's spelling of the type (Float32, Int64, ...).
func (d DType) String() string {
	if int(d) < len(dtypeNames) {
		return dtypeNames[d]
	}
	return fmt.Sprintf("DType(%d)", d)
}

// IsFloat reports whether d is a floating-point type.
func (d DType) IsFloat() bool {
	return d == Float32 || d == Float64 || d == BFloat16 || d == Float16
}

// IsHalf reports whether d is a 16-bit floating-point type (BFloat16 or
// Float16): one whose arithmetic spore carries out in float32, rounding
// each result back (see package ops).
func (d DType) IsHalf() bool { return d == BFloat16 || d == Float16 }

// IsInt reports whether d is a signed or unsigned integer type.
func (d DType) IsInt() bool { return d.IsSignedInt() || d.IsUnsigned() }

// IsSignedInt reports whether d is a signed integer type.
func (d DType) IsSignedInt() bool { return d == Int8 || d == Int16 || d == Int32 || d == Int64 }

// IsUnsigned reports whether d is an unsigned integer type.
func (d DType) IsUnsigned() bool { return d == Uint8 || d == Uint16 || d == Uint32 || d == Uint64 }

// Size is the width of one element in bytes.
func (d DType) Size() int {
	switch d {
	case Float64, Int64, Uint64:
		return 8
	case Float32, Int32, Uint32:
		return 4
	case BFloat16, Float16, Int16, Uint16:
		return 2
	case Bool, Uint8, Int8:
		return 1
	}
	return 0
}

// Number is the set of Go element types a tensor can hold besides bool.
// The types added with Int8 and after are exact (no ~): BF16 and F16 are
// uint16 underneath, and ~uint16 would let them in.
type Number interface {
	~float32 | ~float64 | ~int32 | ~int64 | ~uint8 | int8 | int16 | uint16 | uint32 | uint64
}

// Int is the set of Go integer element types, for kernels defined on
// integers alone (bitwise operations, shifts).
type Int interface {
	~int32 | ~int64 | ~uint8 | int8 | int16 | uint16 | uint32 | uint64
}

// Elem is the set of Go element types a tensor can hold. BF16 and F16 are
// in it but not in Number: their raw bits must never meet Go's integer
// arithmetic, so generic arithmetic kernels (over Number) cannot be
// instantiated for them, while kernels that only move elements (over Elem)
// can.
type Elem interface {
	Number | ~bool | BF16 | F16
}

// DTypeOf returns the DType that holds Go values of type T.
func DTypeOf[T Elem]() DType {
	var z T
	switch any(z).(type) {
	case float32:
		return Float32
	case float64:
		return Float64
	case int32:
		return Int32
	case int64:
		return Int64
	case bool:
		return Bool
	case uint8:
		return Uint8
	case BF16:
		return BFloat16
	case F16:
		return Float16
	case int8:
		return Int8
	case int16:
		return Int16
	case uint16:
		return Uint16
	case uint32:
		return Uint32
	case uint64:
		return Uint64
	}
	return Invalid
}

// makeBuf allocates a zeroed buffer of n elements of type d.
func makeBuf(d DType, n int) any {
	switch d {
	case Float32:
		return make([]float32, n)
	case Float64:
		return make([]float64, n)
	case Int32:
		return make([]int32, n)
	case Int64:
		return make([]int64, n)
	case Bool:
		return make([]bool, n)
	case Uint8:
		return make([]uint8, n)
	case BFloat16:
		return make([]BF16, n)
	case Float16:
		return make([]F16, n)
	case Int8:
		return make([]int8, n)
	case Int16:
		return make([]int16, n)
	case Uint16:
		return make([]uint16, n)
	case Uint32:
		return make([]uint32, n)
	case Uint64:
		return make([]uint64, n)
	}
	panic(fmt.Sprintf("spore: no buffer for dtype %v", d))
}
