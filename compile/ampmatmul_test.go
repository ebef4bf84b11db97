package compile_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/compile"
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/kernels/gemm"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// ampMLP is a dense ReLU network trained by SGD, its forward pass at mixed
// precision O2 (as nn.AutoMixedPrecision runs it: the autocast covers the
// network, not the loss or the backward pass) or in float32. tw stores
// each weight as nn.Dense does ([out, in], used transposed) rather than
// [in, out], so that both forms of the MatMul VJPs are traced.
type ampMLP struct {
	params []*tensor.Tensor
	tw     bool
	amp    bool
}

// newAmpMLP builds layers of the given widths (input first).
func newAmpMLP(tw, amp bool, widths ...int) *ampMLP {
	spore.SetSeed(1)
	m := &ampMLP{tw: tw, amp: amp}
	for i := 0; i+1 < len(widths); i++ {
		shape := []int{widths[i], widths[i+1]}
		if tw {
			shape = []int{widths[i+1], widths[i]}
		}
		m.params = append(m.params,
			tensor.NewParameter(fmt.Sprintf("w%d", i), tensor.RandUniform(tensor.Float32, -0.1, 0.1, shape...)),
			tensor.NewParameter(fmt.Sprintf("b%d", i), tensor.RandUniform(tensor.Float32, -0.1, 0.1, widths[i+1])))
	}
	return m
}

func (m *ampMLP) forward(x *tensor.Tensor) *tensor.Tensor {
	if m.amp {
		defer spore.AmpScope(spore.AmpO2)()
	}
	h := ops.Reshape(x, x.Dim(0), -1)
	for i := 0; i < len(m.params); i += 2 {
		h = ops.Add(ops.MatMulT(h, m.params[i], false, m.tw), m.params[i+1])
		if i+2 < len(m.params) {
			h = ops.ReLU(h)
		}
	}
	return h
}

// trainStep is one SGD step traced whole; it returns the loss.
func (m *ampMLP) trainStep(args []*tensor.Tensor) []*tensor.Tensor {
	vg := spore.ValueAndGrad(func(xs ...*tensor.Tensor) *tensor.Tensor {
		return ops.CrossEntropy(m.forward(xs[0]), xs[1], "mean")
	}, spore.GradPosition(), spore.Weights(m.params...))
	loss, grads := vg(args[0], args[1])
	lr := tensor.Scalar(float32(0.1))
	for i, p := range m.params {
		p.Assign(ops.Sub(p, ops.Mul(grads[i], lr)))
	}
	return []*tensor.Tensor{loss}
}

// ampInputs are a batch of random inputs of width in, and labels.
func ampInputs(batch, in int) []*tensor.Tensor {
	spore.SetSeed(7)
	labels := make([]int32, batch)
	for i := range labels {
		labels[i] = int32((i * 7) % 10)
	}
	return []*tensor.Tensor{tensor.RandNormal(tensor.Float32, 0, 1, batch, in), tensor.FromSlice(labels, batch)}
}

func traceAmpStep(t testing.TB, m *ampMLP, args []*tensor.Tensor) *graph.Graph {
	metas := []tensor.Meta{args[0].Meta(), args[1].Meta()}
	g, err := graph.Trace("amp_train_step", metas, m.trainStep)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestAmpMatMulTrainStep compiles an O2 training step with every pass and
// with every pass but ampmatmul, and checks that the pass fused every
// product — forward, input gradient and weight gradient — leaving no cast
// and no bfloat16 value, and that the two plans give the same losses and
// weights bit for bit, step after step: the fused products round where
// the unfused chains do.
func TestAmpMatMulTrainStep(t *testing.T) {
	for _, tc := range []struct {
		tw     bool
		widths []int
	}{
		{true, []int{50, 48, 33, 10}},
		{false, []int{50, 48, 33, 10}},
		// A weight gradient tall enough (460 rows) to be computed in two
		// row blocks by the fused update.
		{true, []int{30, 460, 20, 10}},
		// One (600×200 at batch 40) spread over threads in row blocks of
		// 128 rows, each on the packed input.
		{true, []int{200, 600, 10}},
	} {
		for _, batch := range []int{1, 3, 40} {
			tw := tc.tw
			t.Run(fmt.Sprintf("tw=%v/widths=%v/batch=%d", tw, tc.widths, batch), func(t *testing.T) {
				for _, kernel := range gemm.BF16Kernels() {
					t.Run(kernel, func(t *testing.T) {
						defer gemm.SetBF16Kernel("")
						if err := gemm.SetBF16Kernel(kernel); err != nil {
							t.Fatal(err)
						}
						ampTrainStepCase(t, tw, tc.widths, batch)
					})
				}
			})
		}
	}
}

// ampTrainStepCase is one case of TestAmpMatMulTrainStep.
func ampTrainStepCase(t *testing.T, tw bool, widths []int, batch int) {
	m := newAmpMLP(tw, true, widths...)
	args := ampInputs(batch, widths[0])
	g := traceAmpStep(t, m, args)
	fused, err := compile.Run(g.Clone(), compile.Options{Level: compile.O1, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	checkAbsorbed(t, fused.Graph)
	plain, err := compile.Run(g.Clone(), compile.Options{Level: compile.O1, Verify: true, Disable: []string{"ampmatmul"}})
	if err != nil {
		t.Fatal(err)
	}
	// Per layer a forward product with its bias add (not the ReLU,
	// whose input the ReLU gradient reads) and a weight gradient fused
	// into its update; an input gradient for all layers but the first
	// (the network's input needs none).
	// No product and no cast back to Float32 is left; the casts to
	// BFloat16 that stay (those read by several products: a weight, an
	// activation) are read by fused products only, which take their bits.
	products, biased, backs, matmuls := 0, 0, 0, 0
	for _, v := range fused.Graph.Values {
		for _, a := range v.Args {
			if s, _, ok := fixedSpec(v); a.Prim == ops.CastPrim && !(ok && (s == bf16Spec || s == bf16UpdateSpec)) {
				t.Errorf("%v reads a cast:\n%s", v.Prim.Name, fused.Graph.String())
			}
		}
	}
	for _, v := range fused.Graph.Values {
		_, fa, _ := fixedSpec(v)
		at, isProduct := fa.(compile.BF16MatMulAttrs)
		switch {
		case isProduct:
			products++
			if at.Bias {
				biased++
			}
		case v.Prim == ops.MatMulPrim:
			matmuls++
		case v.Prim == ops.CastPrim && v.Meta.DType == tensor.Float32:
			backs++
		}
	}
	updates := countFixed(fused.Graph, bf16UpdateSpec)
	layers := len(widths) - 1
	if products != 2*layers-1 || biased != layers || updates != layers || matmuls != 0 || backs != 0 {
		t.Fatalf("%d fused products (%d with a bias), %d fused updates, %d MatMuls, %d casts back; want %d (%d), %d, 0, 0:\n%s",
			products, biased, updates, matmuls, backs, 2*layers-1, layers, layers, fused.Graph.String())
	}
	if countOps(plain.Graph, ops.CastPrim) == 0 {
		t.Fatalf("the reference plan has no casts:\n%s", plain.Graph.String())
	}
	start := snapshot(m.params)
	var wantLoss []*tensor.Tensor
	for range 3 {
		wantLoss = append(wantLoss, plain.Plan.Run(args)[0])
	}
	want := snapshot(m.params)
	restore(m.params, start)
	for step := range 3 {
		sameAmpBits(t, fmt.Sprintf("loss of step %d", step), fused.Plan.Run(args)[0], wantLoss[step])
	}
	for i, p := range m.params {
		if p.DType() != tensor.Float32 {
			t.Fatalf("%s is %v, want Float32", p.Name(), p.DType())
		}
		sameAmpBits(t, p.Name()+" after 3 steps", p, want[i])
	}
	if sameBitsAll(start[0], m.params[0]) {
		t.Fatalf("w0 did not change")
	}
}

// sameBitsAll reports whether a and b hold the same float32 bits.
func sameBitsAll(a, b *tensor.Tensor) bool {
	x, y := a.Float32s(), b.Float32s()
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}

// TestAmpMatMulLeavesOthers checks what the pass must not fuse: a product
// whose bfloat16 result has another user, and a product of an operand that
// is bfloat16 already (not a cast of a float32 value).
func TestAmpMatMulLeavesOthers(t *testing.T) {
	g := graph.New("others")
	x := g.Input(f32(4, 6))
	w := g.Input(f32(6, 5))
	xb := g.Op(ops.CastPrim, tensor.BFloat16, x)
	wb := g.Op(ops.CastPrim, tensor.BFloat16, w)
	mm := g.Op(ops.MatMulPrim, ops.MatMulAttrs{}, xb, wb)
	yb := g.Input(tensor.Meta{Shape: tensor.Shape{4, 6}, DType: tensor.BFloat16})
	mm2 := g.Op(ops.MatMulPrim, ops.MatMulAttrs{}, yb, wb)
	g.Outputs = []*graph.Value{g.Op(ops.CastPrim, tensor.Float32, mm), mm, g.Op(ops.CastPrim, tensor.Float32, mm2)}
	res, err := compile.Run(g, compile.Options{Level: compile.O1, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	if ir := res.Graph.String(); countFixed(res.Graph, bf16Spec) != 0 {
		t.Errorf("fused a product it must leave:\n%s", ir)
	}
}

// TestBF16MatMulVJP differentiates the fused product applied eagerly
// against the unfused chain under mixed precision: the same value and the
// same Float32 gradients, bit for bit, for every transpose combination,
// with and without bias and ReLU.
func TestBF16MatMulVJP(t *testing.T) {
	for _, tc := range []struct {
		ta, tb, bias bool
		act          compile.Act
	}{
		{false, true, true, compile.ActReLU},
		{false, false, true, compile.ActNone},
		{true, false, false, compile.ActNone},
		{true, true, false, compile.ActReLU},
		{false, false, false, compile.ActReLU},
	} {
		t.Run(fmt.Sprintf("ta=%v tb=%v bias=%v act=%v", tc.ta, tc.tb, tc.bias, tc.act), func(t *testing.T) {
			xs, ws := []int{5, 12}, []int{12, 7}
			if tc.ta {
				xs = []int{12, 5}
			}
			if tc.tb {
				ws = []int{7, 12}
			}
			x, w := randParam("x", 31, xs...), randParam("w", 32, ws...)
			b, r := randParam("b", 33, 7), randParam("r", 34, 5, 7)
			unfused := func(x, w, b *tensor.Tensor) *tensor.Tensor {
				defer spore.AmpScope(spore.AmpO2)()
				y := ops.MatMulT(x, w, tc.ta, tc.tb)
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
				y := core.Apply(compile.Anchor, fixed(t, bf16Spec, compile.BF16MatMulAttrs{TransA: tc.ta, TransB: tc.tb, Bias: tc.bias, Act: tc.act}), args...)
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

// TestBF16MatMulUpdateVJP differentiates the fused update applied eagerly
// against p − s·(the unfused chain) under mixed precision: the same value
// bit for bit, and the same gradients (the scale's within float32
// summation order).
func TestBF16MatMulUpdateVJP(t *testing.T) {
	a, b := randParam("a", 41, 9, 6), randParam("b", 42, 9, 8)
	p, s, r := randParam("p", 43, 6, 8), randParam("s", 44, 1), randParam("r", 45, 6, 8)
	unfused := func(a, b, p, s *tensor.Tensor) *tensor.Tensor {
		var mm *tensor.Tensor
		func() {
			defer spore.AmpScope(spore.AmpO2)()
			mm = ops.MatMulT(a, b, true, false)
		}()
		return ops.Sum(ops.Mul(ops.Sub(p, ops.Mul(mm, s)), r))
	}
	fused := func(a, b, p, s *tensor.Tensor) *tensor.Tensor {
		return ops.Sum(ops.Mul(core.Apply(compile.Anchor, fixed(t, bf16UpdateSpec, ops.MatMulAttrs{TransA: true}), a, b, p, s), r))
	}
	wantV, wantG := spore.ValueAndGrad(unfused, spore.GradPosition(0, 1, 2, 3))(a, b, p, s)
	gotV, gotG := spore.ValueAndGrad(fused, spore.GradPosition(0, 1, 2, 3))(a, b, p, s)
	sameAmpBits(t, "value", gotV, wantV)
	for i, name := range []string{"da", "db", "dp", "ds"} {
		testkit.AssertClose(t, name, gotG[i], wantG[i], 1e-5)
	}
}

// TestBF16MatMulBadInput checks that malformed applications panic with an
// error naming the primitive and what was wrong.
func TestBF16MatMulBadInput(t *testing.T) {
	a, b := randParam("a", 1, 3, 4), randParam("b", 2, 5, 6)
	for _, tc := range []struct {
		name  string
		attrs any
		in    []*tensor.Tensor
		want  string
	}{
		{"inner dims", compile.BF16MatMulAttrs{}, []*tensor.Tensor{a, b}, "inner dimensions differ"},
		{"attrs", ops.MatMulAttrs{}, []*tensor.Tensor{a, a}, "with attributes ops.MatMulAttrs"},
		{"bias missing", compile.BF16MatMulAttrs{TransB: true, Bias: true}, []*tensor.Tensor{a, a}, "want 3"},
		{"gelu", compile.BF16MatMulAttrs{TransB: true, Act: compile.ActGELU}, []*tensor.Tensor{a, a}, "only none and ReLU"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(fmt.Sprint(r), "BF16MatMul") || !strings.Contains(fmt.Sprint(r), tc.want) {
					t.Fatalf("panic %v, want one naming BF16MatMul and %q", r, tc.want)
				}
			}()
			a, err := compile.FixedAnchor(bf16Spec, tc.attrs)
			if err != nil {
				panic(fmt.Sprintf("BF16MatMul: %v", err))
			}
			core.Apply(compile.Anchor, a, tc.in...)
		})
	}
}

// BenchmarkAmpTrainStep times the seed network's compiled SGD training
// step (784→512→512→10, weights stored as nn.Dense stores them) per batch
// size: in float32, at mixed precision O2 without the training products'
// fusion (the casts and BFloat16 MatMuls run one by one), and at O2 with
// every pass. Run the three side by side in one run and compare:
//
//	go test -run NONE -bench AmpTrainStep ./compile
func BenchmarkAmpTrainStep(b *testing.B) {
	for _, batch := range []int{16, 64, 256} {
		for _, c := range []struct {
			name    string
			amp     bool
			disable []string
		}{{"fp32", false, nil}, {"bf16-unfused", true, []string{"ampmatmul"}}, {"bf16", true, nil}} {
			b.Run(fmt.Sprintf("batch=%d/%s", batch, c.name), func(b *testing.B) {
				m := newAmpMLP(true, c.amp, 784, 512, 512, 10)
				args := ampInputs(batch, 784)
				res, err := compile.Run(traceAmpStep(b, m, args), compile.Options{Level: compile.O1, Disable: c.disable})
				if err != nil {
					b.Fatal(err)
				}
				outs := make([]*tensor.Tensor, len(res.Graph.Outputs))
				for i, o := range res.Graph.Outputs {
					outs[i] = tensor.New(o.Meta.DType, o.Meta.Shape...)
				}
				res.Plan.RunInto(args, outs)
				b.ResetTimer()
				for range b.N {
					res.Plan.RunInto(args, outs)
				}
				b.ReportMetric(float64(batch)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
			})
		}
	}
}

// TestAmpMatMulNoAllocs checks that a compiled O2 training step with fused
// products and updates allocates nothing per call once it has run, on
// either path of the fused update (row blocks over threads, and the
// GEMM's own split).
func TestAmpMatMulNoAllocs(t *testing.T) {
	for _, tc := range []struct {
		widths []int
		batch  int
	}{{[]int{200, 600, 10}, 40}, {[]int{50, 300, 10}, 300}} {
		m := newAmpMLP(true, true, tc.widths...)
		args := ampInputs(tc.batch, tc.widths[0])
		res, err := compile.Run(traceAmpStep(t, m, args), compile.Options{Level: compile.O1})
		if err != nil {
			t.Fatal(err)
		}
		outs := []*tensor.Tensor{tensor.New(res.Graph.Outputs[0].Meta.DType, res.Graph.Outputs[0].Meta.Shape...)}
		res.Plan.RunInto(args, outs)
		if n := testing.AllocsPerRun(10, func() {
			// A collection between steps must not cost the next step an
			// allocation: scratch lives in free lists the collector leaves.
			runtime.GC()
			res.Plan.RunInto(args, outs)
		}); n > 0 {
			t.Errorf("widths %v, batch %d: %v allocations per step", tc.widths, tc.batch, n)
		}
	}
}
