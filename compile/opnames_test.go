package compile

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/sporeml/spore/internal/testkit"
)

// The compiler matches primitives by handle (v.Prim == ops.MatMulPrim),
// never by the name the IR prints: a name that no longer exists silently
// turns a pass into a no-op, where a handle that no longer exists is a
// compile error. TestNoOpNameLookups keeps it that way by reading the
// source of the compiler's packages.

// opNameLookups returns, as "file:line: what" strings, the places in the
// parsed file f where an op is found by a string:
//
//   - a string literal compared (== or !=) with a .Name field, or a switch
//     on a .Name field with string-literal cases;
//   - a string literal passed to a function whose name contains "Lookup",
//     or to isOp/isPrim;
//   - a map indexed by a primitive's name (m[v.Prim.Name]).
//
// Comparisons with "" (is a name set?) are not lookups and are allowed.
func opNameLookups(fset *token.FileSet, f *ast.File) []string {
	var found []string
	report := func(n ast.Node, what string) {
		found = append(found, fset.Position(n.Pos()).String()+": "+what)
	}
	isName := func(e ast.Expr) bool {
		s, ok := ast.Unparen(e).(*ast.SelectorExpr)
		return ok && s.Sel.Name == "Name"
	}
	isPrimName := func(e ast.Expr) bool {
		s, ok := ast.Unparen(e).(*ast.SelectorExpr)
		if !ok || s.Sel.Name != "Name" {
			return false
		}
		x, ok := s.X.(*ast.SelectorExpr)
		return ok && x.Sel.Name == "Prim"
	}
	isStr := func(e ast.Expr) bool {
		l, ok := ast.Unparen(e).(*ast.BasicLit)
		return ok && l.Kind == token.STRING && l.Value != `""` && l.Value != "``"
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BinaryExpr:
			if (n.Op == token.EQL || n.Op == token.NEQ) &&
				((isName(n.X) && isStr(n.Y)) || (isStr(n.X) && isName(n.Y))) {
				report(n, "a string literal compared with .Name")
			}
		case *ast.SwitchStmt:
			if n.Tag == nil || !isName(n.Tag) {
				break
			}
			for _, c := range n.Body.List {
				for _, e := range c.(*ast.CaseClause).List {
					if isStr(e) {
						report(e, "a switch on .Name with a string-literal case")
					}
				}
			}
		case *ast.CallExpr:
			var fn string
			switch f := ast.Unparen(n.Fun).(type) {
			case *ast.Ident:
				fn = f.Name
			case *ast.SelectorExpr:
				fn = f.Sel.Name
			}
			if !strings.Contains(fn, "Lookup") && fn != "isOp" && fn != "isPrim" {
				break
			}
			for _, a := range n.Args {
				if isStr(a) {
					report(a, "a string literal passed to "+fn)
				}
			}
		case *ast.IndexExpr:
			if isPrimName(n.Index) {
				report(n, "a map indexed by a primitive's name")
			}
		}
		return true
	})
	return found
}

// TestOpNameLookupsDetects shows that the check finds each form it looks
// for, and passes the handle forms the passes use.
func TestOpNameLookupsDetects(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      int
	}{
		{"handle", `if v.Prim == ops.MatMulPrim || isOp(v, ops.AddPrim) {}`, 0},
		{"empty name", `if cfg.Name == "" {}`, 0},
		{"name in a message", `fmt.Println("MatMul", v.Prim.Name)`, 0},
		{"compare", `if v.Prim.Name == "MatMul" {}`, 1},
		{"compare reversed", `if "ReLU" != p.Name {}`, 1},
		{"switch", `switch v.Prim.Name { case "Add", "Sub": case "Mul": }`, 3},
		{"Lookup", `p := ops.Lookup("MatMul")`, 1},
		{"isOp", `if isOp(v, "ReLU") {}`, 1},
		{"map", `op, ok := fusable[v.Prim.Name]`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "x.go", "package x\nfunc f() {\n"+tc.src+"\n}\n", 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := opNameLookups(fset, f); len(got) != tc.want {
				t.Errorf("%s: found %d lookups, want %d: %q", tc.src, len(got), tc.want, got)
			}
		})
	}
}

// TestNoOpNameLookups reads the non-test Go files of the compiler, the IR
// and the runtime (this package, graph and exec) and fails on any op found
// by name.
func TestNoOpNameLookups(t *testing.T) {
	fset, files := testkit.Sources(t, ".", "../graph", "../exec")
	if len(files) < 10 {
		t.Fatalf("read only %d source files: is the test running in the compile directory?", len(files))
	}
	for _, f := range files {
		for _, s := range opNameLookups(fset, f) {
			t.Errorf("%s: match the primitive's handle (v.Prim == ops.XPrim) or read its Traits instead", s)
		}
	}
}
