package freelist_test

import (
	"runtime"
	"runtime/debug"
	"sync"
	"testing"

	"github.com/sporeml/spore/internal/freelist"
)

func TestNew(t *testing.T) {
	made := 0
	l := freelist.List[int]{New: func() *int { made++; v := 7; return &v }}
	var held []*int
	for _, tc := range []struct {
		name string
		put  bool // put back everything held before the Get
		made int  // objects made after the Get
		same bool // the Get returns the object put back last
	}{
		{"empty list makes one", false, 1, false},
		{"a put-back object is reused", true, 1, true},
		{"nothing put back: another is made", false, 2, false},
	} {
		var last *int
		if tc.put {
			for _, x := range held {
				l.Put(x)
			}
			last, held = held[len(held)-1], nil
		}
		x := l.Get()
		held = append(held, x)
		if *x != 7 {
			t.Errorf("%s: got %d, want 7", tc.name, *x)
		}
		if made != tc.made {
			t.Errorf("%s: %d objects made, want %d", tc.name, made, tc.made)
		}
		if tc.same && x != last {
			t.Errorf("%s: Get did not return the object put back", tc.name)
		}
	}
}

// TestAcrossThreadsAndCollections is the reason the list exists: objects
// put back on one thread are found by Gets on another, and a collection
// between calls does not drop them, so a warmed-up user allocates nothing.
func TestAcrossThreadsAndCollections(t *testing.T) {
	var l freelist.List[[64]float32]
	const workers = 4
	var wg sync.WaitGroup
	round := func() {
		xs := make([]*[64]float32, workers)
		for i := range xs {
			xs[i] = l.Get()
		}
		for _, x := range xs {
			wg.Add(1)
			go func() { // put back from other goroutines, on other threads
				defer wg.Done()
				runtime.LockOSThread()
				l.Put(x)
			}()
		}
		wg.Wait()
	}
	round()
	seen := map[*[64]float32]bool{}
	for range 3 {
		runtime.GC()
		xs := make([]*[64]float32, workers)
		for i := range xs {
			xs[i] = l.Get()
			seen[xs[i]] = true
		}
		for _, x := range xs {
			l.Put(x)
		}
	}
	if len(seen) != workers {
		t.Errorf("%d distinct objects over three rounds, want the %d first made", len(seen), workers)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	if n := testing.AllocsPerRun(20, func() {
		x, y := l.Get(), l.Get()
		l.Put(y)
		l.Put(x)
		runtime.GC()
	}); n > 0 {
		t.Errorf("%v allocations per warm Get/Put pair", n)
	}
}
