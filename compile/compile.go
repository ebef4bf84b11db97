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
	// the GEMM fusions (epilogue, ampgemm, ampmatmul, gemmupdate,
	// gemmmomentum) and weight prepacking, the convolution fusions
	// (convepilogue, convbackward) and elementwise loop fusion, besides
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
}

// Passes is the pipeline, in order. Ordering constraints:
//   - fast-math rewrites (O2) run first: they create constants (1/c,
//     c1·c2) for folding and simplification to see;
//   - constant folding runs early, so that the identities simplification
//     looks for (x·1, x+0) show up when the constant was computed;
//   - simplification runs before transpose folding, so a
//     Transpose(Transpose(x)) pair has collapsed before a MatMul looks
//     through it;
//   - CSE runs after the rewrites so that the forms they produce are
//     deduplicated, and before the fusions so that use counts are true (a
//     duplicate would hide that a value is shared);
//   - hoisting runs after CSE and folding (a body's invariant work is then
//     in its simplest form, and constants are folded rather than hoisted)
//     and before the fusions, which would bury an invariant op in a group
//     with per-iteration work; what it hoists is then fused and
//     deduplicated with the enclosing graph's work;
//   - GEMM epilogue fusion runs before loop fusion: otherwise the bias add
//     and activation would be swallowed by an elementwise group;
//   - mixed precision's GEMM fusion (ampgemm) runs before loop fusion,
//     which would take its casts, bias add and ReLU, and after CSE, so
//     that a cast shared by two products is seen as shared;
//   - the training products' fusion (ampmatmul) runs after ampgemm, which
//     takes the products of unassigned weights first (to pack them once),
//     and before loop fusion, for the same reason as ampgemm;
//   - the GEMM update fusion runs after the epilogue fusion (a MatMul that
//     already absorbed a bias is no weight gradient) and before loop
//     fusion, which would take the update's Mul and Sub;
//   - weight prepacking runs after both GEMM fusions: it turns the plain
//     MatMuls of weights into MatMulBiasAct, which they would no longer
//     recognise, and gives the fused products their packed weights;
//   - convolution epilogue fusion runs before loop fusion, which would
//     otherwise take the bias add, the ReLU and the ReLU gradient into
//     elementwise groups;
//   - the convolution-gradient fusion runs after the convolution epilogue
//     fusion, which makes the MaxPool2DReLUGrad it moves into the
//     gradients;
//   - dead-code elimination runs after the rewrites to drop what they
//     orphaned;
//   - scheduling runs last, on the final set of ops, since the plan runs
//     them in graph order (buffer assignment happens in exec.Compile,
//     after all passes, from the scheduled order).
var Passes = []Pass{
	{Name: "fastmath", Fn: FastMath, MinLevel: O2},
	{Name: "constfold", Fn: ConstFold, MinLevel: O1},
	{Name: "simplify", Fn: Simplify, MinLevel: O1},
	{Name: "transposefold", Fn: TransposeFold, MinLevel: O1},
	{Name: "cse", Fn: CSE, MinLevel: O1},
	{Name: "hoist", Fn: Hoist, MinLevel: O1},
	{Name: "epilogue", Fn: Epilogue, MinLevel: O1},
	{Name: "ampgemm", Fn: AmpGemm, MinLevel: O1},
	{Name: "ampmatmul", Fn: AmpMatMul, MinLevel: O1},
	{Name: "gemmupdate", Fn: GemmUpdate, MinLevel: O1},
	{Name: "gemmmomentum", Fn: GemmMomentum, MinLevel: O1},
	{Name: "convepilogue", Fn: ConvEpilogue, MinLevel: O1},
	{Name: "convbackward", Fn: ConvBackward, MinLevel: O1},
	{Name: "anchor", Fn: Anchors, MinLevel: O1},
	{Name: "prepack", Fn: Prepack, MinLevel: O1},
	{Name: "fuse", Fn: Fuse, MinLevel: O1},
	{Name: "dce", Fn: DCE, Required: true},
	{Name: "schedule", Fn: Schedule, Required: true},
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
