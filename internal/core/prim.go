package core

import (
	"fmt"
	"sync"
)

// Meta is what inference knows of a value before it is computed.
type Meta struct {
	Shape Shape
	DType DType
}

// Traits tell the graph compiler what it may do with a primitive.
type Traits struct {
	// Elementwise: output element i depends only on element i of each
	// (broadcast) input, so the op can join a fused loop.
	Elementwise bool
	// Reduction: the op folds axes of its input.
	Reduction bool
	// Impure: the op has effects or randomness and must be neither
	// deduplicated, folded nor removed when its result is unused.
	Impure bool
	// Fresh: every run gives a new result or effect (a random draw, a
	// print), so running the op again does not repeat an earlier run. A
	// compiled function's gradient recomputes its forward pass, so a
	// differentiated compiled function holding a Fresh op runs eagerly on
	// the tape instead: the backward pass then uses the forward's draws.
	Fresh bool
	// Commutative: the two inputs may be swapped (CSE canonicalises them).
	Commutative bool
	// View: the output is the input's buffer reinterpreted (reshape), so the
	// executor may alias instead of copying.
	View bool
	// Accumulates is the 1-based index of an argument the kernel may be
	// given as its own output buffer: it reads each element of that
	// argument before writing the same element (GEMM with beta = 1).
	// Zero means none. The executor uses it to compute a parameter update
	// in place.
	Accumulates int
	// Cost is a rough count of arithmetic per output element, used to avoid
	// duplicating expensive producers when fusing.
	Cost int
	// ArgsInResult: the result is the op's arguments' elements packed
	// one after another (a bucket). The executor may then have each
	// argument computed straight into its place in the result's buffer;
	// the kernel finds it already there and must leave it.
	ArgsInResult bool
	// ResultsInArg: the results of a multi-result op are consecutive
	// pieces, in order, of its first argument's elements (an unpacked
	// bucket). The executor may then place each result in that argument's
	// buffer instead of a buffer of its own; the kernel finds a result
	// already there and must leave it (or update it in place).
	ResultsInArg bool
	// Placement asks the scheduler to move the op within a compiled plan:
	// the start of asynchronous work (a non-blocking all-reduce) runs as
	// early as its inputs allow, the wait for it as late as its users
	// allow, so that the work overlaps what runs between them.
	Placement Placement
}

// Placement is where the scheduler puts an op (Traits.Placement).
type Placement uint8

const (
	// PlaceInOrder keeps the op where the program applied it.
	PlaceInOrder Placement = iota
	// PlaceEarly runs the op, and the work that only it needs, as soon as
	// its inputs are computed.
	PlaceEarly
	// PlaceLate runs the op only when nothing else can run before its
	// first user.
	PlaceLate
)

// Prim is the one definition of a primitive op: its name, how it infers the
// output's shape and dtype, its kernels (a table keyed by dtype and
// backend, filled with Register), its gradient rules and the traits the
// compiler needs. Every execution path — eager dispatch, tracing,
// compiled plans, autodiff at any order — uses this same definition.
type Prim struct {
	Name string
	// Infer returns the output's shape and dtype, panicking with an *Error
	// (Errorf) that names the op and the offending inputs when they are
	// invalid. It must not read input values: inputs may be symbolic.
	Infer func(attrs any, in []*Tensor) Meta
	// VJP returns, for each input, the gradient contribution given the
	// output's cotangent g (nil for inputs that get none). It is written
	// with ordinary ops, so it runs eagerly, under a trace, and under
	// another level of differentiation alike. Nil means not differentiable.
	VJP func(attrs any, in []*Tensor, out, g *Tensor) []*Tensor
	// JVP returns the output's tangent given one tangent per input (nil
	// for an input whose tangent is zero; not all are nil) — forward-mode
	// differentiation. Like VJP it is written with ordinary ops. Nil means
	// the op has no JVP rule.
	JVP func(attrs any, in, tangents []*Tensor, out *Tensor) *Tensor
	// Batch is the batching rule (Vmap): it applies the op to inputs of
	// which some carry an extra batch axis — dims[i] is input i's batch
	// axis, or -1 when input i is not batched (not all are -1) — and
	// returns the batched result and its batch axis. Written with ordinary
	// ops. Nil means the op is vectorised by a loop over the batch.
	Batch func(attrs any, in []*Tensor, dims []int) (*Tensor, int)
	// Traits for the compiler.
	Traits Traits
	// Elementwise is the block body of an elementwise op (Traits.Elementwise),
	// which its eager kernels and fused loops both run; nil for other ops.
	Elementwise *Elementwise
	// PacksArgs, when set, reports whether one application's result is
	// its arguments' elements packed one after another, as
	// Traits.ArgsInResult says of every application: Concat along an axis
	// with only 1s before it. A compiled plan may then have the arguments
	// computed straight into their places in the result's buffer; the
	// kernel finds each already there and must leave it.
	PacksArgs func(attrs any, args []Meta) bool

	// Multi-result primitives (control flow) set these instead of Infer,
	// VJP, JVP and Batch, register their kernels with RegisterN, and are
	// applied with ApplyN. VJPN
	// receives one cotangent per result (zeros for results that get none);
	// JVPN returns one tangent per result (nil for a zero one).
	InferN func(attrs any, in []*Tensor) []Meta
	VJPN   func(attrs any, in []*Tensor, outs, gs []*Tensor) []*Tensor
	JVPN   func(attrs any, in, tangents []*Tensor, outs []*Tensor) []*Tensor
	BatchN func(attrs any, in []*Tensor, dims []int) ([]*Tensor, []int)

	// IndexInput is the 1-based position of an input holding indices
	// (Int32 or Int64) whose dtype selects the kernel together with the
	// first input's (Key): Gather's indices. Zero when the first input's
	// dtype alone selects it.
	IndexInput int

	// kernels is the kernel table, indexed by the key's dtypes and the
	// backend (Register): the only place a kernel is found, by eager
	// dispatch and plans alike.
	kernels  [numDTypes][numDTypes][numBackends]KernelFunc
	kernelsN [numDTypes][numDTypes][numBackends]KernelNFunc
	// widened caches the 16-bit kernels derived on demand from the Float32
	// ones (halfwiden.go), for primitives recorded with Define (defined).
	widened widened
	defined bool
}

// Key selects a primitive's kernel: the dtype it computes in (KernelDType)
// and, for a primitive with an IndexInput, its indices' dtype (Invalid for
// the others), so that no kernel switches on either per call.
type Key struct {
	DType, Index DType
}

func (k Key) String() string {
	if k.Index == Invalid {
		return k.DType.String()
	}
	return fmt.Sprintf("%v with %v indices", k.DType, k.Index)
}

// KeyOf returns the key of p applied to inputs of the given dtypes with a
// result of dtype out.
func (p *Prim) KeyOf(in []DType, out DType) Key {
	k := Key{DType: out}
	if len(in) > 0 {
		k.DType = in[0]
	}
	if p.IndexInput > 0 && p.IndexInput <= len(in) {
		k.Index = in[p.IndexInput-1]
	}
	return k
}

// KeyFor is KeyOf for tensors, allocating nothing: for eager dispatch and
// the tensors an executor binds.
func (p *Prim) KeyFor(in []*Tensor, out DType) Key {
	k := Key{DType: KernelDType(in, out)}
	if p.IndexInput > 0 && p.IndexInput <= len(in) {
		k.Index = in[p.IndexInput-1].dtype
	}
	return k
}

// KernelFunc computes a primitive's output into out, whose buffer is
// already allocated with the inferred shape and dtype. It must not keep out
// or the inputs after returning.
type KernelFunc func(attrs any, in []*Tensor, out *Tensor)

// KernelNFunc is KernelFunc for multi-result primitives.
type KernelNFunc func(attrs any, in []*Tensor, outs []*Tensor)

// Backend is where a kernel runs.
type Backend uint8

// The backends. A new one (a GPU) is a constant here and kernels
// registered for it; no op's definition changes.
const (
	CPU Backend = iota
	numBackends
)

// String names the backend.
func (b Backend) String() string {
	switch b {
	case CPU:
		return "CPU"
	}
	return fmt.Sprintf("Backend(%d)", b)
}

// KernelDType is the dtype that selects a primitive's kernel: the dtype
// of its first input (Cast and comparisons key on what they read, not on
// what they write), or the output's dtype for an op without inputs.
func KernelDType(in []*Tensor, out DType) DType {
	if len(in) > 0 {
		return in[0].dtype
	}
	return out
}

// Register installs k as p's kernel for inputs of dtype dt on backend b
// (see KernelDType). Kernel packages call it at init time; registering a
// new dtype or backend changes nothing else in the op's definition.
func (p *Prim) Register(dt DType, b Backend, k KernelFunc) {
	p.RegisterKey(Key{DType: dt}, b, k)
}

// RegisterKey installs k as p's kernel for key on backend b: for a
// primitive with an IndexInput, one kernel per data and index dtype.
func (p *Prim) RegisterKey(key Key, b Backend, k KernelFunc) {
	p.checkKey(key, b)
	p.kernels[key.DType][key.Index][b] = k
}

// RegisterN is Register for multi-result primitives.
func (p *Prim) RegisterN(dt DType, b Backend, k KernelNFunc) {
	p.checkKey(Key{DType: dt}, b)
	p.kernelsN[dt][Invalid][b] = k
}

func (p *Prim) checkKey(key Key, b Backend) {
	if key.DType >= numDTypes || key.Index >= numDTypes || b >= numBackends {
		panic(fmt.Sprintf("core: %s: kernel for %v on %v: no such dtype or backend", p.Name, key, b))
	}
}

// RegisterAll installs k as p's kernel for every dtype on backend b: for
// kernels that never read an element's type (copies, control flow, calls
// of compiled plans), so that they too are found in the table.
func (p *Prim) RegisterAll(b Backend, k KernelFunc) {
	for dt := Invalid + 1; dt < numDTypes; dt++ {
		p.Register(dt, b, k)
	}
}

// RegisterNAll is RegisterAll for multi-result primitives.
func (p *Prim) RegisterNAll(b Backend, k KernelNFunc) {
	for dt := Invalid + 1; dt < numDTypes; dt++ {
		p.RegisterN(dt, b, k)
	}
}

// KernelFor returns p's kernel for dtype dt on backend b, or an error that
// names the op, the dtype and the backend (KernelForKey for primitives
// with an IndexInput).
func (p *Prim) KernelFor(dt DType, b Backend) (KernelFunc, error) {
	return p.KernelForKey(Key{DType: dt}, b)
}

// KernelForKey returns p's kernel for key on backend b, or an error that
// names the op, the dtypes and the backend. Plans resolve their kernels
// with it once, at compile time; eager dispatch indexes the same table.
//
// A registered kernel wins. Failing one, a primitive recorded with Define
// gets its kernel for a 16-bit float key from the installed HalfWidener,
// derived from its Float32 kernel on the first lookup and cached in the
// primitive. Primitives made without Define (the compiler's fusions) keep
// exactly the kernels registered for them, so that a rewrite to one is
// chosen only where it has a kernel of its own.
func (p *Prim) KernelForKey(key Key, b Backend) (KernelFunc, error) {
	if key.DType < numDTypes && key.Index < numDTypes && b < numBackends {
		if k := p.kernels[key.DType][key.Index][b]; k != nil {
			return k, nil
		}
		if k := p.widen(key, b); k != nil {
			return k, nil
		}
	}
	return nil, p.errNoKernel(key, b)
}

// KernelNFor is KernelFor for multi-result primitives, widening on a miss
// as KernelForKey does.
func (p *Prim) KernelNFor(dt DType, b Backend) (KernelNFunc, error) {
	if dt < numDTypes && b < numBackends {
		if k := p.kernelsN[dt][Invalid][b]; k != nil {
			return k, nil
		}
		if k := p.widenN(dt, b); k != nil {
			return k, nil
		}
	}
	return nil, fmt.Errorf("%s has no kernel for %v on %v", p.Name, dt, b)
}

// kernel is the eager path's lookup: an index into the table, panicking
// with an *Error when no kernel exists.
func (p *Prim) kernel(in []*Tensor, out DType) KernelFunc {
	key := p.KeyFor(in, out)
	k, err := p.KernelForKey(key, CPU)
	if err != nil {
		Panicf(p.Name, "no kernel for %v on %v", key, CPU)
	}
	return k
}

func (p *Prim) kernelN(in []*Tensor, out DType) KernelNFunc {
	dt := KernelDType(in, out)
	k, err := p.KernelNFor(dt, CPU)
	if err != nil {
		Panicf(p.Name, "no kernel for %v on %v", dt, CPU)
	}
	return k
}

// prims lists every primitive made with Define, in order of definition.
var (
	primsMu sync.Mutex
	prims   []*Prim
)

// Define records p in the list of all primitives (Prims) and returns it.
// Ops define their primitives through it, so that tests and the compiler
// can enumerate them (every elementwise op fuses, every differentiable op
// has a JVP) without a second list to keep in step.
//
// A defined primitive also gets 16-bit kernels derived from its Float32
// ones on demand (KernelForKey).
func Define(p *Prim) *Prim {
	primsMu.Lock()
	p.defined = true
	prims = append(prims, p)
	primsMu.Unlock()
	return p
}

// Prims returns every primitive recorded by Define.
func Prims() []*Prim {
	primsMu.Lock()
	defer primsMu.Unlock()
	return append([]*Prim(nil), prims...)
}

// String returns the op's name.
func (p *Prim) String() string { return p.Name }

// Tracer records ops into a graph instead of running them. The graph
// compiler implements it; Apply hands an op to a Tracer when an input is
// symbolic, or when an input is a parameter and the calling goroutine is
// tracing (so a parameter read inside a traced function is never baked in
// as a constant).
type Tracer interface {
	// Emit records p applied to in and returns the symbolic result, whose
	// shape and dtype are m.
	Emit(p *Prim, attrs any, in []*Tensor, m Meta) *Tensor
	// EmitN records a multi-result primitive and returns its results.
	EmitN(p *Prim, attrs any, in []*Tensor, ms []Meta) []*Tensor
	// Assign records an in-place update of parameter param to value v.
	Assign(param, v *Tensor)
	// FuncName names the function being traced, for error messages.
	FuncName() string
}

// NewSymbolic returns a symbolic tensor of the given meta that belongs to
// tr; id is tr's own handle for the value.
func NewSymbolic(tr Tracer, id int, m Meta) *Tensor {
	return &Tensor{shape: m.Shape, dtype: m.DType, sym: &symbol{tr: tr, id: id}}
}

// SymbolOf returns the tracer and value id of a symbolic tensor, and false for
// a concrete one.
func SymbolOf(t *Tensor) (Tracer, int, bool) {
	if t.sym == nil {
		return nil, 0, false
	}
	return t.sym.tr, t.sym.id, true
}

func tracerOf(t *Tensor) Tracer {
	if t.sym != nil {
		return t.sym.tr
	}
	return nil
}

// Apply runs primitive p on the inputs: in PyNative fashion it infers the
// output, allocates it and runs the kernel now; if an input is symbolic, or
// a parameter is read while this goroutine traces, it emits a node into the
// trace instead. Either way, when an input is tracked for autodiff the
// application is recorded so that gradients can flow back through it.
// While an autocast policy is active on this goroutine (BeginAutocast),
// the policy decides the dtypes p is applied in.
func Apply(p *Prim, attrs any, in ...*Tensor) *Tensor {
	if autocasts.active.Load() > 0 {
		if ac := CurrentAutocast(); ac != nil {
			return ac.Apply(p, attrs, in, apply)
		}
	}
	return apply(p, attrs, in...)
}

// apply is Apply without the goroutine's autocast policy.
func apply(p *Prim, attrs any, in ...*Tensor) *Tensor {
	tr, tracked := dispatch(p, in)
	var out *Tensor
	m := p.Meta(attrs, in)
	CheckShape(p.Name, m.DType, m.Shape)
	if tr != nil {
		out = tr.Emit(p, attrs, in, m)
	} else if p.Traits.View && in[0].param == nil {
		// Tensors are immutable (only parameters change), so an eager
		// view shares its input's buffer instead of copying it.
		out = &Tensor{shape: m.Shape, dtype: m.DType, buf: in[0].buf}
	} else {
		out = NewOf(m)
		p.kernel(in, m.DType)(attrs, in, out)
	}
	if tracked && p.VJP != nil {
		out.node = &Node{Prim: p, Attrs: attrs, Inputs: append([]*Tensor(nil), in...), Out: out}
	}
	return out
}

// dispatch finds the tracer an application belongs to (nil to run it
// now) and whether any input is tracked for autodiff.
func dispatch(p *Prim, in []*Tensor) (tr Tracer, tracked bool) {
	hasParam := false
	for i, x := range in {
		if x == nil {
			Panicf(p.Name, "argument %d is nil", i)
		}
		if x.sym != nil && tr == nil {
			tr = x.sym.tr
		}
		tracked = tracked || x.node != nil
		hasParam = hasParam || x.param != nil
	}
	// While any differentiation over parameters is under way, an op that
	// reads a parameter is recorded without asking whose tape tracks it:
	// that costs a goroutine-id lookup per op. The record is harmless
	// where no tape of this goroutine tracks the parameter — the reverse
	// and forward passes find parameters' leaves on their own goroutine's
	// tape (NodeOf), so such a record leads nowhere — and in the usual case
	// of one goroutine differentiating, it is needed anyway.
	tracked = tracked || hasParam && tapes.active.Load() > 0
	if (tr != nil || hasParam) && traces.active.Load() > 0 {
		// The innermost trace of this goroutine wins: inside a control-flow
		// body traced within an outer function, ops on the outer function's
		// values belong to the body (which captures them).
		if cur := CurrentTracer(); cur != nil {
			tr = cur
		}
	}
	return tr, tracked
}

// ApplyN is Apply for multi-result primitives (InferN, KernelN, VJPN).
// Control flow with several results uses it: one application, one run of
// the body, however many results.
func ApplyN(p *Prim, attrs any, in ...*Tensor) []*Tensor {
	tr, tracked := dispatch(p, in)
	ms := p.Metas(attrs, in)
	var outs []*Tensor
	if tr != nil {
		outs = tr.EmitN(p, attrs, in, ms)
	} else {
		outs = make([]*Tensor, len(ms))
		for i, m := range ms {
			outs[i] = NewOf(m)
		}
		var dt DType
		if len(ms) > 0 {
			dt = ms[0].DType
		}
		p.kernelN(in, dt)(attrs, in, outs)
	}
	if tracked && p.VJPN != nil {
		n := &Node{Prim: p, Attrs: attrs, Inputs: append([]*Tensor(nil), in...), Outs: outs}
		for _, o := range outs {
			o.node = n
		}
	}
	return outs
}

// traces holds each goroutine's nested tracers (goid.go). While no
// goroutine traces — always, in plain eager use — Apply pays one atomic
// load for the parameter check.
var traces goroutineStacks[Tracer]

// BeginTrace makes tr the active tracer of the calling goroutine until the
// returned function is called. Traces nest (a jitted function called while
// tracing another): the innermost one is active.
func BeginTrace(tr Tracer) (end func()) {
	_, end = traces.push(tr)
	return end
}

// CurrentTracer returns the innermost tracer of the calling goroutine, or
// nil when it is not tracing.
func CurrentTracer() Tracer { return traces.top() }
