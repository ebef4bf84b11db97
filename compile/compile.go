package compile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sporeml/spore/exec"
	"github.com/sporeml/spore/graph"
)

// Level selects how hard the compiler works, as MindSpore's jit_level.
type Level int

const (
	// Default defers to the caller's default level (O1 unless configured).
	Default Level = iota
	// O0 runs the traced ops one kernel each: only the passes marked
	// required run (dead-code elimination), so results are bitwise those
	// of PyNative mode.
	O0
	// O1 runs every pass in Passes but the O2 ones: constant folding,
	// simplification, transpose folding, CSE, loop-invariant hoisting,
	// the GEMM fusions (ampgemm, ampmatmul, gemmupdate, gemmmomentum),
	// the convolution fusions (convepilogue, convbackward), anchor fusion
	// (any GEMM or convolution with its elementwise epilogue), weight
	// prepacking and elementwise loop fusion, besides
	// the required dce and schedule. Results match PyNative mode within
	// float32 rounding (fusion may reorder or approximate transcendental
	// functions within a few ulp).
	O1
	// O2 is O1 plus passes that may change results more than rounding
	// would: FastMath's floating-point reassociations (x/c → x·(1/c),
	// (x·c1)·c2 → x·(c1·c2)), within about one ulp per rewritten op.
	O2
)

// String returns the name printed in dumps and messages.
func (l Level) String() string {
	if l < Default || l > O2 {
		return "Level(?)"
	}
	return [...]string{"default", "O0", "O1", "O2"}[l]
}

// Pass is one entry of the pass table.
type Pass struct {
	// Name identifies the pass in dumps and in Options.Disable.
	Name string
	// Fn rewrites the graph in place.
	Fn func(*graph.Graph)
	// Required passes run at every level and cannot be disabled.
	Required bool
	// MinLevel is the lowest level that runs the pass.
	MinLevel Level
	// After and Before are the pass's ordering constraints, each with its
	// reason: passes that must run before it, and passes it must run
	// before. CheckOrder verifies them when the package initialises.
	After, Before []Order
	// CompileOnly marks a pass whose rewrites a portable graph cannot
	// hold: it introduces compile-only primitives (fused ops, in-place
	// updates, plan-held packed weights), attributes standard ops lack
	// (MatMul's transpose flags) or moves work out of the traced
	// structure (hoisting). An exporter (onnx.Export) skips these passes.
	CompileOnly bool
}

// Order is one ordering constraint of a pass: another pass and the
// one-line reason for running before or after it.
type Order struct {
	Pass string
	Why  string
}

// Passes is the pipeline, in order; each entry carries its ordering
// constraints (After, Before), checked at initialisation (CheckOrder).
var Passes = []Pass{
	{Name: "fastmath", Fn: FastMath, MinLevel: O2,
		Before: []Order{{"constfold", "its rewrites create constants (1/c, c1·c2) for folding and simplification to see"}}},
	{Name: "constfold", Fn: ConstFold, MinLevel: O1,
		Before: []Order{{"simplify", "the identities simplification looks for (x·1, x+0) show up once the constant is computed"}}},
	{Name: "simplify", Fn: Simplify, MinLevel: O1,
		Before: []Order{{"transposefold", "a Transpose(Transpose(x)) pair has collapsed before a MatMul looks through it"}}},
	{Name: "transposefold", Fn: TransposeFold, MinLevel: O1, CompileOnly: true},
	{Name: "cse", Fn: CSE, MinLevel: O1,
		After: []Order{{"simplify", "the forms the rewrites produce are deduplicated"}, {"transposefold", "the forms the rewrites produce are deduplicated"}},
		Before: []Order{{"ampgemm", "a cast shared by two products is seen as shared"},
			{"anchor", "use counts are true"}, {"fuse", "use counts are true"}}},
	{Name: "hoist", Fn: Hoist, MinLevel: O1, CompileOnly: true,
		After: []Order{{"cse", "a body's invariant work is in its simplest form"}, {"constfold", "constants are folded rather than hoisted"}},
		Before: []Order{{"ampgemm", "a fusion would bury an invariant op in a group with per-iteration work"},
			{"anchor", "a fusion would bury an invariant op in a group with per-iteration work"},
			{"fuse", "a fusion would bury an invariant op in a group with per-iteration work"}}},
	{Name: "attention", Fn: Attention, MinLevel: O1, CompileOnly: true,
		After:  []Order{{"cse", "use counts are true"}, {"hoist", "a body's invariant work has left the loop first"}},
		Before: []Order{{"ampgemm", "the GEMM fusions would take its products"}, {"anchor", "an epilogue would take its scale"}, {"fuse", "loop fusion would take its softmax"}}},
	{Name: "ampgemm", Fn: AmpGemm, MinLevel: O1, CompileOnly: true,
		Before: []Order{{"fuse", "loop fusion would take its casts, bias add and ReLU"}}},
	{Name: "ampmatmul", Fn: AmpMatMul, MinLevel: O1, CompileOnly: true,
		After:  []Order{{"ampgemm", "ampgemm takes the products of unassigned weights first, to pack them once"}},
		Before: []Order{{"fuse", "loop fusion would take its casts"}}},
	{Name: "gemmupdate", Fn: GemmUpdate, MinLevel: O1, CompileOnly: true,
		Before: []Order{{"anchor", "an epilogue would take the update's Mul and Sub"}, {"fuse", "loop fusion would take the update's Mul and Sub"}}},
	{Name: "gemmmomentum", Fn: GemmMomentum, MinLevel: O1, CompileOnly: true,
		Before: []Order{{"fuse", "loop fusion would take the momentum's Mul and Add"}}},
	{Name: "convepilogue", Fn: ConvEpilogue, MinLevel: O1, CompileOnly: true,
		Before: []Order{{"fuse", "loop fusion would take the bias add, the ReLU and the ReLU gradient"}}},
	{Name: "convbackward", Fn: ConvBackward, MinLevel: O1, CompileOnly: true,
		After: []Order{{"convepilogue", "it makes the pooled ReLU gradient this pass moves into the gradients"}}},
	{Name: "anchor", Fn: Anchors, MinLevel: O1, CompileOnly: true,
		After: []Order{{"ampgemm", "the bfloat16 GEMMs take their chains first"},
			{"ampmatmul", "the bfloat16 GEMMs take their chains first"}, {"gemmupdate", "an in-place update is no epilogue"},
			{"gemmmomentum", "an in-place update is no epilogue"}, {"convepilogue", "the pooled convolution takes its chains first"},
			{"convbackward", "the pooled gradients take their chains first"}},
		Before: []Order{{"fuse", "loop fusion would take the epilogue's ops into groups of their own"}}},
	{Name: "prepack", Fn: Prepack, MinLevel: O1, CompileOnly: true,
		After: []Order{{"gemmupdate", "it turns plain MatMuls into Anchors, which the GEMM fusions would no longer recognise"},
			{"anchor", "it turns plain MatMuls into Anchors, which anchor fusion would no longer extend"}}},
	{Name: "fuse", Fn: Fuse, MinLevel: O1, CompileOnly: true},
	{Name: "dce", Fn: DCE, Required: true,
		After: []Order{{"fuse", "it drops what the rewrites orphaned"}, {"anchor", "it drops what the rewrites orphaned"}}},
	{Name: "schedule", Fn: Schedule, Required: true,
		After: []Order{{"dce", "the plan runs ops in graph order, so it orders the final set of ops"}}},
}

func init() {
	if err := CheckOrder(Passes); err != nil {
		panic(err)
	}
}

// CheckOrder reports the first ordering constraint of passes that their
// order violates, or one that names no pass of the table.
func CheckOrder(passes []Pass) error {
	at := map[string]int{}
	for i, p := range passes {
		if _, dup := at[p.Name]; dup {
			return fmt.Errorf("compile: pass %s is in the table twice", p.Name)
		}
		at[p.Name] = i
	}
	for i, p := range passes {
		for _, o := range p.After {
			j, ok := at[o.Pass]
			if !ok {
				return fmt.Errorf("compile: pass %s runs after %s, which is not in the table", p.Name, o.Pass)
			}
			if j > i {
				return fmt.Errorf("compile: pass %s must run after %s (%s)", p.Name, o.Pass, o.Why)
			}
		}
		for _, o := range p.Before {
			j, ok := at[o.Pass]
			if !ok {
				return fmt.Errorf("compile: pass %s runs before %s, which is not in the table", p.Name, o.Pass)
			}
			if j < i {
				return fmt.Errorf("compile: pass %s must run before %s (%s)", p.Name, o.Pass, o.Why)
			}
		}
	}
	return nil
}

// CompileOnlyPasses names the passes marked CompileOnly, in table order:
// those an exporter of portable graphs disables.
func CompileOnlyPasses() []string {
	var names []string
	for _, p := range Passes {
		if p.CompileOnly {
			names = append(names, p.Name)
		}
	}
	return names
}

// Options tune one compilation.
type Options struct {
	Level Level
	// Disable names passes to skip (for debugging); required passes
	// always run.
	Disable []string
	// DumpDir, when set, receives the IR before and after every pass as
	// NN_name.ir and NN_name.dot files, numbered in order.
	DumpDir string
	// Verify runs the IR verifier after every pass (tests turn it on).
	Verify bool
	// Observe, when set, is called with the graph as traced (stage
	// "trace", the dumps' "input") and after every pass that ran (the
	// pass's name), in order, on the goroutine compiling. The graph is
	// the one being rewritten: Observe reads it and keeps nothing of it.
	Observe func(stage string, g *graph.Graph)
}

// Result is a compiled graph with the statistics of its compilation.
type Result struct {
	Plan *exec.Plan
	// Graph is the optimised IR.
	Graph *graph.Graph
	// PassTime is the time spent in passes and planning.
	PassTime time.Duration
}

// apply runs a pass over g and every region nested in it, innermost
// first: a pass that hoists work out of a body then sees a body already
// rewritten, and work hoisted out of an inner loop can be hoisted again out
// of the loop around it.
func apply(g *graph.Graph, fn func(*graph.Graph)) {
	for _, v := range g.Values {
		for _, r := range v.Regions {
			apply(r.Graph, fn)
		}
	}
	fn(g)
	g.CountUses()
}

// Run optimises g with the pass pipeline and builds its execution plan.
// Control-flow bodies (graph.Region) go through the same pipeline, and
// exec plans them as sub-plans of g's plan.
func Run(g *graph.Graph, opt Options) (*Result, error) {
	start := time.Now()
	if opt.Level == Default {
		opt.Level = O1
	}
	dump := newDumper(opt.DumpDir, g.Name)
	dump.write("input", g)
	if opt.Observe != nil {
		opt.Observe("trace", g)
	}
	for _, p := range Passes {
		if !p.Required && (opt.Level < p.MinLevel || contains(opt.Disable, p.Name)) {
			continue
		}
		apply(g, p.Fn)
		dump.write(p.Name, g)
		if opt.Observe != nil {
			opt.Observe(p.Name, g)
		}
		if opt.Verify {
			if err := graph.Verify(g); err != nil {
				return nil, fmt.Errorf("compile: after pass %s: %v", p.Name, err)
			}
		}
	}
	plan, err := exec.Compile(g)
	if err != nil {
		return nil, err
	}
	dump.write("final", g)
	res := &Result{Plan: plan, Graph: g, PassTime: time.Since(start)}
	if dump != nil && dump.err != nil {
		return res, fmt.Errorf("compile: writing IR dumps: %v", dump.err)
	}
	return res, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// dumper writes numbered IR dumps, like MindSpore's save_graphs.
type dumper struct {
	dir  string
	n    int
	name string
	err  error
}

func newDumper(dir, name string) *dumper {
	if dir == "" {
		return nil
	}
	d := &dumper{dir: filepath.Join(dir, sanitize(name)), name: name}
	d.err = os.MkdirAll(d.dir, 0o755)
	return d
}

func (d *dumper) write(stage string, g *graph.Graph) {
	if d == nil || d.err != nil {
		return
	}
	base := filepath.Join(d.dir, fmt.Sprintf("%02d_%s", d.n, stage))
	d.n++
	var ir, dot strings.Builder
	g.Write(&ir)
	g.WriteDOT(&dot)
	if err := writeFileAtomic(base+".ir", ir.String()); err != nil {
		d.err = err
		return
	}
	d.err = writeFileAtomic(base+".dot", dot.String())
}

// writeFileAtomic writes via a temporary file and a rename, so a dump is
// never seen half written.
func writeFileAtomic(path, content string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
			return r
		}
		return '_'
	}, s)
}
