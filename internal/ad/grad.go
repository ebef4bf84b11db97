package ad

import (
	"reflect"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
)

// GradOption is spore.GradOption, whose documentation is the reference.
type GradOption func(*gradConfig)

type gradConfig struct {
	positions []int
	weights   []*Tensor
	sens      bool
	// arity is the number of tensors fn takes, or -1 when it is variadic;
	// with WithSens it tells a missing sensitivity from a missing input.
	arity int
}

// GradPosition is spore.GradPosition, whose documentation is the reference.
func GradPosition(pos ...int) GradOption {
	return func(c *gradConfig) { c.positions = append([]int{}, pos...) }
}

// Weights is spore.Weights, whose documentation is the reference.
func Weights(params ...*Tensor) GradOption {
	return func(c *gradConfig) { c.weights = append([]*Tensor{}, params...) }
}

// WithSens is spore.WithSens, whose documentation is the reference.
func WithSens() GradOption { return func(c *gradConfig) { c.sens = true } }

// Grad is spore.Grad, whose documentation is the reference.
func Grad[F any](fn F, opts ...GradOption) func(...*Tensor) []*Tensor {
	vg := ValueAndGrad(fn, opts...)
	return func(xs ...*Tensor) []*Tensor {
		_, g := vg(xs...)
		return g
	}
}

// ValueAndGrad is spore.ValueAndGrad, whose documentation is the reference.
func ValueAndGrad[F any](fn F, opts ...GradOption) func(...*Tensor) (*Tensor, []*Tensor) {
	f := asVariadic(fn)
	arity := -1
	if t := reflect.TypeOf(fn); !t.IsVariadic() {
		arity = t.NumIn()
	}
	opts = append(opts[:len(opts):len(opts)], func(c *gradConfig) { c.arity = arity })
	aux := ValueAndGradAux(func(xs ...*Tensor) (*Tensor, []*Tensor) { return f(xs...), nil }, opts...)
	return func(xs ...*Tensor) (*Tensor, []*Tensor) {
		v, _, g := aux(xs...)
		return v, g
	}
}

// ValueAndGradAux is spore.ValueAndGradAux, whose documentation is the reference.
func ValueAndGradAux(fn func(...*Tensor) (*Tensor, []*Tensor), opts ...GradOption) func(...*Tensor) (*Tensor, []*Tensor, []*Tensor) {
	cfg := gradConfig{positions: []int{0}, arity: -1}
	for _, o := range opts {
		o(&cfg)
	}
	return func(xs ...*Tensor) (*Tensor, []*Tensor, []*Tensor) {
		var sens *Tensor
		if cfg.sens {
			if len(xs) == 0 || len(xs) == cfg.arity {
				core.Panicf("Grad", "WithSens: the sensitivity argument is missing: pass the output's cotangent after the function's %d inputs", len(xs))
			}
			sens, xs = xs[len(xs)-1], xs[:len(xs)-1]
			if sens == nil {
				core.Panicf("Grad", "WithSens: the sensitivity argument is nil")
			}
		}
		args := append([]*Tensor(nil), xs...)
		targets := make([]*Tensor, 0, len(cfg.positions)+len(cfg.weights))
		// nested: an outer differentiation is active, so the reverse pass
		// must itself be recorded (gradients of gradients).
		nested := false
		for _, p := range cfg.positions {
			if p < 0 || p >= len(args) {
				if cfg.sens {
					core.Panicf("Grad", "grad position %d out of range for %d inputs (WithSens: the last argument is the sensitivity; is it missing?)", p, len(args))
				}
				core.Panicf("Grad", "grad position %d out of range for %d inputs", p, len(args))
			}
			switch x := args[p]; {
			case x == nil:
				core.Panicf("Grad", "input %d is nil", p)
			case !x.DType().IsFloat():
				core.Panicf("Grad", "input %d is %v %v: gradients are defined only for floating-point inputs (differentiate with respect to a float input, or leave this one out with GradPosition)", p, x.Shape(), x.DType())
			}
			nested = nested || core.IsTracked(args[p])
			args[p] = core.TrackLeaf(args[p])
			targets = append(targets, args[p])
		}
		var tracked []*Tensor
		for _, w := range cfg.weights {
			if w == nil {
				core.Panicf("Grad", "Weights: parameter %d is nil", len(targets)-len(cfg.positions))
			}
			if !w.IsParameter() {
				core.Panicf("Grad", "Weights: tensor of shape %v is not a parameter", w.Shape())
			}
			if !w.DType().IsFloat() {
				core.Panicf("Grad", "Weights: parameter %q is %v %v: gradients are defined only for floating-point parameters", w.Name(), w.Shape(), w.DType())
			}
			if !w.RequiresGrad() {
				targets = append(targets, nil)
				continue
			}
			nested = nested || core.IsTracked(w)
			tracked = append(tracked, w)
			targets = append(targets, w)
		}
		if len(tracked) > 0 {
			// A tape of this call's own: parameters are shared between
			// goroutines, so nothing about this differentiation is stored
			// in them.
			defer core.TrackParams(tracked)()
		}
		y, aux := fn(args...)
		if sens == nil {
			if y.Size() != 1 {
				core.Panicf("Grad", "output of shape %v is not a scalar; pass its sensitivity with spore.WithSens (MindSpore's sens_param)", y.Shape())
			}
			sens = ops.OnesLike(y)
		} else if !sens.Shape().Equal(y.Shape()) || sens.DType() != y.DType() {
			core.Panicf("Grad", "sensitivity %v %v does not match output %v %v", sens.Shape(), sens.DType(), y.Shape(), y.DType())
		}
		staged := core.CurrentTracer() != nil || y.IsSymbolic()
		return y, aux, vjp(y, sens, targets, nested || staged)
	}
}

// VJP is spore.VJP, whose documentation is the reference.
func VJP(y, sens *Tensor, targets []*Tensor) []*Tensor { return vjp(y, sens, targets, true) }

// vjp is VJP; record says whether the reverse pass must be recorded on the
// tape (for higher-order gradients). When no outer differentiation reaches
// the recorded ops, eager reverse passes run their rules untracked.
func vjp(y, sens *Tensor, targets []*Tensor, record bool) []*Tensor {
	nodeOf := nodeFinder()
	isTarget := make(map[*core.Node]bool, len(targets))
	for _, t := range targets {
		if t != nil && nodeOf(t) != nil {
			isTarget[nodeOf(t)] = true
		}
	}
	order, foreign := reachingOrder(nodeOf(y), isTarget, nodeOf)
	record = record || foreign
	detach := func(ts []*Tensor) []*Tensor { return ts }
	detach1 := func(t *Tensor) *Tensor { return t }
	if !record {
		detach1 = func(t *Tensor) *Tensor { return core.Untracked(t, nodeOf) }
		detach = func(ts []*Tensor) []*Tensor {
			out := make([]*Tensor, len(ts))
			for i, t := range ts {
				out[i] = core.Untracked(t, nodeOf)
			}
			return out
		}
		sens = core.Untracked(sens, nodeOf)
	}
	// Cotangents are keyed by tensor, not node, so that each result of a
	// multi-result node keeps its own.
	grads := make(map[*Tensor]*Tensor, len(order))
	if core.NodeOf(y) != nil {
		grads[y] = sens
	}
	for i := len(order) - 1; i >= 0; i-- {
		n := order[i]
		if isTarget[n] || n.Prim == nil {
			continue
		}
		var gin []*Tensor
		if n.Outs != nil {
			gs := make([]*Tensor, len(n.Outs))
			any := false
			for k, o := range n.Outs {
				gs[k] = grads[o]
				any = any || gs[k] != nil
			}
			if !any {
				continue
			}
			for k, o := range n.Outs {
				if gs[k] == nil {
					gs[k] = ops.ZerosLike(o)
				}
			}
			gin = n.Prim.VJPN(n.Attrs, detach(n.Inputs), detach(n.Outs), gs)
		} else {
			g := grads[n.Out]
			if g == nil {
				continue
			}
			gin = n.Prim.VJP(n.Attrs, detach(n.Inputs), detach1(n.Out), g)
		}
		for j, x := range n.Inputs {
			if nodeOf(x) == nil || j >= len(gin) || gin[j] == nil {
				continue
			}
			if !gin[j].Shape().Equal(x.Shape()) || gin[j].DType() != x.DType() {
				core.Panicf(n.Prim.Name, "gradient rule returned %v %v for input %d of %v %v", gin[j].Shape(), gin[j].DType(), j, x.Shape(), x.DType())
			}
			if prev := grads[x]; prev != nil {
				grads[x] = ops.Add(prev, gin[j])
			} else {
				grads[x] = gin[j]
			}
		}
	}
	out := make([]*Tensor, len(targets))
	for i, t := range targets {
		switch {
		case t == nil:
		case grads[t] != nil:
			out[i] = grads[t]
		default:
			out[i] = ops.ZerosLike(t)
		}
	}
	return out
}

// nodeFinder returns core.NodeOf for one pass over a tape. A parameter's
// record lives on this goroutine's tape, and finding it costs a
// goroutine-id lookup: the finder looks each parameter's up once.
func nodeFinder() func(*Tensor) *core.Node {
	paramNodes := map[*Tensor]*core.Node{}
	return func(t *Tensor) *core.Node {
		if !t.IsParameter() {
			return core.NodeOf(t)
		}
		n, ok := paramNodes[t]
		if !ok {
			n = core.NodeOf(t)
			paramNodes[t] = n
		}
		return n
	}
}

// reachingOrder returns, in topological order (inputs before users), the
// nodes reachable from root that lead to a target. Targets are not
// expanded: differentiation stops at them. foreign reports a tracked leaf
// that is not a target, or a target linked to earlier history: a sign that
// another differentiation is under way around this one.
func reachingOrder(root *core.Node, isTarget map[*core.Node]bool, nodeOf func(*Tensor) *core.Node) (order []*core.Node, foreign bool) {
	if root == nil {
		return nil, false
	}
	type frame struct {
		n    *core.Node
		next int
	}
	state := map[*core.Node]int8{} // 1 visiting, 2 reaches a target, 3 does not
	stack := []frame{{n: root}}
	state[root] = 1
	for len(stack) > 0 {
		f := &stack[len(stack)-1]
		if !isTarget[f.n] && f.next < len(f.n.Inputs) {
			x := nodeOf(f.n.Inputs[f.next])
			f.next++
			if x != nil && state[x] == 0 {
				state[x] = 1
				stack = append(stack, frame{n: x})
			}
			continue
		}
		n := f.n
		stack = stack[:len(stack)-1]
		if (n.Prim == nil && !isTarget[n]) || (isTarget[n] && len(n.Inputs) > 0) {
			foreign = true
		}
		reaches := isTarget[n]
		if !reaches {
			for _, in := range n.Inputs {
				if x := nodeOf(in); x != nil && state[x] == 2 {
					reaches = true
					break
				}
			}
		}
		if reaches {
			state[n] = 2
			order = append(order, n)
		} else {
			state[n] = 3
		}
	}
	return order, foreign
}

// asVariadic adapts a function of tensors returning one tensor to the
// variadic form the autodiff driver calls.
func asVariadic(fn any) func(...*Tensor) *Tensor { return asVariadicFor("Grad", fn) }

// asVariadicFor is asVariadic for the transform op, which its errors name.
func asVariadicFor(op string, fn any) func(...*Tensor) *Tensor {
	switch f := fn.(type) {
	case func(...*Tensor) *Tensor:
		return f
	case func(*Tensor) *Tensor:
		return func(xs ...*Tensor) *Tensor { checkArity(op, 1, len(xs)); return f(xs[0]) }
	case func(*Tensor, *Tensor) *Tensor:
		return func(xs ...*Tensor) *Tensor { checkArity(op, 2, len(xs)); return f(xs[0], xs[1]) }
	case func(*Tensor, *Tensor, *Tensor) *Tensor:
		return func(xs ...*Tensor) *Tensor { checkArity(op, 3, len(xs)); return f(xs[0], xs[1], xs[2]) }
	}
	v := reflect.ValueOf(fn)
	t := v.Type()
	if t.Kind() != reflect.Func || t.NumOut() != 1 || t.Out(0) != tensorType || t.IsVariadic() {
		panic(core.Errorf(op, "want a function of tensors returning one tensor, got %T", fn))
	}
	for i := range t.NumIn() {
		if t.In(i) != tensorType {
			panic(core.Errorf(op, "argument %d of %T is not a *Tensor", i, fn))
		}
	}
	return func(xs ...*Tensor) *Tensor {
		checkArity(op, t.NumIn(), len(xs))
		in := make([]reflect.Value, len(xs))
		for i, x := range xs {
			in[i] = reflect.ValueOf(x)
		}
		return v.Call(in)[0].Interface().(*Tensor)
	}
}

func checkArity(op string, want, got int) {
	if want != got {
		panic(core.Errorf(op, "function takes %d tensors, called with %d", want, got))
	}
}
