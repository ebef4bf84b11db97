// Package tensor holds spore's n-dimensional array, its element types and
// the functions that create tensors.
//
// A Tensor is an n-dimensional array of one DType. It is concrete (it owns
// a buffer) or symbolic (a value in a graph being traced in Graph mode). Ops
// on tensors live in package ops; the root package spore re-exports the
// types users need most. The dispatch machinery — primitives, the tracer,
// the autodiff tape — lives under internal/ and is not part of the API.
//
// The element types are Float32 (the working type of networks), Float64,
// the integers Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32 and
// Uint64 (whose arithmetic wraps around), Bool, and the 16-bit floats of mixed precision:
// BFloat16 (float32's exponent range, 8 significant bits) and Float16
// (IEEE binary16, 11 significant bits, finite up to 65504). Their elements
// are the raw-bit types BF16 and F16; BF16From and F16From round a float32
// to them (to nearest, ties to even), Float32s reads them back exactly,
// and printing shows their values in the fewest digits that identify them
// in their type, as NumPy prints float16. Ops on 16-bit tensors compute in
// float32 and round each result (see package ops); ops.Cast converts
// between every pair of types.
//
// Misuse panics with an *Error naming the op, the offending shapes and the
// caller's source line; reading the value of a symbolic tensor panics with
// a *ConcretizationError that explains how to restructure the code.
package tensor
