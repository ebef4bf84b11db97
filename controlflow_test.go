package spore_test

import (
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// piecewise is |x|·2 when sum(x) > 0 and x·x otherwise, through Cond.
func piecewise(x *spore.Tensor) *spore.Tensor {
	pred := ops.Greater(ops.Sum(x), ops.ScalarLike(x, 0))
	return spore.Cond(pred,
		func(a ...*spore.Tensor) []*spore.Tensor {
			return []*spore.Tensor{ops.Mul(ops.Abs(a[0]), ops.ScalarLike(a[0], 2))}
		},
		func(a ...*spore.Tensor) []*spore.Tensor { return []*spore.Tensor{ops.Mul(a[0], a[0])} },
		x)[0]
}

func TestCondBothModes(t *testing.T) {
	jf := spore.NewJit(piecewise)
	for _, in := range [][]float64{{1, -0.5, 2}, {-1, -0.5, 0.25}} {
		x := tensor.FromSlice(in, 3)
		want := piecewise(x).Float64s()
		got := jf.Fn(x).Float64s()
		for i := range want {
			if want[i] != got[i] {
				t.Fatalf("input %v: eager %v, graph %v", in, want, got)
			}
		}
	}
	if st := jf.Stats(); st.Compiles != 1 {
		t.Fatalf("Cond must not retrace per branch taken: %+v", st)
	}
}

func TestCondGradientGraphMode(t *testing.T) {
	w := tensor.NewParameter("w", tensor.FromSlice([]float64{0.5, -2, 1.5}, 3))
	f := func(x *spore.Tensor) *spore.Tensor {
		pred := ops.Greater(ops.Sum(x), ops.ScalarLike(x, 0))
		out := spore.Cond(pred,
			func(a ...*spore.Tensor) []*spore.Tensor { return []*spore.Tensor{ops.Mul(ops.Sin(a[0]), w)} },
			func(a ...*spore.Tensor) []*spore.Tensor { return []*spore.Tensor{ops.Mul(ops.Exp(a[0]), x)} },
			x)
		return ops.Sum(out[0])
	}
	g := spore.Grad(f, spore.Weights(w))
	jg := spore.Jit(func(x *spore.Tensor) []*spore.Tensor { return g(x) })
	for _, in := range [][]float64{{1, -0.5, 2}, {-1, -0.5, 0.25}} {
		x := tensor.FromSlice(in, 3)
		want := g(x)
		got := jg(x)
		for k := range want {
			a, b := want[k].Float64s(), got[k].Float64s()
			for i := range a {
				if math.Abs(a[i]-b[i]) > 1e-12 {
					t.Fatalf("input %v grad %d: eager %v, graph %v", in, k, a, b)
				}
			}
		}
	}
}

func TestCondTypeJoinFailed(t *testing.T) {
	f := spore.Jit(func(x *spore.Tensor) *spore.Tensor {
		return spore.Cond(ops.Greater(ops.Sum(x), ops.ScalarLike(x, 0)),
			func(a ...*spore.Tensor) []*spore.Tensor { return []*spore.Tensor{a[0]} },
			func(a ...*spore.Tensor) []*spore.Tensor { return []*spore.Tensor{ops.Sum(a[0])} },
			x)[0]
	})
	defer func() {
		var e *tensor.Error
		err, _ := recover().(error)
		if !errors.As(err, &e) || !contains(e.Error(), "Type Join Failed") || !contains(e.Error(), "f32[3]") {
			t.Fatalf("want Type Join Failed, got %v", err)
		}
	}()
	f(tensor.Ones(spore.Float32, 3))
}

// doublings counts how many doublings take 1 past n, with While.
func doublings(n *spore.Tensor) []*spore.Tensor {
	two := tensor.Scalar(2.0)
	return spore.While(
		func(c ...*spore.Tensor) *spore.Tensor { return ops.Less(c[0], n) },
		func(c ...*spore.Tensor) []*spore.Tensor {
			return []*spore.Tensor{ops.Mul(c[0], two), ops.Add(c[1], tensor.Scalar(1.0))}
		},
		tensor.Scalar(1.0), tensor.Scalar(0.0))
}

func TestWhileBothModes(t *testing.T) {
	jf := spore.NewJit(func(n *spore.Tensor) []*spore.Tensor { return doublings(n) })
	for _, c := range []struct{ n, steps float64 }{{0.5, 0}, {1, 0}, {6, 3}, {1000, 10}} {
		x := tensor.Scalar(c.n)
		eager := doublings(x)[1].Item()
		graph := jf.Fn(x)[1].Item()
		if eager != c.steps || graph != c.steps {
			t.Fatalf("doublings(%v): eager %v, graph %v, want %v", c.n, eager, graph, c.steps)
		}
	}
	if st := jf.Stats(); st.Compiles != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestPrintRunsAtRunTime(t *testing.T) {
	f := spore.Jit(func(x *spore.Tensor) *spore.Tensor {
		y := ops.Mul(x, x)
		spore.Print("y =", y)
		return y
	})
	out := captureStdout(t, func() {
		f(tensor.FromSlice([]float32{1, 2}, 2))
		f(tensor.FromSlice([]float32{3, 4}, 2))
		spore.Print("eager", tensor.Scalar(float32(5)))
	})
	want := "y = [1. 4.]\ny = [ 9. 16.]\neager 5.0\n"
	if out != want {
		t.Fatalf("printed %q, want %q", out, want)
	}
}

func captureStdout(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	f()
	os.Stdout = old
	w.Close()
	return <-done
}

// Control-flow bodies are planned with the enclosing plan: carry buffers,
// slices and argument lists are laid out when it compiles, so a compiled
// call with a Cond, a While and a Scan allocates nothing.
func TestCompiledControlFlowDoesNotAllocate(t *testing.T) {
	f := spore.NewJit(func(x, xs *spore.Tensor) *spore.Tensor {
		c, _ := spore.Scan(func(c, x []*spore.Tensor) ([]*spore.Tensor, []*spore.Tensor) {
			return []*spore.Tensor{ops.Tanh(ops.Add(c[0], x[0]))}, nil
		}, []*spore.Tensor{x}, []*spore.Tensor{xs})
		d := doublings(ops.Sum(c[0]))
		return ops.Add(ops.Sum(piecewise(c[0])), d[1])
	})
	x := tensor.FromSlice([]float64{0.5, -1, 2}, 3)
	xs := tensor.RandUniform(spore.Float64, -1, 1, 4, 3)
	outs := []*spore.Tensor{tensor.Zeros(spore.Float64)}
	args := []*spore.Tensor{x, xs}
	f.RunInto(args, outs)
	if n := testing.AllocsPerRun(50, func() { f.RunInto(args, outs) }); n != 0 {
		t.Errorf("a compiled call with Cond, While and Scan allocates %v times", n)
	}
}

// WithSaveGraphs dumps show a control-flow body nested under its node: an
// indented region block in the text, a cluster in the DOT file.
func TestSaveGraphsShowRegions(t *testing.T) {
	dir := t.TempDir()
	spore.SetContext(spore.WithSaveGraphs(dir))
	defer spore.SetContext(spore.WithSaveGraphs(""))
	spore.Jit(piecewise, spore.JitConfig{Name: "pw"})(tensor.FromSlice([]float32{1, -2}, 2))
	for _, c := range []struct{ glob, want string }{
		{"*_final.ir", "    region 1 binds ("},
		{"*_final.ir", "      func pw.cond.else("},
		{"*_final.dot", "subgraph cluster_"},
	} {
		files, _ := filepath.Glob(filepath.Join(dir, "pw", c.glob))
		if len(files) != 1 {
			t.Fatalf("%s: %d dumps", c.glob, len(files))
		}
		text, _ := os.ReadFile(files[0])
		if !strings.Contains(string(text), c.want) {
			t.Errorf("%s lacks %q:\n%s", c.glob, c.want, text)
		}
	}
}
