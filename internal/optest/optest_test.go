package optest

import (
	"go/ast"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sporeml/spore/internal/testkit"

	"github.com/sporeml/spore/comm"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// opsPrimHandles reads package ops's source and returns, for each exported
// package-level variable whose name ends in Prim, the name of the primitive
// assigned to it: the first string literal of the assignment (the Name
// field of a Prim literal, or the name given to a def helper). A new
// primitive is thus found without anyone adding it to a list; a handle
// whose name cannot be read maps to "".
func opsPrimHandles(t *testing.T) map[string]string {
	t.Helper()
	_, files := testkit.Sources(t, filepath.Join("..", "..", "ops"))
	handles := map[string]string{}
	for _, af := range files {
		for _, d := range af.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.VAR {
				for _, s := range g.Specs {
					vs := s.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if n.IsExported() && strings.HasSuffix(n.Name, "Prim") {
							if _, seen := handles[n.Name]; !seen {
								handles[n.Name] = ""
							}
							if i < len(vs.Values) {
								handles[n.Name] = firstString(vs.Values[i])
							}
						}
					}
				}
			}
		}
		// Assignments in init functions: XxxPrim = defUnary("Name", ...)
		// or XxxPrim = &core.Prim{Name: "Name", ...}.
		ast.Inspect(af, func(nd ast.Node) bool {
			as, ok := nd.(*ast.AssignStmt)
			if !ok || len(as.Lhs) != len(as.Rhs) {
				return true
			}
			for i, l := range as.Lhs {
				if id, ok := l.(*ast.Ident); ok && id.IsExported() && strings.HasSuffix(id.Name, "Prim") {
					handles[id.Name] = firstString(as.Rhs[i])
				}
			}
			return true
		})
	}
	return handles
}

// firstString returns the value of the first string literal in e.
func firstString(e ast.Expr) string {
	var s string
	ast.Inspect(e, func(n ast.Node) bool {
		if s != "" {
			return false
		}
		if b, ok := n.(*ast.BasicLit); ok && b.Kind == token.STRING {
			if v, err := strconv.Unquote(b.Value); err == nil {
				s = v
			}
		}
		return true
	})
	return s
}

// TestEveryOpsPrimHasACase fails for any ops.XxxPrim handle, and any
// primitive recorded by core.Define in package ops, without a case.
func TestEveryOpsPrimHasACase(t *testing.T) {
	covered := map[*core.Prim]bool{}
	byName := map[string]bool{}
	for _, c := range Cases() {
		if c.Prim == nil {
			t.Errorf("case %s has no primitive", c.Name)
			continue
		}
		covered[c.Prim] = true
		byName[c.Prim.Name] = true
	}
	handles := opsPrimHandles(t)
	if len(handles) < 50 {
		t.Fatalf("found only %d Prim handles in ops: %v", len(handles), handles)
	}
	for h, name := range handles {
		switch {
		case name == "":
			t.Errorf("ops.%s: cannot read its primitive's name from the source", h)
		case !byName[name]:
			t.Errorf("ops.%s (%s) has no case in optest.Cases", h, name)
		}
	}
	for _, p := range core.Prims() {
		if !covered[p] && !isRootPrim(p) {
			t.Errorf("primitive %s (core.Prims) has no case in optest.Cases", p.Name)
		}
	}
}

// isRootPrim reports primitives that live outside package ops (control
// flow, the jitted call, Print): the spore package tests those.
func isRootPrim(p *core.Prim) bool {
	switch {
	case p.Name == "Cond", p.Name == "While", p.Name == "Scan", p.Name == "Print", strings.HasPrefix(p.Name, "Call["):
		return true
	case p == comm.AllReduceStartPrim, p == comm.AllReduceWaitPrim:
		// A non-blocking all-reduce works only as a start and its wait
		// (packages comm and nn test the pair), not as one op of a case.
		return true
	}
	return false
}

// TestCasesRun applies every case to its inputs in both float dtypes, and
// checks what the catalogue claims: differentiable cases have a VJP, and
// their differentiable inputs are floating point.
func TestCasesRun(t *testing.T) {
	for _, c := range Cases() {
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
			xs := c.Inputs(dt)
			y := c.Fn(xs...)
			if y == nil || y.Size() == 0 {
				t.Errorf("%s %v: empty result", c.Name, dt)
			}
			if c.FnN != nil && len(c.FnN(xs...)) == 0 {
				t.Errorf("%s %v: FnN returned nothing", c.Name, dt)
			}
			hasVJP := c.Prim.VJP != nil || c.Prim.VJPN != nil
			if c.Differentiable != hasVJP {
				t.Errorf("%s: Differentiable is %v but the primitive has VJP %v", c.Name, c.Differentiable, hasVJP)
			}
			if c.Differentiable && len(c.Diff) == 0 {
				t.Errorf("%s: differentiable with no differentiable input", c.Name)
			}
			for _, i := range c.Diff {
				if i >= len(xs) || !xs[i].DType().IsFloat() {
					t.Errorf("%s: input %d is not a float input", c.Name, i)
				}
			}
		}
	}
}
