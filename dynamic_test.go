package spore_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/models"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/optim"
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
	d := x.Data().([]float32)
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
			for _, c := range []spore.JitConfig{{Level: spore.O0}, {Level: spore.O2}, {Precision: "O2"}} {
				t.Run(fmt.Sprintf("level %v precision %q", c.Level, c.Precision), func(t *testing.T) { dynLevel(t, m, c) })
			}
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
			// Graph mode globally, the cell's own signature (SetInputs).
			func() {
				defer spore.SetContext(spore.WithMode(spore.GetContext().Mode))
				spore.SetContext(spore.WithMode(spore.GraphMode))
				cell := net
				cell.Base().SetInputs(spec)
				for _, n := range m.sizes {
					x := dynInput(n, shape...)
					if d, err := maxDiff(cell.Base().Call(x), per.Fn(x)); err != nil || d != 0 {
						t.Errorf("Graph mode, SetInputs, batch %d: against the per-shape plan: max diff %g %v", n, d, err)
					}
				}
				if st := cell.Base().JitStats(); st.Compiles != 1 {
					t.Errorf("Graph mode, SetInputs: %d compiles, want 1 (fallback %q)", st.Compiles, st.DynamicFallback)
				}
			}()
			if st.SampleCompiles == 0 {
				t.Errorf("dynamic: no sample compiles: the fit was not verified")
			}
			if ps := per.Stats(); ps.Compiles != len(m.sizes) {
				t.Errorf("per-shape: %d compiles, want %d", ps.Compiles, len(m.sizes))
			}
		})
	}
}

// dynLevel checks m's dynamic plan against per-shape plans at a level or
// precision other than the default.
func dynLevel(t *testing.T, m dynModel, cfg spore.JitConfig) {
	shape := m.shape
	if shape == nil {
		shape = vitShape()
	}
	net := m.cell()
	spec := spore.InputSpec{DType: spore.Float32, Shape: append([]int{-1}, shape...), Max: []int{m.bound}}
	fn := func(xs ...*spore.Tensor) *spore.Tensor { return net.Base().Call(xs...) }
	per := spore.NewJit(fn, cfg)
	cfg.Inputs = []spore.InputSpec{spec}
	dyn := spore.NewJit(fn, cfg)
	for _, n := range m.sizes {
		x := dynInput(n, shape...)
		if d, err := maxDiff(dyn.Fn(x), per.Fn(x)); err != nil || d != 0 {
			t.Errorf("batch %d: against the per-shape plan: max diff %g %v", n, d, err)
		}
	}
	if st := dyn.Stats(); st.Compiles != 1 || st.DynamicFallback != "" {
		t.Errorf("%d compiles (want 1), fallback %q", st.Compiles, st.DynamicFallback)
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

// TestDynamicBatchConcurrent calls one dynamic plan from several
// goroutines at different batch sizes at once, as a server's instances
// do: every result is the one computed alone.
func TestDynamicBatchConcurrent(t *testing.T) {
	net := models.NewLeNet5(10)
	f := spore.NewJit(func(xs ...*spore.Tensor) *spore.Tensor { return net.Base().Call(xs...) },
		spore.JitConfig{Inputs: []spore.InputSpec{{DType: spore.Float32, Shape: []int{-1, 1, 28, 28}, Max: []int{8}}}})
	if err := f.CompileSpec(); err != nil {
		t.Fatal(err)
	}
	xs := make([]*spore.Tensor, 9)
	want := make([]*spore.Tensor, 9)
	for n := 1; n <= 8; n++ {
		xs[n] = dynInput(n, 1, 28, 28)
		want[n] = f.Fn(xs[n])
	}
	const workers, calls = 4, 20
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			for i := range calls {
				n := 1 + (w*calls+i*3)%8
				got := f.Fn(xs[n])
				if d, err := maxDiff(got, want[n]); err != nil || d != 0 {
					errs <- fmt.Errorf("worker %d, batch %d: max diff %g %v", w, n, d, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if st := f.Stats(); st.Compiles != 1 {
		t.Errorf("%d compiles, want 1", st.Compiles)
	}
}

// TestDynamicBatchOps runs small functions over a dynamic batch whose
// graphs depend on it in the ways the fit handles (dimensions and
// attributes affine in the batch: a reshape to 2n, a concatenation, a
// split, a mean's divisor, a constant 1/n) and in ways it refuses (a
// slice of ceil(n/2) rows, a constant n+0.5), in Graph mode against
// per-shape plans (bit for bit) and PyNative mode. A refused function
// falls back to per-shape plans and says why; a function that traces
// another graph at batch 1 gets a per-shape plan there.
func TestDynamicBatchOps(t *testing.T) {
	const bound = 8
	rows := func(x *spore.Tensor) int { return x.Shape()[0] }
	cases := []struct {
		name     string
		f        func(xs ...*spore.Tensor) *spore.Tensor
		inputs   int
		compiles int    // over batches 1, 3 and the bound
		fallback string // in Stats.DynamicFallback; "" when one plan serves
	}{
		{"elementwise and matmul", func(xs ...*spore.Tensor) *spore.Tensor {
			return ops.MatMul(ops.ReLU(ops.Add(xs[0], xs[0])), ops.Transpose(xs[0], 1, 0))
		}, 1, 1, ""},
		{"two inputs sharing the batch", func(xs ...*spore.Tensor) *spore.Tensor { return ops.Mul(xs[0], ops.Exp(xs[1])) }, 2, 1, ""},
		{"sum over features", func(xs ...*spore.Tensor) *spore.Tensor { return ops.Sum(xs[0], 1) }, 1, 1, ""},
		{"reshape to 2n", func(xs ...*spore.Tensor) *spore.Tensor {
			return ops.Softmax(ops.Reshape(xs[0], 2*rows(xs[0]), 2), -1)
		}, 1, 1, ""},
		{"concat along the batch", func(xs ...*spore.Tensor) *spore.Tensor {
			return ops.Concat(0, xs[0], ops.Neg(xs[0]))
		}, 1, 1, ""},
		{"split along the batch, another graph at 1", func(xs ...*spore.Tensor) *spore.Tensor {
			n := rows(xs[0])
			if n < 2 {
				return ops.Mul(xs[0], xs[0])
			}
			p := ops.Split(xs[0], 0, n-1, 1)
			return ops.Concat(0, p[1], p[0])
		}, 1, 2, ""},
		{"ceil(n/2) rows", func(xs ...*spore.Tensor) *spore.Tensor {
			return ops.Slice(xs[0], []int{0, 0}, []int{(rows(xs[0]) + 1) / 2, 4})
		}, 1, 3, "is not affine in the dynamic sizes"},
		{"mean over the batch", func(xs ...*spore.Tensor) *spore.Tensor { return ops.Mean(xs[0], 0) }, 1, 1, ""},
		{"a constant 1/n", func(xs ...*spore.Tensor) *spore.Tensor {
			return ops.Mul(xs[0], tensor.Scalar(1/float32(rows(xs[0]))))
		}, 1, 1, ""},
		{"a constant n+0.5", func(xs ...*spore.Tensor) *spore.Tensor {
			return ops.Mul(xs[0], tensor.Scalar(float32(rows(xs[0]))+0.5))
		}, 1, 3, "element 0 is 8.5, not an integer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			specs := make([]spore.InputSpec, c.inputs)
			for i := range specs {
				specs[i] = spore.InputSpec{DType: spore.Float32, Shape: []int{-1, 4}, Max: []int{bound}}
			}
			dyn := spore.NewJit(c.f, spore.JitConfig{Inputs: specs})
			per := spore.NewJit(c.f)
			for _, n := range []int{1, 3, bound} {
				xs := make([]*spore.Tensor, c.inputs)
				for i := range xs {
					xs[i] = dynInput(n, 4)
					d := xs[i].Data().([]float32)
					for k := range d {
						d[k] += float32(i)
					}
				}
				got, want, eager := dyn.Fn(xs...), per.Fn(xs...), c.f(xs...)
				if d, err := maxDiff(got, want); err != nil || d != 0 {
					t.Errorf("batch %d: against the per-shape plan: max diff %g %v", n, d, err)
				}
				if d, err := maxDiff(got, eager); err != nil || d > 1e-6 {
					t.Errorf("batch %d: against PyNative: max diff %g %v", n, d, err)
				}
			}
			st := dyn.Stats()
			if st.Compiles != c.compiles || !strings.Contains(st.DynamicFallback, c.fallback) || (c.fallback == "") != (st.DynamicFallback == "") {
				t.Errorf("%d compiles (want %d), fallback %q (want it to say %q)", st.Compiles, c.compiles, st.DynamicFallback, c.fallback)
			}
		})
	}
}

// TestDynamicTwoDims: a batch and a sequence length dynamic at once. Each
// dimension's sizes fit separately (the k-th -1 of every input is one
// dimension); a reshape to batch×length, not affine in the two, falls
// back with the reason.
func TestDynamicTwoDims(t *testing.T) {
	spec := []spore.InputSpec{{DType: spore.Float32, Shape: []int{-1, -1, 4}, Max: []int{6, 5}}}
	cases := []struct {
		name     string
		f        func(xs ...*spore.Tensor) *spore.Tensor
		fallback string
	}{
		{"attention scores", func(xs ...*spore.Tensor) *spore.Tensor {
			s := ops.MatMul(xs[0], ops.Transpose(xs[0], 0, 2, 1))
			return ops.Sum(ops.Softmax(s, -1), 1)
		}, ""},
		{"flatten batch and length", func(xs ...*spore.Tensor) *spore.Tensor {
			sh := xs[0].Shape()
			return ops.ReLU(ops.Reshape(xs[0], sh[0]*sh[1], 4))
		}, "is not affine"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dyn := spore.NewJit(c.f, spore.JitConfig{Inputs: spec})
			per := spore.NewJit(c.f)
			for _, nm := range [][2]int{{1, 1}, {2, 5}, {6, 3}, {6, 5}, {4, 4}} {
				x := dynInput(nm[0], nm[1], 4)
				got, want, eager := dyn.Fn(x), per.Fn(x), c.f(x)
				if d, err := maxDiff(got, want); err != nil || d != 0 {
					t.Errorf("sizes %v: against the per-shape plan: max diff %g %v", nm, d, err)
				}
				if d, err := maxDiff(got, eager); err != nil || d > 1e-6 {
					t.Errorf("sizes %v: against PyNative: max diff %g %v", nm, d, err)
				}
			}
			st := dyn.Stats()
			if c.fallback == "" && (st.Compiles != 1 || st.DynamicFallback != "") || !strings.Contains(st.DynamicFallback, c.fallback) {
				t.Errorf("%d compiles, fallback %q (want it to say %q)", st.Compiles, st.DynamicFallback, c.fallback)
			}
		})
	}
}

// TestDynamicSmallBounds: bounds of 1, 2 and 3 (laid out at 4, held to
// the bound) and a spec without dynamic dimensions.
func TestDynamicSmallBounds(t *testing.T) {
	f := func(x *spore.Tensor) *spore.Tensor { return ops.Tanh(ops.Sum(ops.Mul(x, x), 1)) }
	for _, bound := range []int{1, 2, 3} {
		t.Run(fmt.Sprint(bound), func(t *testing.T) {
			dyn := spore.NewJit(f, spore.JitConfig{Inputs: []spore.InputSpec{{DType: spore.Float32, Shape: []int{-1, 4}, Max: []int{bound}}}})
			if err := dyn.CompileSpec(); err != nil {
				t.Fatal(err)
			}
			for n := 1; n <= bound+1; n++ { // bound+1 falls back
				x := dynInput(n, 4)
				if d, err := maxDiff(dyn.Fn(x), f(x)); err != nil || d > 1e-6 {
					t.Errorf("batch %d: max diff %g %v", n, d, err)
				}
			}
			if st := dyn.Stats(); st.Compiles != 2 || st.DynamicFallback != "" {
				t.Errorf("%d compiles (want the signature and batch %d's), fallback %q", st.Compiles, bound+1, st.DynamicFallback)
			}
		})
	}
	static := spore.NewJit(f, spore.JitConfig{Inputs: []spore.InputSpec{{DType: spore.Float32, Shape: []int{2, 4}}}})
	if err := static.CompileSpec(); err != nil {
		t.Fatal(err)
	}
	x := dynInput(2, 4)
	if d, err := maxDiff(static.Fn(x), f(x)); err != nil || d > 1e-6 {
		t.Errorf("static spec: max diff %g %v", d, err)
	}
	if st := static.Stats(); st.Compiles != 1 {
		t.Errorf("static spec: %d compiles", st.Compiles)
	}
}

// TestDynamicRefusesOne: a function that refuses batch 1 (as BatchNorm in
// training does) refuses it compiled too — batch 1 takes a per-shape plan,
// which fails as PyNative mode does — while larger batches share the plan.
func TestDynamicRefusesOne(t *testing.T) {
	f := func(x *spore.Tensor) *spore.Tensor {
		if x.Shape()[0] < 2 {
			panic(fmt.Sprintf("want at least 2 rows, got %v", x.Shape()))
		}
		return ops.Sub(x, ops.MeanKeepDims(x, 1))
	}
	dyn := spore.NewJit(f, spore.JitConfig{Inputs: []spore.InputSpec{{DType: spore.Float32, Shape: []int{-1, 4}, Max: []int{8}}}})
	if err := dyn.CompileSpec(); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{2, 5, 8} {
		x := dynInput(n, 4)
		if d, err := maxDiff(dyn.Fn(x), f(x)); err != nil || d > 1e-6 {
			t.Errorf("batch %d: max diff %g %v", n, d, err)
		}
	}
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "want at least 2 rows") {
				t.Errorf("batch 1: %v, want the function's own refusal", r)
			}
		}()
		dyn.Fn(dynInput(1, 4))
	}()
	if st := dyn.Stats(); st.Compiles != 1 || st.DynamicFallback != "" {
		t.Errorf("%d compiles (want 1), fallback %q", st.Compiles, st.DynamicFallback)
	}
}

// scaleAttrs hold a closure: what it captures is invisible to the graphs'
// comparison, which sees only its code.
type scaleAttrs struct{ factor func() float32 }

// scalePrim multiplies by its attributes' factor.
var scalePrim = func() *core.Prim {
	p := &core.Prim{
		Name:  "TestScaleByClosure",
		Infer: func(_ any, in []*tensor.Tensor) tensor.Meta { return in[0].Meta() },
	}
	p.Register(spore.Float32, core.CPU, func(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
		f := attrs.(scaleAttrs).factor()
		o := out.Data().([]float32)
		for i, v := range in[0].Data().([]float32) {
			o[i] = v * f
		}
	})
	return p
}()

// TestDynamicClosureCaught: an op whose attributes capture the batch size
// in a closure passes the graphs' comparison, but the cross-check — the
// signature's plan against the samples' own plans on the same inputs —
// catches it, and the function falls back to per-shape plans, which give
// PyNative mode's results.
func TestDynamicClosureCaught(t *testing.T) {
	f := func(x *spore.Tensor) *spore.Tensor {
		n := float32(x.Shape()[0])
		return core.Apply(scalePrim, scaleAttrs{factor: func() float32 { return n }}, ops.Add(x, x))
	}
	dyn := spore.NewJit(f, spore.JitConfig{Inputs: []spore.InputSpec{{DType: spore.Float32, Shape: []int{-1, 4}, Max: []int{8}}}})
	err := dyn.CompileSpec()
	if err == nil || !strings.Contains(err.Error(), "differs from that of a plan compiled there") {
		t.Fatalf("CompileSpec: %v, want the cross-check's refusal", err)
	}
	for _, n := range []int{1, 3, 8} {
		x := dynInput(n, 4)
		if d, err := maxDiff(dyn.Fn(x), f(x)); err != nil || d != 0 {
			t.Errorf("batch %d: max diff %g %v", n, d, err)
		}
	}
}

// TestDynamicBatchGradient: a compiled forward and backward pass whose
// loss is a mean over the batch runs one plan at every batch size, with
// the per-shape plans' values and gradients: its graph holds the divisor
// 3n and, folded from the backward pass, a constant of the batch's shape
// filled with 1/(3n), both fitted to the batch.
func TestDynamicBatchGradient(t *testing.T) {
	w := spore.NewParameter("w", dynInput(4, 3))
	b := spore.NewParameter("b", tensor.Ones(spore.Float32, 3))
	loss := func(x *spore.Tensor) *spore.Tensor {
		return ops.Mean(ops.Square(ops.Add(ops.MatMul(x, w), b)), 0, 1)
	}
	vg := spore.ValueAndGrad(loss, spore.Weights(w, b))
	step := func(xs ...*spore.Tensor) []*spore.Tensor {
		l, gs := vg(xs[0])
		return append([]*spore.Tensor{l}, gs...)
	}
	dyn := spore.NewJit(step, spore.JitConfig{Inputs: []spore.InputSpec{{DType: spore.Float32, Shape: []int{-1, 4}, Max: []int{16}}}})
	per := spore.NewJit(step)
	for _, n := range []int{1, 3, 16} {
		x := dynInput(n, 4)
		got, want, eager := dyn.Fn(x), per.Fn(x), step(x)
		for i := range want {
			if d, err := maxDiff(got[i], want[i]); err != nil || d != 0 {
				t.Errorf("batch %d, result %d: against the per-shape plan: max diff %g %v", n, i, d, err)
			}
			if d, err := maxDiff(got[i], eager[i]); err != nil || d > 1e-5 {
				t.Errorf("batch %d, result %d: against PyNative: max diff %g %v", n, i, d, err)
			}
		}
	}
	if st := dyn.Stats(); st.Compiles != 1 || st.DynamicFallback != "" {
		t.Errorf("%d compiles (want 1), fallback %q", st.Compiles, st.DynamicFallback)
	}
}

// xyPair is a struct argument: its tensors are the flattened arguments the
// input signature describes.
type xyPair struct{ X, Y *spore.Tensor }

// TestDynamicStructArguments: a function of a struct of tensors (the
// general, reflecting path) with an input signature over its flattened
// tensors runs one plan at every batch size.
func TestDynamicStructArguments(t *testing.T) {
	f := func(p xyPair, scale float32) xyPair {
		return xyPair{X: ops.Add(p.X, p.Y), Y: ops.Mul(p.Y, tensor.Scalar(scale))}
	}
	spec := spore.InputSpec{DType: spore.Float32, Shape: []int{-1, 4}, Max: []int{8}}
	dyn := spore.NewJit(f, spore.JitConfig{Inputs: []spore.InputSpec{spec, spec}})
	for _, n := range []int{1, 3, 8} {
		p := xyPair{dynInput(n, 4), dynInput(n, 4)}
		got, want := dyn.Fn(p, 2), f(p, 2)
		for _, c := range [][2]*spore.Tensor{{got.X, want.X}, {got.Y, want.Y}} {
			if d, err := maxDiff(c[0], c[1]); err != nil || d != 0 {
				t.Errorf("batch %d: max diff %g %v", n, d, err)
			}
		}
	}
	if st := dyn.Stats(); st.Compiles != 1 || st.DynamicFallback != "" {
		t.Errorf("%d compiles (want 1), fallback %q", st.Compiles, st.DynamicFallback)
	}
}

// TestDynamicTrainingStep trains the seed network with a compiled step —
// forward, backward and the SGD update in one plan — whose batch is
// dynamic, on batches of changing size (an epoch's last batch is short),
// beside the same training with per-shape plans: the losses and the
// final weights agree bit for bit, and the dynamic step compiles once.
func TestDynamicTrainingStep(t *testing.T) {
	spec := []spore.InputSpec{
		{DType: spore.Float32, Shape: []int{-1, 1, 28, 28}, Max: []int{16}},
		{DType: spore.Int32, Shape: []int{-1}, Max: []int{16}},
	}
	newStep := func(inputs []spore.InputSpec) (*models.Network, *nn.TrainOneStepCell) {
		spore.SetSeed(7)
		net := models.NewNetwork()
		loss := nn.NewWithLossCell(net, nn.NewSoftmaxCrossEntropyWithLogits(true, nn.Mean))
		opt := optim.NewSGD(net.TrainableParameters(), optim.SGDConfig{Momentum: 0.9})
		return net, nn.NewTrainOneStepCell(loss, opt, nn.TrainOneStepConfig{Mode: nn.StepCompiled, Jit: spore.JitConfig{Inputs: inputs}})
	}
	dynNet, dyn := newStep(spec)
	perNet, per := newStep(nil)
	for i, n := range []int{16, 5, 16, 1, 9} {
		x := dynInput(n, 1, 28, 28)
		labels := tensor.New(spore.Int32, n)
		ld := labels.Data().([]int32)
		for k := range ld {
			ld[k] = int32((k*7 + i) % 10)
		}
		got, want := dyn.Call(x, labels), per.Call(x, labels)
		if d, err := maxDiff(got, want); err != nil || d != 0 {
			t.Errorf("step %d (batch %d): loss %v, per-shape %v", i, n, got, want)
		}
	}
	dp, pp := dynNet.TrainableParameters(), perNet.TrainableParameters()
	for i := range dp {
		if d, err := maxDiff(dp[i], pp[i]); err != nil || d != 0 {
			t.Errorf("parameter %s: max diff %g %v", dp[i].Name(), d, err)
		}
	}
	if st := dyn.StepStats(); st.Compiles != 1 || st.DynamicFallback != "" {
		t.Errorf("%d compiles (want 1), fallback %q", st.Compiles, st.DynamicFallback)
	}
}
