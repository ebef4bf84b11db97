// Package tensor holds spore's n-dimensional array, its element types and
// the functions that create tensors.
//
// A Tensor is an n-dimensional array of one DType. It is concrete (it owns
// a buffer) or symbolic (a value in a graph being traced in Graph mode). Ops
// on tensors live in package ops; the root package spore re-exports the
// types users need most. The dispatch machinery — primitives, the tracer,
// the autodiff tape — lives under internal/ and is not part of the API.
//
// Misuse panics with an *Error naming the op, the offending shapes and the
// caller's source line; reading the value of a symbolic tensor panics with
// a *ConcretizationError that explains how to restructure the code.
package tensor
