// Package testkit holds helpers shared by the project's own tests:
// comparing results to a tolerance and expecting a *tensor.Error panic
// (compare.go), measuring what a call allocates, and reading a package's
// non-test sources for tests that check the code itself (no op found by
// name, no op asking its mode, no plumbing exported).
package testkit

import (
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// AllocatedBy returns the heap bytes f allocated. A measurement over bound
// is repeated, keeping the least, so that an allocation by another
// goroutine of the test binary during one run does not count against f.
func AllocatedBy(f func(), bound uint64) uint64 {
	var before, after runtime.MemStats
	best := uint64(math.MaxUint64)
	for range 3 {
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		best = min(best, after.TotalAlloc-before.TotalAlloc)
		if best <= bound {
			break
		}
	}
	return best
}

// Sources parses the non-test Go files of the given directories (relative
// to the test's package) and returns them with their file set. It fails
// the test when a file does not parse or when none is found, so that a
// check over them cannot pass by reading nothing.
func Sources(t testing.TB, dirs ...string) (*token.FileSet, []*ast.File) {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	for _, dir := range dirs {
		names, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		t.Fatalf("no Go sources in %v: is the test running in its package directory?", dirs)
	}
	return fset, files
}
