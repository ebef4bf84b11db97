package exec

import (
	"fmt"
	"sort"
	"sync"

	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// Plan is a compiled graph: kernels resolved, every intermediate given a
// fixed place in an arena laid out from value lifetimes, and tensor headers
// built once. Running it allocates nothing but the results it returns
// (RunInto allocates nothing at all).
type Plan struct {
	g       *graph.Graph
	steps   []step
	inputs  []*tensor.Tensor // argument slots, rebound on each call
	views   []view           // views of arguments, rebound after them
	outputs []*tensor.Tensor
	outCopy []copier // one per output, into the caller's tensor
	assigns []assign
	// written lists the parameters the plan assigns; their versions
	// (core.ParamVersion) advance after every run, so that plans holding
	// packed copies of them repack.
	written []*tensor.Tensor
	// ArenaBytes is the size of the intermediate-value arena.
	ArenaBytes int
	// Buffers is the number of intermediate values the arena holds, and
	// Reused how many of them share memory with an earlier value (liveness
	// reuse and in-place updates).
	Buffers, Reused int
	// InPlaceAssigns counts parameter updates computed straight into the
	// parameter's buffer (no copy at the end of the run).
	InPlaceAssigns int
	// PlacedArgs counts the arguments of packing ops (a Concat along an
	// outer axis, core.Prim.PacksArgs) computed straight into their slice
	// of the result's buffer, and NoOpPacks the packing ops left with
	// nothing to move (every argument placed), which run no step.
	PlacedArgs, NoOpPacks int
	mu                    sync.Mutex
	// hdr is every value's tensor header, by value ID, and members the
	// values sharing each arena buffer, kept for MakeDynamic.
	hdr     []*tensor.Tensor
	members [][]*graph.Value
	// dyn, when set by MakeDynamic, serves every size of the plan's
	// dynamic dimensions up to their bounds.
	dyn *dynamic
	// prof is the profile recording this plan's runs (profile.go); p.mu.
	prof *PlanProfile
}

type step struct {
	prim *core.Prim
	// kernel (kernelN for a multi-result op) is the prim's kernel for the
	// step's dtype on the CPU, looked up once when the plan is compiled, so
	// that a run neither searches the table nor switches on a dtype.
	kernel  core.KernelFunc
	kernelN core.KernelNFunc
	attrs   any
	in      []*tensor.Tensor
	out     *tensor.Tensor
	outs    []*tensor.Tensor // multi-result ops
	loc     string           // the user's line that applied the op, if known
	v       *graph.Value     // the value the step computes
	// spare lists the results of a multi-result op that no value reads,
	// with their positions (headers the plan made for them).
	spare []int
	subs  []*SubPlan // the control-flow bodies the step runs, for profiles
}

type view struct{ dst, src *tensor.Tensor }

type assign struct {
	param *tensor.Tensor
	val   copier // copies the value into param
}

// copier copies one tensor into another of its dtype with Identity's
// kernel for that dtype, looked up when the plan is compiled, and its
// operand list built then: a run neither switches on the dtype nor
// allocates to move results and parameter updates.
type copier struct {
	k  core.KernelFunc
	in []*tensor.Tensor // the source alone
}

func newCopier(src *tensor.Tensor) (copier, error) {
	k, err := core.IdentityPrim().KernelFor(src.DType(), core.CPU)
	if err != nil {
		return copier{}, fmt.Errorf("exec: copying a %v result: %w", src.DType(), err)
	}
	return copier{k: k, in: []*tensor.Tensor{src}}, nil
}

// into copies the source into dst, which has its shape and dtype.
func (c copier) into(dst *tensor.Tensor) { c.k(nil, c.in, dst) }

// storage is one buffer: an argument's, a parameter's, a constant's, or a
// slot of the arena shared by the values that alias it (views, in-place
// results).
type storage struct {
	kind   graph.Kind // KindOp for arena storage
	dtype  tensor.DType
	size   int
	first  int // position of the defining step
	last   int // position of the last use of any member
	offset int // element offset in the dtype's slab
	reused bool
	// forever marks storage that must survive the run (outputs, assigned
	// values): it is never given to another value.
	forever bool
}

// Compile builds the execution plan of g.
func Compile(g *graph.Graph) (*Plan, error) { return compile(g, options{}) }

// options are the choices of one compilation.
type options struct {
	// keepPacks leaves the arguments of PacksArgs ops (Concat) in buffers
	// of their own: a dynamic plan points each value at a prefix of its
	// buffer, which a slice at a fixed offset in a larger one is not.
	keepPacks bool
}

func compile(g *graph.Graph, opt options) (*Plan, error) {
	if err := graph.Verify(g); err != nil {
		return nil, err
	}
	g.Renumber()
	n := len(g.Values)
	pos := make([]int, n) // step position of each value's definition
	lastUse := make([]int, n)
	const end = 1 << 30
	for i, v := range g.Values {
		pos[v.ID] = i
		lastUse[v.ID] = i
	}
	for i, v := range g.Values {
		for _, a := range v.Args {
			lastUse[a.ID] = max(lastUse[a.ID], i)
		}
	}
	for _, o := range g.Outputs {
		lastUse[o.ID] = end
	}
	for _, a := range g.Assigns {
		lastUse[a.Val.ID] = end
	}

	assigned := map[*graph.Value]bool{}
	for _, a := range g.Assigns {
		assigned[a.Val] = true
	}
	st := make([]*storage, n)
	// off is each value's element offset within its storage: non-zero
	// only for the results of an op that unpacks its argument in place
	// (Traits.ResultsInArg) and views of them.
	off := make([]int, n)
	members := map[*storage][]*graph.Value{}
	placed, noOps := 0, map[*graph.Value]bool{}
	live := func(s *storage) int {
		l := 0
		for _, m := range members[s] {
			l = max(l, lastUse[m.ID])
		}
		return l
	}
	for i, v := range g.Values {
		var s *storage
		switch {
		case v.IsMulti():
			// No buffer of its own: its results (KindProj) have theirs.
			s = &storage{kind: graph.KindProj}
		case v.Kind == graph.KindProj && v.Args[0].Prim.Traits.ResultsInArg && st[v.Args[0].Args[0].ID].kind == graph.KindOp:
			op := v.Args[0]
			s = st[op.Args[0].ID]
			off[v.ID] = off[op.Args[0].ID]
			for _, m := range op.Metas[:v.Index] {
				off[v.ID] += m.Shape.Size()
			}
		case v.Kind == graph.KindProj:
			s = &storage{kind: graph.KindOp, dtype: v.Meta.DType, size: v.Meta.Shape.Size(), first: pos[v.Args[0].ID]}
		case v.Kind != graph.KindOp:
			s = &storage{kind: v.Kind, dtype: v.Meta.DType, size: v.Meta.Shape.Size(), first: i}
		case v.Prim.Traits.View && len(v.Args) == 1 && v.Args[0].Meta.DType == v.Meta.DType:
			s = st[v.Args[0].ID]
			off[v.ID] = off[v.Args[0].ID]
		case v.Prim.Traits.Elementwise && !assigned[v]:
			// In place: an argument whose buffer dies here, of the same
			// size and type, takes the result. (A value assigned to a
			// parameter is left its own buffer: assignInPlace may move it
			// into the parameter's, which saves more.)
			for _, a := range v.Args {
				as := st[a.ID]
				if as.kind == graph.KindOp && as.dtype == v.Meta.DType && as.size == v.Meta.Shape.Size() && off[a.ID] == 0 && live(as) == i {
					s = as
					s.reused = true
					break
				}
			}
		}
		if s == nil {
			s = &storage{kind: graph.KindOp, dtype: v.Meta.DType, size: v.Meta.Shape.Size(), first: i}
		}
		st[v.ID] = s
		members[s] = append(members[s], v)
		if v.Kind == graph.KindOp && v.Prim.Traits.ArgsInResult && s.kind == graph.KindOp && off[v.ID] == 0 {
			packInPlace(v, s, st, off, members, func(as *storage) bool { return live(as) == i })
		}
		if v.Kind == graph.KindOp && !v.IsMulti() && v.Prim.PacksArgs != nil && !opt.keepPacks && s.kind == graph.KindOp && off[v.ID] == 0 && len(members[s]) == 1 && v.Prim.PacksArgs(v.Attrs, argMetas(v)) {
			// A Concat along an outer axis: its producers write their
			// slices of its buffer. An argument read after it keeps a
			// buffer of its own (lastHere). Placing it would still be
			// correct, the shared buffer's liveness covering the later
			// read, but the Concat's whole buffer would then stay live,
			// and refuse in-place updates, until that reader runs.
			n := packInPlace(v, s, st, off, members, func(as *storage) bool { return live(as) == i })
			placed += n
			if n == len(v.Args) {
				noOps[v] = true
			}
		}
	}
	inPlace := assignInPlace(g, st, members, lastUse, pos)
	var arena []*storage
	p := &Plan{g: g, InPlaceAssigns: len(inPlace), PlacedArgs: placed, NoOpPacks: len(noOps)}
	seen := map[*storage]bool{}
	for _, v := range g.Values {
		s := st[v.ID]
		if seen[s] {
			continue
		}
		seen[s] = true
		s.last = live(s)
		s.forever = s.last >= end
		if s.kind == graph.KindOp {
			arena = append(arena, s)
			p.Buffers++
			if s.reused {
				p.Reused++
			}
		}
	}
	slabs := layout(arena)
	for dt, size := range slabs.sizes {
		p.ArenaBytes += size * dt.Size()
	}

	// Tensor headers for every value.
	hdr := make([]*tensor.Tensor, n)
	p.inputs = make([]*tensor.Tensor, len(g.Inputs))
	for _, v := range g.Values {
		s := st[v.ID]
		switch {
		case v.Kind == graph.KindInput:
			h := tensor.New(v.Meta.DType, v.Meta.Shape...)
			p.inputs[v.Index] = h // by argument position, wherever Values has it
			hdr[v.ID] = h
		case v.Kind == graph.KindParam || v.Kind == graph.KindConst:
			hdr[v.ID] = v.Tensor
		case v.IsMulti():
			// Results are headed by their projections.
		case s.kind == graph.KindOp:
			hdr[v.ID] = core.FromBuffer(sub(slabs.slice(s), off[v.ID], v.Meta.Shape.Size()), v.Meta.Shape.Clone())
		default:
			// A view of an argument, parameter or constant.
			src := hdr[members[s][0].ID]
			h := tensor.New(v.Meta.DType, v.Meta.Shape...)
			if s.kind == graph.KindInput {
				p.views = append(p.views, view{dst: h, src: src})
			} else {
				core.Rebind(h, src)
			}
			hdr[v.ID] = h
		}
	}
	projs := map[*graph.Value][]*tensor.Tensor{}
	for _, v := range g.Values {
		if v.Kind == graph.KindProj {
			op := v.Args[0]
			if projs[op] == nil {
				projs[op] = make([]*tensor.Tensor, len(op.Metas))
			}
			projs[op][v.Index] = hdr[v.ID]
		}
	}
	for _, v := range g.Values {
		if v.Kind != graph.KindOp {
			continue
		}
		if !v.IsMulti() && len(v.Args) > 0 && st[v.ID] == st[v.Args[0].ID] && v.Prim.Traits.View {
			continue // the alias is the result: nothing to run
		}
		if noOps[v] {
			continue // every argument was computed in place: nothing to move
		}
		in := make([]*tensor.Tensor, len(v.Args))
		for i, a := range v.Args {
			in[i] = hdr[a.ID]
		}
		attrs, subs, err := bindRegions(v, opt)
		if err != nil {
			return nil, err
		}
		if v.IsMulti() {
			outs := projs[v]
			var spare []int
			for k, o := range outs {
				if o == nil { // an unused result still needs somewhere to go
					outs[k] = core.NewOf(v.Metas[k])
					spare = append(spare, k)
				}
			}
			var dt tensor.DType
			if len(v.Metas) > 0 {
				dt = v.Metas[0].DType
			}
			k, err := v.Prim.KernelNFor(core.KernelDType(in, dt), core.CPU)
			if err != nil {
				return nil, kernelError(v, err)
			}
			p.steps = append(p.steps, step{prim: v.Prim, kernelN: k, attrs: attrs, in: in, outs: outs, loc: v.Loc, v: v, spare: spare, subs: subs})
			continue
		}
		k, err := v.Prim.KernelForKey(v.Prim.KeyFor(in, v.Meta.DType), core.CPU)
		if err != nil {
			return nil, kernelError(v, err)
		}
		p.steps = append(p.steps, step{prim: v.Prim, kernel: k, attrs: attrs, in: in, out: hdr[v.ID], loc: v.Loc, v: v, subs: subs})
	}
	for _, o := range g.Outputs {
		c, err := newCopier(hdr[o.ID])
		if err != nil {
			return nil, err
		}
		p.outputs = append(p.outputs, hdr[o.ID])
		p.outCopy = append(p.outCopy, c)
	}
	for _, a := range g.Assigns {
		if a.Val != a.Param {
			p.written = append(p.written, a.Param.Tensor)
		}
		if a.Val == a.Param || inPlace[a.Val] {
			continue
		}
		c, err := newCopier(hdr[a.Val.ID])
		if err != nil {
			return nil, err
		}
		p.assigns = append(p.assigns, assign{param: a.Param.Tensor, val: c})
	}
	p.hdr = hdr
	for _, v := range g.Values {
		if s := st[v.ID]; s.kind == graph.KindOp && len(members[s]) > 1 && members[s][0] == v {
			p.members = append(p.members, members[s])
		}
	}
	return p, nil
}

// SubPlan is a region of a control-flow value, planned: the body's own
// plan and how its inputs bind to the op's arguments (graph.Region).
type SubPlan struct {
	Plan *Plan
	// Binds[i] is the position among the op's inputs that the body's
	// input i reads; the first Lead are fed by the op itself.
	Binds []int
	Lead  int
}

// RegionBinder is implemented by the attributes of a control-flow
// primitive. Compile plans every region of such an op into a SubPlan, once,
// and hands them to BindRegions, whose result is the attributes the op's
// kernel receives in this plan: the kernel runs the sub-plans, and any
// scratch it needs (carry buffers, input lists) is allocated there, at
// compile time, so running the plan allocates nothing.
type RegionBinder interface {
	BindRegions(subs []*SubPlan) any
}

// bindRegions plans v's regions and returns the attributes its step runs
// with (v.Attrs itself when v has none) and the sub-plans.
func bindRegions(v *graph.Value, opt options) (any, []*SubPlan, error) {
	if len(v.Regions) == 0 {
		return v.Attrs, nil, nil
	}
	b, ok := v.Attrs.(RegionBinder)
	if !ok {
		return nil, nil, fmt.Errorf("exec: %%%d = %s has regions but its attributes (%T) cannot run them", v.ID, v.Prim.Name, v.Attrs)
	}
	subs := make([]*SubPlan, len(v.Regions))
	for k, r := range v.Regions {
		sp, err := compile(r.Graph, opt)
		if err != nil {
			return nil, nil, fmt.Errorf("region %d of %%%d = %s: %w", k, v.ID, v.Prim.Name, err)
		}
		subs[k] = &SubPlan{Plan: sp, Binds: append([]int(nil), r.Binds...), Lead: r.Lead}
	}
	return b.BindRegions(subs), subs, nil
}

// kernelError is the compile-time error for an op without a kernel for
// its dtype: err (from KernelFor) names the op, the dtype and the
// backend; the value and the user's line that applied the op are added
// (callers such as Jit name the function being compiled).
func kernelError(v *graph.Value, err error) error {
	if v.Loc != "" {
		return fmt.Errorf("exec: %%%d: %w (applied at %s)", v.ID, err, v.Loc)
	}
	return fmt.Errorf("exec: %%%d: %w", v.ID, err)
}

// slabs holds one arena slab per dtype.
type slabs struct {
	sizes map[tensor.DType]int
	bufs  map[tensor.DType]any
}

func (s *slabs) slice(st *storage) any {
	switch b := s.bufs[st.dtype].(type) {
	case []float32:
		return b[st.offset : st.offset+st.size : st.offset+st.size]
	case []float64:
		return b[st.offset : st.offset+st.size : st.offset+st.size]
	case []int32:
		return b[st.offset : st.offset+st.size : st.offset+st.size]
	case []int64:
		return b[st.offset : st.offset+st.size : st.offset+st.size]
	case []bool:
		return b[st.offset : st.offset+st.size : st.offset+st.size]
	case []uint8:
		return b[st.offset : st.offset+st.size : st.offset+st.size]
	case []core.BF16:
		return b[st.offset : st.offset+st.size : st.offset+st.size]
	case []core.F16:
		return b[st.offset : st.offset+st.size : st.offset+st.size]
	case []int8:
		return b[st.offset : st.offset+st.size : st.offset+st.size]
	case []int16:
		return b[st.offset : st.offset+st.size : st.offset+st.size]
	case []uint16:
		return b[st.offset : st.offset+st.size : st.offset+st.size]
	case []uint32:
		return b[st.offset : st.offset+st.size : st.offset+st.size]
	case []uint64:
		return b[st.offset : st.offset+st.size : st.offset+st.size]
	}
	panic(fmt.Sprintf("exec: no slab for %v", st.dtype))
}

// packInPlace moves the buffers of v's arguments into v's own storage s,
// each at its offset, for an op whose result is its arguments packed one
// after another (Traits.ArgsInResult): the ops that compute the arguments
// then write them where the result wants them, and the kernel finds them
// there. An argument moves with every value sharing its buffer (views),
// as long as that buffer is the arena's, holds that argument alone, and
// is last read by v (lastHere): the op may overwrite its result (an
// all-reduce does), which must then change no value read later. Other
// arguments stay where they are and are copied. It returns how many
// arguments it placed.
func packInPlace(v *graph.Value, s *storage, st []*storage, off []int, members map[*storage][]*graph.Value, lastHere func(*storage) bool) int {
	at, placed := 0, 0
	for _, a := range v.Args {
		as, n := st[a.ID], a.Meta.Shape.Size()
		if as != s && as.kind == graph.KindOp && as.dtype == s.dtype && as.size == n && off[a.ID] == 0 && !as.reused && lastHere(as) {
			for _, m := range members[as] {
				st[m.ID] = s
				off[m.ID] += at
			}
			members[s] = append(members[s], members[as]...)
			delete(members, as)
			s.first = min(s.first, as.first)
			placed++
		}
		at += n
	}
	return placed
}

// argMetas lists the shapes and dtypes of v's arguments.
func argMetas(v *graph.Value) []tensor.Meta {
	ms := make([]tensor.Meta, len(v.Args))
	for i, a := range v.Args {
		ms[i] = a.Meta
	}
	return ms
}

// sub returns elements [off, off+n) of buf, a slice of one dtype.
func sub(buf any, off, n int) any {
	switch b := buf.(type) {
	case []float32:
		return b[off : off+n : off+n]
	case []float64:
		return b[off : off+n : off+n]
	case []int32:
		return b[off : off+n : off+n]
	case []int64:
		return b[off : off+n : off+n]
	case []bool:
		return b[off : off+n : off+n]
	case []uint8:
		return b[off : off+n : off+n]
	case []core.BF16:
		return b[off : off+n : off+n]
	case []core.F16:
		return b[off : off+n : off+n]
	case []int8:
		return b[off : off+n : off+n]
	case []int16:
		return b[off : off+n : off+n]
	case []uint16:
		return b[off : off+n : off+n]
	case []uint32:
		return b[off : off+n : off+n]
	case []uint64:
		return b[off : off+n : off+n]
	}
	panic(fmt.Sprintf("exec: no slice of %T", buf))
}

// layout assigns arena offsets by a linear scan over the steps: a buffer
// is placed, best fit, in a gap freed by buffers whose last use has passed,
// so values with disjoint lifetimes share memory. Sizes are rounded up to
// 16 elements to keep every buffer 64-byte aligned relative to its slab.
func layout(arena []*storage) *slabs {
	type block struct{ off, size int }
	free := map[tensor.DType][]block{}
	top := map[tensor.DType]int{}
	sort.SliceStable(arena, func(i, j int) bool { return arena[i].first < arena[j].first })
	var active []*storage
	for _, s := range arena {
		// Release buffers whose lifetime ended before s is defined.
		kept := active[:0]
		for _, a := range active {
			if a.last < s.first && !a.forever {
				free[a.dtype] = append(free[a.dtype], block{a.offset, round16(a.size)})
			} else {
				kept = append(kept, a)
			}
		}
		active = kept
		need := round16(s.size)
		fl := free[s.dtype]
		best := -1
		for i, b := range fl {
			if b.size >= need && (best < 0 || b.size < fl[best].size) {
				best = i
			}
		}
		if best >= 0 {
			b := fl[best]
			s.offset = b.off
			if b.size > need {
				fl[best] = block{b.off + need, b.size - need}
			} else {
				fl = append(fl[:best], fl[best+1:]...)
			}
			free[s.dtype] = fl
		} else {
			s.offset = top[s.dtype]
			top[s.dtype] += need
		}
		active = append(active, s)
	}
	out := &slabs{sizes: top, bufs: map[tensor.DType]any{}}
	for dt, size := range top {
		out.bufs[dt] = tensor.New(dt, size).Data()
	}
	return out
}

func round16(n int) int { return (n + 15) &^ 15 }

// Graph returns the graph the plan was compiled from.
func (p *Plan) Graph() *graph.Graph { return p.g }

// NumSteps is the number of kernel launches per run.
func (p *Plan) NumSteps() int { return len(p.steps) }

func (p *Plan) run(args []*tensor.Tensor) {
	if len(args) != len(p.inputs) {
		panic(core.Errorf("Jit", "compiled %s takes %d tensors, got %d", p.g.Name, len(p.inputs), len(args)))
	}
	if p.dyn != nil {
		p.dyn.bind(p, args)
	} else {
		for i, a := range args {
			slot := p.inputs[i]
			if !a.Shape().Equal(slot.Shape()) || a.DType() != slot.DType() {
				panic(core.Errorf("Jit", "argument %d of %s is %v %v, compiled for %v %v", i, p.g.Name, a.Shape(), a.DType(), slot.Shape(), slot.DType()))
			}
			core.Rebind(slot, a)
		}
	}
	for _, v := range p.views {
		core.Rebind(v.dst, v.src)
	}
	i := 0
	defer p.locatePanic(&i)
	if r := recording.Load(); r != nil {
		p.runProfiled(r, &i) // leaves i past the steps it ran: all, or none once r stopped
	}
	for ; i < len(p.steps); i++ {
		s := &p.steps[i]
		if s.outs != nil {
			s.kernelN(s.attrs, s.in, s.outs)
			continue
		}
		s.kernel(s.attrs, s.in, s.out)
	}
	i = -1
	for _, a := range p.assigns {
		a.val.into(a.param)
	}
	p.touchWritten()
}

// touchWritten advances the versions of the parameters the plan assigns.
func (p *Plan) touchWritten() {
	for _, t := range p.written {
		core.TouchParam(t)
	}
}

// locatePanic, deferred by run, re-raises a panic of step *i (none when
// *i is out of range) located by locate.
func (p *Plan) locatePanic(i *int) {
	if r := recover(); r != nil {
		// Steps that update parameters in place may have run: count them
		// as written.
		p.touchWritten()
		if *i >= 0 && *i < len(p.steps) {
			locate(r, p.steps[*i].loc)
		}
		panic(r)
	}
}

// locate points an error a kernel raised (a bad index, an integer division
// by zero) at loc, the user's line that applied the op, which is what
// PyNative mode's error names: found at run time, it names the line that
// called the compiled function. An error that already names another line
// was located by a plan nested in this one (a control-flow body) and is
// left alone.
func locate(r any, loc string) {
	e, ok := r.(*core.Error)
	if !ok || loc == "" || e.Loc == loc {
		return
	}
	if e.Loc == "" || e.Loc == core.CallerLoc() {
		e.Loc = loc
	}
}

// Run executes the plan on args and returns fresh copies of the results.
// It is safe for concurrent use (runs are serialised: they share an arena).
func (p *Plan) Run(args []*tensor.Tensor) []*tensor.Tensor {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.run(args)
	outs := make([]*tensor.Tensor, len(p.outputs))
	for i, o := range p.outputs {
		outs[i] = core.NewOf(tensor.Meta{Shape: o.Shape().Clone(), DType: o.DType()})
		p.outCopy[i].into(outs[i])
	}
	return outs
}

// RunOne executes a plan with a single result and returns a fresh copy of
// it. The copy is its only allocation: it shares the result's shape, which
// is never changed (a dynamic plan swaps in another size's shape, never
// writes one), and args do not escape.
func (p *Plan) RunOne(args []*tensor.Tensor) *tensor.Tensor {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.outputs) != 1 {
		panic(core.Errorf("Jit", "compiled %s has %d results, not one", p.g.Name, len(p.outputs)))
	}
	p.run(args)
	out := core.NewOf(p.outputs[0].Meta())
	p.outCopy[0].into(out)
	return out
}

// RunInto executes the plan on args and copies the results into outs,
// which must match the results' shapes and dtypes. It allocates nothing.
func (p *Plan) RunInto(args, outs []*tensor.Tensor) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.run(args)
	for i, c := range p.outCopy {
		c.into(outs[i])
	}
}

// assignInPlace lets an elementwise op whose result is assigned to a
// parameter write straight into the parameter's buffer — the optimiser
// update p ← p − lr·g then costs one pass and no copy. It is safe when the
// result has a buffer of its own (not shared in place with earlier values,
// which would then overwrite the parameter early) and every other read of
// the parameter happens at or before that op: at the op itself the read
// and the write of each element coincide. It returns the values so placed.
func assignInPlace(g *graph.Graph, st []*storage, members map[*storage][]*graph.Value, lastUse, pos []int) map[*graph.Value]bool {
	done := map[*graph.Value]bool{}
	lastRead := map[*storage]int{} // a parameter's storage -> its last read
	for i, v := range g.Values {
		for _, a := range v.Args {
			if s := st[a.ID]; s.kind == graph.KindParam {
				lastRead[s] = max(lastRead[s], i)
			}
		}
	}
	for _, a := range g.Assigns {
		v, ps := a.Val, st[a.Param.ID]
		if v.Kind != graph.KindOp || v.IsMulti() || v.Meta.DType != a.Param.Meta.DType {
			continue
		}
		if acc := v.Prim.Traits.Accumulates; !v.Prim.Traits.Elementwise && (acc == 0 || acc > len(v.Args) || v.Args[acc-1] != a.Param) {
			continue
		}
		s := st[v.ID]
		if s.kind != graph.KindOp || len(members[s]) != 1 || s.size != ps.size || lastRead[ps] > pos[v.ID] {
			continue
		}
		delete(members, s)
		st[v.ID] = ps
		members[ps] = append(members[ps], v)
		done[v] = true
	}
	return done
}
