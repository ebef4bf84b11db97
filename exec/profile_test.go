package exec

import (
	"errors"
	"sync"
	"testing"

	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// profPlan compiles a small chain of steps of differing kinds.
func profPlan(t testing.TB) (*Plan, []*tensor.Tensor, []*tensor.Tensor) {
	t.Helper()
	m := tensor.Meta{Shape: tensor.Shape{16, 16}, DType: tensor.Float32}
	g, err := graph.Trace("chain", []tensor.Meta{m, m}, func(in []*tensor.Tensor) []*tensor.Tensor {
		y := ops.MatMul(in[0], in[1])
		y = ops.Exp(ops.Neg(y))
		return []*tensor.Tensor{ops.Sum(ops.MatMul(y, in[1]), 1)}
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(g)
	if err != nil {
		t.Fatal(err)
	}
	args := []*tensor.Tensor{tensor.RandUniform(tensor.Float32, -1, 1, 16, 16), tensor.RandUniform(tensor.Float32, -1, 1, 16, 16)}
	outs := []*tensor.Tensor{tensor.New(tensor.Float32, 16)}
	return p, args, outs
}

// countClock counts the clock's readings until the returned function
// restores it.
func countClock() (n *int, restore func()) {
	var mu sync.Mutex
	calls := 0
	old := clock
	clock = func() int64 {
		mu.Lock()
		calls++
		mu.Unlock()
		return old()
	}
	return &calls, func() { clock = old }
}

// TestProfileOffCostsNothing: with no recorder, a run reads no clock and
// allocates nothing; with one, it reads the clock once per step and once
// more, and its results are the same.
func TestProfileOffCostsNothing(t *testing.T) {
	p, args, outs := profPlan(t)
	calls, restore := countClock()
	defer restore()
	if a := testing.AllocsPerRun(50, func() { p.RunInto(args, outs) }); a != 0 {
		t.Errorf("RunInto with profiling off: %v allocations per run, want 0", a)
	}
	if *calls != 0 {
		t.Fatalf("profiling off: the clock was read %d times", *calls)
	}
	want := append([]float32(nil), outs[0].Float32s()...)

	r, err := StartProfile(0)
	if err != nil {
		t.Fatal(err)
	}
	*calls = 0
	const runs = 5
	for range runs {
		p.RunInto(args, outs)
	}
	if got, wantCalls := *calls, runs*(p.NumSteps()+1); got != wantCalls {
		t.Errorf("profiling on: %d clock readings for %d runs of %d steps, want %d", got, runs, p.NumSteps(), wantCalls)
	}
	prof := r.Stop()
	for i, v := range outs[0].Float32s() {
		if v != want[i] {
			t.Fatalf("element %d is %v profiled, %v not", i, v, want[i])
		}
	}
	if len(prof.Plans) != 1 {
		t.Fatalf("%d plans recorded, want 1", len(prof.Plans))
	}
	pp := prof.Plans[0]
	if pp.Runs != runs || len(pp.Steps) != p.NumSteps() || pp.Name != "chain" {
		t.Fatalf("recorded %q: %d runs of %d steps, want %d of %d", pp.Name, pp.Runs, len(pp.Steps), runs, p.NumSteps())
	}
	var sum int64
	for i, s := range pp.Steps {
		if s.Calls != runs || s.TotalNs < 0 || s.ChildNs != 0 || s.Value != p.steps[i].v {
			t.Errorf("step %d: %+v", i, s)
		}
		sum += s.TotalNs
	}
	if sum != pp.RunNs {
		t.Errorf("steps sum to %d ns, runs span %d ns: the clock readings must tile the run", sum, pp.RunNs)
	}
	if n := len(pp.Events); n != runs*(p.NumSteps()+1) {
		t.Errorf("%d events, want %d", n, runs*(p.NumSteps()+1))
	}

	// Stopped: back to no clock and no allocation; the plan forgot the
	// profile.
	*calls = 0
	if a := testing.AllocsPerRun(50, func() { p.RunInto(args, outs) }); a != 0 || *calls != 0 {
		t.Errorf("after Stop: %v allocations, %d clock readings per run", a, *calls)
	}
	if p.prof != nil {
		t.Error("the plan still holds the stopped profile")
	}
}

// TestProfileEventLimit: events beyond the limit are dropped whole runs
// at a time and counted; the step totals still count every run.
func TestProfileEventLimit(t *testing.T) {
	p, args, outs := profPlan(t)
	per := p.NumSteps() + 1
	r, err := StartProfile(2*per + 1)
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		p.RunInto(args, outs)
	}
	prof := r.Stop()
	pp := prof.Plans[0]
	if len(pp.Events) != 2*per || prof.DroppedEvents != int64(2*per) {
		t.Errorf("kept %d events, dropped %d; want %d and %d", len(pp.Events), prof.DroppedEvents, 2*per, 2*per)
	}
	if pp.Steps[0].Calls != 4 {
		t.Errorf("step 0 counted %d calls, want 4", pp.Steps[0].Calls)
	}
}

// TestProfileOneAtATime: a second recorder is refused while one records,
// and the next one starts afresh.
func TestProfileOneAtATime(t *testing.T) {
	r, err := StartProfile(0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := StartProfile(0); !errors.Is(err, ErrRecording) {
		t.Fatalf("second StartProfile: %v, want ErrRecording", err)
	}
	r.Stop()
	r.Stop() // a second Stop is harmless
	p, args, outs := profPlan(t)
	r2, err := StartProfile(0)
	if err != nil {
		t.Fatal(err)
	}
	p.RunInto(args, outs)
	if got := r2.Stop(); len(got.Plans) != 1 || got.Plans[0].Runs != 1 {
		t.Fatalf("fresh recorder saw %d plans", len(got.Plans))
	}
}

// TestProfileConcurrentRuns: plans run on several goroutines while a
// recorder records and stops (run with -race).
func TestProfileConcurrentRuns(t *testing.T) {
	r, err := StartProfile(0)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 3 {
		p, args, outs := profPlan(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				p.RunInto(args, outs)
			}
		}()
	}
	prof := r.Stop()
	wg.Wait()
	tracks := map[int]bool{}
	for _, pp := range prof.Plans {
		if tracks[pp.Track] {
			t.Errorf("two top-level plans share track %d", pp.Track)
		}
		tracks[pp.Track] = true
		var sum int64
		for _, s := range pp.Steps {
			sum += s.TotalNs
		}
		if sum != pp.RunNs {
			t.Errorf("plan on track %d: steps %d ns, runs %d ns", pp.Track, sum, pp.RunNs)
		}
	}
}

// BenchmarkProfileClock is the cost of one clock reading, what profiling
// adds per step (with an event appended).
func BenchmarkProfileClock(b *testing.B) {
	var t int64
	for b.Loop() {
		t += clock()
	}
	_ = t
}

// BenchmarkProfileRun runs a small plan with profiling off and on, side
// by side: the difference is the per-step cost of recording.
func BenchmarkProfileRun(b *testing.B) {
	p, args, outs := profPlan(b)
	b.Run("off", func(b *testing.B) {
		for b.Loop() {
			p.RunInto(args, outs)
		}
	})
	b.Run("on", func(b *testing.B) {
		r, err := StartProfile(1 << 16)
		if err != nil {
			b.Fatal(err)
		}
		defer r.Stop()
		for b.Loop() {
			p.RunInto(args, outs)
		}
	})
}
