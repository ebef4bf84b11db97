package spore_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/models"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/tensor"
)

// Dynamic shape in Graph mode: a function compiled with an input signature
// whose batch is dynamic (JitConfig.Inputs, Cell.SetInputs) runs one plan
// at every batch size up to the bound, compiled once, and gives the same
// results as a plan compiled for each shape and as PyNative mode.

// dynInput returns a deterministic input of shape [n, rest...]: row i of
// the batch depends on i, so that a plan mixing up rows is caught.
func dynInput(n int, rest ...int) *spore.Tensor {
	shape := append([]int{n}, rest...)
	x := tensor.New(spore.Float32, shape...)
	d := x.Float32s()
	for i := range d {
		d[i] = float32(math.Sin(float64(i)*0.37)) * 0.5
	}
	return x
}

// maxDiff returns the largest |a−b| over two tensors of one shape, and an
// error naming the shapes when they differ.
func maxDiff(a, b *spore.Tensor) (float64, error) {
	if !a.Shape().Equal(b.Shape()) {
		return 0, fmt.Errorf("shape %v, want %v", a.Shape(), b.Shape())
	}
	m := 0.0
	bd := b.Float32s()
	for i, v := range a.Float32s() {
		m = max(m, math.Abs(float64(v)-float64(bd[i])))
	}
	return m, nil
}

type dynModel struct {
	name  string
	cell  func() nn.Module
	shape []int // one sample's shape
	bound int
	sizes []int
	// tol bounds |dynamic − PyNative|; the dynamic and per-shape plans
	// must agree bit for bit.
	tol float64
}

var dynModels = []dynModel{
	{"seed", func() nn.Module { return models.NewNetwork() }, []int{1, 28, 28}, 16, []int{1, 7, 16}, 1e-5},
	{"lenet", func() nn.Module { return models.NewLeNet5(10) }, []int{1, 28, 28}, 16, []int{1, 5, 16}, 1e-5},
	{"vit", func() nn.Module { return models.NewViT(10) }, nil, 8, []int{1, 3, 8}, 1e-4},
}

func vitShape() []int {
	c := models.NewViT(10).Config
	return []int{c.Channels, c.ImageSize, c.ImageSize}
}

func TestDynamicBatchModels(t *testing.T) {
	for _, m := range dynModels {
		t.Run(m.name, func(t *testing.T) {
			shape := m.shape
			if shape == nil {
				shape = vitShape()
			}
			net := m.cell()
			spec := spore.InputSpec{DType: spore.Float32, Shape: append([]int{-1}, shape...), Max: []int{m.bound}}
			dyn := spore.NewJit(func(xs ...*spore.Tensor) *spore.Tensor { return net.Base().Call(xs...) },
				spore.JitConfig{Inputs: []spore.InputSpec{spec}, Name: m.name + ".dyn"})
			per := spore.NewJit(func(xs ...*spore.Tensor) *spore.Tensor { return net.Base().Call(xs...) },
				spore.JitConfig{Name: m.name + ".per"})
			for _, n := range m.sizes {
				x := dynInput(n, shape...)
				eager := net.Base().Call(x)
				got := dyn.Fn(x)
				want := per.Fn(x)
				if d, err := maxDiff(got, want); err != nil || d != 0 {
					t.Errorf("batch %d: dynamic plan vs per-shape plan: max diff %g %v", n, d, err)
				}
				if d, err := maxDiff(got, eager); err != nil || d > m.tol {
					t.Errorf("batch %d: dynamic plan vs PyNative: max diff %g (tolerance %g) %v", n, d, m.tol, err)
				}
			}
			st := dyn.Stats()
			if st.Compiles != 1 || st.DynamicFallback != "" {
				t.Errorf("dynamic: %d compiles (want 1), fallback %q, retraces %q", st.Compiles, st.DynamicFallback, st.Retraces)
			}
			if st.SampleCompiles == 0 {
				t.Errorf("dynamic: no sample compiles: the fit was not verified")
			}
			if ps := per.Stats(); ps.Compiles != len(m.sizes) {
				t.Errorf("per-shape: %d compiles, want %d", ps.Compiles, len(m.sizes))
			}
		})
	}
}

// TestDynamicBatchCellSetInputs runs a cell with SetInputs in Graph mode:
// every batch size up to the bound runs the one plan, compiled before the
// first call by CompileInputs. A batch above the bound falls back to a
// per-shape plan (as documented), with the reason in Retraces, and gives
// PyNative mode's result; a wrong static dimension fails in both modes
// with the same error.
func TestDynamicBatchCellSetInputs(t *testing.T) {
	net := nn.Jit(models.NewNetwork())
	net.SetInputs(spore.InputSpec{DType: spore.Float32, Shape: []int{-1, 1, 28, 28}, Max: []int{8}})
	if err := net.CompileInputs(); err != nil {
		t.Fatal(err)
	}
	if st := net.JitStats(); st.Compiles != 1 {
		t.Fatalf("CompileInputs: %d compiles, want 1", st.Compiles)
	}
	for n := 1; n <= 8; n++ {
		x := dynInput(n, 1, 28, 28)
		got := net.Call(x)
		want := net.Construct(x) // PyNative: the body, its layers eager
		if d, err := maxDiff(got, want); err != nil || d > 1e-5 {
			t.Errorf("batch %d: max diff %g %v", n, d, err)
		}
	}
	if st := net.JitStats(); st.Compiles != 1 {
		t.Fatalf("after batches 1..8: %d compiles, want 1 (retraces %q)", st.Compiles, st.Retraces)
	}
	cases := []struct {
		name     string
		shape    []int
		compiles int    // after the call
		retrace  string // in the last retrace reason
		panics   string // in both modes' panic, if they panic
	}{
		{"above the bound", []int{9, 1, 28, 28}, 2, "do not fit the input signature Float32[<=8,1,28,28]", ""},
		{"above the bound again", []int{9, 1, 28, 28}, 2, "do not fit the input signature Float32[<=8,1,28,28]", ""},
		{"wrong static dim", []int{2, 1, 28, 27}, 2, "", "does not end in in_channels=784"},
	}
	for _, c := range cases {
		x := dynInput(c.shape[0], c.shape[1:]...)
		call := func(f func(*spore.Tensor) *spore.Tensor) (y *spore.Tensor, msg string) {
			defer func() {
				if r := recover(); r != nil {
					msg = fmt.Sprint(r)
				}
			}()
			return f(x), ""
		}
		want, wantMsg := call(net.Construct)
		got, gotMsg := call(func(x *spore.Tensor) *spore.Tensor { return net.Call(x) })
		if c.panics != "" {
			if !strings.Contains(wantMsg, c.panics) || !strings.Contains(gotMsg, c.panics) {
				t.Errorf("%s: PyNative panics %q, Graph mode %q; want both to say %q", c.name, wantMsg, gotMsg, c.panics)
			}
			continue
		}
		if gotMsg != "" || wantMsg != "" {
			t.Fatalf("%s: panics: Graph mode %q, PyNative %q", c.name, gotMsg, wantMsg)
		}
		if d, err := maxDiff(got, want); err != nil || d > 1e-5 {
			t.Errorf("%s: max diff %g %v", c.name, d, err)
		}
		st := net.JitStats()
		if st.Compiles != c.compiles || len(st.Retraces) == 0 || !strings.Contains(st.Retraces[len(st.Retraces)-1], c.retrace) {
			t.Errorf("%s: %d compiles (want %d), retraces %q", c.name, st.Compiles, c.compiles, st.Retraces)
		}
	}
}
