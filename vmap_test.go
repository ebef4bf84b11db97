package spore_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/optest"
	"github.com/sporeml/spore/models"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// vmapExamples is the batch size of the Vmap tests.
const vmapExamples = 3

// example returns example k's variant of a catalogue input: floats
// scaled by 1+k/20 (which keeps every op's domain), Bools negated for odd
// k, integers (indices, labels) unchanged.
func example(x *tensor.Tensor, k int) *tensor.Tensor {
	switch {
	case x.DType().IsFloat():
		return ops.Mul(x, tensor.Full(x.DType(), 1+float64(k)/20))
	case x.DType() == tensor.Bool && k%2 == 1:
		return ops.LogicalNot(x)
	}
	return x
}

// sameValues reports how got differs from want ("" when it does not):
// dtype, shape, then values (floats to a relative 1e-12 in Float64, 1e-5 in
// Float32; others exactly).
func sameValues(got, want *tensor.Tensor) string {
	if got.DType() != want.DType() || !got.Shape().Equal(want.Shape()) {
		return fmt.Sprintf("got %v %v, want %v %v", got.Shape(), got.DType(), want.Shape(), want.DType())
	}
	if got.DType() == tensor.Bool {
		g, w := got.Bools(), want.Bools()
		for i := range g {
			if g[i] != w[i] {
				return fmt.Sprintf("element %d: got %v, want %v", i, g[i], w[i])
			}
		}
		return ""
	}
	tol := 1e-12
	if got.DType() == tensor.Float32 {
		tol = 1e-5
	}
	g, w := got.Float64s(), want.Float64s()
	for i := range g {
		if d := math.Abs(g[i] - w[i]); d > tol*max(1, math.Abs(w[i])) || math.IsNaN(g[i]) != math.IsNaN(w[i]) {
			return fmt.Sprintf("element %d: got %v, want %v", i, g[i], w[i])
		}
	}
	return ""
}

// vmapLoopExempt lists the primitives allowed to reach Vmap's loop
// fallback in the catalogue cases, with the reason.
var vmapLoopExempt = map[string]string{
	// Per-example filter gradients would need a grouped convolution
	// (examples as groups); the loop is one Conv2DBackpropFilter per
	// example.
	"Conv2DBackpropFilter": "no rule",
}

// TestVmapEveryPrimitive checks, for every case of the primitive catalogue,
// that Vmap equals a Go loop over the examples stacked, eagerly and
// compiled, with the batch axis first, at axis 1 (results stacked at
// their last axis), and with the first argument unbatched; and that no
// primitive with a rule falls back to the loop.
func TestVmapEveryPrimitive(t *testing.T) {
	type variant struct {
		name string
		// inAxis returns argument i's batch axis for an input of rank r.
		inAxis func(i, r int) int
		// outAxis returns the result's batch axis for a per-example rank r.
		outAxis func(r int) int
	}
	variants := []variant{
		{"axis0", func(int, int) int { return 0 }, func(int) int { return 0 }},
		{"axis1", func(_, r int) int { return min(1, r) }, func(r int) int { return r }},
		{"unbatched0", func(i, _ int) int {
			if i == 0 {
				return spore.NotBatched
			}
			return 0
		}, func(int) int { return 0 }},
	}
	modes := []struct {
		name string
		wrap func(func(...*spore.Tensor) []*spore.Tensor) func(...*spore.Tensor) []*spore.Tensor
	}{
		{"PyNative", func(f func(...*spore.Tensor) []*spore.Tensor) func(...*spore.Tensor) []*spore.Tensor { return f }},
		{"Graph", func(f func(...*spore.Tensor) []*spore.Tensor) func(...*spore.Tensor) []*spore.Tensor {
			return spore.Jit(f)
		}},
	}
	covered := map[*core.Prim]bool{}
	for _, c := range optest.Cases() {
		if c.Prim.Traits.Impure && c.Prim != ops.CheckLabelsPrim {
			// Random draws differ between one batched draw and a
			// loop of draws; the shape is checked below.
			continue
		}
		fn := c.FnN
		if fn == nil {
			f := c.Fn
			fn = func(xs ...*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{f(xs...)} }
		}
		base := c.Inputs(tensor.Float64)
		for _, v := range variants {
			if v.name == "unbatched0" && len(base) < 2 {
				continue
			}
			axes := make(spore.Axes, len(base))
			args := make([]*tensor.Tensor, len(base))
			for i, x := range base {
				axes[i] = v.inAxis(i, x.Rank())
				if axes[i] == spore.NotBatched {
					args[i] = x
					continue
				}
				per := make([]*tensor.Tensor, vmapExamples)
				for k := range per {
					per[k] = example(x, k)
				}
				args[i] = ops.Stack(axes[i], per...)
			}
			// The loop: fn on each example, results stacked.
			var want []*tensor.Tensor
			{
				res := make([][]*tensor.Tensor, 0)
				for k := range vmapExamples {
					in := make([]*tensor.Tensor, len(base))
					for i, x := range base {
						in[i] = x
						if axes[i] != spore.NotBatched {
							in[i] = example(x, k)
						}
					}
					for j, r := range fn(in...) {
						if j >= len(res) {
							res = append(res, nil)
						}
						res[j] = append(res[j], r)
					}
				}
				for _, rs := range res {
					want = append(want, ops.Stack(v.outAxis(rs[0].Rank()), rs...))
				}
			}
			outAxes := make(spore.Axes, len(want))
			for j, w := range want {
				outAxes[j] = v.outAxis(w.Rank() - 1)
			}
			for _, m := range modes {
				t.Run(c.Name+"/"+v.name+"/"+m.name, func(t *testing.T) {
					before := spore.VmapLoops()[c.Prim.Name]
					got := m.wrap(spore.Vmap(fn, axes, outAxes))(args...)
					if len(got) != len(want) {
						t.Fatalf("%d results, want %d", len(got), len(want))
					}
					for j := range got {
						if d := sameValues(got[j], want[j]); d != "" {
							t.Errorf("result %d: %s", j, d)
						}
					}
					if n := spore.VmapLoops()[c.Prim.Name] - before; n > 0 && vmapLoopExempt[c.Prim.Name] == "" {
						t.Errorf("%s was vectorised by the loop fallback %d times: it has no batching rule for this case", c.Prim.Name, n)
					}
				})
			}
		}
		covered[c.Prim] = true
	}
	if len(covered) < 60 {
		t.Errorf("only %d primitives covered: is the catalogue complete?", len(covered))
	}
}

// TestVmapRandomMask checks that a random op is vectorised by its rule
// into one draw of the batched shape.
func TestVmapRandomMask(t *testing.T) {
	x := tensor.Ones(tensor.Float32, 4, 2, 3)
	f := spore.Vmap(func(x *spore.Tensor) *spore.Tensor { return ops.RandomMask(x, 0.5) }, nil, nil)
	before := spore.VmapLoops()["RandomMask"]
	got := f(x)
	if !got.Shape().Equal(x.Shape()) {
		t.Fatalf("shape %v, want %v", got.Shape(), x.Shape())
	}
	if spore.VmapLoops()["RandomMask"] != before {
		t.Errorf("RandomMask went through the loop fallback")
	}
}

// TestVmapNested checks Vmap(Vmap(f)) against a double loop, in both modes.
func TestVmapNested(t *testing.T) {
	f := func(x, w *spore.Tensor) *spore.Tensor { return ops.Tanh(ops.MatMul(ops.ExpandDims(x, 0), w)) }
	x := optest.Vals(tensor.Float64, -1, 1, 0, 2, 3, 4) // [2, 3] examples of [4]
	w := optest.Vals(tensor.Float64, -1, 1, 5, 4, 5)
	var rows []*tensor.Tensor
	for i := range 2 {
		var cols []*tensor.Tensor
		for j := range 3 {
			xij := ops.Reshape(ops.Slice(x, []int{i, j, 0}, []int{1, 1, 4}), 4)
			cols = append(cols, f(xij, w))
		}
		rows = append(rows, ops.Stack(0, cols...))
	}
	want := ops.Stack(0, rows...)
	inner := spore.Vmap(f, spore.Axes{0, spore.NotBatched}, nil)
	outer := spore.Vmap(inner, spore.Axes{0, spore.NotBatched}, nil)
	for name, g := range map[string]func(x, w *spore.Tensor) *spore.Tensor{"PyNative": outer, "Graph": spore.Jit(outer)} {
		if d := sameValues(g(x, w), want); d != "" {
			t.Errorf("%s: %s", name, d)
		}
	}
}

// mlpLoss is a small per-example loss: x [4], label an Int32 scalar.
func mlpLoss(w1, w2, x, y *spore.Tensor) *spore.Tensor {
	h := ops.ReLU(ops.MatMul(ops.ExpandDims(x, 0), w1))
	logits := ops.MatMul(h, w2)
	return ops.CrossEntropy(logits, ops.Reshape(y, 1), "mean")
}

// TestVmapGrad checks per-example gradients Vmap(Grad(loss)) against Grad
// in a loop, eagerly and compiled; the compiled one is one graph.
func TestVmapGrad(t *testing.T) {
	w1 := optest.Vals(tensor.Float64, -1, 1, 1, 4, 5)
	w2 := optest.Vals(tensor.Float64, -1, 1, 2, 5, 3)
	x := optest.Vals(tensor.Float64, -1, 1, 3, 6, 4)
	y := tensor.FromSlice([]int32{0, 2, 1, 1, 0, 2}, 6)
	grad := spore.Grad(mlpLoss, spore.GradPosition(0, 1))
	var want [2][]*tensor.Tensor
	xs, ys := ops.Unstack(x, 0), ops.Unstack(y, 0)
	for k := range xs {
		g := grad(w1, w2, xs[k], ys[k])
		want[0] = append(want[0], g[0])
		want[1] = append(want[1], g[1])
	}
	per := spore.Vmap(grad, spore.Axes{spore.NotBatched, spore.NotBatched, 0, 0}, nil)
	jitted := spore.NewJit(per)
	before := spore.VmapLoops()
	for name, f := range map[string]func(...*spore.Tensor) []*spore.Tensor{"PyNative": per, "Graph": jitted.Fn} {
		got := f(w1, w2, x, y)
		for i := range 2 {
			if d := sameValues(got[i], ops.Stack(0, want[i]...)); d != "" {
				t.Errorf("%s: gradient %d: %s", name, i, d)
			}
		}
	}
	if st := jitted.Stats(); st.Compiles != 1 {
		t.Errorf("compiled %d times, want 1", st.Compiles)
	}
	checkNoLoops(t, before)
}

// checkNoLoops fails if any primitive reached the loop fallback since
// before.
func checkNoLoops(t *testing.T, before map[string]int64) {
	t.Helper()
	for name, n := range spore.VmapLoops() {
		if n > before[name] {
			t.Errorf("%s was vectorised by the loop fallback %d times", name, n-before[name])
		}
	}
}

// TestVmapGradOfVmap differentiates through a vectorised function: the
// gradient of Σ Vmap(f)(x) with respect to a shared weight equals the sum
// of the per-example gradients.
func TestVmapGradOfVmap(t *testing.T) {
	w := optest.Vals(tensor.Float64, -1, 1, 1, 4, 3)
	x := optest.Vals(tensor.Float64, -1, 1, 2, 5, 4)
	f := func(w, x *spore.Tensor) *spore.Tensor { return ops.Sum(ops.Tanh(ops.MatMul(ops.ExpandDims(x, 0), w))) }
	vf := spore.Vmap(f, spore.Axes{spore.NotBatched, 0}, nil)
	got := spore.Grad(func(w, x *spore.Tensor) *spore.Tensor { return ops.Sum(vf(w, x)) })(w, x)[0]
	want := ops.ZerosLike(w)
	for _, xk := range ops.Unstack(x, 0) {
		want = ops.Add(want, spore.Grad(f)(w, xk)[0])
	}
	if d := sameValues(got, want); d != "" {
		t.Error(d)
	}
}

// TestVmapCapture vectorises, inside a jitted function, a closure over a
// value of the enclosing trace.
func TestVmapCapture(t *testing.T) {
	w := optest.Vals(tensor.Float64, -1, 1, 1, 4, 3)
	x := optest.Vals(tensor.Float64, -1, 1, 2, 5, 4)
	run := func(x, w *spore.Tensor) *spore.Tensor {
		w2 := ops.Mul(w, w)
		return spore.Vmap(func(xi *spore.Tensor) *spore.Tensor { return ops.MatMul(ops.ExpandDims(xi, 0), w2) }, nil, nil)(x)
	}
	want := ops.Reshape(ops.MatMul(x, ops.Mul(w, w)), 5, 1, 3)
	for name, g := range map[string]func(x, w *spore.Tensor) *spore.Tensor{"PyNative": run, "Graph": spore.Jit(run)} {
		if d := sameValues(g(x, w), want); d != "" {
			t.Errorf("%s: %s", name, d)
		}
	}
}

// TestVmapOutAxes covers results that do not depend on the batch: with
// NotBatched they come back as they are, otherwise they are repeated.
func TestVmapOutAxes(t *testing.T) {
	c := tensor.FromSlice([]float64{1, 2}, 2)
	f := func(x *spore.Tensor) []*spore.Tensor { return []*spore.Tensor{ops.Neg(x), ops.Exp(c), ops.Exp(c)} }
	x := optest.Vals(tensor.Float64, -1, 1, 0, 3, 2)
	got := spore.Vmap(f, nil, spore.Axes{1, spore.NotBatched, 1})(x)
	for i, w := range []*tensor.Tensor{ops.Transpose(ops.Neg(x)), ops.Exp(c), ops.BroadcastTo(ops.Reshape(ops.Exp(c), 2, 1), 2, 3)} {
		if d := sameValues(got[i], w); d != "" {
			t.Errorf("result %d: %s", i, d)
		}
	}
}

// TestVmapErrors checks that misuse is refused with a clear error.
func TestVmapErrors(t *testing.T) {
	id := func(x, y *spore.Tensor) *spore.Tensor { return ops.Add(x, y) }
	a, b := tensor.Zeros(tensor.Float32, 3, 2), tensor.Zeros(tensor.Float32, 4, 2)
	for _, c := range []struct {
		name string
		run  func()
		want string
	}{
		{"batch sizes differ", func() { spore.Vmap(id, nil, nil)(a, b) }, "examples"},
		{"nothing batched", func() { spore.Vmap(id, spore.Axes{spore.NotBatched}, nil)(a, a) }, "no argument is batched"},
		{"axis out of range", func() { spore.Vmap(id, spore.Axes{2}, nil)(a, a) }, "out of range"},
		{"batched result, NotBatched out", func() { spore.Vmap(id, nil, spore.Axes{spore.NotBatched})(a, a) }, "depends on the batched"},
		{"axes count", func() { spore.Vmap(id, spore.Axes{0, 0, 0}, nil)(a, a) }, "axes for 2"},
		{"not a function of tensors", func() { spore.Vmap(func(int) *spore.Tensor { return nil }, nil, nil) }, "not a *Tensor"},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				r := recover()
				err, ok := r.(error)
				var se *spore.Error
				if !ok || !errors.As(err, &se) || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("panic %v, want a *spore.Error containing %q", r, c.want)
				}
			}()
			c.run()
		})
	}
}

// seedPerExample returns the seed network's per-example loss gradient
// function (with respect to every parameter) and the parameters.
func seedPerExample() (func(...*spore.Tensor) []*spore.Tensor, []*spore.Tensor) {
	net := models.NewNetwork()
	params := net.TrainableParameters()
	loss := func(x, y *spore.Tensor) *spore.Tensor {
		logits := net.Construct(ops.ExpandDims(x, 0))
		return ops.CrossEntropy(logits, ops.Reshape(y, 1), "mean")
	}
	return spore.Grad(loss, spore.GradPosition(), spore.Weights(params...)), params
}

// TestVmapSeedNetwork: per-example gradients of the seed network, compiled
// into one graph with no loop fallback, equal Grad in a loop.
func TestVmapSeedNetwork(t *testing.T) {
	grad, params := seedPerExample()
	const n = 3
	x := optest.Vals(tensor.Float32, 0, 1, 0, n, 1, 28, 28)
	y := tensor.FromSlice([]int32{3, 7, 1}, n)
	before := spore.VmapLoops()
	jitted := spore.NewJit(spore.Vmap(grad, nil, nil))
	got := jitted.Fn(x, y)
	checkNoLoops(t, before)
	if st := jitted.Stats(); st.Compiles != 1 {
		t.Errorf("compiled %d times, want one graph", st.Compiles)
	}
	xs, ys := ops.Unstack(x, 0), ops.Unstack(y, 0)
	for k := range n {
		want := grad(xs[k], ys[k])
		for i := range params {
			gk := ops.Unstack(got[i], 0)[k]
			if d := sameValues(gk, want[i]); d != "" {
				t.Errorf("example %d, parameter %d: %s", k, i, d)
			}
		}
	}
}
