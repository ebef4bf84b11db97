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
// This package is the front door: the Tensor type and its constructors
// (FromSlice, Zeros, Ones, Full, Arange, Eye, Scalar, RandNormal,
// RandUniform, NewParameter), the configuration (SetContext and the modes,
// AmpLevel, SetAutoParallelContext), and one-line wrappers, documented
// here, over the packages that do the work: Jit and its cache
// (internal/jit), control flow that stages into graphs (Cond, While, Scan,
// Print: internal/control), data sink mode (DataSink: train/sink), and the
// transforms (internal/ad): reverse-mode automatic differentiation (Grad,
// ValueAndGrad, ValueAndGradAux, VJP) with MindSpore's options (grad
// positions, weights, auxiliary outputs, sensitivities), and MindSpore
// 2.x's functional transforms (JVP, Vmap, Jacfwd, Jacrev, Hessian).
// Gradients are themselves differentiable, and compose with Jit both ways:
// Jit(Grad(f)) is one joint forward and backward graph; Grad(Jit(f)) puts
// the compiled function on the tape as one node whose gradient is compiled
// too.
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
//	nn                                  cells, layers, losses, training cells
//	spore                               the front door: tensors, modes, Jit, Grad, ...
//	optim, onnx, summary, train/sink    optimisers; ONNX in and out; event files; data sink
//	internal/jit, internal/control      tracing and the plan cache; Cond, While, Scan
//	internal/ad, internal/amp           Grad, JVP, Vmap and the Jacobians; mixed precision
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
