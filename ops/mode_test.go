package ops_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpsDoNotAskTheMode keeps the ops mode-blind: an op that asks whether
// a tensor is symbolic (or which tracer is active) behaves differently in
// PyNative and Graph mode. That is how a label check once ran only
// eagerly, letting Graph mode train on labels PyNative refused. Checks of
// values belong in kernels (see CheckLabels), which both modes run.
func TestOpsDoNotAskTheMode(t *testing.T) {
	banned := map[string]bool{"IsSymbolic": true, "CurrentTracer": true, "SymbolOf": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	seen := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		seen++
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && banned[sel.Sel.Name] {
				t.Errorf("%v: ops must not ask which mode they run in (%s)", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
	if seen == 0 {
		t.Fatal("no source files found")
	}
}
