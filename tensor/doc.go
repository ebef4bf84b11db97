// Package tensor holds spore's core data type and its dispatch mechanism.
//
// A Tensor is an n-dimensional array of one DType. It is concrete (it owns
// a buffer) or symbolic (a value in a graph being traced). A primitive op is
// one Prim value — shape and dtype inference, CPU kernel, gradient rule
// (VJP) and compiler traits — and Apply is the single place where an op
// runs: on concrete inputs it infers the result, allocates it and runs the
// kernel (PyNative mode); when an input is symbolic, or a parameter is read
// while the calling goroutine traces, it hands the op to the Tracer instead
// (Graph mode). Either way, when an input is tracked for differentiation,
// Apply records a Node on the autodiff tape.
//
// Misuse panics with an *Error naming the op, the offending shapes and the
// caller's source line; reading the value of a symbolic tensor panics with
// a *ConcretizationError that explains how to restructure the code.
//
// Most programs use this package through the root package spore (the
// Tensor alias, SetSeed) and package ops (the functional op set).
package tensor
