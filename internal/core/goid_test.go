package core

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// recorder is a Tracer that records nothing but hands out symbolic results,
// so that a test can tell a traced application from an eager one.
type recorder struct{ emitted int }

func (r *recorder) Emit(_ *Prim, _ any, _ []*Tensor, m Meta) *Tensor {
	r.emitted++
	return NewSymbolic(r, r.emitted, m)
}

func (r *recorder) EmitN(_ *Prim, _ any, _ []*Tensor, ms []Meta) []*Tensor {
	out := make([]*Tensor, len(ms))
	for i, m := range ms {
		out[i] = r.Emit(nil, nil, nil, m)
	}
	return out
}

func (r *recorder) Assign(_, _ *Tensor) {}
func (r *recorder) FuncName() string    { return "recorder" }

// countGoids counts goid calls until the returned function is called.
func countGoids(t *testing.T) (calls *atomic.Int64, stop func()) {
	calls = new(atomic.Int64)
	h := func() { calls.Add(1) }
	if !goidHook.CompareAndSwap(nil, &h) {
		t.Fatal("goid hook already set")
	}
	return calls, func() { goidHook.Store(nil) }
}

// While no trace, tape or autocast is open anywhere, nothing asks for the
// goroutine id: not an op on a parameter, not a parameter's record, not
// the scopes' own queries. Once a trace is open, the same parameter op
// asks (so the counter does count) and is traced: the stale-parameter
// trap's guard.
func TestGoidFastPath(t *testing.T) {
	calls, stop := countGoids(t)
	defer stop()
	w := NewParameter("w", FromSlice([]float32{1, 2}))
	x := FromSlice([]float32{3, 4})
	Apply(identityPrim, nil, w)
	Apply(identityPrim, nil, x)
	NodeOf(w)
	NeedsGrad(w)
	TrackLeaf(w)
	CurrentTracer()
	CurrentAutocast()
	w.Assign(x)
	if n := calls.Load(); n != 0 {
		t.Fatalf("with no scope open, %d goroutine-id lookups; want none", n)
	}

	rec := &recorder{}
	end := BeginTrace(rec)
	y := Apply(identityPrim, nil, w)
	end()
	if !y.IsSymbolic() || rec.emitted != 1 {
		t.Fatalf("a parameter op under this goroutine's trace ran eagerly (emitted %d)", rec.emitted)
	}
	if calls.Load() == 0 {
		t.Fatal("the traced parameter op made no goroutine-id lookup: the hook counts nothing")
	}
	if traces.active.Load() != 0 || len(traces.m) != 0 {
		t.Fatalf("trace registry not empty after the trace ended: %d active, %d goroutines", traces.active.Load(), len(traces.m))
	}
}

// A trace belongs to the goroutine that opened it: another goroutine's
// op on the same parameter runs eagerly meanwhile, and its tapes see none
// of this goroutine's records.
func TestScopesPerGoroutine(t *testing.T) {
	w := NewParameter("w", FromSlice([]float32{1, 2}))
	rec := &recorder{}
	endTrace := BeginTrace(rec)
	endTape := TrackParams([]*Tensor{w})
	var other *Tensor
	var otherNode *Node
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		other = Apply(identityPrim, nil, w)
		otherNode = NodeOf(w)
	}()
	wg.Wait()
	mine := NodeOf(w)
	endTape()
	endTrace()
	if other.IsSymbolic() || rec.emitted != 0 {
		t.Fatal("another goroutine's parameter op was captured by this goroutine's trace")
	}
	if otherNode != nil || mine == nil {
		t.Fatalf("parameter records: other goroutine sees %v, this one %v; want nil and a leaf", otherNode, mine)
	}
}

// BenchmarkGoid is the cost of one goroutine-id lookup: what an op that
// could belong to a scope pays while some scope is open somewhere. The
// runtime formats the whole stack, not only the header goid reads, so the
// cost grows with the depth of the call stack: it is measured at the
// bottom of stacks of several depths.
func BenchmarkGoid(b *testing.B) {
	for _, depth := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			b.ReportAllocs()
			atDepth(depth, func() {
				for b.Loop() {
					goid()
				}
			})
		})
	}
}

// atDepth calls f under n more frames of the stack.
//
//go:noinline
func atDepth(n int, f func()) {
	if n <= 1 {
		f()
		return
	}
	atDepth(n-1, f)
}

// BenchmarkGoidFastPath is what the same query costs while no scope is
// open anywhere: one atomic load.
func BenchmarkGoidFastPath(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		CurrentTracer()
	}
}

// BenchmarkApplyParam is an eager op on a parameter (a 2-element copy),
// with no scope open anywhere and while another goroutine holds a trace
// open: the difference is the lookup's share of a small op.
func BenchmarkApplyParam(b *testing.B) {
	w := NewParameter("w", FromSlice([]float32{1, 2}))
	b.Run("idle", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Apply(identityPrim, nil, w)
		}
	})
	b.Run("tracing-elsewhere", func(b *testing.B) {
		started, done := make(chan struct{}), make(chan struct{})
		go func() {
			end := BeginTrace(&recorder{})
			close(started)
			<-done
			end()
		}()
		<-started
		b.ReportAllocs()
		for b.Loop() {
			Apply(identityPrim, nil, w)
		}
		close(done)
	})
}
