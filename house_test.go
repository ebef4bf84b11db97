package spore_test

import (
	"bytes"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// TestJacobiansOfScalarInput: the Jacobians of a function of a 0-d input
// have the output's shape (nothing is appended for a 0-d input), and equal
// the derivative. The unit tangent used to be built with FromSlice, which
// gives shape [1] for an empty shape, and the JVP rule then panicked.
func TestJacobiansOfScalarInput(t *testing.T) {
	x := spore.Scalar(0.5)
	cases := []struct {
		name string
		f    func(*tensor.Tensor) *tensor.Tensor
		want []float64 // d f / dx at 0.5, flat
		shp  []int
	}{
		{"scalar to scalar", func(a *tensor.Tensor) *tensor.Tensor { return ops.Exp(a) }, []float64{math.Exp(0.5)}, []int{}},
		{"scalar to vector", func(a *tensor.Tensor) *tensor.Tensor {
			return ops.Mul(a, spore.FromSlice([]float64{1, 2, 3}))
		}, []float64{1, 2, 3}, []int{3}},
	}
	for _, c := range cases {
		for _, jac := range []struct {
			name string
			fn   func(func(*tensor.Tensor) *tensor.Tensor) func(...*tensor.Tensor) []*tensor.Tensor
		}{
			{"Jacfwd", func(f func(*tensor.Tensor) *tensor.Tensor) func(...*tensor.Tensor) []*tensor.Tensor {
				return spore.Jacfwd(f)
			}},
			{"Jacrev", func(f func(*tensor.Tensor) *tensor.Tensor) func(...*tensor.Tensor) []*tensor.Tensor {
				return spore.Jacrev(f)
			}},
		} {
			t.Run(c.name+"/"+jac.name, func(t *testing.T) {
				j := jac.fn(c.f)(x)[0]
				if !j.Shape().Equal(c.shp) {
					t.Fatalf("shape %v, want %v", j.Shape(), c.shp)
				}
				for i, w := range c.want {
					if got := j.Float64s()[i]; math.Abs(got-w) > 1e-12 {
						t.Errorf("element %d: %v, want %v", i, got, w)
					}
				}
			})
		}
	}
}

// TestDroppedJitFunctionsAreCollected makes and drops 10,000 jitted
// functions, each called once, and checks that the live heap stays flat:
// a dropped function's plans and statistics are collected with it. The
// statistics registry used to keep every one (about 1.85 KB each, and
// the compiled plan besides).
func TestDroppedJitFunctionsAreCollected(t *testing.T) {
	if testing.Short() {
		t.Skip("makes 10,000 compiled functions")
	}
	x := spore.Ones(spore.Float32, 4)
	run := func(n int) {
		for i := range n {
			scale := float32(i)
			f := spore.Jit(func(a *spore.Tensor) *spore.Tensor { return ops.MulScalar(a, float64(scale)) })
			f(x)
			if _, ok := spore.StatsOf(f); !ok {
				t.Fatal("StatsOf does not find a live function")
			}
		}
	}
	live := func() uint64 {
		var m runtime.MemStats
		for range 3 { // cleanups run after a collection; a second one frees what they released
			runtime.GC()
		}
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	run(500) // warm the free lists, the kernels' pools and the compiler
	before := live()
	run(10000)
	after := live()
	grown := int64(after) - int64(before)
	t.Logf("live heap %d -> %d bytes (%+d, %.1f bytes a function)", before, after, grown, float64(grown)/10000)
	// Kept state was ≥1.85 KB a function (18.5 MB); allow 100 bytes each.
	if grown > 1<<20 {
		t.Errorf("live heap grew by %d bytes over 10,000 dropped functions (%.0f bytes each)", grown, float64(grown)/10000)
	}
}

// TestRetracesAndCacheWarningBounded: a function that sees a new shape on
// every call keeps at most MaxRetraces explanations, and says that its
// cache is full once, not once per eviction.
func TestRetracesAndCacheWarningBounded(t *testing.T) {
	f := spore.NewJit(func(a *spore.Tensor) *spore.Tensor { return ops.Neg(a) }, spore.JitConfig{CacheSize: 2})
	stderr := captureStderr(t, func() {
		for n := 1; n <= 60; n++ {
			f.Fn(spore.Ones(spore.Float32, n))
		}
	})
	st := f.Stats()
	if st.Compiles != 60 || st.Evictions != 58 {
		t.Errorf("compiles %d, evictions %d; want 60, 58", st.Compiles, st.Evictions)
	}
	if len(st.Retraces) > 32 || len(st.Retraces) == 0 {
		t.Errorf("%d retraces kept, want at most 32", len(st.Retraces))
	}
	if last := st.Retraces[len(st.Retraces)-1]; !strings.Contains(last, "[60]") {
		t.Errorf("the last retrace kept is %q, want the latest (shape [60])", last)
	}
	if n := strings.Count(stderr, "cache is full"); n != 1 {
		t.Errorf("the cache-full warning was printed %d times, want once:\n%s", n, stderr)
	}
}

// TestRootExportsUnchanged compares the root package's exported names,
// with the methods of its exported types, against the list committed
// before the transforms, Jit and control flow moved out of it
// (testdata/exported.txt): the front door keeps every name where users
// find it.
func TestRootExportsUnchanged(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the package from source")
	}
	want, err := os.ReadFile(filepath.Join("testdata", "exported.txt"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	pkg, err := importer.ForCompiler(fset, "source", nil).Import("github.com/sporeml/spore")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	sc := pkg.Scope()
	for _, n := range sc.Names() {
		o := sc.Lookup(n)
		if !o.Exported() {
			continue
		}
		got = append(got, n)
		if tn, ok := o.(*types.TypeName); ok {
			ms := types.NewMethodSet(types.NewPointer(tn.Type()))
			for i := range ms.Len() {
				if m := ms.At(i).Obj(); m.Exported() {
					got = append(got, n+"."+m.Name())
				}
			}
		}
	}
	slices.Sort(got)
	wantNames := strings.Fields(string(want))
	for _, n := range wantNames {
		if _, ok := slices.BinarySearch(got, n); !ok {
			t.Errorf("spore.%s is no longer exported", n)
		}
	}
	for _, n := range got {
		if _, ok := slices.BinarySearch(wantNames, n); !ok {
			t.Errorf("spore.%s is new: add it to testdata/exported.txt if it is meant to be", n)
		}
	}
}

// TestWhoImportsRoot: only the packages meant to stand on the front door
// import it — the user-facing ones (nn, train, models, dashboard, serve),
// the command, the examples and the benchmark programs. Format, optimiser and runtime packages
// (onnx, optim, summary, comm, ...) use the packages beneath it.
func TestWhoImportsRoot(t *testing.T) {
	allowed := []string{"nn", "train", "models", "dashboard", "serve", "cmd", "examples", "bench"}
	const root = `"github.com/sporeml/spore"`
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || filepath.Dir(path) == "." {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, im := range f.Imports {
			if im.Path.Value != root {
				continue
			}
			top := strings.Split(filepath.ToSlash(path), "/")[0]
			if !slices.Contains(allowed, top) {
				t.Errorf("%s imports the root package; only %v may", path, allowed)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRootIsOnlyTheFrontDoor bounds the root package's own code: the
// facade, the configuration and one-line wrappers over the packages that
// do the work, at most 1,200 lines of non-test Go.
func TestRootIsOnlyTheFrontDoor(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines += bytes.Count(b, []byte("\n"))
	}
	t.Logf("%d lines of non-test Go in the root package", lines)
	if lines > 1200 {
		t.Errorf("the root package has %d lines of non-test Go, more than 1,200: move the machinery beneath it", lines)
	}
}
