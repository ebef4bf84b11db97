package ops

import (
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// Gradient rules derived from linearity, as JAX's deflinear and defbilinear
// derive them (jax/_src/interpreters/ad.py). A linear op's tangent is the
// op itself applied to the input's tangent, and its cotangent is its
// transpose applied to the output's cotangent; a bilinear op f(a, b) has
// tangent f(ta, b) + f(a, tb) and one transpose per operand. Writing these
// once keeps the rules of each op and of its transpose from drifting apart.
//
// The helpers take a pointer to the package variable that will hold a
// primitive (&GatherPrim), because a rule is built in the literal passed
// to core.Define, before that variable is set: the rule reads it when it
// runs.

// jvpRule and vjpRule are core.Prim's JVP and VJP fields' types.
type (
	jvpRule = func(attrs any, in, t []*tensor.Tensor, out *tensor.Tensor) *tensor.Tensor
	vjpRule = func(attrs any, in []*tensor.Tensor, out, g *tensor.Tensor) []*tensor.Tensor
)

// transposeRule maps a cotangent g of an op's output to the cotangent of
// one operand, the op's other inputs held fixed: that operand's transpose.
type transposeRule = func(attrs any, in []*tensor.Tensor, g *tensor.Tensor) *tensor.Tensor

// linearJVP is the JVP rule of an op linear in its input k with its other
// inputs held fixed (indices, or the tensor whose argmax a pooling gather
// reads): the op applied to input k's tangent in place of the input. The
// other inputs' tangents do not matter — they are integer, or the op is
// piecewise constant in them — and a zero tangent of input k gives a zero
// tangent.
func linearJVP(pp **core.Prim, k int) jvpRule {
	return func(attrs any, in, t []*tensor.Tensor, _ *tensor.Tensor) *tensor.Tensor {
		if t[k] == nil {
			return nil
		}
		args := append([]*tensor.Tensor(nil), in...)
		args[k] = t[k]
		return core.Apply(*pp, attrs, args...)
	}
}

// linearVJP is the VJP rule of an op linear in its input k whose transpose
// is the primitive *pp taking the same inputs with the cotangent in input
// k's place: a gather's transpose is the scatter-add onto the gathered-from
// tensor, and that scatter's is the gather. attrsOf gives the transpose's
// attributes from the op's (nil keeps them). The other inputs get no
// gradient.
func linearVJP(pp **core.Prim, k int, attrsOf func(attrs any, in []*tensor.Tensor) any) vjpRule {
	return func(attrs any, in []*tensor.Tensor, _, g *tensor.Tensor) []*tensor.Tensor {
		ta := attrs
		if attrsOf != nil {
			ta = attrsOf(attrs, in)
		}
		args := append([]*tensor.Tensor(nil), in...)
		args[k] = g
		gs := make([]*tensor.Tensor, len(in))
		gs[k] = core.Apply(*pp, ta, args...)
		return gs
	}
}

// bilinearJVP is the JVP rule of a bilinear op f(a, b): f(ta, b) + f(a, tb),
// building only the terms of nonzero tangents. A term is broadcast to the
// output's shape, which is larger than f(ta, b)'s only where f broadcasts
// batch axes (MatMul's) and then the other term's operand is the larger.
func bilinearJVP(pp **core.Prim) jvpRule {
	return func(attrs any, in, t []*tensor.Tensor, out *tensor.Tensor) *tensor.Tensor {
		var r *tensor.Tensor
		if t[0] != nil {
			r = core.Apply(*pp, attrs, t[0], in[1])
		}
		if t[1] != nil {
			r = tadd(r, core.Apply(*pp, attrs, in[0], t[1]))
		}
		return tshape(r, out.Shape())
	}
}

// operands says which operands' cotangents a bilinear VJP builds.
type operands uint8

const (
	// wantedOperands builds only those of operands being differentiated
	// (core.NeedsGrad): each transpose costs about as much as the op
	// itself (a GEMM, a convolution), and a network's input batch is
	// never differentiated. For ops whose VJP only autodiff calls.
	wantedOperands operands = iota
	// everyOperand builds both, for ops whose VJP other rules call
	// directly on intermediates that are not tracked but whose gradients
	// they need (the compiler's fused convolution gradients call the
	// backprop primitives' VJPs so).
	everyOperand
)

// bilinearVJP is the VJP rule of a bilinear op f(a, b) given its two
// transposes: ta maps the output's cotangent to a's (b fixed), tb to b's
// (a fixed). which says whether to skip operands nobody differentiates.
func bilinearVJP(which operands, ta, tb transposeRule) vjpRule {
	return func(attrs any, in []*tensor.Tensor, _, g *tensor.Tensor) []*tensor.Tensor {
		var ga, gb *tensor.Tensor
		if which == everyOperand || core.NeedsGrad(in[0]) {
			ga = ta(attrs, in, g)
		}
		if which == everyOperand || core.NeedsGrad(in[1]) {
			gb = tb(attrs, in, g)
		}
		return []*tensor.Tensor{ga, gb}
	}
}
