package ops_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/compile"
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/kernels/attention"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// attnCase is one configuration of ScaledDotProductAttention.
type attnCase struct {
	name        string
	batch       []int
	l, s, e, ev int
	// mask: "" none, "bool" or "add" of maskShape; rows lists query rows
	// masked entirely (in every batch slice).
	mask      string
	maskShape []int
	rows      []int
	causal    bool
	p         float64
	scale     float64
}

var attnCases = []attnCase{
	{name: "plain", batch: []int{2}, l: 5, s: 7, e: 4, ev: 3},
	{name: "heads-odd-tiles", batch: []int{2, 3}, l: 70, s: 131, e: 8, ev: 5},
	{name: "one-block-rank2", l: 3, s: 2, e: 6, ev: 6, scale: 0.7},
	{name: "causal-L>S", batch: []int{2}, l: 77, s: 65, e: 4, ev: 4, causal: true},
	{name: "causal-L<S", batch: []int{1}, l: 9, s: 140, e: 4, ev: 2, causal: true},
	{name: "bool-full", batch: []int{2, 2}, l: 66, s: 67, e: 3, ev: 4, mask: "bool", maskShape: []int{2, 2, 66, 67}},
	{name: "bool-keypadding", batch: []int{3, 2}, l: 5, s: 70, e: 4, ev: 4, mask: "bool", maskShape: []int{3, 1, 1, 70}},
	{name: "bool-rows-masked", batch: []int{2}, l: 6, s: 5, e: 4, ev: 3, mask: "bool", maskShape: []int{6, 5}, rows: []int{1, 4}},
	{name: "add-broadcast", batch: []int{2, 3}, l: 65, s: 9, e: 5, ev: 2, mask: "add", maskShape: []int{3, 65, 9}},
	{name: "add-neginf-rows-causal", batch: []int{2}, l: 8, s: 8, e: 4, ev: 4, mask: "add", maskShape: []int{2, 8, 8}, rows: []int{0, 5}, causal: true},
	{name: "dropout", batch: []int{2, 2}, l: 70, s: 66, e: 4, ev: 3, p: 0.3},
	{name: "dropout-bool-causal", batch: []int{3}, l: 9, s: 11, e: 4, ev: 5, p: 0.5, mask: "bool", maskShape: []int{9, 11}, causal: true},
}

// inputs returns q, k, v and the mask (or nil) of c in dtype dt.
func (c attnCase) inputs(dt tensor.DType) (q, k, v, mask *tensor.Tensor) {
	sh := func(a, b int) []int { return append(append([]int{}, c.batch...), a, b) }
	cast := func(x *tensor.Tensor) *tensor.Tensor { return ops.Cast(x, dt) }
	q = cast(randT(1, -2, 2, sh(c.l, c.e)...))
	k = cast(randT(2, -2, 2, sh(c.s, c.e)...))
	v = cast(randT(3, -1, 1, sh(c.s, c.ev)...))
	if c.mask == "" {
		return q, k, v, nil
	}
	m := randT(4, -1, 1, c.maskShape...).Float64s()
	// Whole query rows masked: the mask's row axis is its second last.
	rows := c.maskShape[len(c.maskShape)-2]
	cols := c.maskShape[len(c.maskShape)-1]
	for _, r := range c.rows {
		for b := 0; b < len(m)/(rows*cols); b++ {
			for j := range cols {
				m[(b*rows+r)*cols+j] = math.Inf(-1)
			}
		}
	}
	if c.mask == "bool" {
		bs := make([]bool, len(m))
		for i, x := range m {
			bs[i] = x > -0.6 // most keys attend
		}
		return q, k, v, tensor.FromSlice(bs, c.maskShape...)
	}
	return q, k, v, cast(tensor.FromSlice(m, c.maskShape...))
}

func (c attnCase) opts(mask *tensor.Tensor) ops.AttentionOptions {
	return ops.AttentionOptions{Mask: mask, Causal: c.causal, DropoutP: c.p, Scale: c.scale}
}

// keepMask is the dropout mask the fused kernel draws with seed, as a
// tensor of 0 and 1/(1−p): the same positions, hashed by the kernel's own
// Keep.
func (c attnCase) keepMask(dt tensor.DType, seed uint64) *tensor.Tensor {
	nb := tensor.Shape(c.batch).Size()
	z := make([]float64, nb*c.l*c.s)
	for b := range nb {
		for i := range c.l {
			for j := range c.s {
				if attention.Keep(seed, b, i, j, c.l, c.s, c.p) {
					z[(b*c.l+i)*c.s+j] = 1 / (1 - c.p)
				}
			}
		}
	}
	return ops.Cast(tensor.FromSlice(z, append(append([]int{}, c.batch...), c.l, c.s)...), dt)
}

// unfusedAttention is the reference: the composition of ops the fused
// primitive replaces — MatMul, scale, mask, Softmax, dropout by the given
// keep mask (nil for none), MatMul. Rows that attend nothing give 0, as the
// fused kernel documents (a plain Softmax gives NaN there).
func unfusedAttention(c attnCase, q, k, v, mask, keep *tensor.Tensor) *tensor.Tensor {
	scale := c.scale
	if scale == 0 {
		scale = 1 / math.Sqrt(float64(c.e))
	}
	s := ops.Mul(ops.MatMulT(q, k, false, true), ops.ScalarLike(q, scale))
	neg := ops.ScalarLike(q, math.Inf(-1))
	if mask != nil && mask.DType() == tensor.Bool {
		s = ops.Where(mask, s, neg)
	} else if mask != nil {
		s = ops.Add(s, mask)
	}
	if c.causal {
		tri := make([]bool, c.l*c.s)
		for i := range c.l {
			for j := range c.s {
				tri[i*c.s+j] = j <= i
			}
		}
		s = ops.Where(tensor.FromSlice(tri, c.l, c.s), s, neg)
	}
	// Rows with no finite score: softmax over zeros, then zeroed.
	dead := ops.Equal(ops.MaxKeepDims(s, -1), neg)
	p := ops.Softmax(ops.Where(dead, ops.ScalarLike(q, 0), s), -1)
	p = ops.Where(dead, ops.ScalarLike(q, 0), p)
	if keep != nil {
		p = ops.Mul(p, keep)
	}
	return ops.MatMul(p, v)
}

// relErr is max|a − b| / max|b|, NaN-aware.
func relErr(a, b *tensor.Tensor) float64 {
	x, y := a.Float64s(), b.Float64s()
	num, den := 0.0, 0.0
	for i := range x {
		if math.IsNaN(x[i]) != math.IsNaN(y[i]) {
			return math.Inf(1)
		}
		num = math.Max(num, math.Abs(x[i]-y[i]))
		den = math.Max(den, math.Abs(y[i]))
	}
	if den == 0 {
		return num
	}
	return num / den
}

// attnRun computes, for the fused or the unfused attention, the output and
// the gradients of Σ out·w with respect to q, k, v and a float mask.
// The operands are q, k, v and the mask if any.
func attnRun(c attnCase, fused bool, seed uint64, w *tensor.Tensor) func(...*tensor.Tensor) []*tensor.Tensor {
	return func(in ...*tensor.Tensor) []*tensor.Tensor {
		q, k, v := in[0], in[1], in[2]
		var mask *tensor.Tensor
		if len(in) > 3 {
			mask = in[3]
		}
		f := func(xs ...*tensor.Tensor) *tensor.Tensor {
			var m *tensor.Tensor
			if len(xs) > 3 {
				m = xs[3]
			} else {
				m = mask
			}
			if fused {
				return ops.ScaledDotProductAttention(xs[0], xs[1], xs[2], c.opts(m))
			}
			var keep *tensor.Tensor
			if c.p > 0 {
				keep = c.keepMask(q.DType(), seed)
			}
			return unfusedAttention(c, xs[0], xs[1], xs[2], m, keep)
		}
		args := []*tensor.Tensor{q, k, v}
		pos := []int{0, 1, 2}
		if mask != nil && mask.DType() != tensor.Bool {
			args = append(args, mask)
			pos = append(pos, 3)
		}
		// One application, whose output is returned as an auxiliary
		// result: a second would draw another dropout seed.
		loss := func(xs ...*tensor.Tensor) (*tensor.Tensor, []*tensor.Tensor) {
			y := f(xs...)
			return ops.Sum(ops.Mul(y, w)), []*tensor.Tensor{y}
		}
		_, aux, gs := spore.ValueAndGradAux(loss, spore.GradPosition(pos...))(args...)
		return append(aux, gs...)
	}
}

// TestAttentionMatchesUnfused checks the fused primitive's output and
// gradients against the unfused composition of ops in float32, in PyNative
// and Graph mode, and that the two modes agree.
func TestAttentionMatchesUnfused(t *testing.T) {
	const tol = 1e-5
	names := []string{"out", "dq", "dk", "dv", "dmask"}
	for _, c := range attnCases {
		t.Run(c.name, func(t *testing.T) {
			q, k, v, mask := c.inputs(tensor.Float32)
			w := ops.Cast(randT(5, 0.5, 1.5, append(append([]int{}, c.batch...), c.l, c.ev)...), tensor.Float32)
			// The fused kernel draws its dropout seed from the framework's
			// source: reseeding replays the draw, so the reference can
			// regenerate the same mask.
			spore.SetSeed(11)
			seed := core.RandUint64()
			in := []*tensor.Tensor{q, k, v}
			if mask != nil {
				in = append(in, mask)
			}
			ref := attnRun(c, false, seed, w)(in...)
			var modes [2][]*tensor.Tensor
			worst := 0.0
			defer func() { t.Logf("largest relative error against the unfused composition: %.2g", worst) }()
			for mi, mode := range []string{"PyNative", "Graph"} {
				run := attnRun(c, true, seed, w)
				if mode == "Graph" {
					run = spore.Jit(run, spore.JitConfig{Name: "attention." + c.name})
				}
				spore.SetSeed(11)
				got := run(in...)
				if len(got) != len(ref) {
					t.Fatalf("%s: %d results, want %d", mode, len(got), len(ref))
				}
				for i := range got {
					if !got[i].Shape().Equal(ref[i].Shape()) {
						t.Fatalf("%s %s: shape %v, want %v", mode, names[i], got[i].Shape(), ref[i].Shape())
					}
					e := relErr(got[i], ref[i])
					if !(e <= tol) {
						t.Errorf("%s %s: relative error %.3g against the unfused composition", mode, names[i], e)
					}
					worst = math.Max(worst, e)
				}
				for _, r := range c.rows {
					// Rows that attend nothing are zero.
					o := got[0].Float64s()
					for b := 0; b < len(o)/(c.l*c.ev); b++ {
						for e := range c.ev {
							if x := o[(b*c.l+r)*c.ev+e]; x != 0 {
								t.Fatalf("%s: fully masked row %d gives %v, want 0", mode, r, x)
							}
						}
					}
				}
				modes[mi] = got
			}
			for i := range modes[0] {
				if e := relErr(modes[1][i], modes[0][i]); e != 0 {
					t.Errorf("%s: Graph mode differs from PyNative by %.3g", names[i], e)
				}
			}
		})
	}
}

// TestAttentionDropoutDeterministic checks that dropout follows the
// framework seed: the same seed gives the same result, another seed a
// different one, and p = 0 drops nothing.
func TestAttentionDropoutDeterministic(t *testing.T) {
	c := attnCases[0]
	q, k, v, _ := c.inputs(tensor.Float32)
	run := func(seed int64, p float64) *tensor.Tensor {
		spore.SetSeed(seed)
		return ops.ScaledDotProductAttention(q, k, v, ops.AttentionOptions{DropoutP: p})
	}
	if e := relErr(run(3, 0.4), run(3, 0.4)); e != 0 {
		t.Errorf("same seed, results differ by %.3g", e)
	}
	if e := relErr(run(3, 0.4), run(4, 0.4)); e == 0 {
		t.Errorf("different seeds give the same dropout")
	}
	if e := relErr(run(3, 0), run(4, 0)); e != 0 {
		t.Errorf("p = 0 depends on the seed")
	}
}

// TestAttentionGradFiniteDifferences checks the float64 gradients (q, k,
// v and an additive mask) against central finite differences, and the
// second derivatives (computed by the unfused formulas) likewise.
func TestAttentionGradFiniteDifferences(t *testing.T) {
	for _, c := range []attnCase{
		{name: "add-causal", batch: []int{2}, l: 4, s: 5, e: 3, ev: 2, mask: "add", maskShape: []int{4, 5}, causal: true},
		{name: "bool-rows", batch: []int{1, 2}, l: 3, s: 4, e: 2, ev: 3, mask: "bool", maskShape: []int{3, 4}, rows: []int{1}},
	} {
		q, k, v, mask := c.inputs(tensor.Float64)
		f := func(xs ...*tensor.Tensor) *tensor.Tensor {
			m := mask
			if len(xs) > 3 {
				m = xs[3]
			}
			return ops.ScaledDotProductAttention(xs[0], xs[1], xs[2], c.opts(m))
		}
		xs := []*tensor.Tensor{q, k, v}
		if mask.DType() != tensor.Bool {
			xs = append(xs, mask)
		}
		checkGrad(t, c.name, f, xs...)
		checkGrad2(t, c.name, f, xs...)
	}
}

// TestAttentionErrors checks that bad operands panic with errors naming
// the op and what is wrong.
func TestAttentionErrors(t *testing.T) {
	f32s := func(shape ...int) *tensor.Tensor { return tensor.Zeros(tensor.Float32, shape...) }
	for _, c := range []struct {
		name    string
		q, k, v *tensor.Tensor
		opt     ops.AttentionOptions
		wants   []string
	}{
		{"rank", f32s(3), f32s(3), f32s(3), ops.AttentionOptions{}, []string{"ScaledDotProductAttention", "[3]"}},
		{"E", f32s(2, 3, 4), f32s(2, 5, 3), f32s(2, 5, 3), ops.AttentionOptions{}, []string{"k [..., S, E]", "[2 5 3]"}},
		{"batch", f32s(2, 3, 4), f32s(1, 5, 4), f32s(1, 5, 4), ops.AttentionOptions{}, []string{"leading"}},
		{"dtype", f32s(3, 4), tensor.Zeros(tensor.Float64, 5, 4), f32s(5, 4), ops.AttentionOptions{}, []string{"Float64"}},
		{"mask shape", f32s(3, 4), f32s(5, 4), f32s(5, 4), ops.AttentionOptions{Mask: tensor.Zeros(tensor.Bool, 3, 4)}, []string{"mask [3 4]", "[3 5]"}},
		{"mask dtype", f32s(3, 4), f32s(5, 4), f32s(5, 4), ops.AttentionOptions{Mask: tensor.Zeros(tensor.Int32, 3, 5)}, []string{"mask", "Int32"}},
		{"p", f32s(3, 4), f32s(5, 4), f32s(5, 4), ops.AttentionOptions{DropoutP: 1}, []string{"dropout", "[0, 1)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			testkit.MustPanic(t, func() { ops.ScaledDotProductAttention(c.q, c.k, c.v, c.opt) }, c.wants...)
			jf := spore.Jit(func(q, k, v *tensor.Tensor) *tensor.Tensor { return ops.ScaledDotProductAttention(q, k, v, c.opt) },
				spore.JitConfig{Name: "attention.err." + c.name})
			testkit.MustPanic(t, func() { jf(c.q, c.k, c.v) }, c.wants...)
		})
	}
}

// attnArena compiles the training step of one attention head — the
// output and the gradients of Σ out with respect to q, k and v — at
// sequence length l and head size e, and returns its arena's size.
func attnArena(t *testing.T, l, e int, fused bool) int {
	t.Helper()
	m := tensor.Meta{Shape: tensor.Shape{1, l, e}, DType: tensor.Float32}
	c := attnCase{l: l, s: l, e: e, ev: e}
	g, err := graph.Trace(fmt.Sprintf("attention%d", l), []tensor.Meta{m, m, m}, func(a []*tensor.Tensor) []*tensor.Tensor {
		f := func(xs ...*tensor.Tensor) *tensor.Tensor {
			if fused {
				return ops.ScaledDotProductAttention(xs[0], xs[1], xs[2], ops.AttentionOptions{})
			}
			return unfusedAttention(c, xs[0], xs[1], xs[2], nil, nil)
		}
		loss := func(xs ...*tensor.Tensor) *tensor.Tensor { return ops.Sum(f(xs...)) }
		gs := spore.Grad(loss, spore.GradPosition(0, 1, 2))(a...)
		return append([]*tensor.Tensor{f(a...)}, gs...)
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := compile.Run(g, compile.Options{Level: compile.O1, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	return r.Plan.ArenaBytes
}

// TestAttentionArenaLinear checks the working memory of a compiled
// attention training step at sequence length 2048 (one head, E = 64): the
// fused primitive's arena stays within a few times the bytes of q, k, v
// and the output — O(L·E) — far below one L×L float32 matrix, which the
// unfused composition's arena exceeds.
func TestAttentionArenaLinear(t *testing.T) {
	const l, e = 2048, 64
	qkvo := 4 * l * e * 4
	square := l * l * 4
	fused := attnArena(t, l, e, true)
	t.Logf("arena at L=%d, E=%d: fused %d KiB, q/k/v/out %d KiB, one L×L matrix %d KiB", l, e, fused>>10, qkvo>>10, square>>10)
	if fused > 2*qkvo {
		t.Errorf("fused arena %d bytes, want at most %d (twice q, k, v and out)", fused, 2*qkvo)
	}
	if fused > square/4 {
		t.Errorf("fused arena %d bytes is not far below an L×L matrix (%d bytes)", fused, square)
	}
	if testing.Short() {
		return
	}
	// The control: the same step unfused holds L×L matrices.
	unfused := attnArena(t, l, e, false)
	t.Logf("unfused arena %d KiB", unfused>>10)
	if unfused < square {
		t.Errorf("unfused arena %d bytes is below one L×L matrix (%d bytes): the check above would not see one", unfused, square)
	}
}

// BenchmarkAttention compares the fused primitive with the unfused
// composition, forward and forward+backward, in Graph mode, for one
// batch of heads at a few sequence lengths:
//
//	go test ./ops -run '^$' -bench BenchmarkAttention -count 5
func BenchmarkAttention(b *testing.B) {
	for _, c := range []attnCase{
		// A vision transformer's on MNIST: 64 images, 4 heads, 7×7
		// patches and a class token, head size 16.
		{name: "vit", batch: []int{64, 4}, l: 50, s: 50, e: 16, ev: 16},
		{name: "L128", batch: []int{4, 4}, l: 128, s: 128, e: 32, ev: 32},
		{name: "L512", batch: []int{4, 4}, l: 512, s: 512, e: 32, ev: 32},
	} {
		q, k, v, _ := c.inputs(tensor.Float32)
		for _, train := range []bool{false, true} {
			for _, fused := range []bool{true, false} {
				name := fmt.Sprintf("%s/%s/%s", c.name, map[bool]string{false: "forward", true: "train"}[train], map[bool]string{false: "unfused", true: "fused"}[fused])
				f := func(xs ...*tensor.Tensor) *tensor.Tensor {
					if fused {
						return ops.ScaledDotProductAttention(xs[0], xs[1], xs[2], ops.AttentionOptions{})
					}
					return unfusedAttention(c, xs[0], xs[1], xs[2], nil, nil)
				}
				run := func(q, k, v *tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{f(q, k, v)} }
				if train {
					loss := func(xs ...*tensor.Tensor) *tensor.Tensor { return ops.Sum(f(xs...)) }
					g := spore.Grad(loss, spore.GradPosition(0, 1, 2))
					run = func(q, k, v *tensor.Tensor) []*tensor.Tensor { return g(q, k, v) }
				}
				jf := spore.Jit(run, spore.JitConfig{Name: "bench.attention." + name})
				b.Run(name, func(b *testing.B) {
					jf(q, k, v)
					for b.Loop() {
						jf(q, k, v)
					}
				})
			}
		}
	}
}

// TestAttentionCompiledCallsDoNotAllocate checks that a compiled call
// of the fused primitive, forward and training step, with a mask and
// dropout, allocates nothing once compiled: the kernels' jobs and tiles
// are pooled. Counts are averaged over 50 calls, as in the root package's
// allocation test (a pool emptied by a collection refills once).
func TestAttentionCompiledCallsDoNotAllocate(t *testing.T) {
	c := attnCases[len(attnCases)-1]
	q, k, v, mask := c.inputs(tensor.Float32)
	f := func(xs ...*tensor.Tensor) *tensor.Tensor {
		return ops.ScaledDotProductAttention(xs[0], xs[1], xs[2], c.opts(xs[3]))
	}
	loss := func(xs ...*tensor.Tensor) *tensor.Tensor { return ops.Sum(f(xs...)) }
	grad := spore.Grad(loss, spore.GradPosition(0, 1, 2))
	for _, fn := range []struct {
		name string
		f    func(...*tensor.Tensor) []*tensor.Tensor
	}{
		{"forward", func(xs ...*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{f(xs...)} }},
		{"train", func(xs ...*tensor.Tensor) []*tensor.Tensor { return grad(xs...) }},
	} {
		j := spore.NewJit(fn.f, spore.JitConfig{Name: "attention.alloc." + fn.name})
		args := []*tensor.Tensor{q, k, v, mask}
		res := j.Fn(args...)
		outs := make([]*tensor.Tensor, len(res))
		for i, r := range res {
			outs[i] = tensor.Zeros(r.DType(), r.Shape()...)
		}
		j.RunInto(args, outs)
		if n := testing.AllocsPerRun(50, func() { j.RunInto(args, outs) }); n != 0 {
			t.Errorf("%s: a compiled call allocates %v times", fn.name, n)
		}
	}
}

// Causal attention over keys that all score the same: each query averages
// the values of the keys up to its own position.
func ExampleScaledDotProductAttention() {
	q := tensor.FromSlice([]float32{1, 0, 0, 1, 1, 1}, 3, 2)
	k := tensor.Zeros(tensor.Float32, 3, 2)
	v := tensor.FromSlice([]float32{3, 0, 6, 3, 9, 6}, 3, 2)
	out := ops.ScaledDotProductAttention(q, k, v, ops.AttentionOptions{Causal: true})
	fmt.Println(out.Float32s())
	// Output: [3 0 4.5 1.5 6 3]
}

// TestAttentionVmapDropout vectorises attention with dropout over a batch
// of queries: the seed is drawn once for the batch (the examples are
// distinct batch slices of one call, so their masks differ), Graph mode
// gives what PyNative gives, and examples with equal queries are
// dropped differently; and that the batching rules ran (the compiled
// graph holds one attention and one seed draw, not one per example).
func TestAttentionVmapDropout(t *testing.T) {
	k := ops.Cast(randT(2, -1, 1, 6, 4), tensor.Float32)
	v := ops.Cast(randT(3, -1, 1, 6, 3), tensor.Float32)
	q1 := ops.Cast(randT(1, -1, 1, 5, 4), tensor.Float32)
	qs := ops.Stack(0, q1, q1, q1)
	f := func(q *tensor.Tensor) *tensor.Tensor {
		return ops.ScaledDotProductAttention(q, k, v, ops.AttentionOptions{DropoutP: 0.5})
	}
	vf := spore.Vmap(f, nil, nil)
	var res [2]*tensor.Tensor
	for i, g := range []func(*tensor.Tensor) *tensor.Tensor{vf, spore.Jit(vf, spore.JitConfig{Name: "attention.vmap"})} {
		spore.SetSeed(21)
		res[i] = g(qs)
		if !res[i].Shape().Equal(tensor.Shape{3, 5, 3}) {
			t.Fatalf("shape %v, want [3 5 3]", res[i].Shape())
		}
	}
	if e := relErr(res[1], res[0]); e != 0 {
		t.Errorf("Graph mode differs from PyNative by %.3g", e)
	}
	ir, err := spore.IR(vf, []any{qs})
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"= ScaledDotProductAttention(", "= AttentionSeed("} {
		if n := strings.Count(ir, op); n != 1 {
			t.Errorf("%d of %q in the vectorised graph, want 1:\n%s", n, op, ir)
		}
	}
	ex := ops.Unstack(res[0], 0)
	if e := relErr(ex[0], ex[1]); e == 0 {
		t.Errorf("two examples with the same queries got the same dropout mask")
	}
}
