// Package core is spore's dispatch machinery: the Tensor type's internals,
// the primitive type and the one place where an op runs.
//
// A primitive op is one Prim value — shape and dtype inference, CPU kernel,
// gradient rule (VJP) and compiler traits — and Apply is the single place
// where an op runs: on concrete inputs it infers the result, allocates it and
// runs the kernel (PyNative mode); when an input is symbolic, or a parameter
// is read while the calling goroutine traces, it hands the op to the Tracer
// instead (Graph mode). Either way, when an input is tracked for
// differentiation, Apply records a Node on the autodiff tape.
//
// Users never import this package: package tensor re-exports the Tensor type
// and the functions that create tensors, package ops the op set, and the
// root package spore the modes and transforms.
package core
