package optim

import (
	"fmt"
	"strings"

	"github.com/sporeml/spore/internal/jit"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Optimizer updates parameters from their gradients, MindSpore's
// nn.Optimizer. Every optimiser in this package implements it.
type Optimizer interface {
	// Parameters returns the parameters the optimiser updates, in the
	// order Step expects their gradients.
	Parameters() []*tensor.Tensor
	// Step applies one update: grads[i] is the gradient of Parameters()[i]
	// (nil skips that parameter). It updates the parameters and the
	// optimiser's state in place with Assign, using ops only, so it runs
	// eagerly on concrete gradients and is recorded into the graph when
	// called inside a traced function.
	Step(grads []*tensor.Tensor)
	// State returns the optimiser's own state — the step counter
	// "global_step" and per-parameter slots such as "moment1.dense.weight" —
	// as named, non-trainable parameters, for checkpoints.
	State() []*tensor.Tensor
	// LR returns the learning rate of the first parameter group that the
	// next Step will use.
	LR() float64
}

// Group is a parameter group: a subset of the parameters with its own
// learning rate and weight decay, as in MindSpore's group_params (for
// example, no weight decay on biases). Zero fields take the optimiser's
// settings.
type Group struct {
	// Params are the group's parameters.
	Params []*tensor.Tensor
	// LR is the group's learning-rate schedule; nil takes the optimiser's.
	LR Schedule
	// WeightDecay is the group's weight decay, applied to every parameter
	// of the group; nil takes the optimiser's (with its default filter).
	WeightDecay *float64
}

// Decay returns &v, for Group.WeightDecay:
//
//	optim.Group{Params: biases, WeightDecay: optim.Decay(0)}
func Decay(v float64) *float64 { return &v }

// SplitBiases separates the parameters whose names end in "bias" (and
// normalisation parameters, "beta" and "gamma") from the others, the usual
// split for "no weight decay on biases":
//
//	decay, noDecay := optim.SplitBiases(net.TrainableParameters())
//	groups := []optim.Group{{Params: decay}, {Params: noDecay, WeightDecay: optim.Decay(0)}}
func SplitBiases(params []*tensor.Tensor) (decay, noDecay []*tensor.Tensor) {
	for _, p := range params {
		n := p.Name()
		if strings.HasSuffix(n, "bias") || !defaultDecayFilter(n) {
			noDecay = append(noDecay, p)
		} else {
			decay = append(decay, p)
		}
	}
	return decay, noDecay
}

// defaultDecayFilter is MindSpore's default: weight decay applies to every
// parameter whose name contains neither "beta" nor "gamma" (LayerNorm and
// BatchNorm shifts and scales).
func defaultDecayFilter(name string) bool {
	return !strings.Contains(name, "beta") && !strings.Contains(name, "gamma")
}

// Common holds the settings every optimiser shares.
type Common struct {
	// LR is the learning-rate schedule; nil means the optimiser's default
	// (a constant). Use Constant(lr) for a fixed rate.
	LR Schedule
	// WeightDecay is the L2 penalty (SGD, Adam) or decoupled decay
	// (AdamW). As in MindSpore, it skips parameters whose names contain
	// "beta" or "gamma" unless a Group says otherwise.
	WeightDecay float64
	// Groups give subsets of the parameters their own settings. A
	// parameter may be in at most one group; if the params argument of the
	// constructor is nil, the parameters are the groups' in order.
	Groups []Group
}

// base is the machinery shared by the optimisers: parameters, groups,
// the step counter and the state slots.
type base struct {
	op     string
	params []*tensor.Tensor
	scheds []Schedule // the optimiser's schedule, then each group's own
	lr     []int      // per parameter, its schedule's index in scheds
	wd     []float64  // per parameter, 0 for none
	step   *tensor.Tensor
	state  []*tensor.Tensor
	// compiled is the update compiled for eager callers (see run).
	compiled *jit.Func[func(...*tensor.Tensor) []*tensor.Tensor]
}

// run applies an optimiser's update body. Called eagerly, it runs the body
// as one compiled graph: the update's elementwise chain fuses into a few
// passes that write the parameters and the optimiser state in place, as
// MindSpore's PyNative optimisers run fused kernels (ApplyMomentum, Adam)
// rather than one op at a time. Under a trace (a compiled training step)
// the body is simply traced into the enclosing graph; a missing gradient
// runs the body eagerly. The update is never differentiated, so gradients
// that are still on an autodiff tape are just read.
func (b *base) run(grads []*tensor.Tensor, body func([]*tensor.Tensor)) {
	if core.CurrentTracer() != nil {
		body(grads)
		return
	}
	for _, g := range grads {
		if g == nil || g.IsSymbolic() {
			body(grads)
			return
		}
	}
	if b.compiled == nil {
		b.compiled = jit.New(func(gs ...*tensor.Tensor) []*tensor.Tensor {
			body(gs)
			return nil
		}, jit.Config{Name: b.op + ".update"})
	}
	b.compiled.RunInto(grads, nil)
}

func newBase(op string, params []*tensor.Tensor, c Common, defLR float64) base {
	if c.LR == nil {
		c.LR = Constant(defLR)
	}
	if c.WeightDecay < 0 {
		core.Panicf(op, "weight_decay %v is negative", c.WeightDecay)
	}
	b := base{op: op, scheds: []Schedule{c.LR}}
	groupSched := make([]int, len(c.Groups))
	groupOf := map[*tensor.Tensor]int{}
	for gi, g := range c.Groups {
		for _, p := range g.Params {
			if _, dup := groupOf[p]; dup {
				core.Panicf(op, "parameter %q is in two groups", p.Name())
			}
			groupOf[p] = gi
		}
		if g.LR != nil {
			groupSched[gi] = len(b.scheds)
			b.scheds = append(b.scheds, g.LR)
		}
		if g.WeightDecay != nil && *g.WeightDecay < 0 {
			core.Panicf(op, "group %d: weight_decay %v is negative", gi, *g.WeightDecay)
		}
	}
	if params == nil {
		for _, g := range c.Groups {
			params = append(params, g.Params...)
		}
	}
	if len(params) == 0 {
		core.Panicf(op, "no parameters to optimise")
	}
	seen := map[*tensor.Tensor]bool{}
	for i, p := range params {
		switch {
		case p == nil:
			core.Panicf(op, "parameter %d is nil", i)
		case !p.IsParameter():
			core.Panicf(op, "tensor %d of shape %v is not a parameter (tensor.NewParameter)", i, p.Shape())
		case !p.DType().IsFloat():
			core.Panicf(op, "parameter %q has dtype %v; optimisers update float parameters", p.Name(), p.DType())
		case seen[p]:
			core.Panicf(op, "parameter %q is listed twice", p.Name())
		}
		seen[p] = true
		lr, wd := 0, c.WeightDecay
		if !defaultDecayFilter(p.Name()) {
			wd = 0
		}
		if gi, ok := groupOf[p]; ok {
			g := c.Groups[gi]
			lr = groupSched[gi]
			if g.WeightDecay != nil {
				wd = *g.WeightDecay
			}
		}
		b.params = append(b.params, p)
		b.lr = append(b.lr, lr)
		b.wd = append(b.wd, wd)
	}
	for p := range groupOf {
		if !seen[p] {
			core.Panicf(op, "parameter %q is in a group but not among the parameters", p.Name())
		}
	}
	b.step = stateParam("global_step", tensor.Scalar(int32(0)))
	b.state = append(b.state, b.step)
	return b
}

// stateParam makes a non-trainable parameter for optimiser state.
func stateParam(name string, init *tensor.Tensor) *tensor.Tensor {
	p := tensor.NewParameter(name, init)
	p.SetRequiresGrad(false)
	return p
}

// slots makes one zero state parameter per parameter, named
// prefix.<parameter name> (prefix.<index> for an unnamed parameter).
func (b *base) slots(prefix string) []*tensor.Tensor {
	out := make([]*tensor.Tensor, len(b.params))
	for i, p := range b.params {
		name := p.Name()
		if name == "" {
			name = fmt.Sprint(i)
		}
		out[i] = stateParam(prefix+"."+name, tensor.Zeros(p.DType(), p.Shape()...))
		b.state = append(b.state, out[i])
	}
	return out
}

// Parameters returns the parameters, in the order of Step's gradients.
func (b *base) Parameters() []*tensor.Tensor { return append([]*tensor.Tensor(nil), b.params...) }

// State returns the step counter followed by the per-parameter slots.
func (b *base) State() []*tensor.Tensor { return append([]*tensor.Tensor(nil), b.state...) }

// GlobalStep returns the number of steps taken (the "global_step" state).
func (b *base) GlobalStep() int { return int(b.step.Item()) }

// LR returns the learning rate the next step applies to the first
// parameter.
func (b *base) LR() float64 { return b.GroupLR(0) }

// GroupLR returns the learning rate the next step applies to parameter i.
func (b *base) GroupLR(i int) float64 {
	return b.scheds[b.lr[i]].At(ops.Cast(b.step, tensor.Float64)).Item()
}

// stepCtx holds the per-step scalars of one Step: the step number before
// the update (float64) and the learning rates, computed once per schedule
// and cast once per dtype.
type stepCtx struct {
	t     *tensor.Tensor   // steps completed before this one, Float64
	lrs   []*tensor.Tensor // per schedule, built on first use
	casts map[castKey]*tensor.Tensor
}

type castKey struct {
	x  *tensor.Tensor
	dt tensor.DType
}

// begin checks grads, reads the step counter and increments it. The
// counter is read before the increment, so that the schedule sees 0 on the
// first step, as MindSpore's optimisers do.
func (b *base) begin(grads []*tensor.Tensor) *stepCtx {
	if len(grads) != len(b.params) {
		core.Panicf(b.op, "%d gradients for %d parameters", len(grads), len(b.params))
	}
	for i, g := range grads {
		p := b.params[i]
		if g != nil && (!g.Shape().Equal(p.Shape()) || g.DType() != p.DType()) {
			core.Panicf(b.op, "gradient %d is %v %v, parameter %q is %v %v", i, g.Shape(), g.DType(), p.Name(), p.Shape(), p.DType())
		}
	}
	s := &stepCtx{t: ops.Cast(b.step, tensor.Float64), lrs: make([]*tensor.Tensor, len(b.scheds)), casts: map[castKey]*tensor.Tensor{}}
	b.step.Assign(ops.Add(b.step, ops.ScalarLike(b.step, 1)))
	return s
}

// lrFor returns parameter i's learning rate as a scalar of its dtype.
func (b *base) lrFor(s *stepCtx, i int) *tensor.Tensor {
	k := b.lr[i]
	lr := s.lrs[k]
	if lr == nil {
		lr = b.scheds[k].At(s.t)
		s.lrs[k] = lr
	}
	return s.as(lr, b.params[i].DType())
}

// as returns x cast to dt, once per step.
func (s *stepCtx) as(x *tensor.Tensor, dt tensor.DType) *tensor.Tensor {
	if x.DType() == dt {
		return x
	}
	k := castKey{x, dt}
	if c, ok := s.casts[k]; ok {
		return c
	}
	c := ops.Cast(x, dt)
	s.casts[k] = c
	return c
}

// axpy returns a·x + y with a Go scalar a.
func axpy(a float64, x, y *tensor.Tensor) *tensor.Tensor {
	return ops.Add(ops.MulScalar(x, a), y)
}
