package spore_test

import (
	"math"
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
	if !contains(ir, "Scan(") || !contains(ir, "length=50") || !contains(ir, "Tanh(") {
		t.Fatalf("IR lacks the Scan node or its body:\n%s", ir)
	}
	if n := count(ir, "Tanh("); n != 1 {
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
