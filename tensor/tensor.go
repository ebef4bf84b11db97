package tensor

import "github.com/sporeml/spore/internal/core"

// Tensor is an n-dimensional array of one element type.
//
// A tensor is either concrete — it owns a buffer — or symbolic — it stands
// for a value in a graph being traced and has a shape and dtype but no data
// yet. Ops accept both.
//
// Tensors have value semantics: ops return new tensors and never change their
// inputs. The one exception is a parameter (NewParameter), a named tensor with
// identity that optimisers and layers update in place with Assign.
//
// Tensor is declared with the dispatch machinery, under internal/, which is
// why documentation tools show this alias without its methods. They are:
//
//   - Shape, DType, Rank, Size, Dim(i), Meta: what the tensor is.
//   - Float32s, Float64s, Int32s, Int64s, Bools: a copy of the elements,
//     converted (a BFloat16 or Float16 tensor's Float32s are its values,
//     exactly); Item and Bool: the value of a one-element tensor; At(idx...):
//     one element; Data: the buffer itself, not copied, for kernels.
//   - String (NumPy-style printing), Verbose and GoString (MindSpore's repr).
//   - IsSymbolic: whether the tensor is a value being traced in Graph mode,
//     whose elements cannot be read (a *ConcretizationError says why).
//   - IsParameter, Name, SetName, RequiresGrad, SetRequiresGrad, Assign:
//     parameters' identity, training switch and in-place update.
//   - Clone: a concrete copy that shares nothing.
type Tensor = core.Tensor

// DType is the element type of a tensor.
type DType = core.DType

// The element types. Float32 is the working type of networks; Float64 exists
// for gradient checks and numerically delicate work; the integer types hold
// labels and indices; Bool holds comparison results; Uint8 holds raw data
// such as images. BFloat16 and Float16 are the 16-bit floats of mixed
// precision (elements BF16 and F16): ops compute on them in float32 and
// round each result back, and Cast converts to and from every other type.
// Int8, Int16, Uint16, Uint32 and Uint64 (Go elements int8, int16, uint16,
// uint32, uint64) are the remaining integer types of ONNX and NumPy:
// quantized values, bit fields, data read from files. Integer arithmetic
// wraps around as C's does.
const (
	Invalid = core.Invalid
	Float32 = core.Float32
	Float64 = core.Float64
	Int32   = core.Int32
	Int64   = core.Int64
	Bool    = core.Bool
	Uint8   = core.Uint8
	// BFloat16 is Google Brain's bfloat16: float32's 8-bit exponent with
	// 8 bits of significand (relative rounding error at most 2^-8).
	BFloat16 = core.BFloat16
	// Float16 is IEEE 754 binary16: 11 bits of significand, finite values
	// up to 65504.
	Float16 = core.Float16
	Int8    = core.Int8
	Int16   = core.Int16
	Uint16  = core.Uint16
	Uint32  = core.Uint32
	Uint64  = core.Uint64
)

// BF16 is one bfloat16 value held as its raw bits: the element type of
// BFloat16 tensors (FromSlice([]BF16{...}), Data().([]BF16)). Convert with
// BF16From and the Float32 method; it prints its value.
type BF16 = core.BF16

// F16 is one IEEE binary16 value held as its raw bits: the element type of
// Float16 tensors. Convert with F16From and the Float32 method.
type F16 = core.F16

// BF16From rounds f to the nearest bfloat16 (ties to even; NaN stays NaN).
func BF16From(f float32) BF16 { return core.BF16From(f) }

// F16From rounds f to the nearest binary16 value (ties to even; beyond
// ±65504 it becomes ±Inf).
func F16From(f float32) F16 { return core.F16From(f) }

// Bits16 returns the buffer of a BFloat16 or Float16 tensor as raw bits,
// not copied, for kernels that take []uint16 (it panics with an *Error for
// other dtypes). Like Data, it must not be written through.
func Bits16(t *Tensor) []uint16 { return core.Bits16(t) }

// Number is the set of Go element types a tensor can hold besides bool.
type Number = core.Number

// Int is the set of Go integer element types.
type Int = core.Int

// Elem is the set of Go element types a tensor can hold.
type Elem = core.Elem

// DTypeOf returns the DType that holds Go values of type T.
func DTypeOf[T Elem]() DType { return core.DTypeOf[T]() }

// Shape is the extents of a tensor's axes, outermost first.
type Shape = core.Shape

// Meta is what is known of a value before it is computed: its shape and
// dtype (Tensor.Meta).
type Meta = core.Meta

// Error is the typed panic value for misuse of an op: it names the op, the
// offending shapes or values and the caller's source line. Match it with
// errors.As.
type Error = core.Error

// ConcretizationError is the panic value for reading the value of a
// symbolic tensor (one being traced in Graph mode): it names the function
// and line and suggests spore.Cond, spore.While or spore.Scan.
type ConcretizationError = core.ConcretizationError

// New returns a zero-filled tensor of the given type and shape. The shape is
// copied. A negative extent, or a shape whose element count overflows, panics
// with an *Error.
func New(dt DType, shape ...int) *Tensor { return core.New(dt, shape...) }

// FromSlice returns a tensor holding a copy of data with the given shape
// (a 1-D tensor of len(data) when shape is empty).
func FromSlice[T Elem](data []T, shape ...int) *Tensor { return core.FromSlice(data, shape...) }

// Scalar returns a 0-D tensor holding v.
func Scalar[T Elem](v T) *Tensor { return core.Scalar(v) }

// Zeros returns a zero-filled tensor.
func Zeros(dt DType, shape ...int) *Tensor { return core.Zeros(dt, shape...) }

// Ones returns a tensor filled with ones.
func Ones(dt DType, shape ...int) *Tensor { return core.Ones(dt, shape...) }

// Full returns a tensor filled with v.
func Full(dt DType, v float64, shape ...int) *Tensor { return core.Full(dt, v, shape...) }

// Arange returns the 1-D tensor start, start+step, ... up to but excluding
// stop.
func Arange(dt DType, start, stop, step float64) *Tensor {
	return core.Arange(dt, start, stop, step)
}

// Eye returns the n×n identity matrix.
func Eye(dt DType, n int) *Tensor { return core.Eye(dt, n) }

// NewParameter returns a parameter: a named tensor with identity, holding a
// copy of init, that layers read and optimisers update in place (Assign). A
// traced function reads a parameter by reference, so later updates are seen
// by every compiled call.
func NewParameter(name string, init *Tensor) *Tensor { return core.NewParameter(name, init) }

// SetSeed seeds the framework's random source: random tensors, initialisers
// and dropout draw from it.
func SetSeed(seed int64) { core.SetSeed(seed) }

// RandUniform returns a tensor of values drawn uniformly from [lo, hi).
func RandUniform(dt DType, lo, hi float64, shape ...int) *Tensor {
	return core.RandUniform(dt, lo, hi, shape...)
}

// RandNormal returns a tensor of values drawn from N(mean, std²).
func RandNormal(dt DType, mean, std float64, shape ...int) *Tensor {
	return core.RandNormal(dt, mean, std, shape...)
}

// RandTruncNormal returns a tensor of values drawn from N(mean, std²)
// truncated to two standard deviations.
func RandTruncNormal(dt DType, mean, std float64, shape ...int) *Tensor {
	return core.RandTruncNormal(dt, mean, std, shape...)
}
