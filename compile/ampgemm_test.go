package compile_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/compile"
	"github.com/sporeml/spore/exec"
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// ampDenseGraph is denseGraph at mixed precision O2, as the autocast
// traces it: every product's operands cast to bfloat16 and its result back
// to float32, the bias add and ReLU in float32.
func ampDenseGraph(batch int, w1, b1, w2 *tensor.Tensor) *graph.Graph {
	g := graph.New("ampdense")
	bf := func(v *graph.Value) *graph.Value { return g.Op(ops.CastPrim, tensor.BFloat16, v) }
	mm := func(a, b *graph.Value, tb bool) *graph.Value {
		return g.Op(ops.CastPrim, tensor.Float32, g.Op(ops.MatMulPrim, ops.MatMulAttrs{TransB: tb}, bf(a), bf(b)))
	}
	x := g.Input(f32(batch, w1.Dim(1)))
	h := g.Op(ops.ReluPrim, nil, g.Op(ops.AddPrim, nil, mm(x, g.Param(w1), true), g.Param(b1)))
	g.Outputs = []*graph.Value{mm(h, g.Param(w2), false)}
	return g
}

// sameAmpBits fails unless got and want hold the same float32 bits.
func sameAmpBits(t *testing.T, what string, got, want *tensor.Tensor) {
	t.Helper()
	g, w := got.Float32s(), want.Float32s()
	for i := range w {
		if math.Float32bits(g[i]) != math.Float32bits(w[i]) {
			t.Fatalf("%s: element %d = %v, want %v (the unfused chain's)", what, i, g[i], w[i])
		}
	}
}

// TestAmpGemm checks that the fused bfloat16 products compute the unfused
// chain's bits — the reference plan runs the casts and the BFloat16
// MatMul kernel one by one — call after call, and after the weights
// change by Assign (the packed copies are remade).
func TestAmpGemm(t *testing.T) {
	for _, batch := range []int{1, 3, 64} {
		t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) {
			w1, b1, w2 := randParam("w1", 1, 40, 50), randParam("b1", 2, 40), randParam("w2", 3, 40, 37)
			res, err := compile.Run(ampDenseGraph(batch, w1, b1, w2), compile.Options{Level: compile.O1, Verify: true})
			if err != nil {
				t.Fatal(err)
			}
			checkAbsorbed(t, res.Graph)
			ir := res.Graph.String()
			if n := countFused[compile.BF16EpilogueAttrs](res.Graph, bf16Spec); n != 2 || strings.Contains(ir, "Cast") || !strings.Contains(ir, "bias=true act=relu") {
				t.Fatalf("want both products fused, the first with its bias and ReLU, and no casts left:\n%s", ir)
			}
			ref, err := exec.Compile(ampDenseGraph(batch, w1, b1, w2))
			if err != nil {
				t.Fatal(err)
			}
			args := randArgs(res.Graph, 4)
			check := func(what string) {
				t.Helper()
				sameAmpBits(t, what, res.Plan.Run(args)[0], ref.Run(args)[0])
			}
			check("first call")
			check("second call")
			w2.Assign(randParam("new", 5, 40, 37))
			check("after Assign of w2")
			w1.Assign(randParam("new", 6, 40, 50))
			check("after Assign of w1")
			// And the result is the float32 network's within bfloat16's
			// rounding: 8 significand bits per operand and per product.
			plain, err := exec.Compile(denseGraph(batch, w1, b1, w2))
			if err != nil {
				t.Fatal(err)
			}
			got, want := res.Plan.Run(args)[0].Float32s(), plain.Run(args)[0].Float32s()
			// The bound is relative to the output's scale: an element that
			// cancels to near zero keeps the absolute error of its terms.
			diff, scale := 0.0, 0.0
			for i := range want {
				diff = max(diff, math.Abs(float64(got[i]-want[i])))
				scale = max(scale, math.Abs(float64(want[i])))
			}
			t.Logf("largest difference from float32 %.3g of the output's largest magnitude %.3g", diff/scale, scale)
			if diff > 1.0/64*scale {
				t.Errorf("largest difference from float32 %.3g of the largest magnitude, want below 2^-6", diff/scale)
			}
		})
	}
}

// TestAmpGemmSkipsAssigned checks that a training graph, which assigns the
// weight, keeps the plain casts and product, and that O0 fuses nothing.
func TestAmpGemmSkipsAssigned(t *testing.T) {
	w1, b1, w2 := randParam("w1", 1, 8, 6), randParam("b1", 2, 8), randParam("w2", 3, 8, 5)
	g := ampDenseGraph(4, w1, b1, w2)
	for _, v := range g.Values {
		if v.Kind == graph.KindParam && v.Tensor == w1 {
			g.Assigns = append(g.Assigns, graph.Assign{Param: v, Val: g.Op(ops.NegPrim, nil, v)})
		}
	}
	res, err := compile.Run(g, compile.Options{Level: compile.O1, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	if ir := res.Graph.String(); countFused[compile.BF16EpilogueAttrs](res.Graph, bf16Spec) != 1 {
		t.Errorf("want only w2's product fused:\n%s", ir)
	}
	res, err = compile.Run(ampDenseGraph(4, w1, b1, w2), compile.Options{Level: compile.O0, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	if ir := res.Graph.String(); countFused[compile.BF16EpilogueAttrs](res.Graph, bf16Spec) != 0 {
		t.Errorf("O0 fused a product:\n%s", ir)
	}
}

// BenchmarkAmpGemm times the seed network's first two layers at mixed
// precision O2 (one fused bfloat16 GEMM each) beside the same layers in
// float32, per batch size, in one run: the ratio is the bfloat16 speed-up.
func BenchmarkAmpGemm(b *testing.B) {
	w1, b1, w2 := randParam("w1", 1, 512, 784), randParam("b1", 2, 512), randParam("w2", 3, 512, 512)
	for _, batch := range []int{1, 64, 256} {
		for _, c := range []struct {
			name  string
			build func(int, *tensor.Tensor, *tensor.Tensor, *tensor.Tensor) *graph.Graph
		}{{"fp32", denseGraph}, {"bf16", ampDenseGraph}} {
			b.Run(fmt.Sprintf("batch=%d/%s", batch, c.name), func(b *testing.B) {
				res, err := compile.Run(c.build(batch, w1, b1, w2), compile.Options{Level: compile.O1})
				if err != nil {
					b.Fatal(err)
				}
				args := randArgs(res.Graph, 4)
				outs := []*tensor.Tensor{tensor.New(tensor.Float32, batch, 512)}
				res.Plan.RunInto(args, outs)
				b.ResetTimer()
				for range b.N {
					res.Plan.RunInto(args, outs)
				}
				b.ReportMetric(float64(2*batch*(784*512+512*512))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// TestBF16MatMulBiasActVJP differentiates the fused product applied
// eagerly against the unfused chain it replaces (casts, the BFloat16
// MatMul, the cast back, bias add, ReLU) run under mixed precision: the
// same value and the same Float32 gradients, bit for bit, for every
// combination of transpose, bias and activation.
func TestBF16MatMulBiasActVJP(t *testing.T) {
	for _, tc := range []struct {
		tb, bias bool
		act      compile.Act
	}{{true, true, compile.ActReLU}, {false, true, compile.ActNone}, {true, false, compile.ActReLU}, {false, false, compile.ActNone}} {
		t.Run(fmt.Sprintf("tb=%v bias=%v act=%v", tc.tb, tc.bias, tc.act), func(t *testing.T) {
			x := randParam("x", 21, 5, 12)
			w := randParam("w", 22, 7, 12)
			if !tc.tb {
				w = randParam("w", 22, 12, 7)
			}
			b := randParam("b", 23, 7)
			r := randParam("r", 24, 5, 7)
			unfused := func(x, w, b *tensor.Tensor) *tensor.Tensor {
				defer spore.AmpScope(spore.AmpO2)()
				y := ops.MatMulT(x, w, false, tc.tb)
				if tc.bias {
					y = ops.Add(y, b)
				}
				if tc.act == compile.ActReLU {
					y = ops.ReLU(y)
				}
				return ops.Sum(ops.Mul(y, r))
			}
			fused := func(x, w, b *tensor.Tensor) *tensor.Tensor {
				args := []*tensor.Tensor{x, w}
				if tc.bias {
					args = append(args, b)
				}
				y := core.Apply(compile.Anchor, fixed(t, bf16Spec, compile.BF16EpilogueAttrs{TransB: tc.tb, Bias: tc.bias, Act: tc.act}), args...)
				return ops.Sum(ops.Mul(y, r))
			}
			wantV, wantG := spore.ValueAndGrad(unfused, spore.GradPosition(0, 1, 2))(x, w, b)
			gotV, gotG := spore.ValueAndGrad(fused, spore.GradPosition(0, 1, 2))(x, w, b)
			sameAmpBits(t, "value", gotV, wantV)
			for i, name := range []string{"dx", "dw", "db"} {
				if !tc.bias && i == 2 {
					continue
				}
				if gotG[i].DType() != tensor.Float32 {
					t.Fatalf("%s is %v, want Float32", name, gotG[i].DType())
				}
				sameAmpBits(t, name, gotG[i], wantG[i])
			}
		})
	}
}

// TestAmpGemmNoAllocs checks that a plan with fused bfloat16 products
// allocates nothing per call once its weights are packed, and nothing to
// repack them after an update either.
func TestAmpGemmNoAllocs(t *testing.T) {
	w1, b1, w2 := randParam("w1", 1, 64, 100), randParam("b1", 2, 64), randParam("w2", 3, 64, 30)
	res, err := compile.Run(ampDenseGraph(2, w1, b1, w2), compile.Options{Level: compile.O1})
	if err != nil {
		t.Fatal(err)
	}
	args := randArgs(res.Graph, 4)
	outs := []*tensor.Tensor{tensor.New(tensor.Float32, 2, 30)}
	res.Plan.RunInto(args, outs)
	if n := testing.AllocsPerRun(20, func() { res.Plan.RunInto(args, outs) }); n > 0 {
		t.Errorf("%v allocations per call", n)
	}
	fresh := randParam("new", 5, 64, 100)
	if n := testing.AllocsPerRun(20, func() { w1.Assign(fresh); res.Plan.RunInto(args, outs) }); n > 0 {
		t.Errorf("%v allocations per call with a repack", n)
	}
}
