package exec

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"unsafe"

	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// MaxDynamicVars is the most dynamic dimensions (variables) one plan can
// have: a batch and a sequence length, with room to spare.
const MaxDynamicVars = 4

// maxSizes bounds the per-size state a dynamic plan keeps (headers'
// shapes and buffers, size-dependent attributes): past it the cache is
// emptied and refilled, so that a plan serving many sizes keeps a bounded
// amount of memory.
const maxSizes = 256

// DynamicSpec says which dimensions of a plan's inputs are dynamic.
type DynamicSpec struct {
	// Dims[i][d] is the dynamic variable that dimension d of input i is,
	// or -1 for a static dimension. Two inputs naming one variable must
	// be called with the same size there.
	Dims [][]int
	// Bound is each variable's largest size, the size the plan itself was
	// traced and laid out at; Min is its least (1 when nil).
	Bound, Min []int
}

// ErrStructure is wrapped by MakeDynamic's errors when a sample's graph
// has other values or wiring than the bounds' (not merely other sizes).
var ErrStructure = errors.New("another graph")

// Sample is the plan's function traced and optimised again, at other
// sizes of its dynamic variables.
type Sample struct {
	// Graph is the optimised graph (as traced, for CheckTraces).
	Graph *graph.Graph
	// Sizes is the size of each variable it was traced at.
	Sizes []int
}

// MakeDynamic turns p, compiled at the bounds of spec's variables, into a
// plan that runs every size from Min to Bound without compiling: before a
// run at sizes it has not seen, every header whose shape depends on them
// is pointed at a prefix of its buffer with the actual shape, and every
// step whose attributes depend on them gets attributes for those sizes,
// built once per sizes and cached.
//
// samples are the same function traced at other sizes. The first
// len(spec.Bound) change one variable each, in order, from its bound (they
// fit each size-dependent integer as an affine function of the variables:
// a dimension, an integer inside an op's attributes); the rest only
// verify the fit. MakeDynamic refuses, with an error saying what differed
// and where, and leaves p as it was, when the samples' graphs do not have
// p's structure, when an integer is not affine in the sizes (ceil(n/2)),
// when anything else depends on them (a float attribute such as 1/n, a
// constant's shape or contents — but for a constant whose values are
// integers affine in the sizes or their float32 reciprocals (a mean's
// divisor n, its gradient's 1/n filling the batch's shape), which gets
// each size's values —, a parameter's shape), or when the plan holds what a
// prefix cannot serve: control flow or packed arguments over a dynamic
// value, or values sharing a buffer whose sizes differ at some size.
//
// What it cannot see: a closure inside attributes is compared by its code,
// not by what it captures, and an integer is fitted from the sizes
// sampled. The fit is exact at every sample (bounds, 2, 3 and 1 as jit
// samples them), so a size-dependent integer that is not affine (a step
// at a threshold, a ceiling, a remainder) is caught unless it happens to
// be affine at all of them.
func (p *Plan) MakeDynamic(spec DynamicSpec, samples []Sample) error {
	q := p
	if p.PlacedArgs > 0 {
		// A Concat's arguments placed at offsets in its buffer would stay
		// at the bounds' offsets at smaller sizes: plan them in buffers of
		// their own, which a prefix serves.
		var err error
		if q, err = compile(p.g, options{keepPacks: true}); err != nil {
			return fmt.Errorf("exec: %s cannot serve dynamic sizes: %w", p.g.Name, err)
		}
	}
	d, err := newDynamic(q, spec, samples)
	if err != nil {
		return fmt.Errorf("exec: %s cannot serve dynamic sizes: %w", p.g.Name, err)
	}
	p.mu.Lock()
	if q != p {
		p.adopt(q)
	}
	p.dyn = d
	p.mu.Unlock()
	return nil
}

// adopt makes p run q's plan of the same graph: every field but the lock.
// The dynamic state built over q points into the steps and headers that p
// then shares.
func (p *Plan) adopt(q *Plan) {
	p.steps, p.inputs, p.views, p.outputs, p.outCopy = q.steps, q.inputs, q.views, q.outputs, q.outCopy
	p.assigns, p.written, p.hdr, p.members = q.assigns, q.written, q.hdr, q.members
	p.ArenaBytes, p.Buffers, p.Reused, p.InPlaceAssigns = q.ArenaBytes, q.Buffers, q.Reused, q.InPlaceAssigns
	p.PlacedArgs, p.NoOpPacks = q.PlacedArgs, q.NoOpPacks
}

// Warm runs the plan once on zeros at its compiled shapes (the bounds, for
// a dynamic plan), so that the first real call pays neither what a plan
// does on its first run (packing weights, touching the arena's memory)
// nor anything else: a server warms a model this way when it loads it.
// A plan that updates parameters or holds an op with effects (a random
// draw, a print, a collective) is not run, nor is one that rejects zeros
// (an index check may): Warm then reports false, and the first call pays
// the first run.
func (p *Plan) Warm() (ok bool) {
	if !p.Pure() {
		return false
	}
	args := make([]*tensor.Tensor, len(p.inputs))
	for _, in := range p.g.Inputs {
		args[in.Index] = core.NewOf(in.Meta)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	p.run(args)
	return true
}

// Pure reports whether running the plan changes nothing but its arena:
// it updates no parameter and holds no op with effects (a random draw, a
// print, a collective), so that it may be run for a check or a warm-up.
func (p *Plan) Pure() bool {
	return len(p.written) == 0 && len(p.assigns) == 0 && !impure(p.g)
}

// impure reports whether g or a region within it holds an op with
// effects.
func impure(g *graph.Graph) bool {
	for _, v := range g.Values {
		if v.Kind == graph.KindOp && (v.Prim.Traits.Impure || v.Prim.Traits.Fresh) {
			return true
		}
		for _, r := range v.Regions {
			if impure(r.Graph) {
				return true
			}
		}
	}
	return false
}

// PrepareSizes builds, for a dynamic plan, the state of every size it
// serves (headers' shapes and buffers, size-dependent attributes) now
// rather than on each size's first run, when there are at most as many
// sizes as it keeps (256); it returns how many it built. A server calls it
// at load time so that no request at a new batch size pays even that.
func (p *Plan) PrepareSizes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := p.dyn
	if d == nil {
		return 0
	}
	total := 1
	for j := range d.nvars {
		total *= d.bound[j] - d.min[j] + 1
		if total > maxSizes {
			return 0
		}
	}
	var x [MaxDynamicVars]int
	for j := range d.nvars {
		x[j] = d.min[j]
	}
	built := 0
	for {
		if d.sizes[x] == nil {
			d.sizes[x] = d.build(&x)
			built++
		}
		j := 0
		for ; j < d.nvars; j++ { // the next sizes, the first variable fastest
			if x[j] < d.bound[j] {
				x[j]++
				break
			}
			x[j] = d.min[j]
		}
		if j == d.nvars {
			return built
		}
	}
}

// Dynamic reports whether MakeDynamic made p serve dynamic sizes.
func (p *Plan) Dynamic() bool { return p.dyn != nil }

// form is an affine function of the dynamic variables: c + Σ a[j]·x[j].
type form struct {
	c int
	a [MaxDynamicVars]int
}

func (f form) eval(x *[MaxDynamicVars]int) int {
	v := f.c
	for j, a := range f.a {
		v += a * x[j]
	}
	return v
}

func (f form) constant() bool { return f.a == [MaxDynamicVars]int{} }

// dynamic is a plan's state for dynamic sizes.
type dynamic struct {
	nvars      int
	dims       [][]int // DynamicSpec.Dims
	static     [][]int // the inputs' static dimensions (bound shape)
	bound, min [MaxDynamicVars]int
	heads      []dynHead
	steps      []dynStep
	sizes      map[[MaxDynamicVars]int]*sized
	cur        *sized
	key        [MaxDynamicVars]int
}

// dynHead is a header whose shape depends on the sizes.
type dynHead struct {
	h    *tensor.Tensor
	full any // its buffer at the bounds; nil when rebound each run (an argument, a view of one)
	dims []form
	// vals, for a constant whose values depend on the sizes, says how.
	vals *constFit
	dt   tensor.DType
}

// dynStep is a step whose attributes depend on the sizes.
type dynStep struct {
	s     *step
	root  reflect.Value // the attributes at the bounds, addressable
	sites []site
}

// sized is what the plan's headers and steps take at one set of sizes.
type sized struct {
	shapes []tensor.Shape
	bufs   []any
	attrs  []any
}

// fitter fits integers seen at the bound and at each sample.
type fitter struct {
	nvars int
	bound [MaxDynamicVars]int
	at    [][MaxDynamicVars]int // per sample
}

// fit returns the affine form through xs (xs[0] at the bounds, xs[1+k]
// at sample k), or an error.
func (f *fitter) fit(xs []int) (form, error) {
	var fm form
	base := xs[0]
	for j := 0; j < f.nvars; j++ {
		dx := f.at[j][j] - f.bound[j]
		dv := xs[1+j] - base
		if dv%dx != 0 {
			return form{}, fmt.Errorf("%s is not affine in the dynamic sizes", f.show(xs))
		}
		fm.a[j] = dv / dx
	}
	fm.c = base
	for j := 0; j < f.nvars; j++ {
		fm.c -= fm.a[j] * f.bound[j]
	}
	for k := range f.at {
		if fm.eval(&f.at[k]) != xs[1+k] {
			return form{}, fmt.Errorf("%s is not affine in the dynamic sizes", f.show(xs))
		}
	}
	return fm, nil
}

func (f *fitter) show(xs []int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d at sizes %v", xs[0], f.bound[:f.nvars])
	for k := range f.at {
		fmt.Fprintf(&b, ", %d at %v", xs[1+k], f.at[k][:f.nvars])
	}
	return b.String()
}

// analysis is what the samples say about a graph: each value's shape as
// forms of the variables, which values have dynamic sizes, and the
// size-dependent integers in each op's attributes.
type analysis struct {
	f          *fitter
	bound, min [MaxDynamicVars]int
	static     [][]int
	shapes     [][][]form // by value ID, per result, per dimension
	dynVal     []bool
	sites      [][]site // by value ID
	// consts[v.ID] says how a constant whose values depend on the sizes
	// follows them (a mean's divisor n, its gradient's 1/n), nil for the
	// others.
	consts []*constFit
}

// CheckTraces checks that the graphs traced at samples' sizes are g's
// with its sizes moved, as MakeDynamic does with optimised graphs (see
// there), and that the graph traced at ones' sizes is g's at those sizes
// less the broadcasts and reshapes that are no-ops there (views, and
// broadcasts by a Copy body, to the shape they already have: ops.BroadcastTo
// to its operand's shape traces nothing). Run on graphs as traced,
// before any pass, it tells a function whose trace at size 1 only drops
// no-ops — whose optimised graph, at the bounds, then computes the same
// at size 1 — from one that does something else at size 1.
func CheckTraces(g *graph.Graph, spec DynamicSpec, samples []Sample, ones Sample) error {
	g.Renumber()
	an, err := analyze(g, spec, samples)
	if err != nil {
		return err
	}
	var x [MaxDynamicVars]int
	copy(x[:], ones.Sizes)
	at := func(v *graph.Value) tensor.Shape {
		fs := an.shapes[v.ID][0]
		sh := make(tensor.Shape, len(fs))
		for k, f := range fs {
			sh[k] = f.eval(&x)
		}
		return sh
	}
	og := ones.Graph
	m := make([]*graph.Value, len(g.Values))
	j := 0
	for _, v := range g.Values {
		if j < len(og.Values) {
			if w := og.Values[j]; sameAt(v, w, m, an, &x) {
				m[v.ID] = w
				j++
				continue
			}
		}
		if v.Kind == graph.KindOp && len(v.Args) == 1 && !v.IsMulti() && (v.Prim.Traits.View || v.Prim.Elementwise != nil && v.Prim.Elementwise.Copy) &&
			at(v).Equal(at(v.Args[0])) && m[v.Args[0].ID] != nil {
			m[v.ID] = m[v.Args[0].ID] // a no-op at these sizes
			continue
		}
		return fmt.Errorf("at sizes %v the traced graph differs from the bounds' at %s", ones.Sizes, name(v))
	}
	if j != len(og.Values) || len(og.Outputs) != len(g.Outputs) || len(og.Assigns) != len(g.Assigns) {
		return fmt.Errorf("at sizes %v the traced graph has other values, results or updates", ones.Sizes)
	}
	for i, o := range g.Outputs {
		if m[o.ID] != og.Outputs[i] {
			return fmt.Errorf("at sizes %v result %d is another value", ones.Sizes, i)
		}
	}
	for i, a := range g.Assigns {
		if m[a.Val.ID] != og.Assigns[i].Val || m[a.Param.ID] != og.Assigns[i].Param {
			return fmt.Errorf("at sizes %v update %d differs", ones.Sizes, i)
		}
	}
	return nil
}

// sameAt reports whether w, of the graph traced at sizes x, is v of the
// analysed graph at x: the same node over the values m maps v's
// arguments to, of v's shapes and attributes at x.
func sameAt(v, w *graph.Value, m []*graph.Value, an *analysis, x *[MaxDynamicVars]int) bool {
	if w.Kind != v.Kind || !samePrim(v.Prim, w.Prim) || len(w.Args) != len(v.Args) || w.Index != v.Index ||
		w.IsMulti() != v.IsMulti() || len(w.Metas) != len(v.Metas) || len(v.Regions) > 0 || len(w.Regions) > 0 {
		return false
	}
	for k, a := range v.Args {
		if m[a.ID] != w.Args[k] {
			return false
		}
	}
	switch v.Kind {
	case graph.KindParam:
		if v.Tensor != w.Tensor {
			return false
		}
	case graph.KindConst:
		if cf := an.consts[v.ID]; cf != nil {
			if !sameBits(reflect.ValueOf(cf.at(w.Meta.DType, w.Meta.Shape, x).Data()), reflect.ValueOf(w.Tensor.Data())) {
				return false
			}
		} else if sameConst([]*graph.Value{v, w}, []Sample{{Sizes: x[:an.f.nvars]}}) != nil {
			return false
		}
	}
	metas, wmetas := []tensor.Meta{v.Meta}, []tensor.Meta{w.Meta}
	if v.IsMulti() {
		metas, wmetas = v.Metas, w.Metas
	}
	for r, mt := range metas {
		if wmetas[r].DType != mt.DType || len(wmetas[r].Shape) != len(an.shapes[v.ID][r]) {
			return false
		}
		for k, f := range an.shapes[v.ID][r] {
			if f.eval(x) != wmetas[r].Shape[k] {
				return false
			}
		}
	}
	if v.Kind != graph.KindOp {
		return true
	}
	attrs := addressable(reflect.ValueOf(&v.Attrs).Elem())
	if sites := an.sites[v.ID]; len(sites) > 0 {
		attrs = rebuild(attrs, sites, 0, x)
	}
	df := &differ{f: &fitter{}}
	return df.walk([]reflect.Value{attrs, addressable(reflect.ValueOf(&w.Attrs).Elem())}, nil, 0) == nil && len(df.sites) == 0
}

func analyze(g *graph.Graph, spec DynamicSpec, samples []Sample) (*analysis, error) {
	nv := len(spec.Bound)
	if nv == 0 || nv > MaxDynamicVars {
		return nil, fmt.Errorf("%d dynamic variables; want 1 to %d", nv, MaxDynamicVars)
	}
	if len(samples) < nv {
		return nil, fmt.Errorf("%d samples for %d dynamic variables", len(samples), nv)
	}
	if len(spec.Dims) != len(g.Inputs) {
		return nil, fmt.Errorf("spec for %d inputs, the graph has %d", len(spec.Dims), len(g.Inputs))
	}
	f := &fitter{nvars: nv}
	d := &analysis{f: f}
	for j := range nv {
		d.bound[j], d.min[j], f.bound[j] = spec.Bound[j], 1, spec.Bound[j]
		if spec.Min != nil {
			d.min[j] = spec.Min[j]
		}
		if d.min[j] < 1 || d.min[j] > d.bound[j] {
			return nil, fmt.Errorf("variable %d ranges over %d..%d", j, d.min[j], d.bound[j])
		}
	}
	for k, s := range samples {
		if len(s.Sizes) != nv || s.Graph == nil {
			return nil, fmt.Errorf("sample %d: %d sizes for %d variables", k, len(s.Sizes), nv)
		}
		var at [MaxDynamicVars]int
		copy(at[:], s.Sizes)
		for j := range nv {
			if k < nv && (j == k) == (at[j] == d.bound[j]) {
				return nil, fmt.Errorf("sample %d must change variable %d alone from its bound, has sizes %v", k, k, s.Sizes)
			}
		}
		f.at = append(f.at, at)
		s.Graph.Renumber()
	}
	for i, in := range g.Inputs {
		if len(spec.Dims[i]) != len(in.Meta.Shape) {
			return nil, fmt.Errorf("input %d has rank %d, spec %d", i, len(in.Meta.Shape), len(spec.Dims[i]))
		}
		d.static = append(d.static, []int(in.Meta.Shape.Clone()))
	}
	vals := func(i int) []*graph.Value {
		vs := []*graph.Value{g.Values[i]}
		for _, s := range samples {
			vs = append(vs, s.Graph.Values[i])
		}
		return vs
	}
	for k, s := range samples {
		if len(s.Graph.Values) != len(g.Values) || len(s.Graph.Outputs) != len(g.Outputs) || len(s.Graph.Assigns) != len(g.Assigns) {
			return nil, fmt.Errorf("%w: at sizes %v the graph has %d values, %d results and %d updates; at the bounds %d, %d and %d",
				ErrStructure, samples[k].Sizes, len(s.Graph.Values), len(s.Graph.Outputs), len(s.Graph.Assigns), len(g.Values), len(g.Outputs), len(g.Assigns))
		}
		for i, o := range s.Graph.Outputs {
			if o.ID != g.Outputs[i].ID {
				return nil, fmt.Errorf("%w: at sizes %v result %d is %%%d, at the bounds %%%d", ErrStructure, s.Sizes, i, o.ID, g.Outputs[i].ID)
			}
		}
		for i, a := range s.Graph.Assigns {
			if a.Val.ID != g.Assigns[i].Val.ID || a.Param.ID != g.Assigns[i].Param.ID {
				return nil, fmt.Errorf("%w: at sizes %v update %d differs", ErrStructure, s.Sizes, i)
			}
		}
	}
	// shapes[v.ID] are the forms of each value's dimensions (of each
	// result for a multi-result op).
	shapes := make([][][]form, len(g.Values))
	dynVal := make([]bool, len(g.Values))
	d.shapes, d.dynVal, d.sites = shapes, dynVal, make([][]site, len(g.Values))
	d.consts = make([]*constFit, len(g.Values))
	for i, v := range g.Values {
		vs := vals(i)
		if err := sameStructure(vs, samples); err != nil {
			return nil, err
		}
		metas := []tensor.Meta{v.Meta}
		if v.IsMulti() {
			metas = v.Metas
		}
		for r, m := range metas {
			forms := make([]form, len(m.Shape))
			for dim := range m.Shape {
				xs := make([]int, len(vs))
				for k, w := range vs {
					wm := w.Meta
					if w.IsMulti() {
						wm = w.Metas[r]
					}
					if len(wm.Shape) != len(m.Shape) || wm.DType != m.DType {
						return nil, fmt.Errorf("%s is %v%v at the bounds, %v%v at sizes %v", name(v), m.DType, m.Shape, wm.DType, wm.Shape, samples[k-1].Sizes)
					}
					xs[k] = wm.Shape[dim]
				}
				fm, err := f.fit(xs)
				if err != nil {
					return nil, fmt.Errorf("dimension %d of %s: %w", dim, name(v), err)
				}
				for j := range nv {
					if fm.a[j] < 0 {
						return nil, fmt.Errorf("dimension %d of %s shrinks as variable %d grows (%s)", dim, name(v), j, f.show(xs))
					}
				}
				if fm.eval(&d.min) < 0 {
					return nil, fmt.Errorf("dimension %d of %s is negative at the least sizes", dim, name(v))
				}
				dynVal[v.ID] = dynVal[v.ID] || !fm.constant()
				forms[dim] = fm
			}
			shapes[v.ID] = append(shapes[v.ID], forms)
		}
	}
	for i, v := range g.Values {
		switch {
		case v.Kind == graph.KindInput:
			for dim, fm := range shapes[v.ID][0] {
				j := spec.Dims[v.Index][dim]
				want := form{c: d.static[v.Index][dim]}
				if j >= 0 {
					want = form{}
					want.a[j] = 1
				}
				if fm != want {
					return nil, fmt.Errorf("input %d's dimension %d does not follow the spec", v.Index, dim)
				}
			}
		case v.Kind == graph.KindParam && dynVal[v.ID]:
			return nil, fmt.Errorf("parameter %s has a shape that depends on the dynamic sizes", name(v))
		case v.Kind == graph.KindConst:
			if err := sameConst(vals(i), samples); err != nil {
				cf, ferr := fitConst(vals(i), f)
				if ferr != nil {
					return nil, fmt.Errorf("%v (%v)", err, ferr)
				}
				d.consts[v.ID] = cf
			}
		}
		if v.Kind != graph.KindOp {
			continue
		}
		if len(v.Regions) == 0 {
			vs := vals(i)
			roots := make([]reflect.Value, len(vs))
			for k, w := range vs {
				roots[k] = addressable(reflect.ValueOf(&w.Attrs).Elem())
			}
			df := &differ{f: f}
			if err := df.walk(roots, nil, 0); err != nil {
				return nil, fmt.Errorf("attributes of %s: %w", name(v), err)
			}
			d.sites[v.ID] = df.sites
		}
		argDyn := dynVal[v.ID]
		for _, a := range v.Args {
			argDyn = argDyn || dynVal[a.ID]
		}
		if !argDyn {
			continue
		}
		if len(v.Regions) > 0 {
			return nil, fmt.Errorf("%s is control flow over values of dynamic size", name(v))
		}
		if v.Prim.Traits.ArgsInResult || v.Prim.Traits.ResultsInArg {
			return nil, fmt.Errorf("%s packs values of dynamic size at offsets", name(v))
		}
	}
	return d, nil
}

func newDynamic(p *Plan, spec DynamicSpec, samples []Sample) (*dynamic, error) {
	g := p.g
	an, err := analyze(g, spec, samples)
	if err != nil {
		return nil, err
	}
	d := &dynamic{nvars: len(spec.Bound), dims: spec.Dims, static: an.static, bound: an.bound, min: an.min, sizes: map[[MaxDynamicVars]int]*sized{}}
	shapes := an.shapes
	dynVal := an.dynVal
	// Values sharing a buffer (views, in-place results) must have equal
	// sizes at every size, or one would read past what another wrote.
	for _, ms := range p.members {
		for _, m := range ms[1:] {
			for k, s := range samples {
				a, b := s.Graph.Values[ms[0].ID], s.Graph.Values[m.ID]
				if a.Meta.Shape.Size() != b.Meta.Shape.Size() {
					return nil, fmt.Errorf("%s and %s share a buffer at the bounds but differ in size at sizes %v", name(ms[0]), name(m), samples[k].Sizes)
				}
			}
		}
	}
	// Headers.
	rebound := map[*tensor.Tensor]bool{}
	for _, in := range p.inputs {
		rebound[in] = true
	}
	for _, vw := range p.views {
		rebound[vw.dst] = true
	}
	seen := map[*tensor.Tensor]bool{}
	addHead := func(h *tensor.Tensor, forms []form, v *graph.Value) error {
		if seen[h] {
			return nil
		}
		seen[h] = true
		dh := dynHead{h: h, dims: forms}
		if !rebound[h] {
			if v.Kind != graph.KindOp && v.Kind != graph.KindProj {
				return fmt.Errorf("%s has a dynamic shape but a fixed buffer", name(v))
			}
			dh.full = h.Data()
		}
		d.heads = append(d.heads, dh)
		return nil
	}
	for _, v := range g.Values {
		if !dynVal[v.ID] || v.IsMulti() || an.consts[v.ID] != nil {
			continue
		}
		h := p.hdr[v.ID]
		if h == nil {
			return nil, fmt.Errorf("%s has no header", name(v))
		}
		if err := addHead(h, shapes[v.ID][0], v); err != nil {
			return nil, err
		}
	}
	// Constants whose values follow the sizes get headers of their own,
	// pointed at each size's values; nothing may view them (a view would
	// keep reading the bounds' values).
	type constHead struct {
		v   *graph.Value
		old *tensor.Tensor
	}
	var consts []constHead
	for _, v := range g.Values {
		if an.consts[v.ID] == nil {
			continue
		}
		for _, u := range g.Values {
			for _, a := range u.Args {
				if a == v && u.Kind == graph.KindOp && u.Prim.Traits.View {
					return nil, fmt.Errorf("%s views %s, a constant that depends on the dynamic sizes", name(u), name(v))
				}
			}
		}
		consts = append(consts, constHead{v: v, old: p.hdr[v.ID]})
	}
	for i := range p.steps {
		s := &p.steps[i]
		for _, k := range s.spare {
			if dynFormsAny(shapes[s.v.ID][k]) {
				if err := addHead(s.outs[k], shapes[s.v.ID][k], s.v); err != nil {
					return nil, err
				}
			}
		}
		if len(s.v.Regions) > 0 {
			continue
		}
		if sites := an.sites[s.v.ID]; len(sites) > 0 {
			d.steps = append(d.steps, dynStep{s: s, root: addressable(reflect.ValueOf(&s.v.Attrs).Elem()), sites: sites})
		}
	}
	// Nothing has failed: the constants' own headers replace the shared
	// ones in the steps and results (kept in p.hdr, so that a later
	// MakeDynamic finds them).
	for _, c := range consts {
		h := p.hdr[c.v.ID]
		if h == c.v.Tensor {
			h = core.NewOf(c.v.Meta)
			core.Copy(h, c.v.Tensor)
			p.hdr[c.v.ID] = h
			for i := range p.steps {
				s := &p.steps[i]
				for k, in := range s.in {
					if in == c.old {
						s.in[k] = h
					}
				}
			}
			for i, o := range p.outputs {
				if o == c.old {
					p.outputs[i] = h
					p.outCopy[i].in[0] = h
				}
			}
			for _, a := range p.assigns {
				if a.val.in[0] == c.old {
					a.val.in[0] = h
				}
			}
		}
		d.heads = append(d.heads, dynHead{h: h, dims: shapes[c.v.ID][0], vals: an.consts[c.v.ID], dt: c.v.Meta.DType})
	}
	return d, nil
}

func dynFormsAny(fs []form) bool {
	for _, f := range fs {
		if !f.constant() {
			return true
		}
	}
	return false
}

// name names a value in errors: its ID, op and the user's line.
func name(v *graph.Value) string {
	s := fmt.Sprintf("%%%d", v.ID)
	switch {
	case v.Kind == graph.KindOp:
		s += " = " + v.Prim.Name
	default:
		s += " (" + v.Kind.String() + ")"
	}
	if v.Loc != "" {
		s += " at " + v.Loc
	}
	return s
}

// sameStructure checks that a value is the same node in every sample.
func sameStructure(vs []*graph.Value, samples []Sample) error {
	v := vs[0]
	for k, w := range vs[1:] {
		ok := w.Kind == v.Kind && samePrim(v.Prim, w.Prim) && len(w.Args) == len(v.Args) && w.Index == v.Index &&
			w.IsMulti() == v.IsMulti() && len(w.Metas) == len(v.Metas) && len(w.Regions) == len(v.Regions)
		if ok && v.Kind == graph.KindParam {
			ok = w.Tensor == v.Tensor
		}
		for a := range v.Args {
			ok = ok && w.Args[a].ID == v.Args[a].ID
		}
		if !ok {
			return fmt.Errorf("%w: the graph traced at sizes %v differs from the bounds' at %s (there %s)", ErrStructure, samples[k].Sizes, name(v), name(w))
		}
	}
	return nil
}

// samePrim reports whether two primitives are the same, or are two
// copies of one made by two compilations (a fused op's, which compile
// makes per graph): every field equal, every function the same closure.
func samePrim(a, b *core.Prim) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil || a.Name != b.Name {
		return false
	}
	df := &differ{f: &fitter{}}
	err := df.walk([]reflect.Value{reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()}, nil, 0)
	return err == nil && len(df.sites) == 0
}

// sameConst checks that a constant is the same in every sample.
func sameConst(vs []*graph.Value, samples []Sample) error {
	v := vs[0]
	for k, w := range vs[1:] {
		a, b := v.Tensor, w.Tensor
		if a == b {
			continue
		}
		if a.DType() != b.DType() || !a.Shape().Equal(b.Shape()) || !sameBits(reflect.ValueOf(a.Data()), reflect.ValueOf(b.Data())) {
			return fmt.Errorf("constant %s is %v%v at the bounds and %v%v at sizes %v, or differs in its contents: it depends on the dynamic sizes",
				name(v), a.DType(), a.Shape(), b.DType(), b.Shape(), samples[k].Sizes)
		}
	}
	return nil
}

// maxConstElems bounds the constants whose elements are fitted to the
// sizes one by one: a divisor, a shape tensor; not data.
const maxConstElems = 64

// maxUniformElems bounds a constant filled with one size-dependent value
// that a dynamic plan keeps a copy of per size.
const maxUniformElems = 1 << 16

// constFit is how a constant's values follow the sizes: element by
// element (a small constant of one shape), or one value filling a
// constant of any shape (a mean's gradient, 1/n broadcast to the batch's
// shape). Each value is an integer affine in the sizes or, with recip, a
// float32 1/k for such an integer k, as float32 division computes it.
type constFit struct {
	elems   []form
	uniform bool
	recip   bool
}

// fitConst fits a constant's values at every size (see constFit).
func fitConst(vs []*graph.Value, f *fitter) (*constFit, error) {
	a := vs[0].Tensor
	cols := make([][]float64, len(vs))
	uniform := true
	for k, w := range vs {
		b := w.Tensor
		if b.DType() != a.DType() {
			return nil, fmt.Errorf("its dtype changes")
		}
		switch b.DType() {
		case tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64:
		default:
			return nil, fmt.Errorf("a %v constant", b.DType())
		}
		cols[k] = b.Float64s()
		for _, x := range cols[k] {
			uniform = uniform && len(cols[k]) > 0 && math.Float64bits(x) == math.Float64bits(cols[k][0])
		}
	}
	cf := &constFit{uniform: uniform}
	n := a.Shape().Size()
	if uniform {
		if n > maxUniformElems {
			return nil, fmt.Errorf("%d elements at the bounds: too many to keep one per size", n)
		}
		n = 1
	} else {
		for _, w := range vs {
			if !w.Tensor.Shape().Equal(a.Shape()) {
				return nil, fmt.Errorf("its shape changes and its elements differ")
			}
		}
		if n > maxConstElems {
			return nil, fmt.Errorf("%d elements: too many to fit", n)
		}
	}
	limit := float64(1 << 53)
	if a.DType() == tensor.Float32 {
		limit = 1 << 24
	}
	xs := make([]int, len(vs))
	integral := func(e int, recip bool) error {
		for k := range vs {
			x := cols[k][e]
			if recip {
				r := math.Round(1 / x)
				if x == 0 || math.Abs(r) > limit || float32(1)/float32(r) != float32(x) {
					return fmt.Errorf("element %d is %v, neither an integer nor the reciprocal of one", e, x)
				}
				x = r
			}
			if x != math.Trunc(x) || math.Abs(x) > limit {
				return fmt.Errorf("element %d is %v, not an integer", e, x)
			}
			xs[k] = int(x)
		}
		return nil
	}
	for e := range n {
		err := integral(e, false)
		if err != nil && uniform && a.DType() == tensor.Float32 {
			if integral(e, true) == nil {
				cf.recip, err = true, nil
			}
		}
		if err != nil {
			return nil, err
		}
		fm, err := f.fit(xs)
		if err != nil {
			return nil, fmt.Errorf("element %d: %w", e, err)
		}
		cf.elems = append(cf.elems, fm)
	}
	return cf, nil
}

// at returns the constant, of dtype dt and shape s, at sizes x.
func (cf *constFit) at(dt tensor.DType, s tensor.Shape, x *[MaxDynamicVars]int) *tensor.Tensor {
	t := core.NewOf(tensor.Meta{Shape: s, DType: dt})
	n := s.Size()
	val := func(e int) float64 {
		if cf.uniform {
			e = 0
		}
		v := float64(cf.elems[e].eval(x))
		if cf.recip {
			return float64(float32(1) / float32(v))
		}
		return v
	}
	switch d := t.Data().(type) {
	case []float32:
		for e := range n {
			d[e] = float32(val(e))
		}
	case []float64:
		for e := range n {
			d[e] = val(e)
		}
	case []int32:
		for e := range n {
			d[e] = int32(val(e))
		}
	case []int64:
		for e := range n {
			d[e] = int64(val(e))
		}
	}
	return t
}

// sameBits reports whether two slices of one element type hold the same
// bytes.
func sameBits(a, b reflect.Value) bool {
	if a.Type() != b.Type() || a.Len() != b.Len() {
		return false
	}
	if a.Len() == 0 || a.UnsafePointer() == b.UnsafePointer() {
		return true
	}
	n := a.Len() * int(a.Type().Elem().Size())
	return string(unsafe.Slice((*byte)(a.UnsafePointer()), n)) == string(unsafe.Slice((*byte)(b.UnsafePointer()), n))
}

// pathStep is one step from an attribute value into a part of it.
type pathStep struct {
	kind uint8 // stepField, stepIndex, stepDeref, stepElem
	i    int
}

const (
	stepField = iota
	stepIndex
	stepDeref
	stepElem
)

// site is an integer inside an op's attributes that depends on the sizes.
type site struct {
	path []pathStep
	f    form
}

// differ walks one op's attributes at the bounds and at every sample in
// step, collecting the integers that differ.
type differ struct {
	f     *fitter
	sites []site
}

// addressable returns v itself when it is addressable and settable, or a
// settable copy: values read from unexported fields are made settable by
// address, so that the attributes' private parts can be compared and
// rebuilt like the public ones.
func addressable(v reflect.Value) reflect.Value {
	if v.CanAddr() {
		return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
	}
	c := reflect.New(v.Type()).Elem()
	c.Set(v)
	return c
}

func pathString(path []pathStep) string {
	var b strings.Builder
	for _, s := range path {
		switch s.kind {
		case stepField:
			fmt.Fprintf(&b, ".field%d", s.i)
		case stepIndex:
			fmt.Fprintf(&b, "[%d]", s.i)
		case stepDeref:
			b.WriteString("*")
		}
	}
	if b.Len() == 0 {
		return "(the attributes themselves)"
	}
	return b.String()
}

const maxAttrDepth = 24

func (df *differ) walk(vs []reflect.Value, path []pathStep, depth int) error {
	if depth > maxAttrDepth {
		return fmt.Errorf("nested deeper than %d at %s", maxAttrDepth, pathString(path))
	}
	v := vs[0]
	for _, w := range vs[1:] {
		if w.Type() != v.Type() {
			return fmt.Errorf("%s is a %v at the bounds and a %v at other sizes", pathString(path), v.Type(), w.Type())
		}
	}
	differs := func(what string) error {
		return fmt.Errorf("%s %s depends on the dynamic sizes (%v at the bounds, %v at sizes %v)", what, pathString(path), v, vs[len(vs)-1], df.f.at[len(vs)-2][:df.f.nvars])
	}
	with := func(s pathStep) []pathStep { return append(append([]pathStep(nil), path...), s) }
	switch v.Kind() {
	case reflect.Bool:
		for _, w := range vs[1:] {
			if w.Bool() != v.Bool() {
				return differs("boolean")
			}
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		xs := make([]int, len(vs))
		same := true
		for k, w := range vs {
			xs[k] = int(w.Int())
			same = same && xs[k] == xs[0]
		}
		if same {
			return nil
		}
		fm, err := df.f.fit(xs)
		if err != nil {
			return fmt.Errorf("integer %s: %w", pathString(path), err)
		}
		df.sites = append(df.sites, site{path: append([]pathStep(nil), path...), f: fm})
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		for _, w := range vs[1:] {
			if w.Uint() != v.Uint() {
				return differs("unsigned integer")
			}
		}
	case reflect.Float32, reflect.Float64:
		for _, w := range vs[1:] {
			if math.Float64bits(w.Float()) != math.Float64bits(v.Float()) {
				return differs("float")
			}
		}
	case reflect.Complex64, reflect.Complex128:
		for _, w := range vs[1:] {
			if w.Complex() != v.Complex() {
				return differs("complex")
			}
		}
	case reflect.String:
		for _, w := range vs[1:] {
			if w.String() != v.String() {
				return differs("string")
			}
		}
	case reflect.Pointer:
		same := true
		for _, w := range vs[1:] {
			same = same && w.UnsafePointer() == v.UnsafePointer()
		}
		if same {
			return nil
		}
		next := make([]reflect.Value, len(vs))
		for k, w := range vs {
			if w.IsNil() {
				return fmt.Errorf("pointer %s is nil at some sizes only", pathString(path))
			}
			next[k] = w.Elem()
		}
		return df.walk(next, with(pathStep{kind: stepDeref}), depth+1)
	case reflect.Interface:
		next := make([]reflect.Value, len(vs))
		for k, w := range vs {
			if w.IsNil() != v.IsNil() {
				return fmt.Errorf("%s is nil at some sizes only", pathString(path))
			}
			if !w.IsNil() {
				next[k] = addressable(w.Elem())
			}
		}
		if v.IsNil() {
			return nil
		}
		return df.walk(next, with(pathStep{kind: stepElem}), depth+1)
	case reflect.Struct:
		for i := range v.NumField() {
			next := make([]reflect.Value, len(vs))
			for k, w := range vs {
				next[k] = addressable(w.Field(i))
			}
			if err := df.walk(next, with(pathStep{kind: stepField, i: i}), depth+1); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		for _, w := range vs[1:] {
			if w.Len() != v.Len() {
				return fmt.Errorf("%s has %d elements at the bounds and %d at other sizes: it depends on the dynamic sizes", pathString(path), v.Len(), w.Len())
			}
			if v.Kind() == reflect.Slice && w.IsNil() != v.IsNil() {
				return fmt.Errorf("%s is nil at some sizes only", pathString(path))
			}
		}
		if v.Kind() == reflect.Slice {
			same := true
			for _, w := range vs[1:] {
				same = same && w.UnsafePointer() == v.UnsafePointer()
			}
			if same {
				return nil
			}
		}
		switch ek := v.Type().Elem().Kind(); {
		case v.Kind() == reflect.Slice && (ek == reflect.Float32 || ek == reflect.Float64 || ek == reflect.Uint8 || ek == reflect.Uint16 || ek == reflect.Bool || v.Len() > 4096 && ek >= reflect.Int && ek <= reflect.Uint64):
			// Data (packed weights, tables): compared whole.
			for _, w := range vs[1:] {
				if !sameBits(v, w) {
					return fmt.Errorf("the contents of %s depend on the dynamic sizes", pathString(path))
				}
			}
			return nil
		}
		for i := range v.Len() {
			next := make([]reflect.Value, len(vs))
			for k, w := range vs {
				next[k] = addressable(w.Index(i))
			}
			if err := df.walk(next, with(pathStep{kind: stepIndex, i: i}), depth+1); err != nil {
				return err
			}
		}
	case reflect.Map:
		for _, w := range vs[1:] {
			if !reflect.DeepEqual(w.Interface(), v.Interface()) {
				return fmt.Errorf("map %s depends on the dynamic sizes", pathString(path))
			}
		}
	case reflect.Func:
		// Functions must have the same code at every size. What a closure
		// captures cannot be inspected: two closures of one code are taken
		// as the same. (A fused program's instruction bodies are such
		// closures, made afresh by each compilation; their constants also
		// appear in the program's printed operands, which are compared.)
		for _, w := range vs[1:] {
			if w.IsNil() != v.IsNil() || !v.IsNil() && w.Pointer() != v.Pointer() {
				return fmt.Errorf("function %s has other code at other sizes", pathString(path))
			}
		}
	default: // channels, unsafe pointers
		for _, w := range vs[1:] {
			if w.UnsafePointer() != v.UnsafePointer() {
				return differs(v.Kind().String())
			}
		}
	}
	return nil
}

// rebuild returns a copy of v (settable, of v's type) with the integers at
// sites, whose paths start at depth, set to their forms at x. Parts of v
// not on a site's path are shared, not copied. The attributes at the
// bounds that a dynamic plan copies from are never run themselves (every
// size, the bounds' included, runs a copy), so the scratch pools some
// attributes hold (freelist.List) are empty when copied, and each copy
// pools its own.
func rebuild(v reflect.Value, sites []site, depth int, x *[MaxDynamicVars]int) reflect.Value {
	if len(sites) == 1 && len(sites[0].path) == depth {
		n := reflect.New(v.Type()).Elem()
		n.SetInt(int64(sites[0].f.eval(x)))
		return n
	}
	switch v.Kind() {
	case reflect.Pointer:
		n := reflect.New(v.Type().Elem())
		n.Elem().Set(rebuild(addressable(v.Elem()), sites, depth+1, x))
		return n
	case reflect.Interface:
		n := reflect.New(v.Type()).Elem()
		n.Set(rebuild(addressable(v.Elem()), sites, depth+1, x))
		return n
	case reflect.Struct, reflect.Array, reflect.Slice:
		var c reflect.Value
		if v.Kind() == reflect.Slice {
			c = reflect.MakeSlice(v.Type(), v.Len(), v.Len())
			reflect.Copy(c, v)
		} else {
			c = reflect.New(v.Type()).Elem()
			c.Set(v)
		}
		for len(sites) > 0 {
			st := sites[0].path[depth]
			n := 1
			for n < len(sites) && sites[n].path[depth] == st {
				n++
			}
			var part reflect.Value
			if st.kind == stepField {
				part = addressable(c.Field(st.i))
			} else {
				part = addressable(c.Index(st.i))
			}
			part.Set(rebuild(part, sites[:n], depth+1, x))
			sites = sites[n:]
		}
		return c
	}
	panic(fmt.Sprintf("exec: no attribute rebuild through a %v", v.Kind()))
}

// bind checks args against the dynamic spec and readies the plan for
// their sizes: the caller holds p.mu.
func (d *dynamic) bind(p *Plan, args []*tensor.Tensor) {
	var key [MaxDynamicVars]int
	var set [MaxDynamicVars]bool
	for i, a := range args {
		slot := p.inputs[i]
		shape := a.Shape()
		if a.DType() != slot.DType() || len(shape) != len(d.dims[i]) {
			panic(core.Errorf("Jit", "argument %d of %s is %v %v, compiled for %v of rank %d", i, p.g.Name, shape, a.DType(), slot.DType(), len(d.dims[i])))
		}
		for dim, n := range shape {
			j := d.dims[i][dim]
			switch {
			case j < 0 && n != d.static[i][dim]:
				panic(core.Errorf("Jit", "argument %d of %s is %v: dimension %d must be %d", i, p.g.Name, shape, dim, d.static[i][dim]))
			case j < 0:
			case n < d.min[j] || n > d.bound[j]:
				panic(core.Errorf("Jit", "argument %d of %s is %v: dynamic dimension %d is %d, outside %d..%d", i, p.g.Name, shape, dim, n, d.min[j], d.bound[j]))
			case set[j] && key[j] != n:
				panic(core.Errorf("Jit", "argument %d of %s is %v: dynamic dimension %d is %d, but %d in an earlier argument", i, p.g.Name, shape, dim, n, key[j]))
			default:
				key[j], set[j] = n, true
			}
		}
	}
	for j := range d.nvars {
		if !set[j] {
			key[j] = d.bound[j]
		}
	}
	if d.cur == nil || key != d.key {
		sz := d.sizes[key]
		if sz == nil {
			if len(d.sizes) >= maxSizes {
				clear(d.sizes)
			}
			sz = d.build(&key)
			d.sizes[key] = sz
		}
		d.apply(sz)
		d.cur, d.key = sz, key
	}
	for i, a := range args {
		core.Rebind(p.inputs[i], a)
	}
}

// build makes the headers' shapes and buffers and the steps' attributes
// at sizes x.
func (d *dynamic) build(x *[MaxDynamicVars]int) *sized {
	sz := &sized{shapes: make([]tensor.Shape, len(d.heads)), bufs: make([]any, len(d.heads)), attrs: make([]any, len(d.steps))}
	for i, h := range d.heads {
		s := make(tensor.Shape, len(h.dims))
		for k, f := range h.dims {
			s[k] = f.eval(x)
		}
		sz.shapes[i] = s
		switch {
		case h.vals != nil:
			sz.bufs[i] = h.vals.at(h.dt, s, x).Data()
		case h.full != nil:
			sz.bufs[i] = sub(h.full, 0, s.Size())
		}
	}
	for i, s := range d.steps {
		sz.attrs[i] = rebuild(s.root, s.sites, 0, x).Interface()
	}
	return sz
}

// apply points the headers and steps at one size's state.
func (d *dynamic) apply(sz *sized) {
	for i, h := range d.heads {
		if sz.bufs[i] != nil {
			core.Repoint(h.h, sz.bufs[i], sz.shapes[i])
		} else {
			core.SetShape(h.h, sz.shapes[i])
		}
	}
	for i, s := range d.steps {
		s.s.attrs = sz.attrs[i]
	}
}
