package control

import (
	"fmt"
	"strings"
	"sync"

	"github.com/sporeml/spore/compile"
	"github.com/sporeml/spore/exec"
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/ad"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/jit"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// A body is a control-flow sub-graph: a Go closure traced once into its own
// graph. Values of the enclosing function that the closure uses (captures)
// become extra inputs; parameters it reads are captured by reference like
// anywhere else, and also listed so that gradients can reach them. The
// traced graph is the template of the node's region (graph.Region): every
// graph the node is traced into gets a copy that its passes optimise and
// exec plans as a sub-plan; the template itself stays as traced, for
// differentiation.
type body struct {
	orig     *graph.Graph  // as traced
	level    compile.Level // the level the enclosing function compiles at
	nargs    int           // explicit operands
	captures []*Tensor     // outer values, after the operands as inputs
	params   []*Tensor     // parameters the body reads
	outs     []tensor.Meta
	idx      []int // body input i -> index in the node's inputs
	pidx     []int // params[i] -> index in the node's inputs
}

// traceBody traces fn on symbolic operands of the given metas.
func traceBody(name string, metas []tensor.Meta, fn func([]*Tensor) []*Tensor) *body {
	b := &body{nargs: len(metas)}
	// A body is compiled at the level of the function it is traced in.
	b.level = jit.GetContext().JitLevel
	if outer, ok := core.CurrentTracer().(*graph.Tracer); ok && outer.Level != 0 {
		b.level = compile.Level(outer.Level)
	}
	tr := graph.NewTracer(name)
	tr.Level = int(b.level)
	seen := map[*Tensor]*graph.Value{}
	tr.Capture = func(t *Tensor) *graph.Value {
		if v, ok := seen[t]; ok {
			return v
		}
		v := tr.Graph().Input(t.Meta())
		seen[t] = v
		b.captures = append(b.captures, t)
		return v
	}
	args := make([]*Tensor, len(metas))
	for i, m := range metas {
		args[i] = tr.Input(m)
	}
	end := core.BeginTrace(tr)
	outs := func() []*Tensor {
		defer end()
		return fn(args)
	}()
	for _, o := range outs {
		tr.Output(o)
		b.outs = append(b.outs, tensor.Meta{Shape: o.Shape(), DType: o.DType()})
	}
	g := tr.Graph()
	g.CountUses()
	if err := graph.Verify(g); err != nil {
		panic(core.Errorf(name, "tracing the body: %v", err))
	}
	b.orig = g
	b.params = g.Params()
	return b
}

// region is the body as a region of a node: its inputs bound as nodeInputs
// laid them out, lead of them fed by the op itself.
func (b *body) region(lead int, loop bool) *graph.Region {
	return &graph.Region{Graph: b.orig, Binds: b.idx, Lead: lead, Loop: loop}
}

// runner is a planned body: its sub-plan and the argument list it is
// called with, both built when the enclosing plan is compiled.
type runner struct {
	plan  *exec.Plan
	binds []int
	args  []*Tensor
}

func newRunner(sp *exec.SubPlan) *runner {
	return &runner{plan: sp.Plan, binds: sp.Binds, args: make([]*Tensor, len(sp.Binds))}
}

// run executes the body on the node's inputs (as the kernel sees them:
// loop state substituted) into outs.
func (r *runner) run(in, outs []*Tensor) {
	for i, j := range r.binds {
		r.args[i] = in[j]
	}
	r.plan.RunInto(r.args, outs)
}

// width is one past the largest node input any of the runners reads: the
// length of the input list a loop kernel rebuilds per iteration.
func width(min int, rs ...*runner) int {
	n := min
	for _, r := range rs {
		for _, j := range r.binds {
			n = max(n, j+1)
		}
	}
	return n
}

// stepRunner is a control-flow op's attributes bound to sub-plans: what a
// compiled plan's step hands to the op's kernel.
type stepRunner interface {
	run(in, outs []*Tensor)
}

// regionAttrs are the attributes of a control-flow op as traced.
type regionAttrs interface {
	graph.RegionSource
	exec.RegionBinder
	lazy() *lazyPlans
}

// lazyPlans serve a control-flow op that runs outside a compiled plan
// (applied to concrete tensors while a function is traced, or replayed
// eagerly): its bodies are compiled on first use, like the plan would
// compile them, and runs are serialised, as they share the scratch
// buffers.
type lazyPlans struct {
	once  sync.Once
	mu    sync.Mutex
	level compile.Level
	r     stepRunner
	err   error
}

func (l *lazyPlans) lazy() *lazyPlans { return l }

// cfKernel is the kernel of every control-flow op: it runs the bound
// attributes a plan prepared, or compiles the bodies on first use.
func cfKernel(attrs any, in, outs []*Tensor) {
	if r, ok := attrs.(stepRunner); ok {
		r.run(in, outs)
		return
	}
	a := attrs.(regionAttrs)
	l := a.lazy()
	l.once.Do(func() {
		rs := a.Regions()
		subs := make([]*exec.SubPlan, len(rs))
		for k, r := range rs {
			res, err := compile.Run(r.Graph.Clone(), compile.Options{Level: l.level})
			if err != nil {
				l.err = err
				return
			}
			subs[k] = &exec.SubPlan{Plan: res.Plan, Binds: r.Binds, Lead: r.Lead}
		}
		l.r = a.BindRegions(subs).(stepRunner)
	})
	if l.err != nil {
		panic(core.Errorf(rs0name(a), "compiling the body: %v", l.err))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.r.run(in, outs)
}

func rs0name(a regionAttrs) string { return a.Regions()[0].Graph.Name }

// nodeInputs lays out a control-flow node's inputs: lead (the predicate or
// nothing), the operands, then every body's captures and parameters without
// repeats, and records where each body finds its inputs.
func nodeInputs(lead []*Tensor, operands []*Tensor, bodies ...*body) []*Tensor {
	in := append(append([]*Tensor(nil), lead...), operands...)
	at := map[*Tensor]int{}
	add := func(t *Tensor) int {
		if i, ok := at[t]; ok {
			return i
		}
		at[t] = len(in)
		in = append(in, t)
		return len(in) - 1
	}
	for _, b := range bodies {
		b.idx = make([]int, 0, b.nargs+len(b.captures))
		for i := range b.nargs {
			b.idx = append(b.idx, len(lead)+i)
		}
		for _, c := range b.captures {
			b.idx = append(b.idx, add(c))
		}
	}
	for _, b := range bodies {
		b.pidx = b.pidx[:0]
		for _, p := range b.params {
			b.pidx = append(b.pidx, add(p))
		}
	}
	return in
}

// vjp differentiates the body at the node's inputs xs (without the
// predicate) against cotangents gs of its results, by replaying its traced
// graph on tracked stand-ins. It returns one gradient per element of xs.
func (b *body) vjp(xs, gs []*Tensor, lead int) []*Tensor {
	leaves := make([]*Tensor, len(xs))
	for i, x := range xs {
		leaves[i] = core.TrackLeaf(x)
	}
	bodyIn := make([]*Tensor, len(b.idx))
	for i, j := range b.idx {
		bodyIn[i] = leaves[j-lead]
	}
	// Parameters are node inputs too (so the tape reaches them); in the
	// replay they read the tracked stand-ins, which may be symbolic inputs
	// of a gradient body rather than the parameters themselves.
	outs := b.replay(bodyIn, leaves, lead)
	var loss *Tensor
	for k, o := range outs {
		if !o.DType().IsFloat() {
			continue
		}
		term := ops.Sum(ops.Mul(o, gs[k]))
		if loss == nil {
			loss = term
		} else {
			loss = ops.Add(loss, term)
		}
	}
	if loss == nil {
		grads := make([]*Tensor, len(xs))
		for i, x := range xs {
			grads[i] = ops.ZerosLike(x)
		}
		return grads
	}
	return ad.VJP(loss, ops.OnesLike(loss), leaves)
}

// jvp pushes tangents ts (nil for zeros) of the node's inputs xs (without
// the predicate) through the body, by replaying its traced graph on tracked
// stand-ins, and returns the tangents of its results.
func (b *body) jvp(xs, ts []*Tensor, lead int) []*Tensor {
	_, touts := ad.JVPN(func(leaves []*Tensor) []*Tensor {
		bodyIn := make([]*Tensor, len(b.idx))
		for i, j := range b.idx {
			bodyIn[i] = leaves[j-lead]
		}
		return b.replay(bodyIn, leaves, lead)
	}, xs, ts)
	return touts
}

func metasOf(ts []*Tensor) []tensor.Meta {
	ms := make([]tensor.Meta, len(ts))
	for i, t := range ts {
		ms[i] = tensor.Meta{Shape: t.Shape(), DType: t.DType()}
	}
	return ms
}

func typesString(ms []tensor.Meta) string {
	s := make([]string, len(ms))
	for i, m := range ms {
		s[i] = graph.TypeString(m)
	}
	return "(" + strings.Join(s, ", ") + ")"
}

func sameTypes(a, b []tensor.Meta) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].DType != b[i].DType || !a[i].Shape.Equal(b[i].Shape) {
			return false
		}
	}
	return true
}

// staged reports whether control flow must be staged into the graph:
// under a trace on this goroutine or with symbolic inputs.
func staged(ts ...*Tensor) bool {
	return core.CurrentTracer() != nil || core.AnySymbolic(ts)
}

// condAttrs are a Cond node's attributes: its two traced branches.
type condAttrs struct {
	then, els *body
	lazyPlans
}

func (a *condAttrs) String() string {
	return fmt.Sprintf("then=%s else=%s", a.then.orig.Name, a.els.orig.Name)
}

// Regions returns the branches, to become the node's regions 0 (then) and
// 1 (else); their operands pass straight through, so neither has lead
// inputs.
func (a *condAttrs) Regions() []*graph.Region {
	return []*graph.Region{a.then.region(0, false), a.els.region(0, false)}
}

// BindRegions returns the Cond kernel's attributes for planned branches.
func (a *condAttrs) BindRegions(subs []*exec.SubPlan) any {
	return &condRun{then: newRunner(subs[0]), els: newRunner(subs[1]), src: a}
}

// condRun is a planned Cond.
type condRun struct {
	then, els *runner
	src       *condAttrs
}

func (c *condRun) String() string { return c.src.String() }

func (c *condRun) run(in, outs []*Tensor) {
	if in[0].Data().([]bool)[0] {
		c.then.run(in, outs)
	} else {
		c.els.run(in, outs)
	}
}

var condPrim *core.Prim

func init() {
	condPrim = &core.Prim{
		Name:   "Cond",
		Traits: core.Traits{Cost: 100},
		InferN: func(attrs any, _ []*Tensor) []tensor.Meta { return attrs.(*condAttrs).then.outs },
		// The tangents go through a Cond of the branches' JVPs, each
		// replaying its branch's traced graph; inputs without a tangent
		// stay out of it.
		JVPN: func(attrs any, in, ts, _ []*Tensor) []*Tensor {
			a := attrs.(*condAttrs)
			n := len(in) - 1
			var pos []int
			var tans []*Tensor
			for i, t := range ts[1:] {
				if t != nil {
					pos = append(pos, i)
					tans = append(tans, t)
				}
			}
			jvp := func(b *body) func(...*Tensor) []*Tensor {
				return func(xs ...*Tensor) []*Tensor {
					full := make([]*Tensor, n)
					for k, i := range pos {
						full[i] = xs[n+k]
					}
					return b.jvp(xs[:n], full, 1)
				}
			}
			return Cond(in[0], jvp(a.then), jvp(a.els), append(append([]*Tensor(nil), in[1:]...), tans...)...)
		},
		VJPN: func(attrs any, in, _, gs []*Tensor) []*Tensor {
			a := attrs.(*condAttrs)
			n := len(in) - 1
			grad := func(b *body) func(...*Tensor) []*Tensor {
				return func(xs ...*Tensor) []*Tensor { return b.vjp(xs[:n], xs[n:], 1) }
			}
			g := Cond(in[0], grad(a.then), grad(a.els), append(append([]*Tensor(nil), in[1:]...), gs...)...)
			return append([]*Tensor{nil}, g...)
		},
	}
	// The control-flow kernel runs the bodies' plans: one kernel serves
	// every dtype.
	condPrim.RegisterNAll(core.CPU, cfKernel)
}

// Cond is spore.Cond, whose documentation is the reference.
func Cond(pred *Tensor, thenFn, elseFn func(...*Tensor) []*Tensor, operands ...*Tensor) []*Tensor {
	if pred.DType() != tensor.Bool || pred.Size() != 1 {
		core.Panicf("Cond", "predicate must be a one-element Bool tensor, got %v %v", pred.Shape(), pred.DType())
	}
	if !staged(append([]*Tensor{pred}, operands...)...) {
		if pred.Bool() {
			return thenFn(operands...)
		}
		return elseFn(operands...)
	}
	metas := metasOf(operands)
	name := "cond"
	if tr := core.CurrentTracer(); tr != nil {
		name = tr.FuncName() + ".cond"
	}
	tb := traceBody(name+".then", metas, func(a []*Tensor) []*Tensor { return thenFn(a...) })
	eb := traceBody(name+".else", metas, func(a []*Tensor) []*Tensor { return elseFn(a...) })
	if !sameTypes(tb.outs, eb.outs) {
		core.Panicf("Cond", "Type Join Failed: the then branch returns %s but the else branch returns %s; both branches must return the same shapes and dtypes", typesString(tb.outs), typesString(eb.outs))
	}
	in := nodeInputs([]*Tensor{pred}, operands, tb, eb)
	return core.ApplyN(condPrim, &condAttrs{then: tb, els: eb, lazyPlans: lazyPlans{level: tb.level}}, in...)
}

// whileAttrs are a While node's attributes: the traced condition and
// body.
type whileAttrs struct {
	cond, body *body
	carries    int
	lazyPlans
}

func (w *whileAttrs) String() string {
	return fmt.Sprintf("cond=%s body=%s", w.cond.orig.Name, w.body.orig.Name)
}

// Regions returns the condition and the body, the node's regions 0 and 1:
// both loop, reading the carries as their lead inputs.
func (w *whileAttrs) Regions() []*graph.Region {
	return []*graph.Region{w.cond.region(w.carries, true), w.body.region(w.carries, true)}
}

// BindRegions returns the While kernel's attributes for planned regions,
// with the carry buffers it loops over.
func (w *whileAttrs) BindRegions(subs []*exec.SubPlan) any {
	r := &whileRun{cond: newRunner(subs[0]), body: newRunner(subs[1]), carries: w.carries, src: w}
	for _, m := range w.body.outs {
		r.a = append(r.a, core.NewOf(m))
		r.b = append(r.b, core.NewOf(m))
		r.cp = append(r.cp, core.CopierFor(m.DType))
		r.size = append(r.size, m.Shape.Size())
	}
	r.pred = []*Tensor{tensor.New(tensor.Bool)}
	r.cur = make([]*Tensor, width(w.carries, r.cond, r.body))
	return r
}

// whileRun is a planned While.
type whileRun struct {
	cond, body *runner
	carries    int
	a, b       []*Tensor     // double-buffered carries
	cp         []core.Copier // each carry's copy, resolved when planned
	size       []int         // each carry's element count
	pred       []*Tensor
	cur        []*Tensor // the node inputs the bodies read: carries substituted
	src        *whileAttrs
}

func (w *whileRun) String() string { return w.src.String() }

func (w *whileRun) run(in, outs []*Tensor) {
	copy(w.cur, in)
	for i := range w.carries {
		w.cp[i](w.a[i], 0, in[i], 0, w.size[i])
		w.cur[i] = w.a[i]
	}
	for {
		w.cond.run(w.cur, w.pred)
		if !w.pred[0].Data().([]bool)[0] {
			break
		}
		w.body.run(w.cur, w.b)
		w.a, w.b = w.b, w.a
		for i := range w.carries {
			w.cur[i] = w.a[i]
		}
	}
	for i, o := range outs {
		w.cp[i](o, 0, w.a[i], 0, w.size[i])
	}
}

var whilePrim = &core.Prim{
	Name:   "While",
	Traits: core.Traits{Cost: 1000},
	InferN: func(attrs any, _ []*Tensor) []tensor.Meta { return attrs.(*whileAttrs).body.outs },
}

func init() { whilePrim.RegisterNAll(core.CPU, cfKernel) }

// While is spore.While, whose documentation is the reference.
func While(condFn func(...*Tensor) *Tensor, bodyFn func(...*Tensor) []*Tensor, init ...*Tensor) []*Tensor {
	if !staged(init...) {
		carry := init
		for {
			p := condFn(carry...)
			if p.DType() != tensor.Bool || p.Size() != 1 {
				core.Panicf("While", "condition must return a one-element Bool tensor, got %v %v", p.Shape(), p.DType())
			}
			if !p.Bool() {
				return carry
			}
			carry = bodyFn(carry...)
		}
	}
	for _, x := range init {
		if core.IsTracked(x) {
			core.Panicf("While", "a loop carry is being differentiated; While has no reverse-mode gradient in Graph mode, use Scan")
		}
	}
	metas := metasOf(init)
	name := "while"
	if tr := core.CurrentTracer(); tr != nil {
		name = tr.FuncName() + ".while"
	}
	cb := traceBody(name+".cond", metas, func(a []*Tensor) []*Tensor { return []*Tensor{condFn(a...)} })
	if len(cb.outs) != 1 || cb.outs[0].DType != tensor.Bool || cb.outs[0].Shape.Size() != 1 {
		core.Panicf("While", "condition must return a one-element Bool tensor, got %s", typesString(cb.outs))
	}
	bb := traceBody(name+".body", metas, func(a []*Tensor) []*Tensor { return bodyFn(a...) })
	if !sameTypes(bb.outs, metas) {
		core.Panicf("While", "Type Join Failed: the body returns %s but the loop carries %s", typesString(bb.outs), typesString(metas))
	}
	// The node has no VJP: a value being differentiated that the loop
	// reads would get a zero gradient without a word.
	for _, b := range []*body{cb, bb} {
		for _, x := range append(append([]*Tensor(nil), b.captures...), b.params...) {
			if core.IsTracked(x) {
				core.Panicf("While", "the loop reads a value being differentiated; While has no reverse-mode gradient in Graph mode, use Scan")
			}
		}
	}
	in := nodeInputs(nil, init, cb, bb)
	return core.ApplyN(whilePrim, &whileAttrs{cond: cb, body: bb, carries: len(init), lazyPlans: lazyPlans{level: cb.level}}, in...)
}

// printAttrs hold Print's format: literal strings with nil where a tensor
// argument goes.
type printAttrs struct{ parts []any }

func (p *printAttrs) String() string { return fmt.Sprintf("%d parts", len(p.parts)) }

var printPrim = &core.Prim{
	Name:   "Print",
	Traits: core.Traits{Impure: true, Fresh: true},
	Infer:  func(any, []*Tensor) tensor.Meta { return tensor.Meta{Shape: tensor.Shape{}, DType: tensor.Bool} },
}

func init() {
	printPrim.RegisterAll(core.CPU, func(attrs any, in []*Tensor, _ *Tensor) {
		printParts(attrs.(*printAttrs).parts, in)
	})
}

func printParts(parts []any, ts []*Tensor) {
	var b strings.Builder
	k := 0
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(' ')
		}
		if p == nil {
			b.WriteString(ts[k].String())
			k++
		} else {
			fmt.Fprint(&b, p)
		}
	}
	fmt.Println(b.String())
}

// Print is spore.Print, whose documentation is the reference.
func Print(args ...any) {
	var ts []*Tensor
	parts := make([]any, len(args))
	for i, a := range args {
		if t, ok := a.(*Tensor); ok {
			ts = append(ts, t)
			continue
		}
		parts[i] = fmt.Sprint(a)
	}
	if !staged(ts...) {
		printParts(parts, ts)
		return
	}
	core.Apply(printPrim, &printAttrs{parts: parts}, ts...)
}

// replay evaluates the body's traced graph on bodyIn, reading each of its
// parameters from its place among the node inputs nodeIn (whose first
// element is node input lead).
func (b *body) replay(bodyIn, nodeIn []*Tensor, lead int) []*Tensor {
	subst := map[*Tensor]*Tensor{}
	for i, p := range b.params {
		subst[p] = nodeIn[b.pidx[i]-lead]
	}
	return graph.ReplayWith(b.orig, bodyIn, subst)
}
