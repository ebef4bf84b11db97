package spore_test

import (
	"errors"
	"math"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// seedMLP is the seed network written with the core API alone.
type seedMLP struct{ w1, b1, w2, b2, w3, b3 *spore.Tensor }

func newSeedMLP() *seedMLP {
	spore.SetSeed(1)
	p := func(name string, shape ...int) *spore.Tensor {
		return tensor.NewParameter(name, tensor.RandUniform(spore.Float32, -0.05, 0.05, shape...))
	}
	return &seedMLP{p("w1", 784, 512), p("b1", 512), p("w2", 512, 512), p("b2", 512), p("w3", 512, 10), p("b3", 10)}
}

func (m *seedMLP) forward(x *spore.Tensor) *spore.Tensor {
	h := ops.Reshape(x, x.Dim(0), -1)
	h = ops.ReLU(ops.Add(ops.MatMul(h, m.w1), m.b1))
	h = ops.ReLU(ops.Add(ops.MatMul(h, m.w2), m.b2))
	return ops.Add(ops.MatMul(h, m.w3), m.b3)
}

func TestJitMatchesEager(t *testing.T) {
	m := newSeedMLP()
	x := tensor.RandNormal(spore.Float32, 0, 1, 64, 1, 28, 28)
	want := m.forward(x)
	for _, lvl := range []spore.Level{spore.O0, spore.O1} {
		run := spore.NewJit(m.forward, spore.JitConfig{Level: lvl})
		got := run.Fn(x)
		got2 := run.Fn(x)
		if !got.Shape().Equal(spore.Shape{64, 10}) {
			t.Fatalf("shape %v", got.Shape())
		}
		a, b, c := want.Float32s(), got.Float32s(), got2.Float32s()
		for i := range a {
			if a[i] != b[i] || b[i] != c[i] {
				t.Fatalf("%v: element %d: eager %v, jit %v then %v", lvl, i, a[i], b[i], c[i])
			}
		}
		st := run.Stats()
		if st.Compiles != 1 || st.Hits != 1 {
			t.Fatalf("stats %+v", st)
		}
	}
}

func TestJitSeesParameterUpdates(t *testing.T) {
	w := tensor.NewParameter("w", tensor.FromSlice([]float32{1, 2}, 2))
	f := spore.Jit(func(x *spore.Tensor) *spore.Tensor {
		// No traced argument takes part in w's transpose-like use: the
		// parameter must still be read at run time, not baked in.
		return ops.Add(x, ops.Mul(w, w))
	})
	x := tensor.FromSlice([]float32{0, 0}, 2)
	if got := f(x).Float32s(); got[0] != 1 || got[1] != 4 {
		t.Fatalf("first call %v", got)
	}
	w.Assign(tensor.FromSlice([]float32{3, 4}, 2))
	if got := f(x).Float32s(); got[0] != 9 || got[1] != 16 {
		t.Fatalf("after assign %v, want [9 16]", got)
	}
}

func TestJitRetraceExplains(t *testing.T) {
	j := spore.NewJit(func(x *spore.Tensor) *spore.Tensor { return ops.Mul(x, x) })
	j.Fn(tensor.Ones(spore.Float32, 2, 3))
	j.Fn(tensor.Ones(spore.Float32, 4, 3))
	st := j.Stats()
	if st.Compiles != 2 || len(st.Retraces) != 1 || !contains(st.Retraces[0], "[4 3]") || !contains(st.Retraces[0], "[2 3]") {
		t.Fatalf("stats %+v", st)
	}
	if s2, ok := spore.StatsOf(j.Fn); !ok || s2.Compiles != 2 {
		t.Fatalf("StatsOf: %v %+v", ok, s2)
	}
	// Another function of the same type keeps statistics of its own.
	other := spore.Jit(func(x *spore.Tensor) *spore.Tensor { return ops.Neg(x) })
	if s3, ok := spore.StatsOf(other); !ok || s3.Compiles != 0 {
		t.Fatalf("StatsOf(other) = %+v, %v", s3, ok)
	}
	if s2, _ := spore.StatsOf(j.Fn); s2.Compiles != 2 {
		t.Fatalf("StatsOf(j) after another Jit = %+v", s2)
	}
	if _, ok := spore.StatsOf(func() {}); ok {
		t.Fatal("StatsOf of a function that is not jitted")
	}
}

func TestConcretizationError(t *testing.T) {
	f := spore.Jit(func(x *spore.Tensor) *spore.Tensor {
		if ops.Sum(x).Item() > 0 { // branching on a value: not allowed under tracing
			return x
		}
		return ops.Neg(x)
	})
	defer func() {
		var ce *tensor.ConcretizationError
		err, _ := recover().(error)
		if !errors.As(err, &ce) || !contains(ce.Error(), "jit_test.go") || !contains(ce.Error(), "spore.Cond") {
			t.Fatalf("want a ConcretizationError naming the line and suggesting Cond, got %v", err)
		}
	}()
	f(tensor.Ones(spore.Float32, 2))
}

type pair struct {
	A, B  *spore.Tensor
	Scale float64
}

func TestJitStructsAndConstants(t *testing.T) {
	j := spore.NewJit(func(p pair, xs []*spore.Tensor, k int) (pair, *spore.Tensor) {
		s := ops.ScalarLike(p.A, p.Scale*float64(k))
		return pair{A: ops.Mul(p.A, s), B: ops.Add(p.B, xs[0]), Scale: p.Scale}, xs[1]
	})
	a := tensor.FromSlice([]float32{1, 2}, 2)
	b := tensor.FromSlice([]float32{3, 4}, 2)
	out, second := j.Fn(pair{A: a, B: b, Scale: 2}, []*spore.Tensor{b, a}, 3)
	if got := out.A.Float32s(); got[0] != 6 || got[1] != 12 {
		t.Fatalf("A = %v", got)
	}
	if got := out.B.Float32s(); got[0] != 6 || got[1] != 8 || out.Scale != 2 {
		t.Fatalf("B = %v scale %v", got, out.Scale)
	}
	if got := second.Float32s(); got[0] != 1 {
		t.Fatalf("second = %v", got)
	}
	j.Fn(pair{A: a, B: b, Scale: 2}, []*spore.Tensor{b, a}, 3)
	j.Fn(pair{A: a, B: b, Scale: 2}, []*spore.Tensor{b, a}, 4)
	if st := j.Stats(); st.Compiles != 2 || st.Hits != 1 || !contains(st.Retraces[0], "constant") {
		t.Fatalf("stats %+v", st)
	}
}

func TestGradOfJit(t *testing.T) {
	w := tensor.NewParameter("w", tensor.FromSlice([]float64{0.5, -1, 2}, 3))
	f := func(x *spore.Tensor) *spore.Tensor { return ops.Sum(ops.Tanh(ops.Mul(x, w))) }
	jf := spore.Jit(f)
	x := tensor.FromSlice([]float64{1, 2, 3}, 3)
	want := spore.Grad(f, spore.Weights(w))(x)
	got := spore.Grad(jf, spore.Weights(w))(x)
	for k := range want {
		a, b := want[k].Float64s(), got[k].Float64s()
		for i := range a {
			if d := a[i] - b[i]; d > 1e-12 || d < -1e-12 {
				t.Fatalf("grad %d: eager %v, through Jit %v", k, a, b)
			}
		}
	}
}

func TestJitOfGrad(t *testing.T) {
	f := func(x *spore.Tensor) *spore.Tensor { return ops.Sum(ops.Mul(ops.Exp(x), x)) }
	g := spore.Grad(f)
	jg := spore.Jit(func(x *spore.Tensor) *spore.Tensor { return g(x)[0] })
	x := tensor.FromSlice([]float64{0.1, -0.3, 2}, 3)
	a, b := g(x)[0].Float64s(), jg(x).Float64s()
	for i := range a {
		if d := a[i] - b[i]; d > 1e-12 || d < -1e-12 {
			t.Fatalf("eager %v, jit %v", a, b)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestJitDropoutDrawsFreshMasks(t *testing.T) {
	drop := spore.Jit(func(x *spore.Tensor) *spore.Tensor { return ops.Dropout(x, 0.5, true) })
	x := tensor.Ones(spore.Float32, 256)
	a, b := drop(x).Float32s(), drop(x).Float32s()
	same := 0
	for i := range a {
		if a[i] != 0 && a[i] != 2 {
			t.Fatalf("mask value %v, want 0 or 2", a[i])
		}
		if a[i] == b[i] {
			same++
		}
	}
	if same == len(a) {
		t.Fatal("two runs of a compiled dropout drew the same mask")
	}
}

func TestJitInsideJitIsInlined(t *testing.T) {
	inner := spore.NewJit(func(x *spore.Tensor) *spore.Tensor { return ops.Exp(x) })
	outer := spore.NewJit(func(x *spore.Tensor) *spore.Tensor { return ops.Add(inner.Fn(x), x) })
	x := tensor.FromSlice([]float32{0, 1}, 2)
	got := outer.Fn(x).Float32s()
	if got[0] != 1 || math.Abs(float64(got[1])-(math.E+1)) > 1e-6 {
		t.Fatalf("got %v", got)
	}
	if inner.Stats().Compiles != 0 || outer.Stats().Compiles != 1 {
		t.Fatalf("inner %+v, outer %+v: the inner function should be inlined, not compiled", inner.Stats(), outer.Stats())
	}
	// Inlined even when its argument is a constant of the outer trace: the
	// parameter it reads must stay a graph input, not a baked result.
	w := tensor.NewParameter("w", tensor.FromSlice([]float32{2, 3}, 2))
	scaled := spore.NewJit(func(c *spore.Tensor) *spore.Tensor { return ops.Mul(c, w) })
	withConst := spore.NewJit(func(x *spore.Tensor) *spore.Tensor { return ops.Add(x, scaled.Fn(tensor.Ones(spore.Float32, 2))) })
	withConst.Fn(x)
	w.Assign(tensor.FromSlice([]float32{10, 20}, 2))
	if got := withConst.Fn(x).Float32s(); got[0] != 10 || got[1] != 21 {
		t.Fatalf("a parameter read by an inner jitted call was baked in: %v, want [10 21]", got)
	}
	ir, err := spore.IR(func(x *spore.Tensor) *spore.Tensor { return ops.Add(inner.Fn(x), x) }, []any{x}, spore.JitConfig{Level: spore.O0})
	if err != nil || !contains(ir, "Exp(") {
		t.Fatalf("the inner body is not in the outer graph (%v):\n%s", err, ir)
	}
}

// A plan captures the Parameter a field held when it was traced: in-place
// changes are seen at once, a field replaced by a new Parameter only after
// Reset (or ResetJit on the function).
func TestJitResetSeesReplacedParameter(t *testing.T) {
	x := tensor.FromSlice([]float32{1, 2}, 1, 2)
	for _, how := range []string{"JitFunc.Reset", "ResetJit"} {
		t.Run(how, func(t *testing.T) {
			m := struct{ w *spore.Tensor }{tensor.NewParameter("w", tensor.FromSlice([]float32{1, 1}, 2, 1))}
			j := spore.NewJit(func(x *spore.Tensor) *spore.Tensor { return ops.MatMul(x, m.w) })
			if got := j.Fn(x).Float32s()[0]; got != 3 {
				t.Fatalf("got %v, want 3", got)
			}
			m.w.Assign(tensor.FromSlice([]float32{2, 2}, 2, 1))
			if got := j.Fn(x).Float32s()[0]; got != 6 {
				t.Fatalf("after Assign: got %v, want 6 (in-place changes need no Reset)", got)
			}
			m.w = tensor.NewParameter("w", tensor.FromSlice([]float32{10, 0}, 2, 1))
			switch how {
			case "JitFunc.Reset":
				j.Reset()
			default:
				if !spore.ResetJit(j.Fn) {
					t.Fatal("ResetJit did not recognise a function from Jit")
				}
			}
			if got := j.Fn(x).Float32s()[0]; got != 10 {
				t.Fatalf("after replacing the parameter and %s: got %v, want 10 from the new weight", how, got)
			}
			if st := j.Stats(); st.Compiles != 2 {
				t.Fatalf("want 2 compilations, got %+v", st)
			}
		})
	}
	if spore.ResetJit(func() {}) {
		t.Fatal("ResetJit accepted a function that is not from Jit")
	}
}

// A variadic function outside the tensors-in, tensor-out fast path goes
// through reflection, which must pass the variadic slice on as it is.
func TestJitVariadicGeneral(t *testing.T) {
	f := func(xs ...*spore.Tensor) (*spore.Tensor, []*spore.Tensor) {
		sum := xs[0]
		for _, x := range xs[1:] {
			sum = ops.Add(sum, x)
		}
		return sum, []*spore.Tensor{ops.Neg(sum)}
	}
	j := spore.Jit(f)
	a := tensor.FromSlice([]float32{1, 2}, 2)
	b := tensor.FromSlice([]float32{10, 20}, 2)
	c := tensor.FromSlice([]float32{100, 200}, 2)
	for _, args := range [][]*spore.Tensor{{a, b}, {a, b, c}, {a}} {
		sum, rest := j(args...)
		wantSum, wantRest := f(args...)
		if got, want := sum.Float32s(), wantSum.Float32s(); got[0] != want[0] || got[1] != want[1] {
			t.Fatalf("%d args: sum %v, want %v", len(args), got, want)
		}
		if got, want := rest[0].Float32s(), wantRest[0].Float32s(); got[0] != want[0] || got[1] != want[1] {
			t.Fatalf("%d args: negated sum %v, want %v", len(args), got, want)
		}
	}
}
