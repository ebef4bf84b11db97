package spore

import (
	"github.com/sporeml/spore/internal/control"
	"github.com/sporeml/spore/internal/core"
)

// Cond returns thenFn(operands...) when pred (a one-element Bool tensor) is
// true and elseFn(operands...) otherwise. In PyNative mode it runs the
// chosen Go closure directly. Under Graph mode or Jit both closures are
// traced into sub-graphs of one control-flow node that picks a branch at
// run time; their results must agree in number, shapes and dtypes (else a
// "Type Join Failed" error). The closures may use any tensor in scope:
// values of the enclosing traced function are captured. Gradients flow
// through Cond in both modes.
func Cond(pred *Tensor, thenFn, elseFn func(...*Tensor) []*Tensor, operands ...*Tensor) []*Tensor {
	return control.Cond(pred, thenFn, elseFn, operands...)
}

// While runs bodyFn on the loop carries while condFn (returning a
// one-element Bool tensor) holds, and returns the final carries. In
// PyNative mode it is a Go loop; under Graph mode or Jit it is one
// control-flow node holding the condition and body sub-graphs, not
// unrolled. bodyFn must return carries of the same shapes and dtypes as
// init. Like JAX's while_loop, it is not reverse-differentiable in Graph
// mode (the trip count is unknown when the gradient graph is built): use
// Scan for loops with a known length.
func While(condFn func(...*Tensor) *Tensor, bodyFn func(...*Tensor) []*Tensor, init ...*Tensor) []*Tensor {
	return control.While(condFn, bodyFn, init...)
}

// Print prints its arguments, separated by spaces, when it runs: at once
// in PyNative mode, and every time the compiled graph runs in Graph mode
// (where Go's fmt.Println would print only once, at trace time, and could
// not show values). Tensors print as NumPy does; other arguments as fmt.
func Print(args ...any) { control.Print(args...) }

// ScanFunc is the body of a Scan: it takes the carries and one slice of
// each scanned input and returns the new carries and the per-step outputs.
type ScanFunc = control.ScanFunc

// Scan loops fn over the leading axis of xs, threading the carries, like
// JAX's lax.scan: for t = 0 … T-1, (c, y[t]) = fn(c, x[t]). It returns the
// final carries and the per-step outputs stacked along a new leading axis.
// In PyNative mode it is a Go loop over ops; under Graph mode or Jit it is
// one node holding the body's sub-graph, not unrolled. Gradients flow
// through Scan in both modes; in Graph mode the backward pass is itself a
// reverse Scan (carries are recomputed by a forward Scan rather than kept).
func Scan(fn ScanFunc, init, xs []*Tensor) (carry, ys []*Tensor) { return control.Scan(fn, init, xs) }

// ScanReverse is Scan visiting t = T-1 … 0; ys[t] still holds step t's
// output.
func ScanReverse(fn ScanFunc, init, xs []*Tensor) (carry, ys []*Tensor) {
	return control.ScanReverse(fn, init, xs)
}

// ControlFlowPrims returns the primitives that Cond, While and Scan trace
// to, so that code walking a traced graph (an exporter translating them to
// another format's control flow) recognises them by handle. Their regions
// are laid out as Cond, While and Scan document: Cond's Args are the
// predicate, then the operands and captures, with regions then and else;
// While's regions are the condition and the body, leading with the
// carries; Scan's region is the body, leading with the carries and one
// slice of each scanned input (see ScanLayout).
func ControlFlowPrims() (cond, while, scan *core.Prim) { return control.Prims() }

// ScanLayout returns the layout of a Scan node from its attributes: how
// many of its leading inputs (and results) are carries, how many of the
// inputs that follow are scanned along their leading axis, and whether it
// visits the steps last to first (ScanReverse). ok is false when attrs are
// not a Scan node's.
func ScanLayout(attrs any) (carries, scanned int, reverse, ok bool) { return control.ScanLayout(attrs) }
