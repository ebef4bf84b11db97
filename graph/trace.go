package graph

import (
	"fmt"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// Tracer records the ops applied to its symbolic tensors into a Graph. It
// implements core.Tracer: core.Apply hands it every op that has one of
// its symbolic tensors among the inputs, or that reads a parameter while
// its goroutine traces.
type Tracer struct {
	g      *Graph
	byID   []*Value                  // trace-time ID -> value
	params map[*tensor.Tensor]*Value // parameter -> its KindParam value
	cur    map[*tensor.Tensor]*Value // parameter -> its value after assignments
	consts map[*tensor.Tensor]*Value
	// Level is the compilation level the traced function will be compiled
	// at (compile.Level's value; 0 when unknown). Control-flow bodies traced
	// inside it are compiled at the same level.
	Level int
	// Capture, when set, resolves symbolic tensors of other tracers (free
	// variables of a control-flow body traced inside an outer function).
	// When nil, such a tensor is an error.
	Capture func(t *tensor.Tensor) *Value
}

// NewTracer returns a tracer recording into a fresh graph named name.
func NewTracer(name string) *Tracer {
	return &Tracer{
		g:      New(name),
		params: map[*tensor.Tensor]*Value{},
		cur:    map[*tensor.Tensor]*Value{},
		consts: map[*tensor.Tensor]*Value{},
	}
}

// Graph returns the graph recorded so far.
func (tr *Tracer) Graph() *Graph { return tr.g }

// FuncName names the traced function.
func (tr *Tracer) FuncName() string { return tr.g.Name }

// Input adds a function argument and returns the symbolic tensor for it.
func (tr *Tracer) Input(m tensor.Meta) *tensor.Tensor {
	return tr.symbolic(tr.g.Input(m))
}

func (tr *Tracer) symbolic(v *Value) *tensor.Tensor {
	for len(tr.byID) <= v.ID {
		tr.byID = append(tr.byID, nil)
	}
	tr.byID[v.ID] = v
	return core.NewSymbolic(tr, v.ID, v.Meta)
}

// ValueOf returns the graph value standing for t: its own value if t is one
// of this tracer's symbolic tensors, a captured parameter, or a constant.
func (tr *Tracer) ValueOf(t *tensor.Tensor) *Value {
	if s, id, ok := core.SymbolOf(t); ok {
		if s == core.Tracer(tr) {
			return tr.byID[id]
		}
		if tr.Capture != nil {
			return tr.Capture(t)
		}
		panic(core.Errorf("Jit", "a symbolic tensor of another traced function (%s) leaked into %s; "+
			"return it from that function instead of keeping it in a variable", s.FuncName(), tr.g.Name))
	}
	if t.IsParameter() {
		if v, ok := tr.cur[t]; ok {
			return v
		}
		v := tr.g.Param(t)
		tr.params[t] = v
		tr.cur[t] = v
		return v
	}
	if v, ok := tr.consts[t]; ok {
		return v
	}
	v := tr.g.Const(t)
	tr.consts[t] = v
	return v
}

// Emit records p applied to in.
func (tr *Tracer) Emit(p *core.Prim, attrs any, in []*tensor.Tensor, m tensor.Meta) *tensor.Tensor {
	args := make([]*Value, len(in))
	for i, t := range in {
		args[i] = tr.ValueOf(t)
	}
	v := tr.g.OpMeta(p, attrs, m, args...)
	v.Loc = core.CallerLoc()
	return tr.symbolic(v)
}

// EmitN records a multi-result primitive.
func (tr *Tracer) EmitN(p *core.Prim, attrs any, in []*tensor.Tensor, ms []tensor.Meta) []*tensor.Tensor {
	args := make([]*Value, len(in))
	for i, t := range in {
		args[i] = tr.ValueOf(t)
	}
	projs := tr.g.OpN(p, attrs, ms, args...)
	// OpN appended the op, then its projections.
	op := tr.g.Values[len(tr.g.Values)-1-len(projs)]
	op.Loc = core.CallerLoc()
	if rs, ok := attrs.(RegionSource); ok {
		// The graph gets bodies of its own to rewrite; the attributes keep
		// theirs as traced.
		op.Regions = cloneRegions(rs.Regions())
	}
	out := make([]*tensor.Tensor, len(projs))
	for i, v := range projs {
		out[i] = tr.symbolic(v)
	}
	return out
}

// Assign records that parameter param becomes v. Later reads of param in
// the same trace see v; the graph performs the write when it runs.
func (tr *Tracer) Assign(param, v *tensor.Tensor) {
	val := tr.ValueOf(v)
	orig := tr.ValueOf(param)
	if base, ok := tr.params[param]; ok {
		orig = base
	}
	tr.cur[param] = val
	for i, a := range tr.g.Assigns {
		if a.Param == orig {
			tr.g.Assigns[i].Val = val // the last write wins
			return
		}
	}
	tr.g.Assigns = append(tr.g.Assigns, Assign{Param: orig, Val: val})
}

// Output marks t as the next result of the graph.
func (tr *Tracer) Output(t *tensor.Tensor) {
	tr.g.Outputs = append(tr.g.Outputs, tr.ValueOf(t))
}

// Trace runs fn on symbolic tensors of the given metas and returns the
// recorded graph. fn runs on the calling goroutine, with this tracer
// active, so parameter reads inside fn are captured.
func Trace(name string, metas []tensor.Meta, fn func(args []*tensor.Tensor) []*tensor.Tensor) (g *Graph, err error) {
	return TraceWith(NewTracer(name), metas, fn)
}

// TraceWith is Trace recording into tr, for callers that set its fields
// (Level, Capture) first.
func TraceWith(tr *Tracer, metas []tensor.Meta, fn func(args []*tensor.Tensor) []*tensor.Tensor) (g *Graph, err error) {
	name := tr.g.Name
	args := make([]*tensor.Tensor, len(metas))
	for i, m := range metas {
		args[i] = tr.Input(m)
	}
	end := core.BeginTrace(tr)
	defer end()
	outs := fn(args)
	for _, o := range outs {
		if o == nil {
			return nil, fmt.Errorf("graph: %s returned a nil tensor", name)
		}
		tr.Output(o)
	}
	tr.g.CountUses()
	return tr.g, nil
}
