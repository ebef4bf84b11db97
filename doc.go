// Package spore is a deep-learning framework for Go with MindSpore's two
// execution modes.
//
// In PyNative mode (the default) every op runs the moment it is called, so
// intermediate values can be printed and debugged. In Graph mode a
// function is traced once per input signature into a typed IR, optimised as
// a whole (CSE, constant folding, algebraic simplification, transpose
// folding, GEMM epilogue fusion, elementwise loop fusion, liveness-based
// buffer planning), compiled into an execution plan and replayed,
// allocating nothing but the tensors it returns. The same model code runs
// in both:
//
//	spore.SetContext(spore.WithMode(spore.GraphMode)) // globally
//	var run = spore.Jit(forward)                      // per function
//
// This package holds the user-facing core: the Tensor type and its
// constructors (FromSlice, Zeros, Ones, Full, Arange, Eye, Scalar,
// RandNormal, RandUniform, NewParameter), the context and modes, Jit and
// its cache, control flow that stages into graphs (Cond, While, Scan,
// Print), data sink mode (DataSink: n training steps per compiled call),
// and reverse-mode automatic differentiation (Grad, ValueAndGrad,
// ValueAndGradAux, VJP) with MindSpore's options (grad positions, weights,
// auxiliary outputs, sensitivities), as well as MindSpore 2.x's functional
// transforms (JVP, Vmap, Jacfwd, Jacrev, Hessian). Gradients are themselves
// differentiable, and compose with Jit both ways: Jit(Grad(f)) is one joint
// forward and backward graph; Grad(Jit(f)) puts the compiled function on the
// tape as one node whose gradient is compiled too.
//
// # The front door and the layers beneath it
//
// A typical program imports this package (tensors, modes, Jit, Grad and
// the other transforms), package ops for the op set, nn for cells, layers
// and losses, and optim for optimisers; package tensor and everything
// under internal/ are the machinery beneath. The packages are layered, and
// each depends only on those below it (top to bottom: cmd/spore down to
// the kernels):
//
//	cmd/spore, examples, bench          the command line, examples, peer benchmarks
//	train, models, dataset, checkpoint  Model and callbacks; model zoo; data; files
//	nn, optim                           cells, layers, losses; optimisers, schedules
//	spore                               modes, Jit, Grad, transforms, control flow
//	graph, compile, exec                IR and tracer; optimisation passes; plans
//	ops                                 the primitives, one definition each
//	internal/core (tensor)              Tensor, dtypes, Prim, eager/trace/tape dispatch
//	internal/kernels/...                assembly kernels and Go twins on flat slices
//
// A primitive is defined once in ops, as a core.Prim with its kernels,
// shape rule, derivative rules and traits; eager dispatch (internal/core),
// the tracer (graph), the compiler's passes (compile, which match the
// primitive's handle, never its name) and the executor (exec) all read that
// one definition.
package spore
