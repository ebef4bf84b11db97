package core

// Autocast rewrites applications of primitives while it is active on a
// goroutine (BeginAutocast): mixed precision's casts of a matmul's operands
// to bfloat16, inserted as ordinary Cast applications, so that they run
// eagerly, land in a trace and are differentiated like any other op. It is
// PyTorch's autocast dispatch key: one place that decides, at dispatch
// time, the dtype each primitive computes in, so that no layer needs to
// know about mixed precision.
type Autocast interface {
	// Apply applies p to in on the policy's terms, calling apply (which
	// is Apply without the policy) for p itself and for any cast it
	// inserts; it returns what the caller sees as p's result. It is
	// called for every primitive applied while the policy is active,
	// including the casts it inserts, so it must leave those alone.
	Apply(p *Prim, attrs any, in []*Tensor, apply func(p *Prim, attrs any, in ...*Tensor) *Tensor) *Tensor
}

// autocasts holds each goroutine's nested policies (goid.go), so that
// Apply pays one atomic load while no mixed precision is in use anywhere.
var autocasts goroutineStacks[Autocast]

// BeginAutocast makes a the calling goroutine's autocast policy until the
// returned function is called. Policies nest; the innermost one wins, and
// a nil policy suspends the outer ones (full precision inside a mixed
// region).
func BeginAutocast(a Autocast) (end func()) {
	_, end = autocasts.push(a)
	return end
}

// CurrentAutocast returns the calling goroutine's active policy, or nil.
func CurrentAutocast() Autocast { return autocasts.top() }
