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
)

// SetSeed seeds the framework's random source (MindSpore's set_seed):
// random tensors, initialisers and dropout draw from it.
func SetSeed(seed int64) { tensor.SetSeed(seed) }
