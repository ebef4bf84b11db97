package compile_test

import (
	"strings"
	"testing"

	"github.com/sporeml/spore/compile"
)

// The pass table satisfies its own ordering constraints, and a table in
// the wrong order, or naming a pass it lacks, is refused with the
// violated constraint and its reason.
func TestPassOrder(t *testing.T) {
	if err := compile.CheckOrder(compile.Passes); err != nil {
		t.Fatalf("the pass table: %v", err)
	}
	index := func(name string) int {
		for i, p := range compile.Passes {
			if p.Name == name {
				return i
			}
		}
		t.Fatalf("no pass %s", name)
		return -1
	}
	swap := func(a, b string) []compile.Pass {
		ps := append([]compile.Pass(nil), compile.Passes...)
		i, j := index(a), index(b)
		ps[i], ps[j] = ps[j], ps[i]
		return ps
	}
	cases := []struct {
		name   string
		passes []compile.Pass
		want   string
	}{
		{"fuse before anchor", swap("anchor", "fuse"), "must run"},
		{"convbackward before convepilogue", swap("convepilogue", "convbackward"), "convbackward must run after convepilogue (it makes the pooled ReLU gradient"},
		{"schedule before dce", swap("dce", "schedule"), "schedule must run after dce"},
		{"constfold after simplify", swap("constfold", "simplify"), "constfold must run before simplify"},
		{"a constraint on a missing pass", func() []compile.Pass {
			ps := append([]compile.Pass(nil), compile.Passes[:index("fuse")]...)
			return append(ps, compile.Passes[index("fuse")+1:]...)
		}(), "which is not in the table"},
		{"a pass twice", append(append([]compile.Pass(nil), compile.Passes...), compile.Passes[0]), "twice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := compile.CheckOrder(c.passes)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// Every pass that introduces a compile-only primitive is marked so: after
// the passes not marked CompileOnly, a graph holds standard primitives
// only, which is what an exporter relies on. Each fusing pass is marked.
func TestCompileOnlyPasses(t *testing.T) {
	marked := map[string]bool{}
	for _, n := range compile.CompileOnlyPasses() {
		marked[n] = true
	}
	for _, n := range []string{"ampgemm", "ampmatmul", "gemmupdate", "gemmmomentum", "convepilogue", "convbackward", "anchor", "prepack", "fuse", "transposefold", "hoist"} {
		if !marked[n] {
			t.Errorf("pass %s is not marked CompileOnly", n)
		}
	}
	for _, n := range []string{"constfold", "simplify", "cse", "dce", "schedule"} {
		if marked[n] {
			t.Errorf("pass %s is marked CompileOnly: it leaves standard primitives", n)
		}
	}
}
