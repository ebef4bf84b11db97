package compile_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/sporeml/spore/compile"
	"github.com/sporeml/spore/exec"
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/kernels/parallel"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// momentumStep traces SGD with momentum as package optim computes it, for
// a weight p of m×n whose gradient is op(x)·g (x of k×m, transposed, or
// m×k), with momentum buffer buf:
//
//	nb = FlushSubnormal(buf·mu + grad);  buf ← nb;  p ← p − nb·lr
//
// exposeGrad also returns the gradient, which the fusion must then leave;
// bf16 takes the gradient as mixed precision's O2 does (the operands cast
// to bfloat16, the product cast back).
func momentumStep(t *testing.T, m, n, k int, transA, exposeGrad, bf16 bool) (*graph.Graph, *tensor.Tensor, *tensor.Tensor) {
	t.Helper()
	p := tensor.NewParameter("w", tensor.Zeros(tensor.Float32, m, n))
	buf := tensor.NewParameter("accum.w", tensor.Zeros(tensor.Float32, m, n))
	xs := tensor.Shape{m, k}
	if transA {
		xs = tensor.Shape{k, m}
	}
	metas := []tensor.Meta{{Shape: xs, DType: tensor.Float32}, {Shape: tensor.Shape{k, n}, DType: tensor.Float32}}
	mu, lr := tensor.Scalar(float32(0.9)), tensor.Scalar(float32(0.01))
	g, err := graph.Trace("momentum", metas, func(in []*tensor.Tensor) []*tensor.Tensor {
		grad := ops.MatMulT(in[0], in[1], transA, false)
		if bf16 {
			grad = ops.Cast(ops.MatMulT(ops.Cast(in[0], tensor.BFloat16), ops.Cast(in[1], tensor.BFloat16), transA, false), tensor.Float32)
		}
		nb := ops.FlushSubnormal(ops.Add(ops.Mul(buf, mu), grad))
		buf.Assign(nb)
		p.Assign(ops.Sub(p, ops.Mul(nb, lr)))
		if exposeGrad {
			return []*tensor.Tensor{ops.Sum(grad)}
		}
		return []*tensor.Tensor{ops.Sum(p)}
	})
	if err != nil {
		t.Fatal(err)
	}
	return g, p, buf
}

// TestGemmMomentum checks that the fused momentum update gives the
// unfused update's bits, step after step, over one and several row blocks,
// both transpose flags, long and short k, on one thread and two: the
// buffer (with entries that decay into the subnormal range and must be
// flushed) and the weight that reads it.
func TestGemmMomentum(t *testing.T) {
	cases := []struct {
		m, n, k int
		transA  bool
		bf16    bool
	}{
		{7, 5, 4, false, false},    // one block
		{40, 600, 3, true, false},  // a small batch's weight gradient: several blocks
		{300, 50, 64, true, false}, // the longest k fused
		{33, 70, 60, false, false},
		{512, 40, 1, true, false}, // batch 1
		// Mixed precision: one block, the 224-row blocks, and blocks
		// spread over threads (k·n small enough).
		{7, 5, 4, false, true},
		{512, 40, 8, true, true},
		{512, 64, 64, true, true},
		{60, 30, 16, false, true},
	}
	for _, c := range cases {
		for _, threads := range []int{1, 2} {
			t.Run(fmt.Sprintf("%dx%dx%d_ta=%v_bf16=%v_threads=%d", c.m, c.n, c.k, c.transA, c.bf16, threads), func(t *testing.T) {
				defer parallel.SetWorkers(parallel.SetWorkers(threads))
				ref, pRef, bRef := momentumStep(t, c.m, c.n, c.k, c.transA, false, c.bf16)
				g, p, b := momentumStep(t, c.m, c.n, c.k, c.transA, false, c.bf16)
				want := matMulMomentumSpec
				if c.bf16 {
					compile.AmpMatMul(g)
					want = bf16MomentumSpec
				}
				compile.GemmMomentum(g)
				checkAbsorbed(t, g)
				compile.DCE(g)
				if err := graph.Verify(g); err != nil {
					t.Fatal(err)
				}
				if s := g.String(); countFixed(g, want) != 1 || strings.Contains(s, "FlushSubnormal(") || strings.Contains(s, "Add(") {
					t.Fatalf("momentum update not fused:\n%s", s)
				}
				refPlan, err := exec.Compile(ref)
				if err != nil {
					t.Fatal(err)
				}
				plan, err := exec.Compile(g)
				if err != nil {
					t.Fatal(err)
				}
				if plan.InPlaceAssigns != 2 {
					t.Fatalf("%d updates computed in place, want 2 (the buffer and the weight)", plan.InPlaceAssigns)
				}
				// Equal starting points; a quarter of the buffer is just above
				// the normal range, so that one step's decay (·0.9) under a
				// zero gradient takes it below, where it must be flushed.
				start := tensor.RandUniform(tensor.Float32, -1, 1, c.m, c.n).Float32s()
				bstart := tensor.RandUniform(tensor.Float32, -1, 1, c.m, c.n).Float32s()
				for i := 0; i < len(bstart); i += 4 {
					bstart[i] = float32(1.05 * math.Ldexp(1, -126))
				}
				for _, x := range []*tensor.Tensor{pRef, p} {
					x.Assign(tensor.FromSlice(start, c.m, c.n))
				}
				for _, x := range []*tensor.Tensor{bRef, b} {
					x.Assign(tensor.FromSlice(bstart, c.m, c.n))
				}
				xs := ref.Inputs[0].Meta.Shape
				var args []*tensor.Tensor
				for step := range 4 {
					x := tensor.RandUniform(tensor.Float32, -1, 1, xs...)
					gr := tensor.RandUniform(tensor.Float32, -1, 1, c.k, c.n)
					if step%2 == 0 {
						// A zero gradient lets the tiny entries decay: the
						// flush must act on the fused path too.
						gd := gr.Float32s()
						clear(gd)
						gr = tensor.FromSlice(gd, c.k, c.n)
					}
					args = []*tensor.Tensor{x, gr}
					refPlan.Run(args)
					plan.Run(args)
					if step == 0 && bRef.Float32s()[0] != 0 {
						t.Fatalf("the unfused step left %v, want the decayed entry flushed to 0", bRef.Float32s()[0])
					}
					for _, pair := range [][2]*tensor.Tensor{{bRef, b}, {pRef, p}} {
						want, got := pair[0].Float32s(), pair[1].Float32s()
						for i := range want {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								t.Fatalf("step %d, %s element %d: %v, want %v (the unfused bits)", step, pair[1].Name(), i, got[i], want[i])
							}
						}
					}
				}
				outs := []*tensor.Tensor{tensor.New(tensor.Float32)}
				if n := testing.AllocsPerRun(5, func() { plan.RunInto(args, outs) }); n > 0 {
					t.Errorf("%v allocations per fused step", n)
				}
			})
		}
	}
}

// TestGemmMomentumLeaves checks what the fusion leaves alone: a gradient
// read elsewhere too, and a product with k above 64 (a large batch's
// gradient, which the row blocks would make slower).
func TestGemmMomentumLeaves(t *testing.T) {
	for _, c := range []struct {
		name       string
		k          int
		transA     bool
		exposeGrad bool
	}{
		{"gradient also returned", 4, true, true},
		{"k = 65, transposed a", 65, true, false},
		{"k = 65", 65, false, false},
	} {
		g, _, _ := momentumStep(t, 6, 5, c.k, c.transA, c.exposeGrad, false)
		compile.GemmMomentum(g)
		checkAbsorbed(t, g)
		if countFixed(g, matMulMomentumSpec) != 0 {
			t.Errorf("%s: fused:\n%s", c.name, g)
		}
	}
}

// TestMatMulMomentumBadInput checks that malformed applications of the two
// momentum prims panic with an error naming the primitive and what was
// wrong.
func TestMatMulMomentumBadInput(t *testing.T) {
	a, b := randParam("a", 1, 3, 4), randParam("b", 2, 4, 5)
	buf, mu := randParam("buf", 3, 3, 5), tensor.Scalar(float32(0.9))
	wrongBuf := randParam("buf2", 4, 5, 3)
	mus := randParam("mus", 5, 2)
	for _, p := range []struct {
		Name string
		spec compile.AnchorSpec
	}{{"MatMulMomentum", matMulMomentumSpec}, {"BF16MatMulMomentum", bf16MomentumSpec}} {
		for _, tc := range []struct {
			name  string
			attrs any
			in    []*tensor.Tensor
			want  string
		}{
			{"attrs", compile.BF16MatMulAttrs{}, []*tensor.Tensor{a, b, buf, mu}, "with attributes compile.BF16MatMulAttrs"},
			{"operand count", ops.MatMulAttrs{}, []*tensor.Tensor{a, b, buf}, "4 operands"},
			{"inner dims", ops.MatMulAttrs{TransB: true}, []*tensor.Tensor{a, b, buf, mu}, "inner dimensions differ"},
			{"buffer shape", ops.MatMulAttrs{}, []*tensor.Tensor{a, b, wrongBuf, mu}, "shapes do not fit"},
			{"momentum not one element", ops.MatMulAttrs{}, []*tensor.Tensor{a, b, buf, mus}, "one-element"},
			{"float64 buffer", ops.MatMulAttrs{}, []*tensor.Tensor{a, b, ops.Cast(buf, tensor.Float64), mu}, "Float64"},
		} {
			t.Run(p.Name+"/"+tc.name, func(t *testing.T) {
				defer func() {
					r := recover()
					if r == nil || !strings.Contains(fmt.Sprint(r), p.Name) || !strings.Contains(fmt.Sprint(r), tc.want) {
						t.Fatalf("panic %v, want one naming %s and %q", r, p.Name, tc.want)
					}
				}()
				a, err := compile.FixedAnchor(p.spec, tc.attrs)
				if err != nil {
					panic(fmt.Sprintf("%s: %v", p.Name, err))
				}
				core.Apply(compile.Anchor, a, tc.in...)
			})
		}
	}
}
