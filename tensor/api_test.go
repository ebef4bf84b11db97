package tensor_test

import (
	"go/ast"
	"reflect"
	"testing"

	"github.com/sporeml/spore/internal/testkit"

	"github.com/sporeml/spore/tensor"
)

// Package tensor is the user's API: the dispatch machinery (primitives,
// tracer, tape, raw buffers, panicking helpers) lives under internal/, and
// neither the package nor the Tensor type exports it.
func TestTensorExportsNoPlumbing(t *testing.T) {
	plumbing := map[string]bool{
		"Apply": true, "ApplyN": true, "Prim": true, "Traits": true, "Tracer": true,
		"BeginTrace": true, "CurrentTracer": true, "NewSymbolic": true, "Node": true,
		"TrackLeaf": true, "TrackParam": true, "TrackParams": true, "Untracked": true,
		"Panicf": true, "Errorf": true, "CallerLoc": true, "NewOf": true, "FromBuffer": true,
		"CopyElems": true, "NormAxis": true, "RandUint64": true, "IdentityPrim": true,
	}
	fset, files := testkit.Sources(t, ".")
	for _, file := range files {
		f := fset.Position(file.Pos()).Filename
		for _, d := range file.Decls {
			if g, ok := d.(*ast.GenDecl); ok {
				for _, s := range g.Specs {
					var names []*ast.Ident
					switch s := s.(type) {
					case *ast.TypeSpec:
						names = []*ast.Ident{s.Name}
					case *ast.ValueSpec:
						names = s.Names
					}
					for _, n := range names {
						if plumbing[n.Name] {
							t.Errorf("%s: package tensor exports %s, which belongs under internal/", f, n.Name)
						}
					}
				}
			}
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && plumbing[fn.Name.Name] {
				t.Errorf("%s: package tensor exports func %s, which belongs under internal/", f, fn.Name.Name)
			}
		}
	}
	for _, m := range []string{"Node", "Tracked", "NeedsGrad", "Symbol", "Rebind", "CopyFrom"} {
		if _, ok := reflect.TypeFor[*tensor.Tensor]().MethodByName(m); ok {
			t.Errorf("Tensor has method %s, tape or trace plumbing users must not call", m)
		}
	}
}
