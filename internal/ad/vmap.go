package ad

import (
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
)

// NotBatched is spore.NotBatched, whose documentation is the reference.
const NotBatched = -1

// Axes is spore.Axes, whose documentation is the reference.
type Axes []int

// Vmap is spore.Vmap, whose documentation is the reference.
func Vmap[F any](fn F, inAxes, outAxes Axes) F {
	fv := reflect.ValueOf(fn)
	if fv.Kind() != reflect.Func || fv.IsNil() {
		panic(core.Errorf("Vmap", "want a non-nil function of tensors, got %T", fn))
	}
	v := &vmapper{name: "vmap(" + core.FuncName(fv) + ")", in: inAxes, out: outAxes}
	switch f := any(fn).(type) {
	case func(*Tensor) *Tensor:
		v.flat = func(xs []*Tensor) []*Tensor { return []*Tensor{f(xs[0])} }
		v.arity = 1
		return any(func(x *Tensor) *Tensor { return v.call([]*Tensor{x})[0] }).(F)
	case func(*Tensor, *Tensor) *Tensor:
		v.flat = func(xs []*Tensor) []*Tensor { return []*Tensor{f(xs[0], xs[1])} }
		v.arity = 2
		return any(func(x, y *Tensor) *Tensor { return v.call([]*Tensor{x, y})[0] }).(F)
	case func(...*Tensor) *Tensor:
		v.flat = func(xs []*Tensor) []*Tensor { return []*Tensor{f(xs...)} }
		v.arity = -1
		return any(func(xs ...*Tensor) *Tensor { return v.call(xs)[0] }).(F)
	case func(...*Tensor) []*Tensor:
		v.flat = func(xs []*Tensor) []*Tensor { return f(xs...) }
		v.arity = -1
		return any(func(xs ...*Tensor) []*Tensor { return v.call(xs) }).(F)
	}
	return v.reflectFunc(fv).Interface().(F)
}

// vmapper is one vectorised function.
type vmapper struct {
	name    string
	in, out Axes
	// flat calls fn on per-example tensors and returns its results as a
	// flat list; arity is fn's number of tensor arguments (-1: variadic).
	flat  func([]*Tensor) []*Tensor
	arity int
}

var sliceType = reflect.TypeFor[[]*Tensor]()

// reflectFunc builds the vectorised function for any other signature whose
// arguments are *Tensor (or a final ...*Tensor) and whose results are each
// a *Tensor, or one []*Tensor.
func (v *vmapper) reflectFunc(fv reflect.Value) reflect.Value {
	t := fv.Type()
	for i := range t.NumIn() {
		if t.In(i) != tensorType && !(t.IsVariadic() && i == t.NumIn()-1 && t.In(i) == sliceType) {
			panic(core.Errorf("Vmap", "argument %d of %v is not a *Tensor", i, t))
		}
	}
	sliceOut := t.NumOut() == 1 && t.Out(0) == sliceType
	for i := range t.NumOut() {
		if t.Out(i) != tensorType && !sliceOut {
			panic(core.Errorf("Vmap", "result %d of %v is not a *Tensor (want *Tensor results or one []*Tensor)", i, t))
		}
	}
	if t.NumOut() == 0 {
		panic(core.Errorf("Vmap", "%v returns nothing to vectorise", t))
	}
	v.arity = t.NumIn()
	if t.IsVariadic() {
		v.arity = -1
	}
	toValues := func(xs []*Tensor) []reflect.Value {
		in := make([]reflect.Value, len(xs))
		for i, x := range xs {
			in[i] = reflect.ValueOf(x)
		}
		return in
	}
	v.flat = func(xs []*Tensor) []*Tensor {
		res := fv.Call(toValues(xs))
		if sliceOut {
			return res[0].Interface().([]*Tensor)
		}
		outs := make([]*Tensor, len(res))
		for i, r := range res {
			outs[i] = r.Interface().(*Tensor)
		}
		return outs
	}
	return reflect.MakeFunc(t, func(args []reflect.Value) []reflect.Value {
		var xs []*Tensor
		for i, a := range args {
			if t.IsVariadic() && i == len(args)-1 {
				xs = append(xs, a.Interface().([]*Tensor)...)
			} else {
				xs = append(xs, a.Interface().(*Tensor))
			}
		}
		outs := v.call(xs)
		if sliceOut {
			return []reflect.Value{reflect.ValueOf(outs)}
		}
		return toValues(outs)
	})
}

// axis returns entry i of axes for n entries (nil: 0; one entry: all).
func axisOf(what string, axes Axes, i, n int) int {
	switch len(axes) {
	case 0:
		return 0
	case 1:
		return axes[0]
	case n:
		return axes[i]
	}
	panic(core.Errorf("Vmap", "%d %s axes for %d %ss: give one, or one per %s", len(axes), what, n, what, what))
}

// call runs the vectorised function on batched arguments.
func (v *vmapper) call(xs []*Tensor) []*Tensor {
	if v.arity >= 0 && len(xs) != v.arity {
		panic(core.Errorf("Vmap", "%s takes %d tensors, called with %d", v.name, v.arity, len(xs)))
	}
	n := -1 // the batch size
	metas := make([]core.Meta, len(xs))
	batched := make([]*Tensor, len(xs))
	for i, x := range xs {
		if x == nil {
			panic(core.Errorf("Vmap", "%s: argument %d is nil", v.name, i))
		}
		ax := axisOf("argument", v.in, i, len(xs))
		metas[i] = x.Meta()
		if ax == NotBatched {
			continue
		}
		if ax < 0 || ax >= x.Rank() {
			panic(core.Errorf("Vmap", "%s: in axis %d of argument %d is out of range for shape %v (use a non-negative axis, or spore.NotBatched)", v.name, ax, i, x.Shape()))
		}
		if n >= 0 && x.Dim(ax) != n {
			panic(core.Errorf("Vmap", "%s: argument %d has %d examples along axis %d (shape %v), earlier arguments %d", v.name, i, x.Dim(ax), ax, x.Shape(), n))
		}
		n = x.Dim(ax)
		batched[i] = ops.MoveAxis(x, ax, 0)
		s := batched[i].Shape()[1:].Clone()
		metas[i] = core.Meta{Shape: s, DType: x.DType()}
	}
	if n < 0 {
		panic(core.Errorf("Vmap", "%s: no argument is batched (every in axis is NotBatched)", v.name))
	}
	// Free variables of fn that are symbolic values of an enclosing trace
	// (fn closes over them inside a jitted function) become extra,
	// unbatched inputs of the per-example graph.
	tr := graph.NewTracer(v.name)
	var captured []*Tensor
	seen := map[*Tensor]*graph.Value{}
	tr.Capture = func(t *Tensor) *graph.Value {
		if gv, ok := seen[t]; ok {
			return gv
		}
		gv := tr.Graph().Input(t.Meta())
		seen[t] = gv
		captured = append(captured, t)
		return gv
	}
	g, err := graph.TraceWith(tr, metas, v.flat)
	if err != nil {
		panic(core.Errorf("Vmap", "%v", err))
	}
	vals := make([]bval, len(g.Inputs))
	for i := range g.Inputs {
		switch {
		case i >= len(xs):
			vals[i] = bval{t: captured[i-len(xs)], dim: -1}
		case batched[i] != nil:
			vals[i] = bval{t: batched[i], dim: 0}
		default:
			vals[i] = bval{t: xs[i], dim: -1}
		}
	}
	res := evalBatched(g, vals, n)
	outs := make([]*Tensor, len(res))
	for i, r := range res {
		ax := axisOf("result", v.out, i, len(res))
		switch {
		case ax == NotBatched && r.dim < 0:
			outs[i] = r.t
		case ax == NotBatched:
			panic(core.Errorf("Vmap", "%s: result %d depends on the batched arguments, but its out axis is NotBatched", v.name, i))
		case ax < 0 || ax > r.t.Rank()-1+boolInt(r.dim < 0):
			panic(core.Errorf("Vmap", "%s: out axis %d of result %d is out of range for the per-example shape %v", v.name, ax, i, g.Outputs[i].Meta.Shape))
		case r.dim < 0:
			// Every example has the same result: repeat it.
			outs[i] = ops.MoveAxis(ops.BroadcastTo(ops.ExpandDims(r.t, 0), append([]int{n}, r.t.Shape()...)...), 0, ax)
		default:
			outs[i] = ops.MoveAxis(r.t, r.dim, ax)
		}
	}
	return outs
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// bval is a value of the batched evaluation: the tensor for the whole
// batch and its batch axis, or dim -1 for a value every example shares.
type bval struct {
	t   *Tensor
	dim int
}

// evalBatched evaluates the per-example graph g on batched inputs (one
// bval per graph input; n examples) and returns its outputs.
func evalBatched(g *graph.Graph, inputs []bval, n int) []bval {
	return graph.Evaluate(g, func(v *graph.Value) bval {
		if v.Kind == graph.KindInput {
			return inputs[v.Index]
		}
		return bval{t: v.Tensor, dim: -1}
	}, func(v *graph.Value, in []bval) bval {
		args, dims, batched := unzip(in)
		return applyBatched(v, args, dims, batched, n)
	}, func(v *graph.Value, in []bval) []bval {
		args, dims, batched := unzip(in)
		return applyBatchedN(v, args, dims, batched, n)
	})
}

// unzip splits batched values into tensors and batch axes, and reports
// whether any is batched.
func unzip(in []bval) (args []*Tensor, dims []int, batched bool) {
	args, dims = make([]*Tensor, len(in)), make([]int, len(in))
	for i, b := range in {
		args[i], dims[i] = b.t, b.dim
		batched = batched || b.dim >= 0
	}
	return args, dims, batched
}

// applyBatched applies the single-result op v to batched arguments.
func applyBatched(v *graph.Value, args []*Tensor, dims []int, batched bool, n int) bval {
	p := v.Prim
	if !batched {
		return bval{t: core.Apply(p, v.Attrs, args...), dim: -1}
	}
	if p.Batch == nil {
		return bval{t: loopBatched(p, v.Attrs, args, dims, n), dim: 0}
	}
	t, d := p.Batch(v.Attrs, args, dims)
	checkBatched(p, v.Meta, t, d, n)
	return bval{t: t, dim: d}
}

// applyBatchedN applies the multi-result op v to batched arguments.
func applyBatchedN(v *graph.Value, args []*Tensor, dims []int, batched bool, n int) []bval {
	p := v.Prim
	out := make([]bval, len(v.Metas))
	switch {
	case !batched:
		for i, t := range core.ApplyN(p, v.Attrs, args...) {
			out[i] = bval{t: t, dim: -1}
		}
	case p.BatchN == nil:
		for i, t := range loopBatchedN(p, v.Attrs, args, dims, n, len(v.Metas)) {
			out[i] = bval{t: t, dim: 0}
		}
	default:
		ts, ds := p.BatchN(v.Attrs, args, dims)
		for i, t := range ts {
			checkBatched(p, v.Metas[i], t, ds[i], n)
			out[i] = bval{t: t, dim: ds[i]}
		}
	}
	return out
}

// checkBatched verifies that a batching rule returned the per-example
// meta m with n examples along axis d: a rule that gets it wrong would
// otherwise give a wrong answer further on.
func checkBatched(p *core.Prim, m core.Meta, t *Tensor, d, n int) {
	s := t.Shape()
	ok := t.DType() == m.DType && d >= -1 && d < len(s)
	if ok && d < 0 {
		ok = s.Equal(m.Shape)
	} else if ok {
		ok = s[d] == n && len(s) == len(m.Shape)+1 &&
			s[:d].Equal(m.Shape[:d]) && s[d+1:].Equal(m.Shape[d:])
	}
	if !ok {
		panic(core.Errorf(p.Name, "batching rule returned %v %v with batch axis %d for %d examples of %v %v", s, t.DType(), d, n, m.Shape, m.DType))
	}
}

// vmapLoops counts, by primitive name, the applications Vmap vectorised by
// a loop over the examples because the primitive has no batching rule.
var vmapLoops sync.Map // string -> *atomic.Int64

func countLoop(p *core.Prim) {
	c, _ := vmapLoops.LoadOrStore(p.Name, new(atomic.Int64))
	c.(*atomic.Int64).Add(1)
}

// examples returns, for each argument, its n per-example slices (nil for
// an unbatched argument).
func examples(args []*Tensor, dims []int, n int) [][]*Tensor {
	per := make([][]*Tensor, len(args))
	for i, a := range args {
		if dims[i] >= 0 {
			per[i] = ops.Unstack(a, dims[i])
		}
	}
	return per
}

func exampleArgs(args []*Tensor, per [][]*Tensor, k int) []*Tensor {
	in := make([]*Tensor, len(args))
	for i, a := range args {
		in[i] = a
		if per[i] != nil {
			in[i] = per[i][k]
		}
	}
	return in
}

// loopBatched is the fallback for a primitive without a batching rule:
// apply it to each example and stack the results along axis 0.
func loopBatched(p *core.Prim, attrs any, args []*Tensor, dims []int, n int) *Tensor {
	return loopOver(p, args, dims, n, 1, func(in []*Tensor) []*Tensor {
		return []*Tensor{core.Apply(p, attrs, in...)}
	})[0]
}

// loopBatchedN is loopBatched for multi-result primitives.
func loopBatchedN(p *core.Prim, attrs any, args []*Tensor, dims []int, n, nout int) []*Tensor {
	return loopOver(p, args, dims, n, nout, func(in []*Tensor) []*Tensor { return core.ApplyN(p, attrs, in...) })
}

// loopOver applies apply to each of the n examples of args and stacks each
// of its nout results along axis 0.
func loopOver(p *core.Prim, args []*Tensor, dims []int, n, nout int, apply func([]*Tensor) []*Tensor) []*Tensor {
	countLoop(p)
	if n == 0 {
		panic(core.Errorf(p.Name, "Vmap over an empty batch needs a batching rule, and %s has none", p.Name))
	}
	per := examples(args, dims, n)
	res := make([][]*Tensor, nout)
	for k := range n {
		for i, t := range apply(exampleArgs(args, per, k)) {
			res[i] = append(res[i], t)
		}
	}
	out := make([]*Tensor, nout)
	for i := range out {
		out[i] = ops.Stack(0, res[i]...)
	}
	return out
}
