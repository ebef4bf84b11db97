package profile_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/models"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/profile"
)

// lenet is the built-in LeNet-5, compiled, on a batch of 64 images.
func lenet(t testing.TB) (func(*spore.Tensor) *spore.Tensor, *spore.Tensor) {
	t.Helper()
	spore.SetSeed(0)
	net := models.NewLeNet5(10)
	f := spore.Jit(func(x *spore.Tensor) *spore.Tensor { return net.Construct(x) })
	x := spore.RandUniform(spore.Float32, -1, 1, 64, 1, 28, 28)
	f(x) // compile outside the profile
	return f, x
}

// profileCalls calls f n times under a profile, timing each call from
// outside, and returns the report and the calls' total time.
func profileCalls(t testing.TB, n int, f func()) (*profile.Report, time.Duration) {
	t.Helper()
	s, err := profile.Start(0)
	if err != nil {
		t.Fatal(err)
	}
	var measured time.Duration
	for range n {
		start := time.Now()
		f()
		measured += time.Since(start)
	}
	return s.Stop(), measured
}

// checkAddsUp: the table's rows sum to the report's step time, and that
// is within 10% of the calls' time measured outside (which adds the
// compiled function's dispatch: cache lookup, argument binding, result
// copies).
func checkAddsUp(t *testing.T, r *profile.Report, measured time.Duration) {
	t.Helper()
	var rows time.Duration
	for _, row := range r.Rows() {
		rows += row.Total
	}
	if rows != r.StepTime() {
		t.Errorf("rows sum to %v, step time %v", rows, r.StepTime())
	}
	ratio := float64(rows) / float64(measured)
	t.Logf("table total %v, measured %v: %.1f%%", rows, measured, 100*ratio)
	if ratio < 0.9 || ratio > 1.0 {
		t.Errorf("the table's steps take %.1f%% of the measured calls' time, want 90–100%%", 100*ratio)
	}
}

func TestTableAddsUpLeNet(t *testing.T) {
	f, x := lenet(t)
	r, measured := profileCalls(t, 20, func() { f(x) })
	checkAddsUp(t, r, measured)
	if len(r.Functions) != 1 || r.Functions[0].Runs != 20 {
		t.Fatalf("want one function run 20 times, got %d functions", len(r.Functions))
	}
	var buf bytes.Buffer
	if err := r.Table(&buf, 3); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	t.Log("\n" + out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1+3+1+1 || !strings.Contains(lines[0], "GFLOP/s") || !strings.HasPrefix(strings.TrimSpace(lines[4]), "(") {
		t.Errorf("want a header, 3 rows, a rest line and a total line:\n%s", out)
	}
	// The convolutions dominate LeNet and do arithmetic the model counts.
	rows := r.Rows()
	if rows[0].FLOPs == 0 || rows[0].GFLOPS <= 0 {
		t.Errorf("top row %+v has no FLOP rate", rows[0])
	}
	for i := 1; i < len(rows); i++ {
		if rows[i].Total > rows[i-1].Total {
			t.Fatalf("rows not sorted by time: %v after %v", rows[i].Total, rows[i-1].Total)
		}
	}
}

// TestTraceFile writes a trace, reads it back as plain JSON and checks
// every event: the format's fields, durations ≥ 0, events sorted by
// start, each step inside a run on its thread, names the steps' ops.
func TestTraceFile(t *testing.T) {
	f, x := lenet(t)
	const runs = 3
	r, _ := profileCalls(t, runs, func() { f(x) })
	path := filepath.Join(t.TempDir(), "trace.json")
	if err := r.WriteTraceFile(path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	fn := r.Functions[0]
	ops := map[string]bool{}
	for _, s := range fn.Steps {
		ops[s.Label()] = true
	}
	var xs []map[string]any
	lastTs := -1.0
	for i, e := range raw.TraceEvents {
		for _, k := range []string{"name", "ph", "pid", "tid"} {
			if _, ok := e[k]; !ok {
				t.Fatalf("event %d has no %q: %v", i, k, e)
			}
		}
		switch e["ph"] {
		case "M":
			continue
		case "X":
		default:
			t.Fatalf("event %d: phase %v", i, e["ph"])
		}
		ts, ok1 := e["ts"].(float64)
		dur, ok2 := e["dur"].(float64)
		if !ok1 || !ok2 || dur < 0 || ts < 0 {
			t.Fatalf("event %d: ts %v dur %v", i, e["ts"], e["dur"])
		}
		if ts < lastTs {
			t.Fatalf("event %d starts at %v, before the previous one (%v)", i, ts, lastTs)
		}
		lastTs = ts
		xs = append(xs, e)
	}
	if len(xs) != runs*(len(fn.Steps)+1) {
		t.Fatalf("%d complete events, want %d runs × (%d steps + the run)", len(xs), runs, len(fn.Steps))
	}
	var run map[string]any
	steps := 0
	for _, e := range xs {
		switch e["cat"] {
		case "run":
			if e["name"] != fn.Name {
				t.Errorf("run named %v, want %q", e["name"], fn.Name)
			}
			run = e
		case "step":
			if run == nil {
				t.Fatalf("step %v before any run", e["name"])
			}
			name, _ := e["name"].(string)
			if !ops[name] {
				t.Errorf("step event %q names no step of the plan", name)
			}
			end, runEnd := e["ts"].(float64)+e["dur"].(float64), run["ts"].(float64)+run["dur"].(float64)
			if e["tid"] != run["tid"] || e["ts"].(float64) < run["ts"].(float64) || end > runEnd+1e-3 {
				t.Errorf("step %v [%v, %v] outside its run [%v, %v]", name, e["ts"], end, run["ts"], runEnd)
			}
			steps++
		default:
			t.Errorf("event category %v", e["cat"])
		}
	}
	if steps != runs*len(fn.Steps) {
		t.Errorf("%d step events", steps)
	}
}

// TestBodiesAttributed: a While's body is a function of its own, its
// steps counted once per iteration, and the While step's own time
// excludes them, so the table still sums to the top-level runs.
func TestBodiesAttributed(t *testing.T) {
	const iters = 4
	f := spore.Jit(func(x *spore.Tensor) *spore.Tensor {
		out := spore.While(
			func(s ...*spore.Tensor) *spore.Tensor { return ops.Less(s[0], ops.ScalarLike(s[0], iters)) },
			func(s ...*spore.Tensor) []*spore.Tensor {
				return []*spore.Tensor{ops.Add(s[0], ops.ScalarLike(s[0], 1)), ops.Tanh(ops.MatMul(s[1], s[1]))}
			},
			ops.ScalarLike(x, 0), x)
		return ops.Exp(out[1])
	})
	x := spore.RandUniform(spore.Float32, -0.1, 0.1, 64, 64)
	want := f(x).Float32s()
	r, _ := profileCalls(t, 2, func() {
		got := f(x).Float32s()
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("profiled result differs at %d", i)
			}
		}
	})
	var top *profile.Function
	var bodies []*profile.Function
	for _, fn := range r.Functions {
		if fn.Parent == nil {
			top = fn
		} else {
			bodies = append(bodies, fn)
		}
	}
	if top == nil || len(bodies) == 0 {
		t.Fatalf("want a top-level function and its bodies, got %d functions", len(r.Functions))
	}
	var bodyTime time.Duration
	for _, b := range bodies {
		if b.Parent != top {
			t.Errorf("body %q's parent is %v", b.Name, b.Parent.Name)
		}
		bodyTime += b.Time
		if b.Runs < 2*iters {
			t.Errorf("body %q ran %d times, want at least %d", b.Name, b.Runs, 2*iters)
		}
	}
	loop := top.Steps[bodies[0].ParentStep]
	if loop.Total-loop.Self != bodyTime {
		t.Errorf("the loop step's children took %v, its bodies' runs %v", loop.Total-loop.Self, bodyTime)
	}
	if r.StepTime() != top.Time {
		t.Errorf("steps' own times sum to %v, the top-level runs took %v", r.StepTime(), top.Time)
	}
	// In the trace, the bodies' runs lie on their parent's thread.
	for _, e := range r.Trace().TraceEvents {
		if e.Ph == "X" && e.Tid != top.Track {
			t.Errorf("event %q on thread %d, want %d", e.Name, e.Tid, top.Track)
		}
	}
}

// TestConcurrentFunctions: functions running at once on two goroutines
// get a thread each.
func TestConcurrentFunctions(t *testing.T) {
	mk := func() (func(*spore.Tensor) *spore.Tensor, *spore.Tensor) {
		f := spore.Jit(func(x *spore.Tensor) *spore.Tensor { return ops.Sum(ops.MatMul(x, x)) })
		x := spore.RandUniform(spore.Float32, -1, 1, 32, 32)
		f(x)
		return f, x
	}
	f1, x1 := mk()
	f2, x2 := mk()
	s, err := profile.Start(0)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan bool)
	go func() {
		for range 10 {
			f1(x1)
		}
		done <- true
	}()
	for range 10 {
		f2(x2)
	}
	<-done
	r := s.Stop()
	if len(r.Functions) != 2 || r.Functions[0].Track == r.Functions[1].Track {
		t.Fatalf("want two functions on two threads, got %d", len(r.Functions))
	}
	tids := map[int]int{}
	for _, e := range r.Trace().TraceEvents {
		if e.Ph == "X" {
			tids[e.Tid]++
		}
	}
	if len(tids) != 2 {
		t.Errorf("events on threads %v", tids)
	}
}

func TestOneSessionAtATime(t *testing.T) {
	s, err := profile.Start(0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if _, err := profile.Start(0); err == nil || !strings.Contains(err.Error(), "already recording") {
		t.Fatalf("second Start: %v", err)
	}
	if _, err := profile.Run(func() {}); err == nil {
		t.Fatal("Run while a session records: no error")
	}
}

// TestSaveRecords: a report's functions round-trip through their files.
func TestSaveRecords(t *testing.T) {
	f, x := lenet(t)
	r, _ := profileCalls(t, 2, func() { f(x) })
	dir := t.TempDir()
	for range 2 { // the second save numbers its files past the first's
		if err := r.Save(dir); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := profile.ReadRecords(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	fn := r.Functions[0]
	rec := recs[0]
	if rec.Name != fn.Name || rec.Inputs != "(float32[64,1,28,28])" || rec.Runs != 2 || len(rec.Steps) != len(fn.Steps) || rec.Nodes != fn.Nodes {
		t.Fatalf("record %+v", rec)
	}
	ids := make([]int, len(rec.Steps))
	for i, s := range rec.Steps {
		ids[i] = s.ID
		if s.Op != fn.Steps[i].Op || s.SelfNs != int64(fn.Steps[i].Self) || s.Calls != 2 {
			t.Errorf("step %d: %+v", i, s)
		}
	}
	if !sort.IntsAreSorted(ids) || ids[len(ids)-1] >= rec.Nodes {
		t.Errorf("step IDs %v are not positions among %d nodes", ids, rec.Nodes)
	}
}
