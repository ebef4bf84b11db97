package spore_test

import (
	"math"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// rnn runs h = tanh(h·W + x_t) over the rows of xs and returns the sum of
// the final state plus the sum of all per-step states.
func rnn(w *spore.Tensor) func(h0, xs *spore.Tensor) *spore.Tensor {
	return func(h0, xs *spore.Tensor) *spore.Tensor {
		carry, ys := spore.Scan(func(c, x []*spore.Tensor) ([]*spore.Tensor, []*spore.Tensor) {
			h := ops.Tanh(ops.Add(ops.MatMul(c[0], w), x[0]))
			return []*spore.Tensor{h}, []*spore.Tensor{ops.Mul(h, h)}
		}, []*spore.Tensor{h0}, []*spore.Tensor{xs})
		return ops.Add(ops.Sum(carry[0]), ops.Sum(ys[0]))
	}
}

func TestScanBothModesAndGradients(t *testing.T) {
	w := tensor.NewParameter("w", tensor.FromSlice([]float64{0.3, -0.2, 0.5, 0.1}, 2, 2))
	f := rnn(w)
	h0 := tensor.FromSlice([]float64{0.1, -0.4}, 1, 2)
	xs := tensor.FromSlice([]float64{0.5, -1, 0.2, 0.3, -0.7, 0.9, 1.1, 0.05}, 4, 1, 2)

	want := f(h0, xs).Item()
	jf := spore.NewJit(f)
	if got := jf.Fn(h0, xs).Item(); math.Abs(got-want) > 1e-12 {
		t.Fatalf("forward: eager %v, graph %v", want, got)
	}

	grad := spore.Grad(f, spore.GradPosition(0, 1), spore.Weights(w))
	eager := grad(h0, xs)
	graphGrad := spore.Jit(func(h0, xs *spore.Tensor) []*spore.Tensor { return grad(h0, xs) })(h0, xs)
	for k := range eager {
		a, b := eager[k].Float64s(), graphGrad[k].Float64s()
		for i := range a {
			if math.Abs(a[i]-b[i]) > 1e-10 {
				t.Fatalf("gradient %d: eager %v, graph %v", k, a, b)
			}
		}
	}
	// And the eager gradient agrees with finite differences for w.
	eps := 1e-6
	base := w.Float64s()
	for i := range base {
		at := func(d float64) float64 {
			v := append([]float64(nil), base...)
			v[i] += d
			w.Assign(tensor.FromSlice(v, 2, 2))
			defer w.Assign(tensor.FromSlice(base, 2, 2))
			return f(h0, xs).Item()
		}
		num := (at(eps) - at(-eps)) / (2 * eps)
		if got := eager[2].Float64s()[i]; math.Abs(got-num) > 1e-6 {
			t.Fatalf("dW[%d] = %v, finite difference %v", i, got, num)
		}
	}
}

func TestScanReverseOrder(t *testing.T) {
	xs := tensor.FromSlice([]float32{1, 2, 3}, 3)
	cum := func(rev bool) (*spore.Tensor, *spore.Tensor) {
		body := func(c, x []*spore.Tensor) ([]*spore.Tensor, []*spore.Tensor) {
			s := ops.Add(c[0], x[0])
			return []*spore.Tensor{s}, []*spore.Tensor{s}
		}
		init := []*spore.Tensor{tensor.Scalar(float32(0))}
		if rev {
			c, ys := spore.ScanReverse(body, init, []*spore.Tensor{xs})
			return c[0], ys[0]
		}
		c, ys := spore.Scan(body, init, []*spore.Tensor{xs})
		return c[0], ys[0]
	}
	for _, rev := range []bool{false, true} {
		c, ys := cum(rev)
		jc := spore.Jit(func(x *spore.Tensor) []*spore.Tensor {
			c, ys := cum(rev)
			return []*spore.Tensor{ops.Add(c, ops.Mul(x, ops.ScalarLike(x, 0))), ys}
		})
		g := jc(tensor.Scalar(float32(0)))
		want := []float32{1, 3, 6}
		if rev {
			want = []float32{6, 5, 3}
		}
		for i, v := range ys.Float32s() {
			if v != want[i] || g[1].Float32s()[i] != want[i] {
				t.Fatalf("reverse=%v: eager ys %v, graph %v, want %v", rev, ys.Float32s(), g[1].Float32s(), want)
			}
		}
		if c.Item() != 6 || g[0].Item() != 6 {
			t.Fatalf("reverse=%v: carry %v / %v", rev, c.Item(), g[0].Item())
		}
	}
}

func TestScanIsOneNode(t *testing.T) {
	w := tensor.NewParameter("w", tensor.FromSlice([]float64{0.3, -0.2, 0.5, 0.1}, 2, 2))
	h0 := tensor.Zeros(spore.Float64, 1, 2)
	xs := tensor.Zeros(spore.Float64, 50, 1, 2)
	ir, err := spore.IR(rnn(w), []any{h0, xs})
	if err != nil {
		t.Fatal(err)
	}
	// The body's Tanh is a node of its own or a member of a fused one.
	tanhs := count(ir, "Tanh(") + count(ir, "Tanh](")
	if !contains(ir, "Scan(") || !contains(ir, "length=50") || tanhs == 0 {
		t.Fatalf("IR lacks the Scan node or its body:\n%s", ir)
	}
	if n := tanhs; n != 1 {
		t.Fatalf("the loop was unrolled: %d Tanh ops\n%s", n, ir)
	}
}

func count(s, sub string) int {
	n := 0
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			n++
		}
	}
	return n
}

// Control flow nests: a Cond inside a Scan body, differentiated in Graph
// mode (the backward Scan replays a body holding a Cond node).
func TestCondInsideScanGradient(t *testing.T) {
	w := tensor.NewParameter("w", tensor.FromSlice([]float64{0.7, -0.3}, 2))
	f := func(xs *spore.Tensor) *spore.Tensor {
		c, _ := spore.Scan(func(c, x []*spore.Tensor) ([]*spore.Tensor, []*spore.Tensor) {
			pos := ops.Greater(ops.Sum(x[0]), ops.ScalarLike(x[0], 0))
			n := spore.Cond(pos,
				func(a ...*spore.Tensor) []*spore.Tensor {
					return []*spore.Tensor{ops.Tanh(ops.Add(ops.Mul(a[0], w), a[1]))}
				},
				func(a ...*spore.Tensor) []*spore.Tensor { return []*spore.Tensor{ops.Sin(ops.Sub(a[0], a[1]))} },
				c[0], x[0])
			return n, nil
		}, []*spore.Tensor{tensor.FromSlice([]float64{0.1, 0.2}, 2)}, []*spore.Tensor{xs})
		return ops.Sum(c[0])
	}
	xs := tensor.FromSlice([]float64{0.5, 0.1, -0.4, -0.2, 0.3, -0.1}, 3, 2)
	g := spore.Grad(f, spore.GradPosition(0), spore.Weights(w))
	eager := g(xs)
	graph := spore.Jit(func(xs *spore.Tensor) []*spore.Tensor { return g(xs) })(xs)
	for k := range eager {
		a, b := eager[k].Float64s(), graph[k].Float64s()
		for i := range a {
			if math.Abs(a[i]-b[i]) > 1e-12 {
				t.Fatalf("grad %d: eager %v graph %v", k, a, b)
			}
		}
	}
}

// ScanReverse's gradient in Graph mode runs its backward pass forwards.
func TestScanReverseGradient(t *testing.T) {
	w := tensor.NewParameter("w", tensor.FromSlice([]float64{0.4, -0.6, 0.2, 0.9}, 2, 2))
	f := func(xs *spore.Tensor) *spore.Tensor {
		c, ys := spore.ScanReverse(func(c, x []*spore.Tensor) ([]*spore.Tensor, []*spore.Tensor) {
			h := ops.Tanh(ops.Add(ops.MatMul(c[0], w), x[0]))
			return []*spore.Tensor{h}, []*spore.Tensor{ops.Mul(h, h)}
		}, []*spore.Tensor{tensor.FromSlice([]float64{0.3, -0.1}, 1, 2)}, []*spore.Tensor{xs})
		return ops.Add(ops.Sum(c[0]), ops.Sum(ops.Mul(ys[0], tensor.FromSlice([]float64{1, 2, 3, 4}, 4, 1, 1))))
	}
	xs := tensor.FromSlice([]float64{0.5, -1, 0.2, 0.3, -0.7, 0.9, 1.1, 0.05}, 4, 1, 2)
	g := spore.Grad(f, spore.GradPosition(0), spore.Weights(w))
	eager := g(xs)
	graph := spore.Jit(func(xs *spore.Tensor) []*spore.Tensor { return g(xs) })(xs)
	for k := range eager {
		a, b := eager[k].Float64s(), graph[k].Float64s()
		for i := range a {
			if math.Abs(a[i]-b[i]) > 1e-12 {
				t.Fatalf("gradient %d: eager %v, graph %v", k, a, b)
			}
		}
	}
}

// A control-flow body is compiled at the level of the function around it:
// O0 keeps it op for op (bitwise equal to PyNative), O1 fuses it.
func TestBodiesFollowTheJitLevel(t *testing.T) {
	f := func(xs *spore.Tensor) *spore.Tensor {
		c, _ := spore.Scan(func(c, x []*spore.Tensor) ([]*spore.Tensor, []*spore.Tensor) {
			return []*spore.Tensor{ops.Sigmoid(ops.Add(ops.Mul(c[0], x[0]), x[0]))}, nil
		}, []*spore.Tensor{tensor.Ones(spore.Float32, 8)}, []*spore.Tensor{xs})
		return c[0]
	}
	xs := tensor.Ones(spore.Float32, 5, 8)
	for _, c := range []struct {
		level spore.Level
		fused bool
	}{{spore.O0, false}, {spore.O1, true}} {
		ir, err := spore.IR(f, []any{xs}, spore.JitConfig{Level: c.level})
		if err != nil {
			t.Fatal(err)
		}
		if got := contains(ir, "Fused["); got != c.fused {
			t.Fatalf("%v: fused body = %v, want %v:\n%s", c.level, got, c.fused, ir)
		}
	}
}

// regionLines splits an IR dump into the lines of the top-level function
// and those of the regions nested in it (indented past the top level's
// two spaces).
func regionLines(ir string) (top, nested []string) {
	for _, l := range strings.Split(ir, "\n") {
		switch {
		case strings.HasPrefix(l, "    "):
			nested = append(nested, l)
		case strings.HasPrefix(l, "  "):
			top = append(top, l)
		}
	}
	return top, nested
}

// A Scan body goes through the enclosing graph's passes, and the dump shows
// it as a region nested under the Scan node. Its constant expression
// (x·0.5)·0.25, reassociated by fast-math at O2 into x·(0.5·0.25), is
// folded to x·0.125, and its elementwise chain (Mul, Mul, Add, Tanh) is
// fused from O1 up. At O0 the body keeps every op, which shows the passes
// did it.
func TestScanBodyIsOptimised(t *testing.T) {
	f := func(xs *spore.Tensor) *spore.Tensor {
		c, ys := spore.Scan(func(c, x []*spore.Tensor) ([]*spore.Tensor, []*spore.Tensor) {
			k := ops.Mul(ops.Mul(c[0], ops.ScalarLike(c[0], 0.5)), ops.ScalarLike(c[0], 0.25))
			h := ops.Tanh(ops.Add(k, x[0]))
			return []*spore.Tensor{h}, []*spore.Tensor{ops.Exp(ops.Neg(h))}
		}, []*spore.Tensor{tensor.Zeros(spore.Float32, 8)}, []*spore.Tensor{xs})
		return ops.Add(ops.Sum(c[0]), ops.Sum(ys[0]))
	}
	xs := tensor.RandUniform(spore.Float32, -1, 1, 6, 8)
	want := f(xs).Item()
	for _, c := range []struct {
		level         spore.Level
		folded, fused bool
	}{{spore.O0, false, false}, {spore.O1, false, true}, {spore.O2, true, true}} {
		ir, err := spore.IR(f, []any{xs}, spore.JitConfig{Level: c.level})
		if err != nil {
			t.Fatal(err)
		}
		top, nested := regionLines(ir)
		body := strings.Join(nested, "\n")
		if !contains(strings.Join(top, "\n"), "Scan(") || len(nested) == 0 || !strings.HasPrefix(strings.TrimSpace(nested[0]), "region 0 loop lead 2 binds (") {
			t.Fatalf("%v: no Scan with a nested region:\n%s", c.level, ir)
		}
		folded := contains(body, "0.125") && !contains(body, "0.5") && !contains(body, "0.25")
		fused := contains(body, "Fused[") && !contains(body, "= Tanh(") && !contains(body, "= Add(") && !contains(body, "= Mul(")
		if folded != c.folded || fused != c.fused {
			t.Errorf("%v: body folded %v, fused %v; want %v, %v:\n%s", c.level, folded, fused, c.folded, c.fused, ir)
		}
		got := spore.Jit(f, spore.JitConfig{Level: c.level})(xs).Item()
		if math.Abs(got-want) > 1e-5*math.Max(1, math.Abs(want)) {
			t.Errorf("%v: Graph mode %v, PyNative %v", c.level, got, want)
		}
	}
}

// Work in a loop body that reads only captured values (a MatMul of two
// arguments of the enclosing function) is hoisted out of the loop: at O1
// the optimised IR has that MatMul at the top level and one MatMul (of the
// carry) left in the body; at O0 both stay in the body. Results agree with
// PyNative mode either way.
func TestLoopInvariantWorkIsHoisted(t *testing.T) {
	scanF := func(a, b, xs *spore.Tensor) *spore.Tensor {
		c, _ := spore.Scan(func(c, x []*spore.Tensor) ([]*spore.Tensor, []*spore.Tensor) {
			return []*spore.Tensor{ops.Tanh(ops.Add(ops.MatMul(c[0], ops.MatMul(a, b)), x[0]))}, nil
		}, []*spore.Tensor{tensor.Zeros(spore.Float64, 1, 3)}, []*spore.Tensor{xs})
		return ops.Sum(c[0])
	}
	whileF := func(a, b, xs *spore.Tensor) *spore.Tensor {
		s := ops.Reshape(ops.Sum(xs, 0), 1, 3)
		out := spore.While(func(c ...*spore.Tensor) *spore.Tensor {
			return ops.Less(c[0], ops.ScalarLike(c[0], 4))
		}, func(c ...*spore.Tensor) []*spore.Tensor {
			return []*spore.Tensor{ops.Add(c[0], ops.ScalarLike(c[0], 1)), ops.Tanh(ops.Add(ops.MatMul(c[1], ops.MatMul(a, b)), s))}
		}, tensor.Scalar(0.0), s)
		return ops.Sum(out[1])
	}
	a := tensor.RandUniform(spore.Float64, -1, 1, 3, 4)
	b := tensor.RandUniform(spore.Float64, -1, 1, 4, 3)
	xs := tensor.RandUniform(spore.Float64, -1, 1, 5, 1, 3)
	for _, c := range []struct {
		name string
		f    func(a, b, xs *spore.Tensor) *spore.Tensor
	}{{"Scan", scanF}, {"While", whileF}} {
		want := c.f(a, b, xs).Item()
		for _, lvl := range []spore.Level{spore.O0, spore.O1} {
			ir, err := spore.IR(c.f, []any{a, b, xs}, spore.JitConfig{Level: lvl})
			if err != nil {
				t.Fatal(err)
			}
			top, nested := regionLines(ir)
			outside, inside := count(strings.Join(top, "\n"), "MatMul("), count(strings.Join(nested, "\n"), "MatMul(")
			wantOut, wantIn := 0, 2
			if lvl == spore.O1 {
				wantOut, wantIn = 1, 1
			}
			if outside != wantOut || inside != wantIn {
				t.Errorf("%s %v: %d MatMuls outside the loop and %d inside, want %d and %d:\n%s", c.name, lvl, outside, inside, wantOut, wantIn, ir)
			}
			got := spore.Jit(c.f, spore.JitConfig{Level: lvl})(a, b, xs).Item()
			if math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
				t.Errorf("%s %v: Graph mode %v, PyNative %v", c.name, lvl, got, want)
			}
		}
	}
}

// A compiled Scan takes its scanned inputs' per-step views for every
// dtype: its row views used to know six buffer types, so a bfloat16 or
// float16 input panicked ("unsupported dtype of a scanned input").
func TestScanOverEveryFloatDType(t *testing.T) {
	for _, dt := range []spore.DType{spore.Float32, spore.Float64, spore.BFloat16, spore.Float16} {
		t.Run(dt.String(), func(t *testing.T) {
			xs := ops.Cast(spore.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 3, 2), dt)
			sum := spore.Jit(func(xs *spore.Tensor) *spore.Tensor {
				c, _ := spore.Scan(func(c, x []*spore.Tensor) ([]*spore.Tensor, []*spore.Tensor) {
					n := ops.Add(c[0], x[0])
					return []*spore.Tensor{n}, []*spore.Tensor{n}
				}, []*spore.Tensor{ops.ZerosLike(ops.Unstack(xs, 0)[0])}, []*spore.Tensor{xs})
				return c[0]
			})
			got := ops.Cast(sum(xs), spore.Float32).Float32s()
			if got[0] != 9 || got[1] != 12 {
				t.Fatalf("sum over the steps %v, want [9 12]", got)
			}
		})
	}
}
