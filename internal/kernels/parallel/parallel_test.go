package parallel

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

func TestForCoversRange(t *testing.T) {
	defer SetWorkers(SetWorkers(4))
	for _, tc := range []struct{ n, grain int }{
		{0, 1}, {1, 1}, {5, 10}, {10, 1}, {1000, 7}, {1000, 1000}, {1001, 500}, {3, 0},
	} {
		hits := make([]int32, tc.n)
		var calls atomic.Int32
		For(tc.n, tc.grain, func(lo, hi int) {
			calls.Add(1)
			if lo >= hi {
				t.Errorf("n=%d grain=%d: empty chunk [%d,%d)", tc.n, tc.grain, lo, hi)
			}
			g := max(tc.grain, 1)
			if hi-lo < g && !(lo == 0 && hi == tc.n) {
				t.Errorf("n=%d grain=%d: chunk [%d,%d) smaller than grain", tc.n, tc.grain, lo, hi)
			}
			for i := lo; i < hi; i++ {
				atomic.AddInt32(&hits[i], 1)
			}
		})
		for i, h := range hits {
			if h != 1 {
				t.Fatalf("n=%d grain=%d: index %d run %d times", tc.n, tc.grain, i, h)
			}
		}
		if c := int(calls.Load()); c > chunksPerThread*Workers() {
			t.Errorf("n=%d grain=%d: %d chunks, more than %d per thread", tc.n, tc.grain, c, chunksPerThread)
		}
	}
}

func TestForInlineWhenSmall(t *testing.T) {
	defer SetWorkers(SetWorkers(2))
	calls := 0 // not atomic on purpose: the race detector flags any hand-off
	For(10, 10, func(lo, hi int) { calls++ })
	SetWorkers(1)
	For(1000, 1, func(lo, hi int) { calls++ })
	if calls != 2 {
		t.Fatalf("calls = %d, want 2", calls)
	}
}

func TestForNestedAndConcurrent(t *testing.T) {
	defer SetWorkers(SetWorkers(3))
	var total atomic.Int64
	done := make(chan bool)
	for g := 0; g < 4; g++ {
		go func() {
			for r := 0; r < 50; r++ {
				For(8, 1, func(lo, hi int) {
					For(100, 10, func(lo2, hi2 int) {
						total.Add(int64((hi - lo) * (hi2 - lo2)))
					})
				})
			}
			done <- true
		}()
	}
	for g := 0; g < 4; g++ {
		<-done
	}
	if got, want := total.Load(), int64(4*50*8*100); got != want {
		t.Fatalf("total = %d, want %d", got, want)
	}
}

func TestForNoAllocs(t *testing.T) {
	defer SetWorkers(SetWorkers(2))
	// Each item writes only its own slot: chunks run concurrently.
	sink := make([]int64, 1<<12)
	fn := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			sink[i] += int64(i)
		}
	}
	For(1<<12, 1, fn) // start the pool
	if a := testing.AllocsPerRun(200, func() { For(1<<12, 64, fn) }); a != 0 {
		t.Errorf("For allocated %v times per call, want 0", a)
	}
	if a := testing.AllocsPerRun(200, func() { For(10, 64, fn) }); a != 0 {
		t.Errorf("inline For allocated %v times per call, want 0", a)
	}
}

func TestSetWorkers(t *testing.T) {
	old := SetWorkers(5)
	defer SetWorkers(old)
	if Workers() != 5 {
		t.Fatalf("Workers() = %d, want 5", Workers())
	}
	if prev := SetWorkers(0); prev != 5 || Workers() < 1 {
		t.Fatalf("SetWorkers(0) = %d, Workers() = %d", prev, Workers())
	}
}

func BenchmarkForOverhead(b *testing.B) {
	for _, w := range []int{1, 2} {
		b.Run([]string{"", "1thread", "2threads"}[w], func(b *testing.B) {
			defer SetWorkers(SetWorkers(w))
			var sink [2]int64
			fn := func(lo, hi int) { sink[lo&1] += int64(hi) }
			for b.Loop() {
				For(2, 1, fn)
			}
		})
	}
}

// More threads than Ps must still work (helpers share Ps with the caller).
func TestForMoreThreadsThanProcs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	defer SetWorkers(SetWorkers(4))
	var sum atomic.Int64
	for r := 0; r < 100; r++ {
		For(1000, 1, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				sum.Add(int64(i))
			}
		})
	}
	if got, want := sum.Load(), int64(100*999*1000/2); got != want {
		t.Fatalf("sum = %d, want %d", got, want)
	}
}

// sumBody adds squares of its range into per-item slots.
type sumBody struct{ out []int }

func (b *sumBody) Run(lo, hi int) {
	for i := lo; i < hi; i++ {
		b.out[i] = i * i
	}
}

func TestForBody(t *testing.T) {
	b := &sumBody{out: make([]int, 10000)}
	ForBody(len(b.out), 16, b)
	for i, v := range b.out {
		if v != i*i {
			t.Fatalf("item %d = %d", i, v)
		}
	}
	if n := testing.AllocsPerRun(20, func() { ForBody(len(b.out), 16, b) }); n != 0 {
		t.Fatalf("ForBody allocates %v times", n)
	}
}

// goid returns the calling goroutine's id, from its stack header.
func goid() string {
	var buf [64]byte
	s := string(buf[:runtime.Stack(buf[:], false)])
	s = s[len("goroutine "):]
	for i, c := range s {
		if c == ' ' {
			return s[:i]
		}
	}
	return s
}

// TestCallerRunsFirstChunk checks that the first chunk always runs on
// the calling goroutine, however fast the helpers are (the caller is
// held back after posting the job, so they could take any chunk): a loop
// run again and again then gives each thread the same share.
func TestCallerRunsFirstChunk(t *testing.T) {
	defer SetWorkers(SetWorkers(2))
	afterPost = func() { time.Sleep(50 * time.Microsecond) }
	defer func() { afterPost = nil }()
	me := goid()
	for _, tc := range []struct{ n, grain int }{{2, 1}, {16, 8}, {100, 1}, {7, 3}} {
		for range 20 {
			var first atomic.Value
			For(tc.n, tc.grain, func(lo, hi int) {
				if lo == 0 {
					first.Store(goid())
				}
			})
			if g := first.Load(); g != me {
				t.Fatalf("n=%d grain=%d: first chunk ran on goroutine %v, the caller is %s", tc.n, tc.grain, g, me)
			}
		}
	}
}
