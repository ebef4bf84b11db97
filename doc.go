// Package spore is a deep-learning framework for Go with MindSpore's two
// execution modes.
//
// In PyNative mode (the default) every op runs the moment it is called, so
// intermediate values can be printed and debugged. In Graph mode a
// function is traced once per input signature into a typed IR, optimised as
// a whole (CSE, constant folding, algebraic simplification, transpose
// folding, GEMM epilogue fusion, elementwise loop fusion, liveness-based
// buffer planning), compiled into an execution plan and replayed without
// allocating. The same model code runs in both:
//
//	spore.SetContext(spore.WithMode(spore.GraphMode)) // globally
//	var run = spore.Jit(forward)                      // per function
//
// This package holds the user-facing core: the Tensor type (from package
// tensor), the context and modes, Jit and its cache, control flow that
// stages into graphs (Cond, While, Scan, Print), and reverse-mode automatic
// differentiation (Grad, ValueAndGrad, ValueAndGradAux, VJP) with
// MindSpore's options (grad positions, weights, auxiliary outputs,
// sensitivities). Gradients are themselves differentiable, and compose with
// Jit both ways: Jit(Grad(f)) is one joint forward and backward graph;
// Grad(Jit(f)) puts the compiled function on the tape as one node whose
// gradient is compiled too.
//
// The op set lives in package ops, layers and training in package nn.
package spore
