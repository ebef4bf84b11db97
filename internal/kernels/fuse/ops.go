package fuse

import (
	"fmt"
	"unsafe"
)

// Type is the element type of a register, an input or an output.
type Type uint8

// The element types a program computes in: those of the framework's
// tensors.
const (
	_ Type = iota
	F32
	F64
	I32
	I64
	U8
	Bool
	numTypes
)

var typeNames = [...]string{F32: "f32", F64: "f64", I32: "i32", I64: "i64", U8: "u8", Bool: "bool"}

// String names the type.
func (t Type) String() string {
	if t > 0 && t < numTypes {
		return typeNames[t]
	}
	return fmt.Sprintf("Type(%d)", t)
}

// size is the width of one element in bytes.
func (t Type) size() int {
	switch t {
	case F64, I64:
		return 8
	case F32, I32:
		return 4
	}
	return 1
}

// elem is the set of Go element types a program computes in.
type elem interface {
	float32 | float64 | int32 | int64 | uint8 | bool
}

func typeOf[T elem]() Type {
	var z T
	switch any(z).(type) {
	case float32:
		return F32
	case float64:
		return F64
	case int32:
		return I32
	case int64:
		return I64
	case uint8:
		return U8
	}
	return Bool
}

// call runs a bound body over one block of n elements: d is the result's
// first element, a the operands' (unused ones nil).
type call func(d unsafe.Pointer, a *[3]unsafe.Pointer, n int)

// Fn is an elementwise body bound for the interpreter: the types it reads
// and writes and a call over raw blocks. Bind makes one; the zero Fn is
// invalid.
type Fn struct {
	Dst   Type    // the result's type
	Arity int     // how many operands it reads (1 to 3)
	Args  [3]Type // the operands' types, Args[:Arity]
	call  call
}

// Bind wraps body, a block function over equal-length slices (d[i] is
// computed from element i of each operand; d may alias an operand), for the
// interpreter. For element types T and U of the framework (float32,
// float64, int32, int64, uint8, bool), body is one of
//
//	func(d, a []T)              unary
//	func(d, a, b []T)           binary
//	func(d, a, b, c []T)        ternary
//	func(d []bool, a []T)       predicate
//	func(d []bool, a, b []T)    comparison
//	func(d []T, c []bool, a, b []T)  selection
//	func(d []U, a []T)          conversion
//
// These are the signatures of the ops' own bodies (package ops), so the
// interpreter knows no op: it only knows how to call a function over
// blocks. Binding happens once, when a program is built.
func Bind(body any) (Fn, error) {
	for _, b := range [...]func(any) (Fn, bool){
		bindT[float32], bindT[float64], bindT[int32], bindT[int64], bindT[uint8], bindT[bool],
	} {
		if f, ok := b(body); ok {
			return f, nil
		}
	}
	return Fn{}, fmt.Errorf("fuse: %T is not a block function", body)
}

// MustBind is Bind for bodies known to be valid; it panics otherwise.
func MustBind(body any) Fn {
	f, err := Bind(body)
	if err != nil {
		panic(err)
	}
	return f
}

// block views n elements from p as a []T.
func block[T elem](p unsafe.Pointer, n int) []T { return unsafe.Slice((*T)(p), n) }

func bindT[T elem](body any) (Fn, bool) {
	t := typeOf[T]()
	switch f := body.(type) {
	case func(d, a []T):
		return Fn{t, 1, [3]Type{t}, func(d unsafe.Pointer, a *[3]unsafe.Pointer, n int) {
			f(block[T](d, n), block[T](a[0], n))
		}}, true
	case func(d, a, b []T):
		return Fn{t, 2, [3]Type{t, t}, func(d unsafe.Pointer, a *[3]unsafe.Pointer, n int) {
			f(block[T](d, n), block[T](a[0], n), block[T](a[1], n))
		}}, true
	case func(d, a, b, c []T):
		return Fn{t, 3, [3]Type{t, t, t}, func(d unsafe.Pointer, a *[3]unsafe.Pointer, n int) {
			f(block[T](d, n), block[T](a[0], n), block[T](a[1], n), block[T](a[2], n))
		}}, true
	case func(d []bool, a, b []T):
		return Fn{Bool, 2, [3]Type{t, t}, func(d unsafe.Pointer, a *[3]unsafe.Pointer, n int) {
			f(block[bool](d, n), block[T](a[0], n), block[T](a[1], n))
		}}, true
	case func(d []T, c []bool, a, b []T):
		return Fn{t, 3, [3]Type{Bool, t, t}, func(d unsafe.Pointer, a *[3]unsafe.Pointer, n int) {
			f(block[T](d, n), block[bool](a[0], n), block[T](a[1], n), block[T](a[2], n))
		}}, true
	}
	for _, b := range [...]func(any) (Fn, bool){
		bindConv[T, float32], bindConv[T, float64], bindConv[T, int32], bindConv[T, int64], bindConv[T, uint8], bindConv[T, bool],
	} {
		if f, ok := b(body); ok {
			return f, true
		}
	}
	return Fn{}, false
}

// bindConv binds a conversion from T to U (and the predicates, U = bool).
func bindConv[T, U elem](body any) (Fn, bool) {
	f, ok := body.(func(d []U, a []T))
	if !ok {
		return Fn{}, false
	}
	return Fn{typeOf[U](), 1, [3]Type{typeOf[T]()}, func(d unsafe.Pointer, a *[3]unsafe.Pointer, n int) {
		f(block[U](d, n), block[T](a[0], n))
	}}, true
}

// unpackers[t] returns the first element and length of a []T for type t,
// or ok false for a slice of another type: the per-run unpacking of
// operands indexes this table by the type the program was checked for,
// rather than switching on the buffer's type.
var unpackers = [numTypes]func(any) (unsafe.Pointer, int, bool){
	F32: unpack[float32], F64: unpack[float64], I32: unpack[int32],
	I64: unpack[int64], U8: unpack[uint8], Bool: unpack[bool],
}

func unpack[T elem](x any) (unsafe.Pointer, int, bool) {
	s, ok := x.([]T)
	return unsafe.Pointer(unsafe.SliceData(s)), len(s), ok
}

// Slice returns the type, first element and length of a slice of one of
// the element types, or ok false for anything else.
func slice(x any) (t Type, p unsafe.Pointer, n int, ok bool) {
	switch s := x.(type) {
	case []float32:
		return F32, unsafe.Pointer(unsafe.SliceData(s)), len(s), true
	case []float64:
		return F64, unsafe.Pointer(unsafe.SliceData(s)), len(s), true
	case []int32:
		return I32, unsafe.Pointer(unsafe.SliceData(s)), len(s), true
	case []int64:
		return I64, unsafe.Pointer(unsafe.SliceData(s)), len(s), true
	case []uint8:
		return U8, unsafe.Pointer(unsafe.SliceData(s)), len(s), true
	case []bool:
		return Bool, unsafe.Pointer(unsafe.SliceData(s)), len(s), true
	}
	return 0, nil, 0, false
}
