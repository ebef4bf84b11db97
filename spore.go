package spore

import "github.com/sporeml/spore/tensor"

// Tensor is spore's n-dimensional array; see package tensor.
type Tensor = tensor.Tensor

// DType is a tensor's element type.
type DType = tensor.DType

// Shape is a tensor's extents.
type Shape = tensor.Shape

// Error is the typed panic value for misuse of an op; match it with errors.As.
type Error = tensor.Error

// The element types.
const (
	Float32 = tensor.Float32
	Float64 = tensor.Float64
	Int32   = tensor.Int32
	Int64   = tensor.Int64
	Bool    = tensor.Bool
	Uint8   = tensor.Uint8
	// The 16-bit floats of mixed precision (see package tensor).
	BFloat16 = tensor.BFloat16
	Float16  = tensor.Float16
)

// SetSeed seeds the framework's random source (MindSpore's set_seed):
// random tensors, initialisers and dropout draw from it.
func SetSeed(seed int64) { tensor.SetSeed(seed) }

// ConcretizationError is the panic value for reading the elements of a
// symbolic tensor inside a traced function; it names the function and line
// and suggests Cond, While or Scan.
type ConcretizationError = tensor.ConcretizationError

// Elem is the set of Go element types a tensor can hold (FromSlice,
// Scalar).
type Elem = tensor.Elem

// Tensor creation. These are the constructors of package tensor, here so
// that a program needs only spore, ops and nn; each returns a concrete
// tensor (never symbolic, even inside a traced function: it becomes a
// constant of the graph).

// New returns a zero-filled tensor of dtype dt and the given shape. A
// negative extent, or a shape whose element count overflows, panics with
// an *Error.
func New(dt DType, shape ...int) *Tensor { return tensor.New(dt, shape...) }

// FromSlice returns a tensor holding a copy of data with the given shape
// (a 1-D tensor of len(data) when shape is empty); its dtype follows T.
func FromSlice[T Elem](data []T, shape ...int) *Tensor { return tensor.FromSlice(data, shape...) }

// Scalar returns a 0-D tensor holding v; its dtype follows T.
func Scalar[T Elem](v T) *Tensor { return tensor.Scalar(v) }

// Zeros returns a zero-filled tensor.
func Zeros(dt DType, shape ...int) *Tensor { return tensor.Zeros(dt, shape...) }

// Ones returns a tensor filled with ones.
func Ones(dt DType, shape ...int) *Tensor { return tensor.Ones(dt, shape...) }

// Full returns a tensor filled with v (converted to dt).
func Full(dt DType, v float64, shape ...int) *Tensor { return tensor.Full(dt, v, shape...) }

// Arange returns the 1-D tensor start, start+step, ... up to but excluding
// stop.
func Arange(dt DType, start, stop, step float64) *Tensor {
	return tensor.Arange(dt, start, stop, step)
}

// Eye returns the n×n identity matrix.
func Eye(dt DType, n int) *Tensor { return tensor.Eye(dt, n) }

// RandUniform returns a tensor of values drawn uniformly from [lo, hi)
// by the framework's random source (SetSeed).
func RandUniform(dt DType, lo, hi float64, shape ...int) *Tensor {
	return tensor.RandUniform(dt, lo, hi, shape...)
}

// RandNormal returns a tensor of values drawn from N(mean, std²) by the
// framework's random source (SetSeed).
func RandNormal(dt DType, mean, std float64, shape ...int) *Tensor {
	return tensor.RandNormal(dt, mean, std, shape...)
}

// RandTruncNormal returns a tensor of values drawn from N(mean, std²)
// truncated to two standard deviations.
func RandTruncNormal(dt DType, mean, std float64, shape ...int) *Tensor {
	return tensor.RandTruncNormal(dt, mean, std, shape...)
}

// NewParameter returns a parameter (MindSpore's Parameter): a named tensor
// with identity, holding a copy of init, that layers read and optimisers
// update in place (Tensor.Assign). A traced function reads a parameter by
// reference, so later updates are seen by every compiled call.
func NewParameter(name string, init *Tensor) *Tensor { return tensor.NewParameter(name, init) }
