package compile_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/compile"
	"github.com/sporeml/spore/exec"
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// attnGraphCase is one hand-built attention chain: batch axes, sizes, how
// kᵀ is formed and where the scale sits; fuse says whether the pass must
// fire.
type attnGraphCase struct {
	name        string
	batch       []int
	l, s, e, ev int
	// kform: "transb" (MatMul TransB on k [.., S, E]), "swap" (Transpose
	// of k's last two axes), "seqfirst" (k stored [S, B, E], transposed
	// by perm [1 2 0] as multi-head attention exports it), "input" (kᵀ
	// given as an input [.., E, S]).
	kform string
	// scale: "" none, "divq" (Div of q), "mulscores" (Mul of the scores
	// by a constant on the left), "both".
	scale string
	// shareScores gives the scores a second user, which must stop the
	// rewrite; kBatch1 gives k a batch of 1 (broadcast), which the fused
	// kernel does not take.
	shareScores, kBatch1 bool
	dt                   tensor.DType
	fuse                 bool
}

var attnGraphCases = []attnGraphCase{
	{name: "transb-divq", batch: []int{2}, l: 5, s: 7, e: 4, ev: 3, kform: "transb", scale: "divq", fuse: true},
	{name: "swap-mulscores", batch: []int{2, 3}, l: 17, s: 70, e: 8, ev: 5, kform: "swap", scale: "mulscores", fuse: true},
	{name: "seqfirst-both", batch: []int{3}, l: 65, s: 65, e: 7, ev: 7, kform: "seqfirst", scale: "both", fuse: true},
	{name: "input-none-rank2", l: 1, s: 3, e: 1, ev: 2, kform: "input", fuse: true},
	{name: "transb-f64", batch: []int{2}, l: 9, s: 131, e: 16, ev: 4, kform: "transb", scale: "divq", dt: tensor.Float64, fuse: true},
	{name: "shared-scores", batch: []int{2}, l: 5, s: 7, e: 4, ev: 3, kform: "transb", shareScores: true},
	{name: "broadcast-k", batch: []int{2}, l: 5, s: 7, e: 4, ev: 3, kform: "transb", kBatch1: true},
}

// build returns the chain as ops would trace it, over inputs q, k (in
// kform's layout) and v.
func (c attnGraphCase) build() *graph.Graph {
	dt := c.dt
	if dt == 0 {
		dt = tensor.Float32
	}
	sh := func(tail ...int) tensor.Shape { return append(append(tensor.Shape{}, c.batch...), tail...) }
	meta := func(s tensor.Shape) tensor.Meta { return tensor.Meta{Shape: s, DType: dt} }
	g := graph.New("attention")
	q := g.Input(meta(sh(c.l, c.e)))
	r := len(c.batch) + 2
	var kin *graph.Value
	kb := sh(c.s, c.e)
	if c.kBatch1 {
		kb = append(tensor.Shape{1}, c.s, c.e)
	}
	switch c.kform {
	case "transb", "swap":
		kin = g.Input(meta(kb))
	case "seqfirst":
		kin = g.Input(meta(tensor.Shape{c.s, c.batch[0], c.e}))
	case "input":
		kin = g.Input(meta(sh(c.e, c.s)))
	}
	v := g.Input(meta(sh(c.s, c.ev)))
	scalar := func(x float64) *graph.Value {
		t := tensor.Full(dt, x)
		return g.Const(t)
	}
	if c.scale == "divq" || c.scale == "both" {
		q = g.Op(ops.DivPrim, nil, q, scalar(math.Sqrt(float64(c.e))))
	}
	var scores *graph.Value
	switch c.kform {
	case "transb":
		scores = g.Op(ops.MatMulPrim, ops.MatMulAttrs{TransB: true}, q, kin)
	case "swap":
		perm := make([]int, r)
		for i := range perm {
			perm[i] = i
		}
		perm[r-2], perm[r-1] = r-1, r-2
		scores = g.Op(ops.MatMulPrim, ops.MatMulAttrs{}, q, g.Op(ops.TransposePrim, ops.PermAttr{Perm: perm}, kin))
	case "seqfirst":
		scores = g.Op(ops.MatMulPrim, ops.MatMulAttrs{}, q, g.Op(ops.TransposePrim, ops.PermAttr{Perm: []int{1, 2, 0}}, kin))
	case "input":
		scores = g.Op(ops.MatMulPrim, ops.MatMulAttrs{}, q, kin)
	}
	if c.scale == "mulscores" || c.scale == "both" {
		scores = g.Op(ops.MulPrim, nil, scalar(0.3), scores)
	}
	last := ops.ReduceAttrs{Axes: []int{r - 1}, KeepDims: true}
	mx := g.Op(ops.MaxPrim, last, scores)
	e := g.Op(ops.ExpPrim, nil, g.Op(ops.SubPrim, nil, scores, mx))
	p := g.Op(ops.DivPrim, nil, e, g.Op(ops.SumPrim, last, e))
	out := g.Op(ops.MatMulPrim, ops.MatMulAttrs{}, p, v)
	g.Outputs = []*graph.Value{out}
	if c.shareScores {
		g.Outputs = append(g.Outputs, scores)
	}
	return g
}

// The attention pass replaces the traced chain with one fused attention
// op where it applies, and leaves it alone where it does not; the plan
// agrees with the unfused (O0) plan within float rounding: 2e-6 in
// float32, 1e-13 in float64 (the fused kernel sums in another order).
func TestAttentionPass(t *testing.T) {
	for _, c := range attnGraphCases {
		t.Run(c.name, func(t *testing.T) {
			res, err := compile.Run(c.build(), compile.Options{Level: compile.O1, Verify: true})
			if err != nil {
				t.Fatal(err)
			}
			if got := countOps(res.Graph, ops.ScaledDotProductAttentionPrim); got != map[bool]int{true: 1}[c.fuse] {
				t.Fatalf("%d fused attention ops, want fused=%v:\n%s", got, c.fuse, res.Graph)
			}
			if c.fuse && (countOps(res.Graph, ops.MatMulPrim) != 0 || countOps(res.Graph, ops.ExpPrim) != 0) {
				t.Errorf("unfused ops remain:\n%s", res.Graph)
			}
			ref, err := compile.Run(c.build(), compile.Options{Level: compile.O0})
			if err != nil {
				t.Fatal(err)
			}
			tol := 2e-6
			if c.dt == tensor.Float64 {
				tol = 1e-13
			}
			for seed := uint64(1); seed <= 2; seed++ {
				args := randArgs(ref.Graph, seed)
				want := runPlan(t, ref.Graph, args)
				got := runPlan(t, res.Graph, args)
				for i := range want {
					testkit.AssertClose(t, fmt.Sprintf("seed %d output %d", seed, i), got[i], want[i], tol)
				}
			}
		})
	}
}

// runPlan builds g's plan and runs it.
func runPlan(t *testing.T, g *graph.Graph, args []*tensor.Tensor) []*tensor.Tensor {
	t.Helper()
	p, err := exec.Compile(g)
	if err != nil {
		t.Fatalf("exec.Compile: %v\n%s", err, g)
	}
	return p.Run(args)
}

// Attention written with ops, as a model would (q/√E, kᵀ by a swap,
// Softmax over the last axis), gives the same result in PyNative mode,
// which runs it op by op, and in Graph mode, where the pass fuses it,
// within float32 rounding.
func TestAttentionPassBothModes(t *testing.T) {
	attn := func(q, k, v *tensor.Tensor) *tensor.Tensor {
		scores := ops.MatMul(ops.Div(q, ops.ScalarLike(q, math.Sqrt(float64(q.Dim(q.Rank()-1))))), ops.Transpose(k, 0, 1, 3, 2))
		return ops.MatMul(ops.Softmax(scores, -1), v)
	}
	for _, sz := range [][4]int{{1, 1, 1, 1}, {3, 7, 4, 5}, {17, 65, 8, 3}, {70, 131, 16, 16}} {
		l, s, e, ev := sz[0], sz[1], sz[2], sz[3]
		t.Run(fmt.Sprintf("L%d_S%d_E%d_Ev%d", l, s, e, ev), func(t *testing.T) {
			tensor.SetSeed(int64(l + s))
			q := tensor.RandNormal(tensor.Float32, 0, 1, 2, 3, l, e)
			k := tensor.RandNormal(tensor.Float32, 0, 1, 2, 3, s, e)
			v := tensor.RandNormal(tensor.Float32, 0, 1, 2, 3, s, ev)
			want := attn(q, k, v)
			got := spore.Jit(attn, spore.JitConfig{Name: "attention.pass"})(q, k, v)
			testkit.AssertClose(t, "graph vs pynative", got, want, 2e-6)
		})
	}
}

// Stacked attention layers, each one's output the next one's queries (and
// the last's also its values), are all fused, each exactly once, and the
// plan agrees with the unfused one.
func TestAttentionPassStacked(t *testing.T) {
	const layers, l, e = 5, 9, 4
	build := func() *graph.Graph {
		g := graph.New("attention.stacked")
		x := g.Input(tensor.Meta{Shape: tensor.Shape{2, l, e}, DType: tensor.Float32})
		k := g.Input(tensor.Meta{Shape: tensor.Shape{2, l, e}, DType: tensor.Float32})
		last := ops.ReduceAttrs{Axes: []int{2}, KeepDims: true}
		for i := 0; i < layers; i++ {
			v := k
			if i == layers-1 {
				v = x
			}
			s := g.Op(ops.MatMulPrim, ops.MatMulAttrs{TransB: true}, x, k)
			ex := g.Op(ops.ExpPrim, nil, g.Op(ops.SubPrim, nil, s, g.Op(ops.MaxPrim, last, s)))
			x = g.Op(ops.MatMulPrim, ops.MatMulAttrs{}, g.Op(ops.DivPrim, nil, ex, g.Op(ops.SumPrim, last, ex)), v)
		}
		g.Outputs = []*graph.Value{x}
		return g
	}
	res, err := compile.Run(build(), compile.Options{Level: compile.O1, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := countOps(res.Graph, ops.ScaledDotProductAttentionPrim); n != layers {
		t.Fatalf("%d fused attention ops, want %d:\n%s", n, layers, res.Graph)
	}
	ref, err := compile.Run(build(), compile.Options{Level: compile.O0})
	if err != nil {
		t.Fatal(err)
	}
	args := randArgs(ref.Graph, 1)
	testkit.AssertClose(t, "stacked", runPlan(t, res.Graph, args)[0], runPlan(t, ref.Graph, args)[0], 2e-6)
}

// BenchmarkAttentionPass times vit_b_16's attention at batch 1 (12 heads
// of 197 tokens, head size 64, keys stored sequence-first as the export
// has them) in the O1 plan with the attention pass ("fused") and without
// it ("unfused": two batched GEMMs and the fused softmax loops).
func BenchmarkAttentionPass(b *testing.B) {
	c := attnGraphCase{batch: []int{12}, l: 197, s: 197, e: 64, ev: 64, kform: "seqfirst", scale: "divq"}
	for _, v := range []struct {
		name    string
		disable []string
	}{{"fused", nil}, {"unfused", []string{"attention"}}} {
		b.Run(v.name, func(b *testing.B) {
			res, err := compile.Run(c.build(), compile.Options{Level: compile.O1, Disable: v.disable})
			if err != nil {
				b.Fatal(err)
			}
			p, err := exec.Compile(res.Graph)
			if err != nil {
				b.Fatal(err)
			}
			args := randArgs(res.Graph, 1)
			p.Run(args)
			for b.Loop() {
				p.Run(args)
			}
		})
	}
}

// buildSeqFirstMHA is multi-head self-attention as torch exports it
// sequence-first: x [L, N, 3·H·D] sliced into thirds, each reshaped to
// [L, N·H, D] and transposed to heads first (k to [N·H, D, L]), the
// written-out softmax, and the output transposed back to [L, N·H, D] and
// reshaped to [L·N, H·D].
func buildSeqFirstMHA(l, n, h, d int, scaleQ bool) *graph.Graph {
	g := graph.New("attention.mha")
	hd := h * d
	x := g.Input(f32(l, n, 3*hd))
	third := func(i int) *graph.Value {
		s := g.Op(ops.StridedSlicePrim, ops.SliceAttrs{Begin: []int{0, 0, i * hd}, Strides: []int{1, 1, 1}, Size: []int{l, n, hd}, Shape: tensor.Shape{l, n, 3 * hd}}, x)
		return g.Op(ops.ReshapePrim, ops.ShapeAttr{Shape: tensor.Shape{l, n * h, d}}, s)
	}
	q := g.Op(ops.TransposePrim, ops.PermAttr{Perm: []int{1, 0, 2}}, third(0))
	kt := g.Op(ops.TransposePrim, ops.PermAttr{Perm: []int{1, 2, 0}}, third(1))
	v := g.Op(ops.TransposePrim, ops.PermAttr{Perm: []int{1, 0, 2}}, third(2))
	if scaleQ {
		q = g.Op(ops.DivPrim, nil, q, g.Const(tensor.Full(tensor.Float32, math.Sqrt(float64(d)))))
	}
	s := g.Op(ops.MatMulPrim, ops.MatMulAttrs{}, q, kt)
	last := ops.ReduceAttrs{Axes: []int{2}, KeepDims: true}
	e := g.Op(ops.ExpPrim, nil, g.Op(ops.SubPrim, nil, s, g.Op(ops.MaxPrim, last, s)))
	o := g.Op(ops.MatMulPrim, ops.MatMulAttrs{}, g.Op(ops.DivPrim, nil, e, g.Op(ops.SumPrim, last, e)), v)
	o = g.Op(ops.TransposePrim, ops.PermAttr{Perm: []int{1, 0, 2}}, o)
	g.Outputs = []*graph.Value{g.Op(ops.ReshapePrim, ops.ShapeAttr{Shape: tensor.Shape{l * n, hd}}, o)}
	return g
}

// Sequence-first multi-head attention on one projection runs as the packed
// fused kernel, reading the heads from the projection in place: no slice
// and no transpose is left, and the plan agrees with the unfused one.
func TestAttentionPassPacked(t *testing.T) {
	for _, c := range []struct{ l, n, h, d int }{{1, 2, 2, 3}, {5, 1, 3, 4}, {7, 2, 3, 4}, {17, 1, 12, 8}, {70, 3, 2, 5}} {
		t.Run(fmt.Sprintf("L%d_N%d_H%d_D%d", c.l, c.n, c.h, c.d), func(t *testing.T) {
			res, err := compile.Run(buildSeqFirstMHA(c.l, c.n, c.h, c.d, true), compile.Options{Level: compile.O1, Verify: true})
			if err != nil {
				t.Fatal(err)
			}
			if countOps(res.Graph, ops.ScaledDotProductAttentionPrim) != 1 || countOps(res.Graph, ops.TransposePrim) != 0 || countOps(res.Graph, ops.StridedSlicePrim) != 0 {
				t.Fatalf("want one packed attention and no slices or transposes:\n%s", res.Graph)
			}
			ref, err := compile.Run(buildSeqFirstMHA(c.l, c.n, c.h, c.d, true), compile.Options{Level: compile.O0})
			if err != nil {
				t.Fatal(err)
			}
			args := randArgs(ref.Graph, 1)
			testkit.AssertClose(t, "packed", runPlan(t, res.Graph, args)[0], runPlan(t, ref.Graph, args)[0], 2e-6)
		})
	}
}
