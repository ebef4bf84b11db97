package jit

import (
	"fmt"
	"os"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"time"
	"unsafe"
	"weak"

	"github.com/sporeml/spore/compile"
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/ad"
	"github.com/sporeml/spore/internal/amp"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// Config configures a compiled function, as MindSpore's JitConfig.
type Config struct {
	// Level is the optimisation level; the zero value takes the context's
	// JitLevel (O1 by default).
	Level Level
	// CacheSize bounds the number of input signatures kept compiled; 0
	// means 16. Past it, the least recently used plan is evicted with a
	// loud warning on standard error: a function that keeps seeing new
	// shapes recompiles on every call and should pad or bucket its inputs.
	CacheSize int
	// Disable runs the function eagerly, uncompiled, for debugging (the
	// context's DisableJit and SPORE_JIT=0 do the same globally).
	Disable bool
	// DisablePasses names optimisation passes to skip (see compile.Passes).
	DisablePasses []string
	// Name overrides the function's name in dumps and errors.
	Name string
	// ExplainRetrace prints to standard error why each retrace happened.
	ExplainRetrace bool
	// Inputs is the function's input signature, one InputSpec per tensor
	// argument (the flattened tensors, for functions of other types), with
	// -1 for a dynamic dimension: a call whose tensors fit it (same
	// dtypes, same static dimensions, each dynamic one from 1 to its
	// bound) runs the one plan compiled for the signature, on the first
	// such call or by Func.CompileSpec, and never compiles again. A call
	// that does not fit — a size above the bound, another static
	// dimension — falls back to the per-shape cache as without a signature
	// (Stats.Retraces says why), as does a call that is differentiated or
	// whose non-tensor arguments differ from those of the call that
	// compiled the signature (CompileSpec: functions of tensors only). A
	// function the signature cannot serve with one plan (its graph changes
	// with the size other than in affine integers: a float 1/n, ceil(n/2),
	// control flow over a dynamic dimension) also falls back, with the
	// reason in Stats.DynamicFallback and a warning on standard error.
	// Size 1 of a dynamic dimension runs the plan too unless the function
	// traces another graph there (other than by dropping a broadcast or a
	// reshape that is a no-op at 1) or refuses it: size 1 then has a
	// per-shape plan of its own, which CompileSpec compiles ahead too.
	// Stats.Compiles counts the signature once; Stats.SampleCompiles the
	// extra traces made to fit it.
	Inputs []InputSpec
	// Precision is the function's automatic mixed precision (amp.Level):
	// at O2 its matmuls and convolutions compute in bfloat16, at O3 every
	// op with a bfloat16 kernel does, and BFloat16 tensor results come
	// back Float32. Empty means O0, full Float32. Compiled or run eagerly
	// (Disable), the function computes the same.
	Precision amp.Level
}

// Add returns the sum of two functions' statistics (the latest compile
// time is the larger of the two): the statistics of a cell or a training
// step that keeps several compiled functions.
func (s Stats) Add(o Stats) Stats {
	s.Compiles += o.Compiles
	s.SampleCompiles += o.SampleCompiles
	if s.DynamicFallback == "" {
		s.DynamicFallback = o.DynamicFallback
	}
	s.Hits += o.Hits
	s.Evictions += o.Evictions
	s.CompileTime += o.CompileTime
	s.LastCompileTime = max(s.LastCompileTime, o.LastCompileTime)
	s.Retraces = keepRecent(append(append([]string(nil), s.Retraces...), o.Retraces...))
	return s
}

// MaxRetraces bounds Stats.Retraces: a function that sees a new signature
// on every call (a server's batch sizes, a caller's sequence lengths) keeps
// the reasons for its latest retraces only, not one string per call for
// as long as it lives.
const MaxRetraces = 32

// keepRecent returns the last MaxRetraces reasons of rs.
func keepRecent(rs []string) []string {
	if len(rs) <= MaxRetraces {
		return rs
	}
	return append([]string(nil), rs[len(rs)-MaxRetraces:]...)
}

// Stats are a compiled function's cache statistics.
type Stats struct {
	// Compiles counts traces+compilations; Hits counts calls served by a
	// cached plan; Evictions counts plans dropped because the cache was full.
	Compiles, Hits, Evictions int
	// CompileTime is the total time spent tracing, optimising and planning;
	// LastCompileTime is that of the most recent compilation.
	CompileTime, LastCompileTime time.Duration
	// SampleCompiles counts the extra traces and compilations, at a few
	// small sizes, that fit an input signature's plan to its dynamic
	// dimensions (Config.Inputs); Compiles counts the signature once, and
	// CompileTime includes them.
	SampleCompiles int
	// DynamicFallback says why the input signature could not be served by
	// one plan, and is empty when it is (or has none).
	DynamicFallback string
	// Retraces explains the compilations after the first, the most recent
	// MaxRetraces of them (Compiles-1 counts them all): which argument
	// changed, old versus new.
	Retraces []string
}

// Jit is spore.Jit, whose documentation is the reference: it compiles fn
// and returns a function of fn's type that runs the plan compiled for each
// input signature.
func Jit[F any](fn F, cfg ...Config) F {
	return New(fn, cfg...).Fn
}

// Func is a compiled function with its statistics; Jit returns its Fn.
type Func[F any] struct {
	// Fn is the compiled function, of the original type.
	Fn F
	st *jitState
}

// Stats returns the function's cache statistics.
func (j *Func[F]) Stats() Stats { return j.st.statsCopy() }

// Reset drops every compiled plan, so that the next call traces fn again
// and sees what changed outside its arguments since it was compiled: a
// parameter replaced by a new Parameter, a plain Go value it reads (see
// Jit). In-place changes to parameters need no Reset. Statistics are kept.
func (j *Func[F]) Reset() { j.st.reset() }

// Reset is Func.Reset for a function returned by Jit; it reports false if f
// did not come from Jit.
func Reset(f any) bool {
	st := registered(f)
	if st != nil {
		st.reset()
	}
	return st != nil
}

func (st *jitState) reset() {
	st.mu.Lock()
	st.entries = nil
	if st.dyn != nil {
		st.dyn = newDynState(st.name, st.cfg.Inputs)
	}
	st.mu.Unlock()
}

// RunInto runs the compiled function on tensor arguments, writing its
// tensor results into outs (which must have the results' shapes and
// dtypes). Once the signature is compiled it allocates nothing: it is the
// entry point for hot loops such as a training step. The function must
// take and return only tensors.
func (j *Func[F]) RunInto(args, outs []*Tensor) {
	st := j.st
	if st.flat == nil {
		panic(core.Errorf("RunInto", "%s does not take and return only tensors", st.name))
	}
	if e := st.ready(args); e != nil {
		e.res.Plan.RunInto(args, outs)
		return
	}
	// The general path keeps a copy, so that args stay on the caller's
	// stack on the path above.
	res := st.callTensors(append([]*Tensor(nil), args...))
	for i, r := range res {
		core.Copy(outs[i], r)
	}
}

// New is Jit returning the Func, for callers that want statistics
// without going through StatsOf.
func New[F any](fn F, cfg ...Config) *Func[F] {
	fv := reflect.ValueOf(fn)
	if fv.Kind() != reflect.Func || fv.IsNil() {
		panic(core.Errorf("Jit", "want a non-nil function, got %T", fn))
	}
	var c Config
	if len(cfg) > 0 {
		c = cfg[0]
	}
	if c.CacheSize <= 0 {
		c.CacheSize = 16
	}
	if err := c.Precision.Validate(); err != nil {
		panic(core.Errorf("Jit", "JitConfig.Precision: %v", err))
	}
	name := c.Name
	if name == "" {
		name = core.FuncName(fv)
	}
	if c.Precision != "" && c.Precision != amp.O0 {
		// The function itself runs under the level, on every path (traced,
		// inlined into an enclosing trace, or eager when disabled).
		fv = amp.Func(fv, c.Precision)
		fn = fv.Interface().(F)
	}
	st := &jitState{name: name, cfg: c, fv: fv}
	if c.Inputs != nil {
		st.dyn = newDynState(name, c.Inputs)
	}
	j := &Func[F]{st: st}
	j.Fn = makeTyped(fn, st)
	registerStats(j.Fn, st)
	return j
}

// StatsOf returns the statistics of a function returned by Jit, and false
// if f did not come from Jit.
func StatsOf(f any) (Stats, bool) {
	st := registered(f)
	if st == nil {
		return Stats{}, false
	}
	return st.statsCopy(), true
}

// registry finds the state of a function returned by Jit from the
// function alone (StatsOf, Reset). It maps the function's closure address
// to a weak pointer, so that it keeps nothing alive: a dropped function's
// state — its compiled plans, its statistics — is collected with it, and
// a cleanup then deletes its entry, so the map holds only live functions.
// (A process making Jit functions by the thousand, a server reloading
// models or an optimiser per training run, would otherwise keep them all.)
var registry sync.Map // uintptr -> weak.Pointer[jitState]

// registration is what the cleanup of one registered state needs: its key
// and its own weak pointer, so that it deletes only its own entry, not that
// of a newer function whose closure took the freed address.
type registration struct {
	key uintptr
	wp  weak.Pointer[jitState]
}

// funcKey identifies a func value by its closure pointer: two closures
// made by two Jit calls differ even when their code is the same.
func funcKey(f any) uintptr {
	v := reflect.ValueOf(f)
	if v.Kind() != reflect.Func {
		return 0
	}
	// A func value is a pointer to its closure record; an interface holds
	// that pointer itself as its data word. The record (not the code
	// pointer it starts with) is what differs between two closures.
	return uintptr((*[2]unsafe.Pointer)(unsafe.Pointer(&f))[1])
}

// registerStats makes st findable from f, for as long as st lives.
func registerStats(f any, st *jitState) {
	r := registration{key: funcKey(f), wp: weak.Make(st)}
	registry.Store(r.key, r.wp)
	runtime.AddCleanup(st, func(r registration) { registry.CompareAndDelete(r.key, r.wp) }, r)
}

// registered returns the live state registered for f, or nil.
func registered(f any) *jitState {
	v, ok := registry.Load(funcKey(f))
	if !ok {
		return nil
	}
	return v.(weak.Pointer[jitState]).Value()
}

// makeTyped builds the function of type F that dispatches to st. The
// common tensor-only signatures get closures that avoid reflection on the
// call path; the rest go through reflect.MakeFunc.
func makeTyped[F any](fn F, st *jitState) F {
	var out any
	switch f := any(fn).(type) {
	case func(*Tensor) *Tensor:
		st.flat = func(xs []*Tensor) []*Tensor { return []*Tensor{f(xs[0])} }
		out = func(x *Tensor) *Tensor { return st.call1([]*Tensor{x}) }
		st.single = true
	case func(*Tensor, *Tensor) *Tensor:
		st.flat = func(xs []*Tensor) []*Tensor { return []*Tensor{f(xs[0], xs[1])} }
		out = func(x, y *Tensor) *Tensor { return st.call1([]*Tensor{x, y}) }
		st.single = true
	case func(...*Tensor) *Tensor:
		st.flat = func(xs []*Tensor) []*Tensor { return []*Tensor{f(xs...)} }
		out = func(xs ...*Tensor) *Tensor { return st.call1(xs) }
		st.single = true
	case func(...*Tensor) []*Tensor:
		st.flat = func(xs []*Tensor) []*Tensor { return f(xs...) }
		out = func(xs ...*Tensor) []*Tensor { return st.callTensors(xs) }
	default:
		ft := st.fv.Type()
		out = reflect.MakeFunc(ft, st.callReflect).Interface()
	}
	return out.(F)
}

// jitState is the cache and statistics of one jitted function.
type jitState struct {
	name string
	cfg  Config
	fv   reflect.Value
	// flat, for the tensor-only fast paths, maps flat tensors to flat
	// results; single says the function returns one tensor.
	flat   func([]*Tensor) []*Tensor
	single bool

	mu      sync.Mutex
	entries []*entry // most recently used last
	// dyn is the input signature (Config.Inputs) and its one plan; nil
	// without one.
	dyn   *dynState
	stats Stats
	// warnedFull says the cache-full warning was printed: once per
	// function, not once per eviction, which under a stream of new shapes
	// would be once per call.
	warnedFull bool
}

// entry is one compiled signature.
type entry struct {
	metas   []tensor.Meta
	consts  string
	res     *compile.Result
	params  []*Tensor       // captured parameters, in graph order
	outTmpl []reflect.Value // results with tensor slots, for rebuilding (reflect path)
	nout    int
	fresh   bool       // the graph holds a Fresh op (a random draw, a print)
	call    *core.Prim // the tape node for differentiation (single result)
	derivMu sync.Mutex
	derivs  map[string]func(...*Tensor) []*Tensor // backward by trainable-parameter set, "jvp:" forward by tangent set
}

func (st *jitState) statsCopy() Stats {
	st.mu.Lock()
	defer st.mu.Unlock()
	s := st.stats
	s.Retraces = keepRecent(append([]string(nil), s.Retraces...))
	return s
}

func (st *jitState) disabled() bool { return st.cfg.Disable || GetContext().DisableJit }

// call1 runs a single-result tensor function. Once its signature is
// compiled, and when nothing is traced or differentiated, it allocates only
// the result: xs does not escape (callers build it on their stack), and
// the slow path, which may keep it, gets a copy.
func (st *jitState) call1(xs []*Tensor) *Tensor {
	if e := st.hot(xs); e != nil {
		return e.res.Plan.RunOne(xs)
	}
	return st.callTensors(append([]*Tensor(nil), xs...))[0]
}

// hot returns the compiled single-result entry that can run xs directly,
// or nil when the call needs the general path: a nil or symbolic argument,
// an active trace, Jit disabled, a signature not compiled yet, or an
// argument or captured parameter being differentiated.
func (st *jitState) hot(xs []*Tensor) *entry {
	if e := st.ready(xs); e != nil && e.nout == 1 {
		return e
	}
	return nil
}

// ready is hot for any number of results.
func (st *jitState) ready(xs []*Tensor) *entry {
	// Under a caller's mixed-precision scope the plan is keyed by its
	// level (ampKey), which the general path looks up.
	if st.disabled() || core.CurrentTracer() != nil || core.CurrentAutocast() != nil {
		return nil
	}
	for _, x := range xs {
		if x == nil || x.IsSymbolic() || core.IsTracked(x) {
			return nil
		}
	}
	e := st.cached(xs)
	if e == nil {
		return nil
	}
	for _, p := range e.params {
		if core.IsTracked(p) {
			return nil
		}
	}
	return e
}

// Call runs a compiled function of tensors that returns one tensor, as Fn
// does; its arguments do not escape, so a caller forwarding its own
// variadic arguments (a cell's Call) allocates only the result.
func (j *Func[F]) Call(xs ...*Tensor) *Tensor {
	if !j.st.single {
		panic(core.Errorf("Jit", "%s does not take tensors and return one tensor", j.st.name))
	}
	return j.st.call1(xs)
}

// callTensors is the fast path for tensor-only signatures.
func (st *jitState) callTensors(xs []*Tensor) []*Tensor {
	for i, x := range xs {
		if x == nil {
			panic(core.Errorf("Jit", "%s: argument %d: nil tensor", st.name, i))
		}
	}
	if st.disabled() || core.AnySymbolic(xs) || core.CurrentTracer() != nil {
		return st.flat(xs) // inlined into the enclosing trace
	}
	e := st.lookup(xs, amp.Key(), func(sym []*Tensor) ([]*Tensor, []reflect.Value) { return st.flat(sym), nil })
	return st.execute(e, xs, func(xs []*Tensor) []*Tensor { return st.flat(xs) })
}

// callReflect is the general path: flatten arguments into tensors and
// constants, run, and rebuild the results.
func (st *jitState) callReflect(args []reflect.Value) []reflect.Value {
	if st.disabled() {
		return st.invoke(args)
	}
	var leaves []*Tensor
	var key strings.Builder
	for i, a := range args {
		if err := flatten(a, &leaves, &key); err != nil {
			panic(core.Errorf("Jit", "%s: argument %d: %v", st.name, i, err))
		}
	}
	if core.AnySymbolic(leaves) || core.CurrentTracer() != nil {
		return st.invoke(args) // inlined into the enclosing trace
	}
	e := st.lookupReflect(args, leaves, key.String())
	eager := func(xs []*Tensor) []*Tensor {
		outs, _ := st.callWith(args, xs)
		return outs
	}
	outs := st.execute(e, leaves, eager)
	tmpl := e.outTmpl
	res := make([]reflect.Value, len(tmpl))
	next := 0
	for i, r := range tmpl {
		res[i] = rebuild(r, outs, &next)
	}
	return res
}

// lookupReflect finds or compiles the plan for reflected arguments whose
// flattened tensors are leaves and whose constants are key.
func (st *jitState) lookupReflect(args []reflect.Value, leaves []*Tensor, key string) *entry {
	return st.lookup(leaves, key+amp.Key(), func(sym []*Tensor) ([]*Tensor, []reflect.Value) { return st.callWith(args, sym) })
}

// invoke calls fn on args as reflect.MakeFunc delivers them: for a
// variadic fn the last argument is already the slice of variadic values,
// which Call would wrap in another slice.
func (st *jitState) invoke(args []reflect.Value) []reflect.Value {
	if st.fv.Type().IsVariadic() {
		return st.fv.CallSlice(args)
	}
	return st.fv.Call(args)
}

// callWith calls fn on args with their tensors replaced, in flatten's
// order, by leaves, and returns the results flattened and as they are.
func (st *jitState) callWith(args []reflect.Value, leaves []*Tensor) ([]*Tensor, []reflect.Value) {
	next := 0
	in := make([]reflect.Value, len(args))
	for i, a := range args {
		in[i] = rebuild(a, leaves, &next)
	}
	res := st.invoke(in)
	var outs []*Tensor
	var discard strings.Builder
	for i, r := range res {
		if err := flatten(r, &outs, &discard); err != nil {
			panic(core.Errorf("Jit", "%s: result %d: %v", st.name, i, err))
		}
	}
	return outs, res
}

// entryFor flattens args and returns their compiled entry.
func (st *jitState) entryFor(args []reflect.Value) *entry {
	var leaves []*Tensor
	var key strings.Builder
	for i, a := range args {
		if err := flatten(a, &leaves, &key); err != nil {
			panic(core.Errorf("Jit", "%s: argument %d: %v", st.name, i, err))
		}
	}
	return st.lookupReflect(args, leaves, key.String())
}

// cached returns the plan compiled for xs, or nil, without compiling or
// allocating.
func (st *jitState) cached(xs []*Tensor) *entry {
	st.mu.Lock()
	defer st.mu.Unlock()
	if d := st.dyn; d != nil && d.e != nil && d.e.consts == "" && d.fits(xs) {
		st.stats.Hits++
		return d.e
	}
	for i := len(st.entries) - 1; i >= 0; i-- {
		if e := st.entries[i]; e.matches(xs, "") {
			st.stats.Hits++
			return e
		}
	}
	return nil
}

// lookup finds the plan for the arguments' signature, compiling on a miss.
func (st *jitState) lookup(xs []*Tensor, consts string, trace func([]*Tensor) ([]*Tensor, []reflect.Value)) *entry {
	// A compilation's record goes to the watchers once st.mu is released
	// (deferred calls run last in, first out), so that a watcher may call
	// this very function.
	var rec *CompileRecord
	defer func() {
		if rec != nil {
			notifyCompile(rec)
		}
	}()
	st.mu.Lock()
	defer st.mu.Unlock()
	if d := st.dyn; d != nil && d.failed == "" && d.fits(xs) {
		hit := d.e != nil
		if !hit {
			rec = st.compileDynamic(consts, trace)
		}
		if e := d.e; e != nil && e.consts == consts && d.fits(xs) && dynUsable(e, xs) {
			if hit {
				st.stats.Hits++
			}
			return e
		}
	}
	for i := len(st.entries) - 1; i >= 0; i-- {
		e := st.entries[i]
		if e.matches(xs, consts) {
			st.stats.Hits++
			if i != len(st.entries)-1 { // keep most recently used last
				copy(st.entries[i:], st.entries[i+1:])
				st.entries[len(st.entries)-1] = e
			}
			return e
		}
	}
	if why := st.retraceReason(xs, consts); why != "" {
		st.stats.Retraces = append(st.stats.Retraces, why)
		if len(st.stats.Retraces) > 2*MaxRetraces { // trimmed in batches: amortised O(1)
			st.stats.Retraces = keepRecent(st.stats.Retraces)
		}
		if st.cfg.ExplainRetrace {
			fmt.Fprintf(os.Stderr, "spore: retracing %s: %s\n", st.name, why)
		}
	}
	e, r := st.compile(metasOf(xs), consts, trace)
	rec = r
	st.addEntry(e)
	return e
}

// addEntry adds a compiled signature to the cache, evicting the least
// recently used one when it is full. The caller holds st.mu.
func (st *jitState) addEntry(e *entry) {
	if len(st.entries) >= st.cfg.CacheSize {
		if !st.warnedFull {
			st.warnedFull = true
			fmt.Fprintf(os.Stderr, "spore: WARNING: Jit(%s) cache is full (%d signatures); evicting the least recently used plan. "+
				"Every new input signature recompiles: pad or bucket input shapes, or raise JitConfig.CacheSize. "+
				"(Said once per function; JitStats.Evictions counts the evictions.)\n", st.name, st.cfg.CacheSize)
		}
		st.entries = st.entries[1:]
		st.stats.Evictions++
	}
	st.entries = append(st.entries, e)
}

// retraceReason says why a call at xs compiles, or "" when it is the
// function's first compile.
func (st *jitState) retraceReason(xs []*Tensor, consts string) string {
	if st.stats.Compiles == 0 {
		return ""
	}
	var why []string
	if d := st.dyn; d != nil {
		switch {
		case d.failed != "":
			why = append(why, d.failed)
		case !d.fits(xs):
			why = append(why, d.misfit(xs))
		case d.e != nil:
			why = append(why, "the input signature's plan cannot run this call (it is differentiated, or under another precision scope)")
		}
	}
	if len(st.entries) > 0 {
		why = append(why, explain(st.entries[len(st.entries)-1], xs, consts))
	}
	return strings.Join(why, "; ")
}

func (e *entry) matches(xs []*Tensor, consts string) bool {
	if len(xs) != len(e.metas) || consts != e.consts {
		return false
	}
	for i, x := range xs {
		m := e.metas[i]
		if x.DType() != m.DType || !x.Shape().Equal(m.Shape) {
			return false
		}
	}
	return true
}

// explain says how a call's signature differs from a cached one.
func explain(old *entry, xs []*Tensor, consts string) string {
	var diffs []string
	if len(xs) != len(old.metas) {
		diffs = append(diffs, fmt.Sprintf("%d tensor arguments, was %d", len(xs), len(old.metas)))
	} else {
		for i, x := range xs {
			m := old.metas[i]
			if x.DType() != m.DType || !x.Shape().Equal(m.Shape) {
				diffs = append(diffs, fmt.Sprintf("tensor %d: %v%v, was %v%v", i, x.DType(), x.Shape(), m.DType, m.Shape))
			}
		}
	}
	if consts != old.consts {
		diffs = append(diffs, fmt.Sprintf("constant arguments: %s, was %s", consts, old.consts))
	}
	return strings.Join(diffs, "; ")
}

// traceFunc calls the function being compiled on symbolic arguments,
// returning its flattened results and, on the reflect path, the results
// as they are (a template for rebuilding them).
type traceFunc = func([]*Tensor) ([]*Tensor, []reflect.Value)

// traced is a function traced and compiled at one signature.
type traced struct {
	res    *compile.Result
	params []*Tensor
	tmpl   []reflect.Value
	nout   int
}

// traceCompile traces fn on symbolic arguments of metas and compiles the
// graph; observe, when not nil, sees each stage.
func (st *jitState) traceCompile(metas []tensor.Meta, trace traceFunc, observe func(string, *graph.Graph)) (*traced, error) {
	ctx := GetContext()
	var tmpl []reflect.Value
	tr := graph.NewTracer(st.name)
	tr.Level = int(st.level())
	g, err := graph.TraceWith(tr, metas, func(sym []*Tensor) []*Tensor {
		outs, t := trace(sym)
		tmpl = t
		return outs
	})
	if err != nil {
		return nil, err
	}
	params := g.Params()
	opts := compile.Options{Level: st.level(), Disable: st.cfg.DisablePasses, DumpDir: ctx.SaveGraphs, Observe: observe}
	res, err := compile.Run(g, opts)
	if err != nil {
		return nil, fmt.Errorf("compiling %s: %v", st.name, err)
	}
	return &traced{res: res, params: params, tmpl: tmpl, nout: len(g.Outputs)}, nil
}

// level is the function's optimisation level.
func (st *jitState) level() Level {
	if st.cfg.Level == compile.Default {
		return GetContext().JitLevel
	}
	return st.cfg.Level
}

// compile traces fn on symbolic stand-ins of metas and compiles the graph,
// recording each stage when a watcher is registered (see WatchCompiles).
func (st *jitState) compile(metas []tensor.Meta, consts string, trace traceFunc) (*entry, *CompileRecord) {
	start := time.Now()
	var rec *compileRecorder
	var observe func(string, *graph.Graph)
	if watching() {
		rec = newCompileRecorder(st.name, metas, consts, st.level())
		observe = rec.observe
	}
	t, err := st.traceCompile(metas, trace, observe)
	if err != nil {
		panic(core.Errorf("Jit", "%v", err))
	}
	e := &entry{metas: metas, consts: consts, res: t.res, params: t.params, outTmpl: t.tmpl, nout: t.nout, fresh: hasFresh(t.res.Graph)}
	d := time.Since(start)
	st.stats.Compiles++
	st.stats.CompileTime += d
	st.stats.LastCompileTime = d
	if rec == nil {
		return e, nil
	}
	return e, &rec.rec
}

// metasOf returns the signature of xs.
func metasOf(xs []*Tensor) []tensor.Meta {
	metas := make([]tensor.Meta, len(xs))
	for i, x := range xs {
		metas[i] = tensor.Meta{Shape: x.Shape().Clone(), DType: x.DType()}
	}
	return metas
}

// execute runs a cached plan. When an argument or a captured parameter is
// being differentiated, a single-result function runs as one node on the
// tape (its gradient is a compiled function too); other functions then
// run eagerly so that the tape sees their ops. So does a function holding
// a Fresh op: its compiled gradient would recompute the forward pass and
// draw new dropout masks, while the tape keeps the forward's own.
func (st *jitState) execute(e *entry, xs []*Tensor, eager func([]*Tensor) []*Tensor) []*Tensor {
	tracked := false
	for _, x := range xs {
		tracked = tracked || core.IsTracked(x)
	}
	for _, p := range e.params {
		tracked = tracked || core.IsTracked(p)
	}
	if !tracked {
		return e.res.Plan.Run(xs)
	}
	if e.nout != 1 || e.fresh {
		return eager(xs)
	}
	in := append(append([]*Tensor(nil), xs...), e.params...)
	return []*Tensor{core.Apply(st.callPrim(e, eager), nil, in...)}
}

// derived returns a compiled function derived from the entry — the
// backward function for one set of trainable parameters, or a forward-mode
// one for one set of inputs with tangents — building it on first use.
func (e *entry) derived(key string, build func() func(...*Tensor) []*Tensor) func(...*Tensor) []*Tensor {
	e.derivMu.Lock()
	defer e.derivMu.Unlock()
	if f, ok := e.derivs[key]; ok {
		return f
	}
	if e.derivs == nil {
		e.derivs = map[string]func(...*Tensor) []*Tensor{}
	}
	f := build()
	e.derivs[key] = f
	return f
}

// callPrim is the primitive standing for one compiled signature on the
// autodiff tape. Its inputs are the arguments followed by the captured
// parameters, so gradients reach both.
func (st *jitState) callPrim(e *entry, eager func([]*Tensor) []*Tensor) *core.Prim {
	st.mu.Lock()
	defer st.mu.Unlock()
	if e.call != nil {
		return e.call
	}
	n := len(e.metas)
	out := e.res.Graph.Outputs[0].Meta
	e.call = &core.Prim{
		Name:  "Call[" + st.name + "]",
		Infer: func(any, []*Tensor) tensor.Meta { return out },
		// The tangent is a compiled function too, one per set of inputs
		// with a tangent: the eager function linearised, arguments and
		// captured parameters alike.
		JVP: func(_ any, in, ts []*Tensor, _ *Tensor) *Tensor {
			var pos []int
			var tans []*Tensor
			key := "jvp:"
			for i, t := range ts {
				if t != nil {
					pos = append(pos, i)
					tans = append(tans, t)
					key += fmt.Sprintf("%d,", i)
				}
			}
			fwd := e.derived(key, func() func(...*Tensor) []*Tensor {
				return Jit(func(xs ...*Tensor) []*Tensor {
					args := xs[:n]
					argT := make([]*Tensor, n)
					var params, paramT []*Tensor
					for k, i := range pos {
						if i < n {
							argT[i] = xs[n+k]
						} else {
							params = append(params, e.params[i-n])
							paramT = append(paramT, xs[n+k])
						}
					}
					lin, end := ad.Linearize(func(a []*Tensor) []*Tensor { return eager(a)[:1] }, args, params, false)
					defer end()
					return lin.Push(append(argT, paramT...))
				}, Config{Name: st.name + ".jvp", Level: st.cfg.Level})
			})
			return fwd(append(append([]*Tensor(nil), in[:n]...), tans...)...)[0]
		},
		VJP: func(_ any, in []*Tensor, _, g *Tensor) []*Tensor {
			// The backward function differentiates with respect to the
			// arguments and the parameters that are trainable now; frozen
			// ones (BatchNorm statistics, frozen layers) get no gradient.
			var train []*Tensor
			var idx []int
			var key strings.Builder
			for i, p := range e.params {
				if p.RequiresGrad() && p.DType().IsFloat() {
					train = append(train, p)
					idx = append(idx, i)
					fmt.Fprintf(&key, "%d,", i)
				}
			}
			// Integer arguments (labels, indices) have no gradient.
			var pos []int
			for i, m := range e.metas[:n] {
				if m.DType.IsFloat() {
					pos = append(pos, i)
				}
			}
			bwd := e.derived(key.String(), func() func(...*Tensor) []*Tensor {
				grad := ad.ValueAndGrad(func(xs ...*Tensor) *Tensor { return eager(xs)[0] },
					ad.GradPosition(pos...), ad.Weights(train...), ad.WithSens())
				return Jit(func(xs ...*Tensor) []*Tensor {
					_, gs := grad(xs...)
					return gs
				}, Config{Name: st.name + ".grad", Level: st.cfg.Level})
			})
			gs := bwd(append(append([]*Tensor(nil), in[:n]...), g)...)
			out := make([]*Tensor, n+len(e.params))
			for k, i := range pos {
				out[i] = gs[k]
			}
			for k, i := range idx {
				out[n+i] = gs[len(pos)+k]
			}
			return out
		},
	}
	// Running the compiled plan reads no element type itself: one
	// kernel serves every dtype.
	e.call.RegisterAll(core.CPU, func(_ any, in []*Tensor, o *Tensor) {
		e.res.Plan.RunInto(in[:n], []*Tensor{o})
	})
	return e.call
}

// hasFresh reports whether g or a control-flow body within it holds a
// Fresh op.
func hasFresh(g *graph.Graph) bool {
	for _, v := range g.Values {
		if v.Kind == graph.KindOp && v.Prim.Traits.Fresh {
			return true
		}
		for _, r := range v.Regions {
			if hasFresh(r.Graph) {
				return true
			}
		}
	}
	return false
}
