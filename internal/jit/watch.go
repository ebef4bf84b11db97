package jit

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sporeml/spore/compile"
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// CompileRecord is one compilation of a jitted function, as data: the IR
// after tracing and after every pass the compiler ran, in order. It is
// what SPORE_SAVE_GRAPHS writes to files, handed to a program instead
// (see WatchCompiles), and it marshals to JSON for tools such as a
// summary writer or a dashboard.
type CompileRecord struct {
	// Name is the function's name (Config.Name, or the Go function's).
	Name string `json:"name"`
	// Signature is the input signature compiled, as
	// "(float32[64,784], int32[64])"; non-tensor arguments follow, in the
	// cache key's form, after " with ".
	Signature string `json:"signature"`
	// Level is the optimisation level, as "O1".
	Level string `json:"level"`
	// Passes are the stages in the order they ran: "trace" first (the
	// dumps' 00_input), then each pass that ran, by its name in
	// compile.Passes (the dumps' NN_name). The renumbering that planning
	// does afterwards (the dumps' "final") is no pass and is not recorded.
	Passes []PassDump `json:"passes"`
}

// PassDump is the IR after one stage of a compilation.
type PassDump struct {
	// Pass is the stage's name.
	Pass string `json:"pass"`
	// Text is the IR as text, as IR and the dumps print it.
	Text string `json:"text"`
	// Graph is the same IR as data, with provenance: each node names the
	// stage that made it, and fused nodes list what they absorbed.
	Graph GraphDoc `json:"graph"`
}

// GraphDoc is a graph as data; see graph.Doc, which says how node IDs
// stay stable across passes and how control-flow bodies nest.
type GraphDoc = graph.Doc

// GraphNode is one node of a GraphDoc; see graph.DocNode.
type GraphNode = graph.DocNode

// watchers are the registered WatchCompiles callbacks. The count is read
// on every compilation, so that nothing is captured when it is zero.
var (
	watchMu  sync.Mutex
	watchers []*watcher
	nwatch   atomic.Int32
)

type watcher struct {
	fn      func(CompileRecord)
	stopped atomic.Bool
}

// WatchCompiles calls fn with the record of every compilation of a jitted
// function — Jit, New, Graph-mode and nn.Jit cells, the compiled step
// of nn.TrainOneStepCell, optimisers' compiled updates — that begins
// while fn is registered, once per compilation, after it finished. It
// returns stop, which unregisters fn (calling it twice is harmless); a
// record already being delivered when stop is called may still arrive.
//
// fn runs on the goroutine that compiled, outside the compiler's locks,
// so it may call jitted functions itself; a cell that compiles under a
// lock of its own (TrainOneStepCell's step) still holds it, so fn should
// not call back into the cell it hears about. Compilations on several
// goroutines call fn concurrently, so fn must be safe for concurrent use.
// All watchers receive the same record: they must not modify it. A panic
// in fn reaches the call that compiled, whose plan is cached by then.
//
// While no watcher is registered a compilation captures nothing and
// costs one atomic load more than it would without this hook.
func WatchCompiles(fn func(CompileRecord)) (stop func()) {
	if fn == nil {
		panic(core.Errorf("WatchCompiles", "nil callback"))
	}
	w := &watcher{fn: fn}
	watchMu.Lock()
	watchers = append(watchers, w)
	nwatch.Add(1)
	watchMu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			w.stopped.Store(true)
			watchMu.Lock()
			defer watchMu.Unlock()
			for i, x := range watchers {
				if x == w {
					watchers = append(watchers[:i:i], watchers[i+1:]...)
					break
				}
			}
			nwatch.Add(-1)
		})
	}
}

// watching reports whether a compilation starting now should be recorded.
func watching() bool { return nwatch.Load() > 0 }

// notifyCompile hands rec to every registered watcher, outside any lock.
func notifyCompile(rec *CompileRecord) {
	watchMu.Lock()
	ws := append([]*watcher(nil), watchers...)
	watchMu.Unlock()
	for _, w := range ws {
		if !w.stopped.Load() {
			w.fn(*rec)
		}
	}
}

// compileRecorder builds a CompileRecord from compile.Options.Observe
// calls, tracking each value across stages to know which stage made it.
type compileRecorder struct {
	rec    CompileRecord
	origin map[*graph.Value]origin
}

// origin is what a stage last saw of a value: a value whose primitive,
// attributes or enclosing graph differ at the next stage was made (or
// rewritten in place, as the fusions rewrite their root) by that stage.
type origin struct {
	pass  string
	prim  *core.Prim
	attrs string
	in    *graph.Graph
}

func newCompileRecorder(name string, metas []tensor.Meta, consts string, level Level) *compileRecorder {
	sig := make([]string, len(metas))
	for i, m := range metas {
		dims := make([]string, len(m.Shape))
		for j, d := range m.Shape {
			dims[j] = fmt.Sprint(d)
		}
		sig[i] = fmt.Sprintf("%s[%s]", strings.ToLower(m.DType.String()), strings.Join(dims, ","))
	}
	s := "(" + strings.Join(sig, ", ") + ")"
	if consts != "" {
		s += " with " + consts
	}
	return &compileRecorder{
		rec:    CompileRecord{Name: name, Signature: s, Level: level.String()},
		origin: map[*graph.Value]origin{},
	}
}

// observe records g after stage.
func (r *compileRecorder) observe(stage string, g *graph.Graph) {
	_ = graph.Walk(g, func(v *graph.Value, in *graph.Graph, _ *graph.Value) error {
		cur := origin{pass: stage, prim: v.Prim, in: in}
		if v.Attrs != nil {
			cur.attrs = fmt.Sprint(v.Attrs)
		}
		if old, ok := r.origin[v]; ok && old.prim == cur.prim && old.attrs == cur.attrs && old.in == cur.in {
			cur.pass = old.pass
		}
		r.origin[v] = cur
		return nil
	})
	prov := func(v *graph.Value) (string, []string) { return r.origin[v].pass, compile.Absorbed(v) }
	r.rec.Passes = append(r.rec.Passes, PassDump{Pass: stage, Text: g.String(), Graph: g.Doc(prov)})
}
