package spore

import "github.com/sporeml/spore/internal/ad"

// GradOption configures Grad and ValueAndGrad.
type GradOption = ad.GradOption

// GradPosition chooses which positional inputs to differentiate, like
// MindSpore's grad_position. The default is input 0; GradPosition() with
// no argument differentiates no input (use it with Weights).
func GradPosition(pos ...int) GradOption { return ad.GradPosition(pos...) }

// Weights asks for gradients with respect to parameters as well, like
// MindSpore's weights argument. Their gradients follow the positional ones
// in the result, in the order given. Frozen parameters (RequiresGrad false)
// get a nil gradient.
func Weights(params ...*Tensor) GradOption { return ad.Weights(params...) }

// WithSens makes the returned function take one extra, last argument: the
// sensitivity (the cotangent of the output), MindSpore's sens_param. It is
// required when the output is not a scalar.
func WithSens() GradOption { return ad.WithSens() }

// Grad returns a function computing the gradients of fn's scalar output with
// respect to the chosen inputs and parameters (see the options): positional
// gradients first, then parameter gradients. The gradients are themselves
// differentiable, so Grad composes with itself.
//
// fn is any function of tensors returning one tensor: func(*Tensor) *Tensor,
// func(*Tensor, *Tensor) *Tensor, func(...*Tensor) *Tensor, and so on.
func Grad[F any](fn F, opts ...GradOption) func(...*Tensor) []*Tensor { return ad.Grad(fn, opts...) }

// ValueAndGrad is Grad that also returns fn's output.
func ValueAndGrad[F any](fn F, opts ...GradOption) func(...*Tensor) (*Tensor, []*Tensor) {
	return ad.ValueAndGrad(fn, opts...)
}

// ValueAndGradAux differentiates a function with auxiliary outputs
// (MindSpore's has_aux): fn returns the value to differentiate and extra
// tensors that are returned as they are, without gradients flowing from them.
func ValueAndGradAux(fn func(...*Tensor) (*Tensor, []*Tensor), opts ...GradOption) func(...*Tensor) (*Tensor, []*Tensor, []*Tensor) {
	return ad.ValueAndGradAux(fn, opts...)
}

// VJP walks the autodiff records from y back to targets (tracked tensors:
// leaves from core.TrackLeaf or parameters being tracked) and returns
// d(Σ sens·y)/d target for each; a target y does not depend on gets zeros,
// and a nil target gets nil. It is the reverse pass under Grad, exposed for
// code that manages tracking itself.
func VJP(y, sens *Tensor, targets []*Tensor) []*Tensor { return ad.VJP(y, sens, targets) }

// JVP evaluates fn at primals and returns its output together with the
// Jacobian-vector product J·tangents: the directional derivative of the
// output along tangents (forward-mode differentiation, MindSpore's
// ops.jvp). tangents has one entry per primal, of the primal's shape and
// dtype; a nil tangent stands for zeros.
//
// The forward pass is recorded once on the autodiff tape and the tape is
// then walked from the inputs to the output, applying each primitive's
// JVP rule (Prim.JVP). The rules are ordinary ops, so JVP works eagerly
// and inside Jit (the tangent computation is traced into the same graph),
// and composes with Grad: JVP of a Grad is a Hessian-vector product. A
// primitive without a JVP rule met on the way panics with an error naming
// it. While has no forward-mode rule (as it has no reverse-mode one).
//
// fn is any function of tensors returning one tensor, as for Grad.
func JVP[F any](fn F, primals, tangents []*Tensor) (out, tangentOut *Tensor) {
	return ad.JVP(fn, primals, tangents)
}

// Jacfwd returns a function computing the Jacobian of fn by forward mode
// (MindSpore's ops.jacfwd): for each chosen input x (GradPosition, input 0
// by default) a tensor of shape y.Shape() ++ x.Shape() holding ∂yᵢ/∂xⱼ.
// The forward pass is recorded once and one tangent per element of x is
// pushed through it, so Jacfwd suits functions with few inputs and many
// outputs. It composes with Jit, Grad and Jacrev like JVP; Weights and
// WithSens do not apply and are refused.
//
// fn is any function of tensors returning one tensor, as for Grad.
func Jacfwd[F any](fn F, opts ...GradOption) func(...*Tensor) []*Tensor {
	return ad.Jacfwd(fn, opts...)
}

// Jacrev returns a function computing the Jacobian of fn by reverse mode
// (MindSpore's ops.jacrev): the same result as Jacfwd, by one reverse pass
// per element of fn's output over a single recorded forward pass, so it
// suits functions with many inputs and few outputs.
func Jacrev[F any](fn F, opts ...GradOption) func(...*Tensor) []*Tensor {
	return ad.Jacrev(fn, opts...)
}

// Hessian returns a function computing the second derivatives of fn,
// Jacfwd of Jacrev (forward over reverse, the efficient order): block
// [i][j] is ∂²y/∂xᵢ∂xⱼ for the chosen inputs xᵢ, xⱼ, of shape
// y.Shape() ++ xᵢ.Shape() ++ xⱼ.Shape() — for a scalar loss, the usual
// Hessian with respect to each pair of inputs.
func Hessian[F any](fn F, opts ...GradOption) func(...*Tensor) [][]*Tensor {
	return ad.Hessian(fn, opts...)
}

// NotBatched, in Vmap's inAxes, marks an argument that is not batched:
// every example sees the whole value (MindSpore's and JAX's None). In
// outAxes it asks for a result that does not depend on the batched
// arguments to be returned as it is, without a batch axis.
const NotBatched = ad.NotBatched

// Axes gives Vmap the batch axis of each argument (inAxes) or result
// (outAxes): nil means axis 0 for all of them, one entry applies to all,
// otherwise there is one entry per argument or result. Each entry is a
// non-negative axis or NotBatched.
type Axes = ad.Axes

// Vmap vectorises fn over a batch axis, MindSpore 2.x's ops.vmap and JAX's
// vmap: the returned function takes the arguments with an extra batch axis
// (inAxes says where; NotBatched arguments are shared by every example)
// and returns fn's results for every example, stacked along outAxes.
// Vmap(fn)(xs) equals stacking fn(x_i) over the examples i, but runs as one
// batched computation.
//
// fn is a function of tensors returning one tensor, several tensors or a
// []*Tensor: func(*Tensor) *Tensor, func(*Tensor, *Tensor) *Tensor,
// func(...*Tensor) []*Tensor (what Grad returns), and so on. Vmap returns
// a function of the same type.
//
// How it works: fn is traced once per call on symbolic per-example
// arguments (so it sees the shapes of one example), and the traced graph
// is evaluated with each primitive's batching rule (core.Prim.Batch) on the
// batched values. Values that depend on no batched argument — parameters,
// constants and what is computed from them alone — stay unbatched and are
// computed once. The rules are ordinary ops, so a vectorised function runs
// eagerly, inside Jit (one compiled graph) and under Grad, and Vmap nests.
// A primitive without a batching rule is vectorised by a loop over the
// examples (unstack, apply, stack): correct, but one op per example.
//
// Random ops (dropout) draw independently for every example. Go control
// flow in fn runs once, at trace time, as under Jit; tensor-dependent
// control flow (Cond, While, Scan) is vectorised by the loop.
func Vmap[F any](fn F, inAxes, outAxes Axes) F { return ad.Vmap(fn, inAxes, outAxes) }
