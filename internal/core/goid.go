package core

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/sporeml/spore/internal/freelist"
)

// This file is the one place spore asks which goroutine is running.
//
// Why Go needs it. Tracing, differentiation over parameters and autocast
// are scopes a goroutine opens (BeginTrace, TrackParams, BeginAutocast)
// and closes, and while one is open it must see every op that goroutine
// applies — including ops whose inputs carry nothing to say so. The case
// that decides it is a parameter read inside a traced function: the
// parameter is a plain, shared, concrete tensor, yet the op reading it
// must be recorded into the trace, or the plan bakes today's weights in as
// a constant (the stale-parameter trap, see TrackLeaf and dispatch).
// Likewise a parameter's autodiff record cannot hang off the parameter,
// which other goroutines differentiate at the same time, and an autocast
// policy must reach ops applied to fresh inputs. PyTorch keeps such modes
// in thread-local state; Go offers neither goroutine-local storage nor a
// goroutine id, and threading a context argument through every op would
// change every signature in the framework. So the scopes are kept per
// goroutine id, read from the header of runtime.Stack.
//
// When it is paid. Each kind of scope counts, in one process-wide atomic
// (goroutineStacks.active), how many are open on any goroutine. While the
// count is zero — always, in plain eager use — a lookup is that one atomic
// load and goid is never called (TestGoidFastPath checks this). Only while
// some goroutine traces, differentiates parameters or autocasts does an
// op that could belong to a scope (a symbolic input or a parameter input
// for traces and tapes, every op for autocast) pay a goroutine-id lookup.
//
// What it costs. BenchmarkGoid measures the lookup itself. runtime.Stack
// formats the whole call stack (file:line of every frame) although goid
// reads only its first line, so the cost grows with the caller's depth:
// about 4 µs of CPU at the bottom of a shallow stack and about 0.5 µs more
// per frame (38 µs under 64 extra frames), against about 3 ns for the fast
// path's atomic load (BenchmarkGoidFastPath) — CPU time on a busy 2-core
// AMD EPYC, go1.26; wall-clock benchmark figures there were about twice
// that. It allocates nothing. It is why the checks above look at the
// inputs before asking, and why a reverse pass caches parameters' records
// (Untracked's nodeOf): while a scope is open, an op that must ask costs
// as much as a small kernel, or more. Eager mixed precision (autocast) pays
// it on every op.

// goroutineStacks is a stack of T per goroutine, keyed by goroutine id:
// the nested traces, tapes or autocast policies of each goroutine,
// innermost last. A goroutine's stack is touched only by that goroutine;
// the map is shared and locked. An empty stack is removed, so the map
// holds only goroutines inside a scope.
type goroutineStacks[T any] struct {
	// active counts the entries pushed and not yet popped, on every
	// goroutine: the fast path's one atomic load.
	active atomic.Int32
	mu     sync.RWMutex
	// A plain map under a lock rather than a sync.Map: lookups then box no
	// key and allocate nothing.
	m map[int64]*goroutineStack[T]
}

// goroutineStack is one goroutine's entries, innermost last.
type goroutineStack[T any] struct{ s []T }

// push adds v on top of the calling goroutine's stack and returns the
// stack and the function that pops v again; active is non-zero from the
// moment push returns. The pop must run on the same goroutine.
func (g *goroutineStacks[T]) push(v T) (st *goroutineStack[T], pop func()) {
	gid := goid()
	g.mu.Lock()
	st = g.m[gid]
	if st == nil {
		if g.m == nil {
			g.m = map[int64]*goroutineStack[T]{}
		}
		st = &goroutineStack[T]{}
		g.m[gid] = st
	}
	g.mu.Unlock()
	st.s = append(st.s, v)
	g.active.Add(1)
	return st, func() {
		var zero T
		st.s[len(st.s)-1] = zero
		st.s = st.s[:len(st.s)-1]
		if len(st.s) == 0 {
			g.mu.Lock()
			delete(g.m, gid)
			g.mu.Unlock()
		}
		g.active.Add(-1)
	}
}

// mine returns the calling goroutine's stack, or nil when it has none.
// While no goroutine has one it costs one atomic load.
func (g *goroutineStacks[T]) mine() *goroutineStack[T] {
	if g.active.Load() == 0 {
		return nil
	}
	gid := goid()
	g.mu.RLock()
	st := g.m[gid]
	g.mu.RUnlock()
	return st
}

// top returns the innermost entry of the calling goroutine, or the zero T
// when it has none.
func (g *goroutineStacks[T]) top() T {
	var zero T
	st := g.mine()
	if st == nil || len(st.s) == 0 {
		return zero
	}
	return st.s[len(st.s)-1]
}

// stackBufs holds the buffers goid reads the stack header into: the
// buffer escapes into runtime.Stack, and pooling it keeps the call free of
// allocations.
var stackBufs freelist.List[[64]byte]

// goidHook, when set, is called by every goid: tests count the lookups
// with it to check that the fast path makes none.
var goidHook atomic.Pointer[func()]

// goid returns the calling goroutine's id, parsed from the first line of
// runtime.Stack ("goroutine 123 [running]:"). Go hides the id on purpose;
// see the top of this file for why spore needs it and when it is paid.
func goid() int64 {
	if h := goidHook.Load(); h != nil {
		(*h)()
	}
	buf := stackBufs.Get()
	defer stackBufs.Put(buf)
	n := runtime.Stack(buf[:], false)
	var id int64
	for _, c := range buf[len("goroutine "):n] {
		if c < '0' || c > '9' {
			break
		}
		// Parsed by hand: strconv would allocate a string per call, and
		// this runs for every parameter read during a differentiation.
		id = id*10 + int64(c-'0')
	}
	return id
}
