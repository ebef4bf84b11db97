package ops_test

import (
	"go/ast"
	"testing"

	"github.com/sporeml/spore/internal/testkit"
)

// TestOpsDoNotAskTheMode keeps the ops mode-blind: an op that asks whether
// a tensor is symbolic (or which tracer is active) behaves differently in
// PyNative and Graph mode. That is how a label check once ran only
// eagerly, letting Graph mode train on labels PyNative refused. Checks of
// values belong in kernels (see CheckLabels), which both modes run.
func TestOpsDoNotAskTheMode(t *testing.T) {
	banned := map[string]bool{"IsSymbolic": true, "CurrentTracer": true, "SymbolOf": true}
	fset, files := testkit.Sources(t, ".")
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && banned[sel.Sel.Name] {
				t.Errorf("%v: ops must not ask which mode they run in (%s)", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
}
