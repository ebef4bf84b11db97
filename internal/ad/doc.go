// Package ad holds spore's function transforms: reverse-mode
// differentiation (Grad, ValueAndGrad, ValueAndGradAux, VJP), forward mode
// (JVP, Linearize), Jacobians and Hessians (Jacfwd, Jacrev, Hessian), and
// vectorisation (Vmap), as JAX keeps them in interpreters/ad.py and
// batching.py. Each transform is driven by the rules every primitive
// declares once (core.Prim's VJP, JVP and Batch), written with ordinary
// ops, so the same code runs eagerly, on symbolic tensors under a trace
// (the backward pass lands in the traced graph) and nested.
//
// The root package spore re-exports the transforms and documents them;
// package jit uses Linearize and ValueAndGrad for the gradients of
// compiled functions, and package control uses VJP and JVPN for those of
// control-flow bodies.
package ad
