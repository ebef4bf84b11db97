package spore_test

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

func TestSaveGraphsDumpsEveryPass(t *testing.T) {
	dir := t.TempDir()
	spore.SetContext(spore.WithSaveGraphs(dir))
	defer spore.SetContext(spore.WithSaveGraphs(""))
	m := newSeedMLP()
	spore.Jit(m.forward, spore.JitConfig{Name: "seed"})(tensor.Ones(spore.Float32, 8, 1, 28, 28))
	files, err := filepath.Glob(filepath.Join(dir, "seed", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dumps in %s: %v", dir, err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	all := strings.Join(names, " ")
	for _, want := range []string{"00_input.ir", "00_input.dot", "_anchor.ir", "_dce.dot", "_final.ir"} {
		if !strings.Contains(all, want) {
			t.Errorf("dump %q missing among %v", want, names)
		}
	}
	final, _ := filepath.Glob(filepath.Join(dir, "seed", "*_final.ir"))
	text, _ := os.ReadFile(final[0])
	if !strings.Contains(string(text), "Anchor(") {
		t.Errorf("final IR lacks the fused GEMM:\n%s", text)
	}
}

func TestCacheBoundWarnsAndEvicts(t *testing.T) {
	j := spore.NewJit(func(x *spore.Tensor) *spore.Tensor { return ops.Neg(x) }, spore.JitConfig{CacheSize: 2})
	stderr := captureStderr(t, func() {
		for n := 1; n <= 3; n++ {
			j.Fn(tensor.Ones(spore.Float32, n))
		}
	})
	if !strings.Contains(stderr, "WARNING") || !strings.Contains(stderr, "cache is full") {
		t.Fatalf("no loud warning on eviction; stderr: %q", stderr)
	}
	if st := j.Stats(); st.Evictions != 1 || st.Compiles != 3 {
		t.Fatalf("stats %+v", st)
	}
	// The evicted signature compiles again, it is not run eagerly.
	captureStderr(t, func() { j.Fn(tensor.Ones(spore.Float32, 1)) })
	if st := j.Stats(); st.Compiles != 4 {
		t.Fatalf("stats after re-use %+v", st)
	}
}

func TestDisableJit(t *testing.T) {
	f := func(x *spore.Tensor) *spore.Tensor {
		if x.Item() > 0 { // legal only when not tracing
			return x
		}
		return ops.Neg(x)
	}
	j := spore.NewJit(f, spore.JitConfig{Disable: true})
	if got := j.Fn(tensor.Scalar(float32(-2))).Item(); got != 2 {
		t.Fatalf("disabled Jit = %v", got)
	}
	spore.SetContext(spore.WithDisableJit(true))
	defer spore.SetContext(spore.WithDisableJit(false))
	if got := spore.Jit(f)(tensor.Scalar(float32(3))).Item(); got != 3 {
		t.Fatalf("globally disabled Jit = %v", got)
	}
	if st := j.Stats(); st.Compiles != 0 {
		t.Fatalf("compiled while disabled: %+v", st)
	}
}

func TestTracingDoesNotCaptureOtherGoroutines(t *testing.T) {
	w := tensor.NewParameter("w", tensor.FromSlice([]float32{2}, 1))
	inTrace := make(chan struct{})
	done := make(chan struct{})
	var eager *spore.Tensor
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-inTrace
		eager = ops.Mul(w, w) // a parameter read on another goroutine
		close(done)
	}()
	f := spore.Jit(func(x *spore.Tensor) *spore.Tensor {
		close(inTrace)
		<-done // hold the trace open while the other goroutine works
		return ops.Mul(x, w)
	})
	out := f(tensor.FromSlice([]float32{3}, 1))
	wg.Wait()
	if eager.IsSymbolic() || eager.Item() != 4 {
		t.Fatalf("eager op on another goroutine was captured by the trace: %v", eager)
	}
	if out.Item() != 6 {
		t.Fatalf("traced result %v", out.Item())
	}
}

func TestConcretizationFixWithCond(t *testing.T) {
	// The fix the error suggests: branch with spore.Cond.
	f := spore.Jit(func(x *spore.Tensor) *spore.Tensor {
		return spore.Cond(ops.Greater(ops.Sum(x), ops.ScalarLike(x, 0)),
			func(a ...*spore.Tensor) []*spore.Tensor { return a },
			func(a ...*spore.Tensor) []*spore.Tensor { return []*spore.Tensor{ops.Neg(a[0])} },
			x)[0]
	})
	if got := f(tensor.FromSlice([]float32{-1, -2}, 2)).Float32s(); got[0] != 1 || got[1] != 2 {
		t.Fatalf("got %v", got)
	}
}

func captureStderr(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stderr
	os.Stderr = w
	out := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		out <- string(b)
	}()
	f()
	os.Stderr = old
	w.Close()
	return <-out
}
