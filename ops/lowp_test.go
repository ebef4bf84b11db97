package ops_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/comm"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/optest"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// roundHalf rounds v to the 16-bit float type dt, as float32.
func roundHalf(dt tensor.DType, v float32) float32 {
	if dt == tensor.BFloat16 {
		return tensor.BF16From(v).Float32()
	}
	return tensor.F16From(v).Float32()
}

// same reports whether a and b are equal as float32 values, NaN equal to
// NaN and zeros told apart by sign.
func same(a, b float32) bool {
	if a != a || b != b {
		return a != a && b != b
	}
	return math.Float32bits(a) == math.Float32bits(b)
}

// Cast to and from BFloat16 and Float16 agrees with rounding each value
// through float32 (round to nearest even), in PyNative and Graph mode
// alike, from and to every dtype.
func TestCastHalf(t *testing.T) {
	vals := []float64{0.1, 1, -2.5, 3.0000001, 255, 300, 65504, 65520, 1e6, 3e-8, -0.0, math.Inf(-1)}
	srcs := []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Bool, tensor.BFloat16, tensor.Float16}
	for _, to := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
		for _, from := range srcs {
			x := ops.Cast(tensor.FromSlice(vals), from)
			// What the source holds, as float32, is the reference's input.
			src := x.Float32s()
			want := make([]float32, len(src))
			for i, v := range src {
				want[i] = roundHalf(to, v)
			}
			f := func(x *tensor.Tensor) *tensor.Tensor { return ops.Cast(x, to) }
			for mode, y := range map[string]*tensor.Tensor{"PyNative": f(x), "Graph": spore.Jit(f)(x)} {
				if y.DType() != to {
					t.Fatalf("%s: Cast(%v -> %v) has dtype %v", mode, from, to, y.DType())
				}
				for i, g := range y.Float32s() {
					if !same(g, want[i]) {
						t.Errorf("%s: Cast(%v %v -> %v) = %v, want %v", mode, from, src[i], to, g, want[i])
					}
				}
			}
			// And back: from the 16-bit type to the source's dtype is
			// Cast of the float32 value.
			h := f(x)
			back := func(h *tensor.Tensor) *tensor.Tensor { return ops.Cast(h, from) }
			ref := ops.Cast(tensor.FromSlice(want), from)
			for mode, y := range map[string]*tensor.Tensor{"PyNative": back(h), "Graph": spore.Jit(back)(h)} {
				if y.DType() != from {
					t.Fatalf("%s: Cast(%v -> %v) has dtype %v", mode, to, from, y.DType())
				}
				got, exp := y.Float64s(), ref.Float64s()
				for i := range got {
					if !same(float32(got[i]), float32(exp[i])) {
						t.Errorf("%s: Cast(%v %v -> %v) = %v, want %v", mode, to, want[i], from, got[i], exp[i])
					}
				}
			}
		}
	}
}

// The gradient of a cast is the cotangent cast back: a float32 input cast
// to a 16-bit float and back gets a float32 gradient, the cotangent
// rounded to the 16-bit type, in both modes.
func TestCastHalfGrad(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
		c := tensor.FromSlice([]float32{0.1, -3, 1000.5})
		loss := func(x *tensor.Tensor) *tensor.Tensor {
			return ops.Sum(ops.Mul(ops.Cast(ops.Cast(x, dt), tensor.Float32), c))
		}
		x := tensor.FromSlice([]float32{1, 2, 3})
		grad := spore.Grad(loss)
		for mode, g := range map[string]*tensor.Tensor{"PyNative": grad(x)[0], "Graph": spore.Jit(grad)(x)[0]} {
			if g.DType() != tensor.Float32 {
				t.Fatalf("%s %v: gradient dtype %v, want Float32", mode, dt, g.DType())
			}
			for i, v := range g.Float32s() {
				if want := roundHalf(dt, c.Float32s()[i]); v != want {
					t.Errorf("%s %v: gradient[%d] = %v, want %v", mode, dt, i, v, want)
				}
			}
		}
	}
}

// Every primitive of package ops with a Float32 kernel has kernels for
// BFloat16 and Float16 too (its own, or the widening adapter or an element
// move that KernelForKey derives on demand through widen.go's
// HalfWidener), so that no op is missed.
func TestEveryPrimHasHalfKernels(t *testing.T) {
	for _, p := range core.Prims() {
		idx := []tensor.DType{tensor.Invalid}
		if p.IndexInput > 0 {
			idx = []tensor.DType{tensor.Int32, tensor.Int64}
		}
		for _, ix := range idx {
			for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
				if p.InferN != nil {
					_, e32 := p.KernelNFor(tensor.Float32, core.CPU)
					if _, err := p.KernelNFor(dt, core.CPU); e32 == nil && err != nil {
						t.Errorf("%s: no %v kernel: %v", p.Name, dt, err)
					}
					continue
				}
				_, e32 := p.KernelForKey(core.Key{DType: tensor.Float32, Index: ix}, core.CPU)
				if _, err := p.KernelForKey(core.Key{DType: dt, Index: ix}, core.CPU); e32 == nil && err != nil {
					t.Errorf("%s: no %v kernel: %v", p.Name, dt, err)
				}
			}
		}
	}
}

// halfTol is the documented tolerance of a 16-bit op against its float32
// twin on the same inputs (those inputs already rounded to the 16-bit
// type, so that only the op's own rounding is measured). A 16-bit op
// computes in float32 and rounds its result once, to nearest: the error is
// at most the unit roundoff u of the type times the value — u = 2^-8 for
// BFloat16 (8 significant bits), 2^-11 for Float16 (11 bits) — plus, for
// Float16, half its smallest subnormal (2^-25) where a result underflows.
// Kernels of their own (MatMul's bfloat16 GEMM, the convolutions) may also
// sum in another order than the float32 kernel does, a float32 reordering
// error bounded here by 2^-18 of the largest result (k·2^-24 for the
// short sums of these cases). Integer and Bool results must be equal.
func halfTol(dt tensor.DType) (rel, abs float64) {
	if dt == tensor.BFloat16 {
		return 1.0 / 256, 0
	}
	return 1.0 / 2048, 1.0 / (1 << 25)
}

// Every primitive in the shared catalogue, run in BFloat16 and Float16,
// stays within halfTol of the same primitive run in Float32 on the same
// rounded inputs.
func TestHalfNumerics(t *testing.T) {
	for _, c := range optest.Cases() {
		for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
			t.Run(c.Name+"/"+dt.String(), func(t *testing.T) {
				ins := c.Inputs(tensor.Float32)
				lo, hi := make([]*tensor.Tensor, len(ins)), make([]*tensor.Tensor, len(ins))
				float := false
				for i, x := range ins {
					lo[i], hi[i] = x, x
					if x.DType() == tensor.Float32 {
						float = true
						lo[i] = ops.Cast(x, dt)
						hi[i] = ops.Cast(lo[i], tensor.Float32)
					}
				}
				switch {
				case !float:
					t.Skip("no float operand")
				case c.Prim.Traits.Impure:
					t.Skip("draws random numbers: two runs differ in any dtype")
				case collectives[c.Prim]:
					// Mixed precision all-reduces float32 gradients;
					// the collectives refuse 16-bit tensors by name.
					t.Skip("collectives take Float32, Float64 and integers")
				}
				defer func() {
					if e := recover(); e != nil {
						t.Fatalf("panic: %v", e)
					}
				}()
				got, want := runCase(c, lo), runCase(c, hi)
				if len(got) != len(want) {
					t.Fatalf("%d results in %v, %d in Float32", len(got), dt, len(want))
				}
				rel, abs := halfTol(dt)
				for r := range got {
					g, w := got[r], want[r]
					if !g.Shape().Equal(w.Shape()) {
						t.Fatalf("result %d: shape %v in %v, %v in Float32", r, g.Shape(), dt, w.Shape())
					}
					if w.DType() != tensor.Float32 {
						if g.DType() != w.DType() {
							t.Fatalf("result %d: dtype %v, want %v", r, g.DType(), w.DType())
						}
						if gv, wv := g.Float64s(), w.Float64s(); !equal64(gv, wv) {
							t.Errorf("result %d: %v, want %v exactly", r, gv, wv)
						}
						continue
					}
					if g.DType() != dt {
						t.Fatalf("result %d: dtype %v, want %v", r, g.DType(), dt)
					}
					gv, wv := g.Float64s(), w.Float64s()
					scale := 0.0
					for _, v := range wv {
						scale = math.Max(scale, math.Abs(v))
					}
					for i := range gv {
						if d := math.Abs(gv[i] - wv[i]); !(d <= rel*math.Abs(wv[i])+abs+scale/(1<<18)) && !(math.IsInf(wv[i], 0) && gv[i] == wv[i]) {
							t.Errorf("result %d[%d]: %v in %v, %v in Float32: off by %.3g, more than %.3g relative", r, i, gv[i], dt, wv[i], d, rel)
						}
					}
				}
			})
		}
	}
}

var collectives = map[*core.Prim]bool{comm.AllReducePrim: true, comm.AllReduceStartPrim: true, comm.ReducePrim: true, comm.ReduceScatterPrim: true}

func runCase(c optest.Case, in []*tensor.Tensor) []*tensor.Tensor {
	if c.FnN != nil {
		return c.FnN(in...)
	}
	return []*tensor.Tensor{c.Fn(in...)}
}

func equal64(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && !(a[i] != a[i] && b[i] != b[i]) {
			return false
		}
	}
	return true
}

// Graph mode agrees with PyNative mode on 16-bit operands, bit for bit:
// every primitive of the catalogue, and its gradient where it has one,
// run on BFloat16 and Float16 inputs eagerly and compiled.
func TestHalfGraphMatchesPyNative(t *testing.T) {
	for _, c := range optest.Cases() {
		for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
			t.Run(c.Name+"/"+dt.String(), func(t *testing.T) {
				if c.Prim.Traits.Impure || collectives[c.Prim] {
					t.Skip("random or collective")
				}
				ins := c.Inputs(tensor.Float32)
				float := false
				for i, x := range ins {
					if x.DType() == tensor.Float32 {
						ins[i], float = ops.Cast(x, dt), true
					}
				}
				if !float {
					t.Skip("no float operand")
				}
				// The results, and the gradient of the sum of the float
				// results (as float32) with respect to c.Diff's inputs.
				run := func(xs ...*tensor.Tensor) []*tensor.Tensor {
					out := runCase(c, xs)
					if !c.Differentiable || len(c.Diff) == 0 {
						return out
					}
					loss := func(d ...*tensor.Tensor) *tensor.Tensor {
						full := append([]*tensor.Tensor(nil), xs...)
						for k, i := range c.Diff {
							full[i] = d[k]
						}
						s := tensor.Scalar(float32(0))
						for _, r := range runCase(c, full) {
							if r.DType().IsFloat() {
								s = ops.Add(s, ops.Sum(ops.Cast(r, tensor.Float32)))
							}
						}
						return s
					}
					args := make([]*tensor.Tensor, len(c.Diff))
					for k, i := range c.Diff {
						args[k] = xs[i]
					}
					return append(out, spore.Grad(loss, spore.GradPosition(seq(len(args))...))(args...)...)
				}
				defer func() {
					if e := recover(); e != nil {
						t.Fatalf("panic: %v", e)
					}
				}()
				eager := run(ins...)
				graph := spore.Jit(run, spore.JitConfig{Name: "half." + c.Name + "." + dt.String()})(ins...)
				if len(eager) != len(graph) {
					t.Fatalf("%d results in PyNative mode, %d in Graph mode", len(eager), len(graph))
				}
				for r := range eager {
					e, g := eager[r], graph[r]
					if e.DType() != g.DType() || !e.Shape().Equal(g.Shape()) {
						t.Fatalf("result %d: %v %v in PyNative mode, %v %v in Graph mode", r, e.DType(), e.Shape(), g.DType(), g.Shape())
					}
					if ev, gv := e.Float64s(), g.Float64s(); !equal64(ev, gv) {
						t.Errorf("result %d: PyNative %v, Graph %v", r, ev, gv)
					}
				}
			})
		}
	}
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// Binary elementwise ops promote a 16-bit float meeting another float
// type, as PyTorch does: to Float32 (Float64 with a Float64), in both
// modes, with the gradient cast back to each operand's dtype.
func TestHalfPromotion(t *testing.T) {
	bf := ops.Cast(tensor.FromSlice([]float32{1.5, -2}), tensor.BFloat16)
	f16 := ops.Cast(tensor.FromSlice([]float32{0.1, 3}), tensor.Float16)
	f32 := tensor.FromSlice([]float32{0.1, 3})
	f64 := tensor.FromSlice([]float64{0.1, 3})
	for _, c := range []struct {
		name string
		a, b *tensor.Tensor
		want tensor.DType
	}{
		{"bf16+f32", bf, f32, tensor.Float32},
		{"f32+bf16", f32, bf, tensor.Float32},
		{"bf16+f16", bf, f16, tensor.Float32},
		{"f16+f64", f16, f64, tensor.Float64},
		{"bf16+bf16", bf, bf, tensor.BFloat16},
	} {
		f := func(a, b *tensor.Tensor) *tensor.Tensor { return ops.Mul(a, b) }
		wa, wb := ops.Cast(c.a, tensor.Float64).Float64s(), ops.Cast(c.b, tensor.Float64).Float64s()
		for mode, y := range map[string]*tensor.Tensor{"PyNative": f(c.a, c.b), "Graph": spore.Jit(f)(c.a, c.b)} {
			if y.DType() != c.want {
				t.Errorf("%s %s: dtype %v, want %v", mode, c.name, y.DType(), c.want)
				continue
			}
			for i, v := range y.Float64s() {
				want := float64(ops.Cast(tensor.Scalar(wa[i]*wb[i]), c.want).Item())
				if c.want == tensor.Float32 {
					want = float64(float32(wa[i]) * float32(wb[i]))
				}
				if v != want {
					t.Errorf("%s %s [%d]: %v, want %v", mode, c.name, i, v, want)
				}
			}
		}
		g := spore.Grad(func(a, b *tensor.Tensor) *tensor.Tensor {
			return ops.Sum(ops.Cast(ops.Mul(a, b), tensor.Float32))
		}, spore.GradPosition(0, 1))(c.a, c.b)
		if g[0].DType() != c.a.DType() || g[1].DType() != c.b.DType() {
			t.Errorf("%s: gradients %v, %v for operands %v, %v", c.name, g[0].DType(), g[1].DType(), c.a.DType(), c.b.DType())
		}
	}
	// Integers and floats still do not mix, and the error names the
	// operands' own dtypes.
	defer func() {
		e := recover()
		if e == nil || !strings.Contains(fmt.Sprint(e), "BFloat16") || !strings.Contains(fmt.Sprint(e), "Int32") {
			t.Errorf("BFloat16 + Int32: panic %v, want an error naming BFloat16 and Int32", e)
		}
	}()
	ops.Add(bf, tensor.FromSlice([]int32{1, 2}))
}

// Whole networks on 16-bit tensors compile and match PyNative bit for bit
// at every level: the compiler's passes (constant folding, loop fusion,
// GEMM and convolution epilogues, fast math) either handle the dtype or
// leave its nodes alone. Each network is run all in the 16-bit type, and
// with float32 master weights cast to it in the forward pass (mixed
// precision's O2 by hand), whose gradients must be float32.
func TestHalfNetworksGraphMatchesPyNative(t *testing.T) {
	labels := tensor.FromSlice([]int32{1, 0, 2, 1})
	mlp := func(dt tensor.DType) func(x, w1, b1, w2, b2 *tensor.Tensor) *tensor.Tensor {
		return func(x, w1, b1, w2, b2 *tensor.Tensor) *tensor.Tensor {
			c := func(v *tensor.Tensor) *tensor.Tensor { return ops.Cast(v, dt) }
			h := ops.ReLU(ops.Add(ops.MatMul(c(x), c(w1)), c(b1)))
			y := ops.Add(ops.MatMul(h, c(w2)), c(b2))
			return ops.CrossEntropy(ops.Cast(y, tensor.Float32), labels, "mean")
		}
	}
	conv := func(dt tensor.DType) func(x, w1, b1, w2, b2 *tensor.Tensor) *tensor.Tensor {
		return func(x, w1, b1, w2, b2 *tensor.Tensor) *tensor.Tensor {
			c := func(v *tensor.Tensor) *tensor.Tensor { return ops.Cast(v, dt) }
			h := ops.Conv2D(c(x), c(w1), ops.Conv2DOpts{Stride: [2]int{1, 1}, Dilation: [2]int{1, 1}, Groups: 1})
			h = ops.ReLU(ops.Add(h, ops.Reshape(c(b1), 1, 3, 1, 1)))
			h = ops.MaxPool2D(h, [2]int{2, 2}, [2]int{2, 2})
			y := ops.Add(ops.MatMul(ops.Reshape(h, 4, 12), c(w2)), c(b2))
			// Softmax's exp and sums in the 16-bit type too.
			return ops.Sum(ops.Mul(ops.Cast(ops.Softmax(y, 1), tensor.Float32), tensor.Scalar(float32(0.5))))
		}
	}
	nets := []struct {
		name  string
		f     func(tensor.DType) func(x, w1, b1, w2, b2 *tensor.Tensor) *tensor.Tensor
		shape [][]int
	}{
		{"mlp", mlp, [][]int{{4, 8}, {8, 16}, {16}, {16, 3}, {3}}},
		{"conv", conv, [][]int{{4, 2, 5, 6}, {3, 2, 2, 3}, {3}, {12, 3}, {3}}},
	}
	for _, net := range nets {
		for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
			for _, master := range []bool{false, true} {
				args := make([]*tensor.Tensor, len(net.shape))
				for i, s := range net.shape {
					args[i] = optest.Vals(tensor.Float32, -1, 1, 13*i, s...)
					if !master {
						args[i] = ops.Cast(args[i], dt)
					}
				}
				vg := spore.ValueAndGrad(net.f(dt), spore.GradPosition(0, 1, 2, 3, 4))
				run := func(xs ...*tensor.Tensor) []*tensor.Tensor {
					l, g := vg(xs...)
					return append([]*tensor.Tensor{l}, g...)
				}
				eager := run(args...)
				for k, g := range eager[1:] {
					if g.DType() != args[k].DType() {
						t.Errorf("%s %v master=%v: gradient %d is %v for a %v argument", net.name, dt, master, k, g.DType(), args[k].DType())
					}
				}
				for _, lvl := range []spore.Level{spore.O0, spore.O1, spore.O2} {
					name := fmt.Sprintf("%s/%v/master=%v/%v", net.name, dt, master, lvl)
					t.Run(name, func(t *testing.T) {
						graph := spore.Jit(run, spore.JitConfig{Level: lvl, Name: "halfnet." + name})(args...)
						for r := range eager {
							e, g := eager[r], graph[r]
							if e.DType() != g.DType() {
								t.Fatalf("result %d: %v in PyNative mode, %v in Graph mode", r, e.DType(), g.DType())
							}
							if ev, gv := e.Float64s(), g.Float64s(); !equal64(ev, gv) {
								t.Errorf("result %d: PyNative %v\nGraph %v", r, ev, gv)
							}
						}
					})
				}
			}
		}
	}
}

// Constants of 16-bit types fold and simplify as PyNative computes them:
// a constant subexpression (folded at compile time), x·1 and x+0 with
// 16-bit ones and zeros, and a division by a constant.
func TestHalfConstantsGraphMatchesPyNative(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
		f := func(x *tensor.Tensor) *tensor.Tensor {
			c := ops.Exp(ops.Cast(tensor.FromSlice([]float32{0.3, -1.7, 2.2}), dt))
			y := ops.Mul(ops.Add(x, tensor.Full(dt, 0)), tensor.Full(dt, 1))
			y = ops.Div(ops.Mul(y, c), tensor.Full(dt, 3))
			return ops.Sub(y, ops.Mul(ops.Mul(x, tensor.Full(dt, 0.5)), tensor.Full(dt, 0.25)))
		}
		x := ops.Cast(tensor.FromSlice([]float32{1.1, 2.9, -0.3}), dt)
		want := f(x).Float64s()
		for _, lvl := range []spore.Level{spore.O0, spore.O1} {
			got := spore.Jit(f, spore.JitConfig{Level: lvl, Name: fmt.Sprintf("halfconst.%v.%v", dt, lvl)})(x)
			if got.DType() != dt || !equal64(got.Float64s(), want) {
				t.Errorf("%v at %v: Graph %v %v, PyNative %v", dt, lvl, got.DType(), got.Float64s(), want)
			}
		}
	}
}

// A compiled call on 16-bit tensors allocates no more than the same call
// on float32 ones: the widening adapter's float32 buffers and headers are
// kept per kernel, so only the results are allocated. (MatMul's BFloat16
// kernel is the bf16 GEMM's; its Float16 one is the adapter's.)
func TestHalfPlansAllocateAsFloat32(t *testing.T) {
	step := func(dt tensor.DType) func(xs ...*tensor.Tensor) []*tensor.Tensor {
		labels := tensor.FromSlice([]int32{1, 0, 2, 1})
		vg := spore.ValueAndGrad(func(x, w, b *tensor.Tensor) *tensor.Tensor {
			xw := ops.Mul(ops.ExpandDims(ops.Cast(x, dt), 2), ops.Cast(w, dt))
			y := ops.Add(ops.Add(ops.Sum(xw, 1), ops.MatMul(ops.Cast(x, dt), ops.Cast(w, dt))), ops.Cast(b, dt))
			return ops.CrossEntropy(ops.Cast(ops.Tanh(y), tensor.Float32), labels, "mean")
		}, spore.GradPosition(1, 2))
		return func(xs ...*tensor.Tensor) []*tensor.Tensor {
			l, g := vg(xs...)
			return append([]*tensor.Tensor{l}, g...)
		}
	}
	args := []*tensor.Tensor{optest.Vals(tensor.Float32, -1, 1, 0, 4, 8), optest.Vals(tensor.Float32, -1, 1, 5, 8, 3), optest.Vals(tensor.Float32, -1, 1, 9, 3)}
	allocs := map[tensor.DType]float64{}
	for _, dt := range []tensor.DType{tensor.Float32, tensor.BFloat16, tensor.Float16} {
		f := spore.NewJit(step(dt))
		outs := []*tensor.Tensor{tensor.Zeros(tensor.Float32), tensor.Zeros(tensor.Float32, 8, 3), tensor.Zeros(tensor.Float32, 3)}
		f.RunInto(args, outs)
		allocs[dt] = testing.AllocsPerRun(50, func() { f.RunInto(args, outs) })
	}
	for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
		if allocs[dt] > allocs[tensor.Float32] {
			t.Errorf("a compiled %v training step allocates %v times per call, the Float32 one %v", dt, allocs[dt], allocs[tensor.Float32])
		}
	}
}

// Batching rules serve 16-bit tensors unchanged: Vmap of every primitive
// of the catalogue over two BFloat16 examples equals the primitive applied
// to each example, within one rounding of the type either way (a batched
// kernel may sum in another order). LayerNorm's batching rules with batched
// parameters are composed of ordinary ops, each rounding to the 16-bit
// type, where the primitive rounds once: they agree to 2^-5 of the
// result's scale (about six roundings of 2^-8).
func TestHalfVmap(t *testing.T) {
	const dt = tensor.BFloat16
	for _, c := range optest.Cases() {
		if c.Prim.Traits.Impure || collectives[c.Prim] {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			base := c.Inputs(tensor.Float32)
			var exs [2][]*tensor.Tensor
			batched := make([]*tensor.Tensor, len(base))
			axes := make(spore.Axes, len(base))
			float := false
			for i, x := range base {
				if x.DType() != tensor.Float32 {
					axes[i] = spore.NotBatched
					batched[i] = x
					exs[0], exs[1] = append(exs[0], x), append(exs[1], x)
					continue
				}
				float = true
				a, b := ops.Cast(x, dt), ops.Cast(ops.Mul(x, tensor.Scalar(float32(0.75))), dt)
				exs[0], exs[1] = append(exs[0], a), append(exs[1], b)
				batched[i] = ops.Stack(0, a, b)
			}
			if !float {
				t.Skip("no float operand")
			}
			defer func() {
				if e := recover(); e != nil {
					t.Fatalf("panic: %v", e)
				}
			}()
			fn := func(xs ...*tensor.Tensor) []*tensor.Tensor { return runCase(c, xs) }
			got := spore.Vmap(fn, axes, nil)(batched...)
			for k, ex := range exs {
				want := fn(ex...)
				for r := range want {
					g := ops.Unstack(got[r], 0)[k]
					if g.DType() != want[r].DType() || !g.Shape().Equal(want[r].Shape()) {
						t.Fatalf("example %d result %d: %v %v batched, %v %v alone", k, r, g.DType(), g.Shape(), want[r].DType(), want[r].Shape())
					}
					gv, wv := g.Float64s(), want[r].Float64s()
					scale := 0.0
					for _, v := range wv {
						scale = math.Max(scale, math.Abs(v))
					}
					slack := scale / (1 << 18)
					if c.Prim == ops.LayerNormPrim || c.Prim == ops.LayerNormGradPrim {
						slack = scale / 32
					}
					for i := range gv {
						if d := math.Abs(gv[i] - wv[i]); !(d <= math.Abs(wv[i])/128+slack) && !(gv[i] == wv[i]) && !(gv[i] != gv[i] && wv[i] != wv[i]) {
							t.Errorf("example %d result %d[%d]: %v batched, %v alone", k, r, i, gv[i], wv[i])
						}
					}
				}
			}
		})
	}
}

// Forward-mode differentiation runs on 16-bit tensors: the tangent of a
// small network in BFloat16, in PyNative and Graph mode, is the float32
// network's tangent on the same rounded inputs to within the roundings of
// its few steps (2^-5 of the tangent's scale), and both modes agree bit
// for bit.
func TestHalfJVP(t *testing.T) {
	f := func(x, w *tensor.Tensor) *tensor.Tensor {
		return ops.Softmax(ops.Tanh(ops.MatMul(x, w)), 1)
	}
	x, w := optest.Vals(tensor.Float32, -1, 1, 0, 3, 4), optest.Vals(tensor.Float32, -1, 1, 7, 4, 5)
	tx, tw := optest.Vals(tensor.Float32, -1, 1, 3, 3, 4), optest.Vals(tensor.Float32, -1, 1, 11, 4, 5)
	r := func(v *tensor.Tensor, dt tensor.DType) *tensor.Tensor {
		return ops.Cast(ops.Cast(v, tensor.BFloat16), dt)
	}
	_, want := spore.JVP(f, []*tensor.Tensor{r(x, tensor.Float32), r(w, tensor.Float32)}, []*tensor.Tensor{r(tx, tensor.Float32), r(tw, tensor.Float32)})
	jvp := func(xs ...*tensor.Tensor) []*tensor.Tensor {
		y, ty := spore.JVP(f, xs[:2], xs[2:])
		return []*tensor.Tensor{y, ty}
	}
	args := []*tensor.Tensor{r(x, tensor.BFloat16), r(w, tensor.BFloat16), r(tx, tensor.BFloat16), r(tw, tensor.BFloat16)}
	eager, graph := jvp(args...), spore.Jit(jvp)(args...)
	if eager[1].DType() != tensor.BFloat16 {
		t.Fatalf("tangent dtype %v, want BFloat16", eager[1].DType())
	}
	if !equal64(eager[1].Float64s(), graph[1].Float64s()) {
		t.Errorf("tangent: PyNative %v, Graph %v", eager[1].Float64s(), graph[1].Float64s())
	}
	wv, gv := want.Float64s(), eager[1].Float64s()
	scale := 0.0
	for _, v := range wv {
		scale = math.Max(scale, math.Abs(v))
	}
	for i := range wv {
		if math.Abs(gv[i]-wv[i]) > scale/32 {
			t.Errorf("tangent[%d] = %v in BFloat16, %v in Float32", i, gv[i], wv[i])
		}
	}
}

// BFloat16 and Float16 parameters train in place in both modes alike:
// three gradient-descent steps on a 16-bit layer, the update assigned to
// the parameters, leave the same bits in PyNative and Graph mode.
func TestHalfParametersTrain(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
		params := func() []*tensor.Tensor {
			return []*tensor.Tensor{
				tensor.NewParameter("w", ops.Cast(optest.Vals(tensor.Float32, -1, 1, 3, 8, 3), dt)),
				tensor.NewParameter("b", ops.Cast(optest.Vals(tensor.Float32, -1, 1, 5, 3), dt)),
			}
		}
		x := ops.Cast(optest.Vals(tensor.Float32, -1, 1, 0, 4, 8), dt)
		labels := tensor.FromSlice([]int32{1, 0, 2, 1})
		step := func(ps []*tensor.Tensor) func(x *tensor.Tensor) *tensor.Tensor {
			vg := spore.ValueAndGrad(func(x *tensor.Tensor) *tensor.Tensor {
				y := ops.Add(ops.MatMul(x, ps[0]), ps[1])
				return ops.CrossEntropy(ops.Cast(y, tensor.Float32), labels, "mean")
			}, spore.GradPosition(), spore.Weights(ps...))
			return func(x *tensor.Tensor) *tensor.Tensor {
				l, g := vg(x)
				for i, p := range ps {
					p.Assign(ops.Sub(p, ops.Mul(g[i], tensor.Full(dt, 0.5))))
				}
				return l
			}
		}
		eager, graph := params(), params()
		fe, fg := step(eager), spore.Jit(step(graph))
		for i := range 3 {
			le, lg := fe(x), fg(x)
			if le.Item() != lg.Item() {
				t.Errorf("%v step %d: loss %v in PyNative mode, %v in Graph mode", dt, i, le.Item(), lg.Item())
			}
		}
		for i := range eager {
			if eager[i].DType() != dt || !equal64(eager[i].Float64s(), graph[i].Float64s()) {
				t.Errorf("%v parameter %d: PyNative %v %v, Graph %v", dt, i, eager[i].DType(), eager[i].Float64s(), graph[i].Float64s())
			}
		}
		if equal64(eager[0].Float64s(), ops.Cast(optest.Vals(tensor.Float32, -1, 1, 3, 8, 3), dt).Float64s()) {
			t.Errorf("%v: the weights did not change", dt)
		}
	}
}
