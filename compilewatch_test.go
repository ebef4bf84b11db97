package spore_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/tensor"
)

// watchCase is one compilation whose record TestWatchCompilesRecords
// checks: run compiles a function named name (and may compile others).
type watchCase struct {
	name  string
	run   func(t *testing.T)
	level spore.Level
	// fused lists, by the pass that makes them, the absorbed-op lists
	// that must appear among the final graph's fused nodes.
	fused map[string][][]string
	// regions says the traced graph holds control flow whose bodies must
	// appear as nested graphs; hoisted names an op that hoisting moves out
	// of a loop body into the enclosing graph.
	regions bool
	hoisted string
	// dead is the least number of nodes dead-code elimination removes.
	dead int
	// source, when set, is where the traced ops' source lines are: every
	// op the tracer recorded names one there.
	source string
	// stages, when set, are the stages the record must list, in order.
	stages []string
}

func watchCases() []watchCase {
	return []watchCase{
		{
			name:  "watch_step",
			level: spore.O1,
			run: func(t *testing.T) {
				spore.SetSeed(3)
				net := nn.NewSequentialCell(nn.NewFlatten(), nn.NewDense(16, 32), nn.NewReLU(), nn.NewDense(32, 4))
				opt := optim.NewSGD(net.Base().TrainableParameters(), optim.SGDConfig{Common: optim.Common{LR: optim.Constant(0.1)}})
				step := nn.NewTrainOneStepCell(nn.NewWithLossCell(net, nn.NewSoftmaxCrossEntropyWithLogits(true, nn.Mean)), opt,
					nn.TrainOneStepConfig{Jit: spore.JitConfig{Name: "watch_step", Level: spore.O1}})
				spore.SetContext(spore.WithMode(spore.GraphMode))
				defer spore.SetContext(spore.WithMode(spore.PyNativeMode))
				x := tensor.RandNormal(spore.Float32, 0, 1, 8, 1, 4, 4)
				y := tensor.FromSlice([]int32{0, 1, 2, 3, 0, 1, 2, 3}, 8)
				step.Step(x, y)
				if st := step.StepStats(); st.Compiles != 1 {
					t.Fatalf("the step compiled %d times, want 1", st.Compiles)
				}
			},
			fused: map[string][][]string{
				"anchor":     {{"MatMul", "Add", "ReLU"}},
				"gemmupdate": {{"MatMul", "Mul", "Sub"}},
			},
			// Each fusion leaves its absorbed producers to DCE: two
			// epilogues (MatMul, Add, ReLU; MatMul, Add), two updates
			// (MatMul, Mul) and the loop fusions' members.
			dead: 8,
		},
		{
			name:  "watch_flow",
			level: spore.O1,
			run: func(t *testing.T) {
				f := func(a, b, xs *spore.Tensor) *spore.Tensor {
					c, _ := spore.Scan(func(c, x []*spore.Tensor) ([]*spore.Tensor, []*spore.Tensor) {
						return []*spore.Tensor{ops.Tanh(ops.Add(ops.MatMul(c[0], ops.MatMul(a, b)), x[0]))}, nil
					}, []*spore.Tensor{tensor.Zeros(spore.Float64, 1, 3)}, []*spore.Tensor{xs})
					s := ops.Sum(c[0])
					return spore.Cond(ops.Greater(s, ops.ScalarLike(s, 0)),
						func(v ...*spore.Tensor) []*spore.Tensor {
							return []*spore.Tensor{ops.Mul(v[0], ops.ScalarLike(v[0], 2))}
						},
						func(v ...*spore.Tensor) []*spore.Tensor { return []*spore.Tensor{ops.Neg(v[0])} },
						s)[0]
				}
				a := tensor.RandUniform(spore.Float64, -1, 1, 3, 4)
				b := tensor.RandUniform(spore.Float64, -1, 1, 4, 3)
				xs := tensor.RandUniform(spore.Float64, -1, 1, 5, 1, 3)
				spore.Jit(f, spore.JitConfig{Name: "watch_flow", Level: spore.O1})(a, b, xs)
			},
			regions: true,
			hoisted: "MatMul",
			source:  "compilewatch_test.go:",
		},
		{
			name:  "watch_fastmath",
			level: spore.O2,
			run: func(t *testing.T) {
				f := func(x *spore.Tensor) *spore.Tensor {
					y := ops.Div(ops.Exp(x), ops.ScalarLike(x, 4))
					return ops.Add(ops.Mul(y, y), ops.Mul(y, y))
				}
				spore.Jit(f, spore.JitConfig{Name: "watch_fastmath", Level: spore.O2})(tensor.FromSlice([]float32{1, 2, 3, 4}, 4))
			},
			fused: map[string][][]string{"fuse": nil},
			dead:  1, // the duplicate Mul(y, y) that CSE replaced
		},
		{
			name:  "watch_o0",
			level: spore.O0,
			run: func(t *testing.T) {
				f := func(x *spore.Tensor) *spore.Tensor { return ops.ReLU(ops.Add(ops.Mul(x, x), x)) }
				spore.Jit(f, spore.JitConfig{Name: "watch_o0", Level: spore.O0})(tensor.FromSlice([]float32{1, -2}, 2))
			},
			stages: []string{"trace", "dce", "schedule"},
		},
		{
			name:  "watch_disabled",
			level: spore.O1,
			run: func(t *testing.T) {
				f := func(x *spore.Tensor) *spore.Tensor { return ops.ReLU(ops.Add(ops.Mul(x, x), x)) }
				spore.Jit(f, spore.JitConfig{Name: "watch_disabled", DisablePasses: []string{"fuse", "hoist"}})(tensor.FromSlice([]float32{1, -2}, 2))
			},
			stages: []string{"trace", "constfold", "simplify", "transposefold", "cse", "attention", "ampgemm", "ampmatmul", "gemmupdate", "gemmmomentum", "convepilogue", "convbackward", "anchor", "prepack", "dce", "schedule"},
		},
	}
}

// watch runs f with a watcher registered and the SPORE_SAVE_GRAPHS dumps
// on, and returns the records of compilations named name and the dump
// directory of that name.
func watch(t *testing.T, name string, f func(t *testing.T)) ([]spore.CompileRecord, string) {
	dir := t.TempDir()
	var mu sync.Mutex
	var recs []spore.CompileRecord
	stop := spore.WatchCompiles(func(r spore.CompileRecord) {
		mu.Lock()
		defer mu.Unlock()
		if r.Name == name {
			recs = append(recs, r)
		}
	})
	defer stop()
	spore.SetContext(spore.WithSaveGraphs(dir))
	defer spore.SetContext(spore.WithSaveGraphs(""))
	f(t)
	return recs, filepath.Join(dir, name)
}

func TestWatchCompilesRecords(t *testing.T) {
	for _, c := range watchCases() {
		t.Run(c.name, func(t *testing.T) {
			recs, dumps := watch(t, c.name, c.run)
			if len(recs) != 1 {
				t.Fatalf("%d records of %s, want 1", len(recs), c.name)
			}
			rec := recs[0]
			if rec.Level != c.level.String() || !strings.HasPrefix(rec.Signature, "(") {
				t.Errorf("level %q signature %q", rec.Level, rec.Signature)
			}
			checkAgainstDumps(t, rec, dumps)
			if c.stages != nil {
				var got []string
				for _, p := range rec.Passes {
					got = append(got, p.Pass)
				}
				if !slices.Equal(got, c.stages) {
					t.Errorf("stages %v, want %v", got, c.stages)
				}
			}
			checkStableIDs(t, rec)
			if n := checkDCE(t, rec); n < c.dead {
				t.Errorf("dce removed %d nodes, want at least %d (what the fusions absorbed)", n, c.dead)
			}
			checkFused(t, rec, c.fused)
			if c.regions {
				checkRegions(t, rec, c.hoisted)
			}
			if c.source != "" {
				checkSource(t, rec, c.source)
			}
			checkJSON(t, rec)
		})
	}
}

// checkAgainstDumps: the stages are those SPORE_SAVE_GRAPHS numbers, in
// order ("trace" for its "input", no "final"), and each text is the dump.
func checkAgainstDumps(t *testing.T, rec spore.CompileRecord, dir string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.ir"))
	slices.Sort(files)
	var want []string
	texts := map[string]string{}
	for _, f := range files {
		stage := strings.TrimSuffix(filepath.Base(f), ".ir")
		stage = stage[strings.IndexByte(stage, '_')+1:]
		if stage == "final" {
			continue
		}
		if stage == "input" {
			stage = "trace"
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, stage)
		texts[stage] = string(b)
	}
	var got []string
	for _, p := range rec.Passes {
		got = append(got, p.Pass)
		if p.Text != texts[p.Pass] {
			t.Errorf("stage %s: record text differs from the dump:\n%s\nvs\n%s", p.Pass, p.Text, texts[p.Pass])
		}
	}
	if !slices.Equal(got, want) || len(got) < 2 {
		t.Fatalf("stages %v, the dumps have %v", got, want)
	}
}

// checkStableIDs: a node that a stage did not make keeps its ID, op,
// kind, type and attributes from the stage before, and its line in the
// text; a node the stage made is new or was rewritten in place.
func checkStableIDs(t *testing.T, rec spore.CompileRecord) {
	t.Helper()
	kept := 0
	for k := 1; k < len(rec.Passes); k++ {
		prev, cur := rec.Passes[k-1], rec.Passes[k]
		before := byID(prev.Graph)
		for _, n := range cur.Graph.Nodes {
			old, ok := before[n.ID]
			if n.Pass == cur.Pass {
				if ok && old.Op == n.Op && reflect.DeepEqual(old.Attrs, n.Attrs) {
					t.Errorf("stage %s claims %%%d (%s), which it left as it was", cur.Pass, n.ID, n.Op)
				}
				continue
			}
			if !ok {
				t.Errorf("stage %s: %%%d (%s, made by %s) was not in the stage before", cur.Pass, n.ID, n.Op, n.Pass)
				continue
			}
			if old.Op != n.Op || old.Kind != n.Kind || old.DType != n.DType || !slices.Equal(old.Shape, n.Shape) || !reflect.DeepEqual(old.Attrs, n.Attrs) || old.Pass != n.Pass {
				t.Errorf("stage %s changed %%%d: %+v, was %+v", cur.Pass, n.ID, n, old)
			}
			if n.Kind == "param" { // inputs print in the header, not as lines
				line := fmt.Sprintf("%%%d = %s ", n.ID, n.Kind)
				if !strings.Contains(prev.Text, line) || !strings.Contains(cur.Text, line) {
					t.Errorf("stage %s: %q is not in both texts", cur.Pass, line)
				}
			}
			kept++
		}
	}
	if kept == 0 {
		t.Error("no node survived any stage")
	}
}

func byID(d spore.GraphDoc) map[int]spore.GraphNode {
	m := map[int]spore.GraphNode{}
	for _, n := range d.Nodes {
		m[n.ID] = n
	}
	return m
}

// checkDCE: the nodes missing after dead-code elimination are exactly
// those the graph before it did not need (computed from the Doc alone:
// not reachable from the outputs, the assignments and the inputs), and
// they are gone from its text.
func checkDCE(t *testing.T, rec spore.CompileRecord) (removed int) {
	t.Helper()
	k := slices.IndexFunc(rec.Passes, func(p spore.PassDump) bool { return p.Pass == "dce" })
	if k < 1 {
		t.Fatal("no dce stage")
	}
	prev, cur := rec.Passes[k-1].Graph, rec.Passes[k].Graph
	nodes := byID(prev)
	live := map[int]bool{}
	var mark func(id int)
	mark = func(id int) {
		if live[id] {
			return
		}
		live[id] = true
		for _, a := range nodes[id].Inputs {
			mark(a)
		}
	}
	for _, o := range prev.Outputs {
		mark(o)
	}
	for _, a := range prev.Assigns {
		mark(a.Param)
		mark(a.Value)
	}
	for _, in := range prev.Inputs {
		mark(in)
	}
	after := byID(cur)
	for _, n := range prev.Nodes {
		_, kept := after[n.ID]
		if kept != live[n.ID] {
			t.Errorf("dce: %%%d (%s) live=%v but kept=%v", n.ID, n.Op, live[n.ID], kept)
		}
		if !kept {
			removed++
			if strings.Contains(rec.Passes[k].Text, fmt.Sprintf("%%%d = ", n.ID)) {
				t.Errorf("dce removed %%%d but the text still defines it", n.ID)
			}
		}
	}
	return removed
}

// checkFused: every fused node names a fusion pass, its absorbed ops are
// its own op before that pass (the root, last) and ops among its
// ancestors then, and the expected groups are there.
func checkFused(t *testing.T, rec spore.CompileRecord, want map[string][][]string) {
	t.Helper()
	final := rec.Passes[len(rec.Passes)-1].Graph
	found := map[string][][]string{}
	for _, n := range final.Nodes {
		if n.Kind != "fused" {
			if len(n.Fused) != 0 {
				t.Errorf("%%%d (%s) lists fused ops %v but is of kind %s", n.ID, n.Op, n.Fused, n.Kind)
			}
			continue
		}
		found[n.Pass] = append(found[n.Pass], n.Fused)
		k := slices.IndexFunc(rec.Passes, func(p spore.PassDump) bool { return p.Pass == n.Pass })
		if k < 1 {
			t.Errorf("fused %%%d names stage %q, which did not run", n.ID, n.Pass)
			continue
		}
		before := byID(rec.Passes[k-1].Graph)
		root, ok := before[n.ID]
		if !ok || root.Op != n.Fused[len(n.Fused)-1] {
			t.Errorf("fused %%%d %v: before %s it was %+v, want its last op", n.ID, n.Fused, n.Pass, root)
		}
		ops := map[string]int{}
		var walk func(id int)
		seen := map[int]bool{}
		walk = func(id int) {
			if seen[id] {
				return
			}
			seen[id] = true
			ops[before[id].Op]++
			for _, a := range before[id].Inputs {
				walk(a)
			}
		}
		walk(n.ID)
		for _, op := range n.Fused {
			if ops[op] == 0 {
				t.Errorf("fused %%%d (%s) lists %s, which is not among what it computed before %s", n.ID, n.Op, op, n.Pass)
			}
			ops[op]--
		}
		if n.Pass == "fuse" && n.Op != "Fused["+strings.Join(n.Fused, ",")+"]" {
			t.Errorf("loop-fused %%%d is %s but lists %v", n.ID, n.Op, n.Fused)
		}
	}
	for pass, groups := range want {
		if len(found[pass]) == 0 {
			t.Errorf("no node fused by %s; found %v", pass, found)
		}
		for _, g := range groups {
			if !slices.ContainsFunc(found[pass], func(f []string) bool { return slices.Equal(f, g) }) {
				t.Errorf("no node fused by %s absorbed %v; found %v", pass, g, found[pass])
			}
		}
	}
}

// checkRegions: control-flow bodies appear as nested graphs whose bound
// operands are the owner's inputs, hoisting shows as a node the hoist
// stage made in the enclosing graph, and the bodies' nodes carry
// provenance too.
func checkRegions(t *testing.T, rec spore.CompileRecord, hoisted string) {
	t.Helper()
	owners := map[string]int{}
	for _, n := range rec.Passes[0].Graph.Nodes {
		for _, r := range n.Regions {
			owners[n.Op]++
			if len(r.Graph.Nodes) == 0 || len(r.Binds) != len(r.Graph.Inputs) {
				t.Errorf("%s region %s: %d nodes, %d binds for %d inputs", n.Op, r.Name, len(r.Graph.Nodes), len(r.Binds), len(r.Graph.Inputs))
			}
			for _, b := range r.Binds {
				if !slices.Contains(n.Inputs, b) {
					t.Errorf("%s region %s binds %%%d, not an operand of %%%d", n.Op, r.Name, b, n.ID)
				}
			}
			for _, in := range r.Graph.Nodes {
				if in.Pass != "trace" {
					t.Errorf("traced body node %%%d names stage %q", in.ID, in.Pass)
				}
			}
			if !strings.Contains(rec.Passes[0].Text, "func "+r.Name+"(") {
				t.Errorf("region %s is not in the text", r.Name)
			}
		}
	}
	if owners["Scan"] != 1 || owners["Cond"] != 2 {
		t.Errorf("regions by owner %v, want one Scan body and two Cond branches", owners)
	}
	k := slices.IndexFunc(rec.Passes, func(p spore.PassDump) bool { return p.Pass == "hoist" })
	if k < 0 {
		t.Fatal("no hoist stage")
	}
	moved := false
	for _, n := range rec.Passes[k].Graph.Nodes {
		moved = moved || (n.Op == hoisted && n.Pass == "hoist")
	}
	if !moved {
		t.Errorf("no %s made by hoist in the enclosing graph:\n%s", hoisted, rec.Passes[k].Text)
	}
	// Passes rewrite bodies too, and the body's nodes say so: the loop
	// body's Add and Tanh end fused.
	bodyFused := false
	for _, n := range rec.Passes[len(rec.Passes)-1].Graph.Nodes {
		for _, r := range n.Regions {
			for _, b := range r.Graph.Nodes {
				bodyFused = bodyFused || (b.Kind == "fused" && b.Pass == "fuse" && slices.Equal(b.Fused, []string{"Add", "Tanh"}))
			}
		}
	}
	if !bodyFused {
		t.Errorf("no body node fused by fuse from Add and Tanh:\n%s", rec.Passes[len(rec.Passes)-1].Text)
	}
}

// checkJSON: the record marshals to the documented keys and back to an
// equal record.
func checkJSON(t *testing.T, rec spore.CompileRecord) {
	t.Helper()
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	var back spore.CompileRecord
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rec, back) {
		t.Error("the record does not survive a JSON round trip")
	}
	var raw struct {
		Name, Signature, Level string
		Passes                 []struct {
			Pass, Text string
			Graph      struct {
				Nodes   []map[string]json.RawMessage
				Outputs []int
			}
		}
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if raw.Name != rec.Name || raw.Level == "" || len(raw.Passes) != len(rec.Passes) {
		t.Fatalf("JSON header %q %q %q, %d passes", raw.Name, raw.Signature, raw.Level, len(raw.Passes))
	}
	for _, key := range []string{"id", "op", "kind", "inputs", "shape", "dtype", "pass", "fused"} {
		if _, ok := raw.Passes[0].Graph.Nodes[0][key]; !ok {
			t.Errorf("node JSON lacks %q: %v", key, raw.Passes[0].Graph.Nodes[0])
		}
	}
}

// compileSmall compiles a fresh jitted function once: the unit of
// compilation cost below.
func compileSmall(x *spore.Tensor) {
	f := spore.Jit(func(x *spore.Tensor) *spore.Tensor {
		return ops.Sum(ops.Tanh(ops.Add(ops.Mul(x, x), ops.ScalarLike(x, 1))))
	}, spore.JitConfig{Name: "watch_cost"})
	f(x)
}

// With no watcher registered a compilation captures nothing: it
// allocates what it did before any watcher existed, and a watcher's
// capture is visible in the same measurement (so the comparison can
// fail).
func TestWatchCompilesCostsNothingUnwatched(t *testing.T) {
	if raceEnabled {
		t.Skip("under the race detector fmt's pooled printers, which a compilation uses, allocate at random")
	}
	x := tensor.FromSlice([]float32{1, 2, 3, 4}, 4)
	compileSmall(x) // warm up one-time initialisation
	never := testing.AllocsPerRun(20, func() { compileSmall(x) })
	stop := spore.WatchCompiles(func(spore.CompileRecord) {})
	watched := testing.AllocsPerRun(20, func() { compileSmall(x) })
	stop()
	after := testing.AllocsPerRun(20, func() { compileSmall(x) })
	t.Logf("allocations per compilation: %.0f unwatched, %.0f watched, %.0f after stop", never, watched, after)
	if watched < never+20 {
		t.Errorf("a watched compilation allocates %.0f times, an unwatched one %.0f: the capture is not measured", watched, never)
	}
	if diff := after - never; diff > never/100 || -diff > never/100 {
		t.Errorf("after stop a compilation allocates %.0f times, before any watcher %.0f", after, never)
	}
}

// Compilations on several goroutines each reach every watcher once, a
// watcher may compile (even the function being compiled) from its
// callback, and stop ends delivery.
func TestWatchCompilesConcurrentAndReentrant(t *testing.T) {
	var mu sync.Mutex
	counts := map[string]int{}
	inner := spore.NewJit(func(x *spore.Tensor) *spore.Tensor { return ops.Neg(x) }, spore.JitConfig{Name: "watch_inner"})
	stop := spore.WatchCompiles(func(r spore.CompileRecord) {
		mu.Lock()
		counts[r.Name]++
		mu.Unlock()
		if r.Name == "watch_inner" && r.Signature == "(float32[1])" {
			// Compiles watch_inner again, from inside its own
			// compilation's delivery: the cache's lock is released.
			inner.Fn(tensor.FromSlice([]float32{1, 2}, 2))
		}
	})
	stop2 := spore.WatchCompiles(func(r spore.CompileRecord) {
		mu.Lock()
		counts["second:"+r.Name]++
		mu.Unlock()
	})
	const workers, shapes = 4, 3
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := spore.NewJit(func(x *spore.Tensor) *spore.Tensor { return ops.Exp(ops.Mul(x, x)) },
				spore.JitConfig{Name: fmt.Sprintf("watch_worker%d", w)})
			for n := 1; n <= shapes; n++ {
				f.Fn(tensor.Ones(spore.Float32, n))
				f.Fn(tensor.Ones(spore.Float32, n)) // cached: no record
			}
		}()
	}
	inner.Fn(tensor.FromSlice([]float32{1}, 1))
	wg.Wait()
	stop2()
	stop2() // harmless
	mu.Lock()
	for w := range workers {
		name := fmt.Sprintf("watch_worker%d", w)
		if counts[name] != shapes || counts["second:"+name] != shapes {
			t.Errorf("%s: %d and %d records, want %d each", name, counts[name], counts["second:"+name], shapes)
		}
	}
	if counts["watch_inner"] != 2 || counts["second:watch_inner"] != 2 {
		t.Errorf("watch_inner: %d and %d records, want 2 each (one compiled from a callback)", counts["watch_inner"], counts["second:watch_inner"])
	}
	mu.Unlock()
	stop()
	compileSmall(tensor.FromSlice([]float32{1}, 1))
	mu.Lock()
	defer mu.Unlock()
	if counts["watch_cost"] != 0 {
		t.Errorf("a stopped watcher got %d records", counts["watch_cost"])
	}
}

func TestWatchCompilesNilCallback(t *testing.T) {
	defer func() {
		r := recover()
		if err, ok := r.(error); !ok || !strings.Contains(err.Error(), "WatchCompiles") {
			t.Errorf("WatchCompiles(nil) panicked with %v, want an error naming WatchCompiles", r)
		}
	}()
	spore.WatchCompiles(nil)
}

// BenchmarkCompileWatch compiles the seed network's forward function,
// with and without a watcher: "off" is the cost every compilation pays,
// "on" the cost of recording every stage as text and data.
func BenchmarkCompileWatch(b *testing.B) {
	m := newSeedMLP()
	x := tensor.RandNormal(spore.Float32, 0, 1, 64, 1, 28, 28)
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			if on {
				defer spore.WatchCompiles(func(spore.CompileRecord) {})()
			}
			b.ReportAllocs()
			for b.Loop() {
				spore.Jit(m.forward)(x)
			}
		})
	}
}

// checkSource: every op node in the traced graph and its bodies carries
// the user's source line, as run-time errors name it.
func checkSource(t *testing.T, rec spore.CompileRecord, where string) {
	t.Helper()
	var walk func(d spore.GraphDoc, stage string)
	n := 0
	walk = func(d spore.GraphDoc, stage string) {
		for _, node := range d.Nodes {
			if stage == "trace" && (node.Kind == "op" || node.Kind == "fused") {
				n++
				if !strings.Contains(node.Source, where) {
					t.Errorf("traced %%%d = %s has source %q, want one in %s", node.ID, node.Op, node.Source, where)
				}
			}
			for _, r := range node.Regions {
				walk(r.Graph, stage)
			}
		}
	}
	walk(rec.Passes[0].Graph, "trace")
	if n == 0 {
		t.Error("no traced op")
	}
}

// An optimiser called eagerly runs its update as a compiled function, and
// a watcher hears of that compilation too: its parameter assignments
// included.
func TestWatchCompilesOptimizerUpdate(t *testing.T) {
	w := tensor.NewParameter("w", tensor.FromSlice([]float32{1, 2, 3}, 3))
	opt := optim.NewSGD([]*tensor.Tensor{w}, optim.SGDConfig{Common: optim.Common{LR: optim.Constant(0.5)}, Momentum: 0.9})
	var recs []spore.CompileRecord
	var mu sync.Mutex
	stop := spore.WatchCompiles(func(r spore.CompileRecord) {
		mu.Lock()
		defer mu.Unlock()
		recs = append(recs, r)
	})
	defer stop()
	opt.Step([]*tensor.Tensor{tensor.FromSlice([]float32{1, 1, 1}, 3)})
	mu.Lock()
	defer mu.Unlock()
	if len(recs) != 1 || !strings.HasSuffix(recs[0].Name, ".update") {
		t.Fatalf("records %v, want one of the optimiser's update", recs)
	}
	final := recs[0].Passes[len(recs[0].Passes)-1].Graph
	if len(final.Assigns) < 2 { // the weight and its momentum slot
		t.Errorf("the update's graph assigns %d parameters, want the weight and its momentum", len(final.Assigns))
	}
	for _, a := range final.Assigns {
		if n := byID(final)[a.Param]; n.Kind != "param" {
			t.Errorf("assignment to %%%d, a %s node", a.Param, n.Kind)
		}
	}
	if got := w.Float32s(); got[0] != 0.5 {
		t.Errorf("watched update gave w = %v", got)
	}
}
