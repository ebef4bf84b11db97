package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// job is one call of For, shared between the caller and the helpers it
// recruited. Jobs are recycled through a free list so a call allocates
// nothing.
type job struct {
	fn      func(lo, hi int)
	body    Body // instead of fn, for ForBody
	n       int
	nchunks int32
	next    atomic.Int32  // next chunk index to claim
	done    atomic.Int32  // chunks finished
	refs    atomic.Int32  // participants still touching the job (caller + helpers)
	wake    chan struct{} // signalled once, by the helper that finishes the last chunk
}

// run claims and runs chunks until none are left. It reports whether this
// participant finished the last chunk.
func (j *job) run() (last bool) {
	for {
		i := j.next.Add(1) - 1
		if i >= j.nchunks {
			return last
		}
		if j.chunk(i) {
			last = true
		}
	}
}

// chunk runs chunk i and reports whether it was the last to finish.
func (j *job) chunk(i int32) bool {
	lo := int(int64(i) * int64(j.n) / int64(j.nchunks))
	hi := int(int64(i+1) * int64(j.n) / int64(j.nchunks))
	if j.body != nil {
		j.body.Run(lo, hi)
	} else {
		j.fn(lo, hi)
	}
	return j.done.Add(1) == j.nchunks
}

// release drops one reference; the last participant recycles the job.
func (j *job) release() {
	if j.refs.Add(-1) == 0 {
		j.fn, j.body = nil, nil
		select {
		case free <- j:
		default: // free list full: let the GC have it
		}
	}
}

// worker is one pool goroutine. slot holds the job it is working on, or nil
// while it is idle; a caller recruits an idle worker by swapping its job
// into slot, so busy workers are never waited for.
type worker struct {
	slot   atomic.Pointer[job]
	parked atomic.Bool   // true while blocked on wake (set before the last look at slot)
	wake   chan struct{} // capacity 1: a token wakes a parked worker
}

// Spinning. Waking a parked thread costs tens of µs on a virtual machine
// (futex wake, then the hypervisor resumes a halted vCPU), as long as a
// whole seed-size GEMM. So a worker that has just finished a job polls its
// slot for a while before parking, and a caller waiting for helpers polls
// before blocking: back-to-back parallel kernels never sleep in between.
const (
	workerSpin = 200 * time.Microsecond
	callerSpin = 2 * time.Millisecond
)

var (
	free = make(chan *job, 64)

	mu       sync.Mutex                // guards starting workers
	pool     atomic.Pointer[[]*worker] // started workers (copy-on-write)
	nthreads atomic.Int32              // participants per call, caller included
)

func init() {
	nthreads.Store(int32(runtime.GOMAXPROCS(0)))
	pool.Store(new([]*worker))
}

// Workers returns the number of threads a call of For may use, the calling
// goroutine included. It starts as GOMAXPROCS at program start.
func Workers() int { return int(nthreads.Load()) }

// SetWorkers sets the number of threads For may use, the calling goroutine
// included, and returns the previous setting. n <= 0 means GOMAXPROCS. It is
// meant for start-up configuration and benchmarks (1 vs 2 threads); calls
// already in flight are unaffected.
func SetWorkers(n int) int {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	return int(nthreads.Swap(int32(n)))
}

// workers returns at least n started workers (fewer only if n <= 0).
func workers(n int) []*worker {
	if ws := *pool.Load(); len(ws) >= n {
		return ws
	}
	return startWorkers(n)
}

// startWorkers is the slow path of workers (kept apart so that the fast
// path's slice does not escape).
func startWorkers(n int) []*worker {
	mu.Lock()
	defer mu.Unlock()
	ws := *pool.Load()
	for len(ws) < n {
		w := &worker{wake: make(chan struct{}, 1)}
		ws = append(ws[:len(ws):len(ws)], w)
		go w.loop()
		// Two jobs per worker: one its slot may hold while a slow helper
		// has yet to release it, and one for a caller. Made now, the jobs
		// in flight at once never outnumber the free list, and a For on a
		// loaded machine, where helpers wake late, allocates nothing.
		for range 2 {
			select {
			case free <- &job{wake: make(chan struct{}, 1)}:
			default:
			}
		}
	}
	pool.Store(&ws)
	return ws
}

func (w *worker) loop() {
	for {
		if j := w.slot.Load(); j != nil {
			if j.run() {
				j.wake <- struct{}{}
			}
			j.release()
			w.slot.Store(nil)
			continue
		}
		// Idle: poll for a while, then park.
		start := time.Now()
		for spins := 0; w.slot.Load() == nil; spins++ {
			if spins&63 == 63 {
				if time.Since(start) > workerSpin {
					w.park()
					break
				}
				runtime.Gosched()
			}
		}
	}
}

// park blocks until a caller posts a job. parked is published before the
// final look at slot, and callers store slot before reading parked, so a
// job is never posted to a worker that sleeps through it.
func (w *worker) park() {
	w.parked.Store(true)
	if w.slot.Load() == nil {
		<-w.wake
	}
	w.parked.Store(false)
}

// post offers j to w and reports whether w took it (w was idle).
func (w *worker) post(j *job) bool {
	if !w.slot.CompareAndSwap(nil, j) {
		return false
	}
	if w.parked.Load() {
		select {
		case w.wake <- struct{}{}:
		default: // a token is already pending
		}
	}
	return true
}

// For calls fn(lo, hi) on disjoint chunks covering [0, n) and returns when
// all of them have run. Chunks hold at least grain items (grain < 1 counts as
// 1); there are at most a few per thread (chunksPerThread·Workers()), of
// nearly equal size, claimed dynamically by the calling goroutine and idle
// workers, so a slow thread delays the loop by one chunk at most. The
// first chunk always runs on the calling goroutine. Chunks may
// run concurrently, in any order; fn should expect ranges of uneven size.
//
// With n <= grain, or a single thread, fn(0, n) runs inline on the caller:
// no hand-off, no synchronisation. For n <= 0 fn is not called.
//
// For itself does not allocate. fn is shared with other goroutines, so a
// closure that captures variables escapes to the heap at the call site;
// callers on hot paths should build their func value once and reuse it.
func For(n, grain int, fn func(lo, hi int)) { forJob(n, grain, fn, nil) }

// Body is a loop body that carries its operands itself, for ForBody.
type Body interface {
	// Run processes items [lo, hi).
	Run(lo, hi int)
}

// ForBody is For for a body held in a value rather than a closure. A
// closure that captures its kernel's operands is allocated on every call;
// a kernel that keeps its Body in a pool and passes a pointer to it
// allocates nothing.
func ForBody(n, grain int, b Body) { forJob(n, grain, nil, b) }

func forJob(n, grain int, fn func(lo, hi int), body Body) {
	if n <= 0 {
		return
	}
	if body != nil {
		fn = nil
	}
	call := func(lo, hi int) {
		if body != nil {
			body.Run(lo, hi)
		} else {
			fn(lo, hi)
		}
	}
	if grain < 1 {
		grain = 1
	}
	t := int(nthreads.Load())
	if t <= 1 || n <= grain {
		call(0, n)
		return
	}
	// A few chunks per thread, claimed dynamically, so that a thread slowed
	// down by other processes (on a shared machine) or a late wake-up costs
	// only the chunk it holds, not half the loop.
	chunks := min(n/grain, chunksPerThread*t)
	if chunks <= 1 {
		call(0, n)
		return
	}
	helpers := min(chunks, t) - 1
	ws := workers(t - 1)

	var j *job
	select {
	case j = <-free:
	default:
		j = &job{wake: make(chan struct{}, 1)}
	}
	j.fn, j.body, j.n, j.nchunks = fn, body, n, int32(chunks)
	// The caller keeps the first chunk for itself (helpers claim from the
	// second on): with one chunk per thread, a loop run again and again
	// then gives each thread the same share every time, and data a
	// thread wrote or read last time is still in its own cache.
	j.next.Store(1)
	j.done.Store(0)
	j.refs.Store(1)
	// Recruit idle workers only; each helper holds a reference.
	for _, w := range ws {
		if helpers == 0 {
			break
		}
		j.refs.Add(1)
		if w.post(j) {
			helpers--
		} else {
			j.refs.Add(-1)
		}
	}
	if afterPost != nil {
		afterPost()
	}
	// Exactly one participant finishes the last chunk; if it was a helper,
	// it signals wake exactly once.
	last := j.chunk(0)
	if !j.run() && !last {
		wait(j)
	}
	j.release()
}

// afterPost, when set (by tests only), runs on the caller between
// posting a job to the helpers and running its own chunks: a test that
// delays the caller there lets the helpers claim whatever they can.
var afterPost func()

// wait receives the helper's completion signal, polling first (see
// callerSpin) and blocking only if the helpers take long.
func wait(j *job) {
	start := time.Now()
	for spins := 0; ; spins++ {
		select {
		case <-j.wake:
			return
		default:
		}
		if spins&63 == 63 {
			if time.Since(start) > callerSpin {
				<-j.wake
				return
			}
			// Let a helper that shares our P (GOMAXPROCS below the
			// thread count) finish its chunk.
			runtime.Gosched()
		}
	}
}

// chunksPerThread bounds the chunks For makes per thread: enough for load
// balance on a busy machine, few enough that per-chunk set-up (a GEMM
// re-packs its shared operand per chunk) stays negligible.
const chunksPerThread = 4
