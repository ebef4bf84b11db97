package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// job is one call of For, shared between the caller and the helpers it
// woke. Jobs are recycled through a free list so a call allocates nothing.
type job struct {
	fn      func(lo, hi int)
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
		lo := int(int64(i) * int64(j.n) / int64(j.nchunks))
		hi := int(int64(i+1) * int64(j.n) / int64(j.nchunks))
		j.fn(lo, hi)
		if j.done.Add(1) == j.nchunks {
			last = true
		}
	}
}

// release drops one reference; the last participant recycles the job.
func (j *job) release() {
	if j.refs.Add(-1) == 0 {
		j.fn = nil
		select {
		case free <- j:
		default: // free list full: let the GC have it
		}
	}
}

var (
	// work is unbuffered on purpose: a send succeeds only if a worker is
	// parked in receive, i.e. idle right now. Busy workers are never waited for.
	work = make(chan *job)
	free = make(chan *job, 64)

	mu       sync.Mutex   // guards started
	started  int          // worker goroutines started so far
	nthreads atomic.Int32 // participants per call, caller included
)

func init() {
	nthreads.Store(int32(runtime.GOMAXPROCS(0)))
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

// ensure starts workers until there are want-1 of them.
func ensure(want int) {
	mu.Lock()
	for started < want-1 {
		started++
		go worker()
	}
	mu.Unlock()
}

func worker() {
	for j := range work {
		if j.run() {
			j.wake <- struct{}{}
		}
		j.release()
	}
}

// chunksPerThread bounds the chunks For makes per thread: enough for load
// balance on a busy machine, few enough that per-chunk set-up (a GEMM
// re-packs its shared operand per chunk) stays negligible.
const chunksPerThread = 4

// poolStarted caches whether the pool has at least the current number of
// workers, so the common path is one atomic load instead of a mutex.
var poolStarted atomic.Int32

// For calls fn(lo, hi) on disjoint chunks covering [0, n) and returns when
// all of them have run. Chunks hold at least grain items (grain < 1 counts as
// 1); there are at most a few per thread (chunksPerThread·Workers()), of
// nearly equal size, claimed dynamically by the calling goroutine and idle
// workers, so a slow thread delays the loop by one chunk at most. Chunks may
// run concurrently, in any order; fn should expect ranges of uneven size.
//
// With n <= grain, or a single thread, fn(0, n) runs inline on the caller:
// no hand-off, no synchronisation. For n <= 0 fn is not called.
//
// For itself does not allocate. fn is shared with other goroutines, so a
// closure that captures variables escapes to the heap at the call site;
// callers on hot paths should build their func value once and reuse it.
func For(n, grain int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	if grain < 1 {
		grain = 1
	}
	t := int(nthreads.Load())
	if t <= 1 || n <= grain {
		fn(0, n)
		return
	}
	// A few chunks per thread, claimed dynamically, so that a thread slowed
	// down by other processes (on a shared machine) or a late wake-up costs
	// only the chunk it holds, not half the loop.
	chunks := min(n/grain, chunksPerThread*t)
	if chunks <= 1 {
		fn(0, n)
		return
	}
	helpers := min(chunks, t) - 1
	if int(poolStarted.Load()) < helpers+1 {
		ensure(helpers + 1)
		for {
			old := poolStarted.Load()
			if int(old) >= helpers+1 || poolStarted.CompareAndSwap(old, int32(helpers+1)) {
				break
			}
		}
	}

	var j *job
	select {
	case j = <-free:
	default:
		j = &job{wake: make(chan struct{}, 1)}
	}
	j.fn, j.n, j.nchunks = fn, n, int32(chunks)
	j.next.Store(0)
	j.done.Store(0)
	j.refs.Store(1)
	// Offer the job to idle workers only; each helper holds a reference.
	for h := 0; h < helpers; h++ {
		j.refs.Add(1)
		select {
		case work <- j:
		default:
			j.refs.Add(-1)
			h = helpers // nobody idle: stop offering
		}
	}
	// Exactly one participant finishes the last chunk; if it was a helper,
	// it signals wake exactly once.
	if !j.run() {
		<-j.wake
	}
	j.release()
}
