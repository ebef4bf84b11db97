package ops_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// packedCase is one configuration of PackedSelfAttention: n sequences of
// l tokens, h heads of width d.
type packedCase struct {
	n, l, h, d int
	seqFirst   bool
	causal     bool
	p          float64
	mask       string // "", "bool" or "add" of shape maskShape
	maskShape  []int
}

func (c packedCase) String() string {
	return fmt.Sprintf("N%d_L%d_H%d_D%d_seqfirst=%v_causal=%v_p=%v_mask=%s", c.n, c.l, c.h, c.d, c.seqFirst, c.causal, c.p, c.mask)
}

var packedCases = []packedCase{
	{n: 3, l: 17, h: 4, d: 16},
	{n: 2, l: 5, h: 3, d: 4, seqFirst: true, causal: true},
	{n: 2, l: 70, h: 2, d: 3, mask: "add", maskShape: []int{2, 1, 70, 70}},
	{n: 3, l: 6, h: 2, d: 4, seqFirst: true, mask: "bool", maskShape: []int{3, 1, 1, 6}},
	{n: 2, l: 9, h: 2, d: 4, p: 0.4, mask: "add", maskShape: []int{9, 9}},
}

// inputs returns qkv, the mask (or nil) and a weight for the output, in dt.
func (c packedCase) inputs(dt tensor.DType) (qkv, mask, w *tensor.Tensor) {
	a, b := c.n, c.l
	if c.seqFirst {
		a, b = b, a
	}
	qkv = ops.Cast(randT(51, -2, 2, a, b, 3*c.h*c.d), dt)
	w = ops.Cast(randT(52, -1, 1, a, b, c.h*c.d), dt)
	switch c.mask {
	case "bool":
		m := randT(53, -1, 1, c.maskShape...).Float64s()
		bs := make([]bool, len(m))
		for i, x := range m {
			bs[i] = x > -0.6
		}
		mask = tensor.FromSlice(bs, c.maskShape...)
	case "add":
		mask = ops.Cast(randT(54, -1, 1, c.maskShape...), dt)
	}
	return qkv, mask, w
}

// splitAttention is the reference: split qkv into q, k and v
// [N, H, L, D], the unpacked primitive, merge the heads back.
func (c packedCase) splitAttention(qkv, mask *tensor.Tensor) *tensor.Tensor {
	var t *tensor.Tensor
	if c.seqFirst {
		t = ops.Transpose(ops.Reshape(qkv, c.l, c.n, 3, c.h, c.d), 2, 1, 3, 0, 4)
	} else {
		t = ops.Transpose(ops.Reshape(qkv, c.n, c.l, 3, c.h, c.d), 2, 0, 3, 1, 4)
	}
	p := ops.Unstack(t, 0)
	o := ops.ScaledDotProductAttention(p[0], p[1], p[2], ops.AttentionOptions{Mask: mask, Causal: c.causal, DropoutP: c.p})
	if c.seqFirst {
		return ops.Reshape(ops.Transpose(o, 2, 0, 1, 3), c.l, c.n, c.h*c.d)
	}
	return ops.Reshape(ops.Transpose(o, 0, 2, 1, 3), c.n, c.l, c.h*c.d)
}

func (c packedCase) packed(qkv, mask *tensor.Tensor) *tensor.Tensor {
	return ops.PackedSelfAttention(qkv, c.h, c.seqFirst, ops.AttentionOptions{Mask: mask, Causal: c.causal, DropoutP: c.p})
}

// TestPackedSelfAttentionMatchesSplit checks the packed primitives against
// splitting the heads and calling the unpacked one: the output and the
// gradients of qkv and of an additive mask, eagerly and compiled (the
// same bits: the kernels compute the same products), with dropout drawing
// the same mask from the same seed.
func TestPackedSelfAttentionMatchesSplit(t *testing.T) {
	for _, c := range packedCases {
		t.Run(c.String(), func(t *testing.T) {
			qkv, mask, w := c.inputs(tensor.Float32)
			run := func(f func(qkv, mask *tensor.Tensor) *tensor.Tensor) func(...*tensor.Tensor) []*tensor.Tensor {
				return func(xs ...*tensor.Tensor) []*tensor.Tensor {
					var m *tensor.Tensor
					if len(xs) > 1 {
						m = xs[1]
					}
					pos := []int{0}
					if m != nil && m.DType() != tensor.Bool {
						pos = append(pos, 1)
					}
					L := func(ys ...*tensor.Tensor) *tensor.Tensor {
						mm := m
						if len(ys) > 1 {
							mm = ys[1]
						}
						return ops.Sum(ops.Mul(f(ys[0], mm), w))
					}
					v, gs := spore.ValueAndGrad(L, spore.GradPosition(pos...))(xs...)
					return append([]*tensor.Tensor{v}, gs...)
				}
			}
			in := []*tensor.Tensor{qkv}
			if mask != nil {
				in = append(in, mask)
			}
			spore.SetSeed(5)
			ref := run(c.splitAttention)(in...)
			for _, mode := range []string{"PyNative", "Graph"} {
				f := run(c.packed)
				if mode == "Graph" {
					f = spore.Jit(f, spore.JitConfig{Name: "packed." + c.String()})
				}
				spore.SetSeed(5)
				got := f(in...)
				for i := range got {
					if !got[i].Shape().Equal(ref[i].Shape()) {
						t.Fatalf("%s result %d: shape %v, want %v", mode, i, got[i].Shape(), ref[i].Shape())
					}
					if e := relErr(got[i], ref[i]); !(e <= 1e-6) {
						t.Errorf("%s result %d (loss, dqkv, dmask): relative error %.3g against the split heads", mode, i, e)
					}
				}
			}
		})
	}
}

// TestPackedSelfAttentionDerivatives checks, in float64, first and second
// derivatives against finite differences, the forward-mode rule against
// finite differences, and the batching rules against a loop.
func TestPackedSelfAttentionDerivatives(t *testing.T) {
	for _, c := range []packedCase{
		{n: 2, l: 3, h: 2, d: 2, causal: true, mask: "add", maskShape: []int{2, 1, 3, 3}},
		{n: 2, l: 4, h: 1, d: 3, seqFirst: true, mask: "bool", maskShape: []int{4, 4}},
	} {
		t.Run(c.String(), func(t *testing.T) {
			qkv, mask, _ := c.inputs(tensor.Float64)
			f := func(xs ...*tensor.Tensor) *tensor.Tensor {
				m := mask
				if len(xs) > 1 {
					m = xs[1]
				}
				return c.packed(xs[0], m)
			}
			xs := []*tensor.Tensor{qkv}
			if mask.DType() != tensor.Bool {
				xs = append(xs, mask)
			}
			checkGrad(t, c.String(), f, xs...)
			checkGrad2(t, c.String(), f, xs...)
			ts := []*tensor.Tensor{randT(61, -1, 1, qkv.Shape()...)}
			if len(xs) > 1 {
				ts = append(ts, randT(62, -1, 1, mask.Shape()...))
			}
			_, got := spore.JVP(f, xs, ts)
			want := numJVP(f, xs, ts, 1e-6)
			for i, g := range got.Float64s() {
				if math.Abs(g-want[i]) > 1e-5*(1+math.Abs(want[i])) {
					t.Fatalf("JVP element %d = %.9g, finite difference %.9g", i, g, want[i])
				}
			}
			// Vmap over a leading batch of three qkv against a loop.
			bq := randT(63, -2, 2, append([]int{3}, qkv.Shape()...)...)
			vf := func(x *tensor.Tensor) *tensor.Tensor { return c.packed(x, mask) }
			gf := func(x *tensor.Tensor) *tensor.Tensor {
				return spore.Grad(func(y *tensor.Tensor) *tensor.Tensor { return ops.Sum(ops.Mul(vf(y), vf(y))) })(x)[0]
			}
			for _, fn := range []struct {
				name string
				f    func(*tensor.Tensor) *tensor.Tensor
			}{{"forward", vf}, {"gradient", gf}} {
				got := spore.Vmap(fn.f, spore.Axes{0}, spore.Axes{0})(bq)
				for i := range 3 {
					xi := ops.Reshape(ops.Slice(bq, []int{i, 0, 0, 0}, append([]int{1}, qkv.Shape()...)), qkv.Shape()...)
					want := fn.f(xi)
					row := ops.Reshape(ops.Slice(got, append([]int{i}, make([]int, want.Rank())...), append([]int{1}, want.Shape()...)), want.Shape()...)
					if e := relErr(row, want); e > 1e-12 {
						t.Errorf("Vmap %s: example %d differs from the unbatched call by %.3g", fn.name, i, e)
					}
				}
			}
		})
	}
}

func TestPackedSelfAttentionErrors(t *testing.T) {
	f32 := func(shape ...int) *tensor.Tensor { return tensor.Zeros(tensor.Float32, shape...) }
	for _, c := range []struct {
		name  string
		run   func()
		wants []string
	}{
		{"no heads", func() { ops.PackedSelfAttention(f32(2, 3, 12), 0, false, ops.AttentionOptions{}) }, []string{"PackedSelfAttention", "heads must be positive"}},
		{"width", func() { ops.PackedSelfAttention(f32(2, 3, 10), 2, false, ops.AttentionOptions{}) }, []string{"PackedSelfAttention", "[2 3 10]"}},
		{"rank", func() { ops.PackedSelfAttention(f32(3, 12), 2, false, ops.AttentionOptions{}) }, []string{"PackedSelfAttention", "[3 12]"}},
		{"mask", func() {
			ops.PackedSelfAttention(f32(2, 3, 12), 2, false, ops.AttentionOptions{Mask: f32(3, 4)})
		}, []string{"ScaledDotProductAttention", "mask [3 4] does not broadcast", "[2 2 3 3]"}},
		{"dropout", func() { ops.PackedSelfAttention(f32(2, 3, 12), 2, false, ops.AttentionOptions{DropoutP: 1}) }, []string{"dropout probability 1"}},
	} {
		t.Run(c.name, func(t *testing.T) { testkit.MustPanic(t, c.run, c.wants...) })
	}
}
