package ops

import (
	"fmt"
	"math"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/kernels/attention"
	"github.com/sporeml/spore/tensor"
)

// AttentionOptions are ScaledDotProductAttention's optional arguments,
// after torch.nn.functional.scaled_dot_product_attention.
type AttentionOptions struct {
	// Mask, when not nil, is broadcast to [..., L, S]: a Bool mask says
	// which keys each query may attend (true attends, as torch's boolean
	// attn_mask), a float mask of q's dtype is added to the scaled scores
	// (−Inf forbids). A float mask receives a gradient.
	Mask *tensor.Tensor
	// Causal lets query i attend only keys j ≤ i (torch's is_causal, the
	// top-left aligned lower triangle); it may be combined with Mask.
	Causal bool
	// DropoutP is the probability of dropping each attention weight (the
	// rest are scaled by 1/(1−DropoutP)). Callers pass 0 in evaluation, as
	// with torch's dropout_p. The mask is drawn from the framework's random
	// source (spore.SetSeed makes it reproducible).
	DropoutP float64
	// Scale multiplies q·kᵀ; 0 means 1/√E.
	Scale float64
}

// AttentionAttrs are the attributes of the attention primitives: the
// resolved scale, the causal flag, the dropout probability, and which
// optional inputs follow q, k, v (a mask; a seed when P > 0). The
// gradient primitive's flags say which optional inputs and results it has.
type AttentionAttrs struct {
	Scale   float64
	Causal  bool
	P       float64
	HasMask bool
	// MaskGrad (gradient primitive only): also return the gradient of the
	// scaled scores, [..., L, S], for a float mask that needs one.
	MaskGrad bool
	// Packed, when positive, is the number of heads H of self-attention
	// on a packed projection qkv [N, L, 3·H·D] (with SeqFirst,
	// [L, N, 3·H·D]), the primitives' one dense operand in place of q, k
	// and v (see PackedSelfAttention).
	Packed   int
	SeqFirst bool
}

// String prints every attribute, for IR dumps and CSE keys.
func (a AttentionAttrs) String() string {
	s := fmt.Sprintf("scale=%v causal=%v p=%v mask=%v maskgrad=%v", a.Scale, a.Causal, a.P, a.HasMask, a.MaskGrad)
	if a.Packed > 0 {
		s += fmt.Sprintf(" packed=%d seqfirst=%v", a.Packed, a.SeqFirst)
	}
	return s
}

// The attention primitives: the fused forward pass (results: the output
// and the log-sum-exp of each query's scores), its gradient (results: dq,
// dk, dv and, with MaskGrad, the scores' gradient) and the draw of a
// dropout seed.
var ScaledDotProductAttentionPrim, ScaledDotProductAttentionGradPrim, AttentionSeedPrim *core.Prim

// attnInputs splits the forward primitive's inputs: q, k, v, then the
// optional mask and seed.
func attnInputs(a AttentionAttrs, in []*tensor.Tensor) (q, k, v, mask, seed *tensor.Tensor) {
	q, k, v = in[0], in[1], in[2]
	i := 3
	if a.HasMask {
		mask = in[i]
		i++
	}
	if a.P > 0 {
		seed = in[i]
	}
	return
}

// attnCheck validates the forward primitive's operands and returns the
// batch shape and L, S, E, Ev.
func attnCheck(op string, a AttentionAttrs, in []*tensor.Tensor) (batch tensor.Shape, l, s, e, ev int) {
	q, k, v, mask, seed := attnInputs(a, in)
	want := 3
	if a.HasMask {
		want++
	}
	if a.P > 0 {
		want++
	}
	if len(in) != want {
		core.Panicf(op, "got %d operands, want %d (q, k, v%s%s)", len(in), want,
			map[bool]string{true: ", mask"}[a.HasMask], map[bool]string{true: ", seed"}[a.P > 0])
	}
	qs, ks, vs := q.Shape(), k.Shape(), v.Shape()
	if len(qs) < 2 || len(ks) != len(qs) || len(vs) != len(qs) {
		core.Panicf(op, "want q [..., L, E], k [..., S, E] and v [..., S, Ev] of one rank ≥ 2, got q %v, k %v, v %v", qs, ks, vs)
	}
	if !q.DType().IsFloat() || k.DType() != q.DType() || v.DType() != q.DType() {
		core.Panicf(op, "want q, k and v of one float dtype, got %v, %v and %v", q.DType(), k.DType(), v.DType())
	}
	n := len(qs)
	batch = qs[:n-2]
	if !ks[:n-2].Equal(batch) || !vs[:n-2].Equal(batch) {
		core.Panicf(op, "q %v, k %v and v %v differ in their leading (batch, head) axes", qs, ks, vs)
	}
	l, e, s, ev = qs[n-2], qs[n-1], ks[n-2], vs[n-1]
	if ks[n-1] != e || vs[n-2] != s {
		core.Panicf(op, "want k [..., S, E] and v [..., S, Ev] for q %v, got k %v and v %v", qs, ks, vs)
	}
	if !(a.P >= 0 && a.P < 1) {
		core.Panicf(op, "dropout probability %v is not in [0, 1)", a.P)
	}
	if math.IsNaN(a.Scale) || math.IsInf(a.Scale, 0) {
		core.Panicf(op, "scale %v is not finite", a.Scale)
	}
	if mask != nil {
		if mask.DType() != tensor.Bool && mask.DType() != q.DType() {
			core.Panicf(op, "mask must be Bool or %v like q, got %v %v", q.DType(), mask.Shape(), mask.DType())
		}
		if !broadcastsTo(mask.Shape(), batch, l, s) {
			core.Panicf(op, "mask %v does not broadcast to the scores' shape %v (q %v, k %v)", mask.Shape(), append(batch.Clone(), l, s), qs, ks)
		}
	}
	if seed != nil && (seed.DType() != tensor.Int64 || seed.Rank() != 0) {
		core.Panicf(op, "dropout seed must be an Int64 scalar, got %v %v", seed.Shape(), seed.DType())
	}
	return batch, l, s, e, ev
}

// broadcastsTo reports whether shape m broadcasts to [batch..., l, s]
// without changing it (NumPy's rules, aligned on the right).
func broadcastsTo(m, batch tensor.Shape, l, s int) bool {
	n := len(batch) + 2
	if len(m) > n {
		return false
	}
	off := n - len(m)
	for i, d := range m {
		want := s
		switch j := off + i; {
		case j < len(batch):
			want = batch[j]
		case j == len(batch):
			want = l
		}
		if d != 1 && d != want {
			return false
		}
	}
	return true
}

func init() {
	ScaledDotProductAttentionPrim = core.Define(&core.Prim{
		Name:   "ScaledDotProductAttention",
		Traits: core.Traits{Cost: 200},
		InferN: func(attrs any, in []*tensor.Tensor) []tensor.Meta {
			a := attrs.(AttentionAttrs)
			if a.Packed > 0 {
				return packedInfer(a, in)
			}
			batch, l, _, _, ev := attnCheck("ScaledDotProductAttention", a, in)
			dt := in[0].DType()
			return []tensor.Meta{
				{Shape: append(batch.Clone(), l, ev), DType: dt},
				{Shape: append(batch.Clone(), l), DType: dt},
			}
		},
		VJPN:   attentionVJP,
		JVPN:   attentionJVP,
		BatchN: batchAttention(&ScaledDotProductAttentionPrim, 3, 1),
	})
	ScaledDotProductAttentionGradPrim = core.Define(&core.Prim{
		Name:   "ScaledDotProductAttentionGrad",
		Traits: core.Traits{Cost: 400},
		VJPN:   attentionGradVJP,
		JVPN:   attentionGradJVP,
		BatchN: batchAttention(&ScaledDotProductAttentionGradPrim, 7, 5),
		InferN: func(attrs any, in []*tensor.Tensor) []tensor.Meta {
			a := attrs.(AttentionAttrs)
			if a.Packed > 0 {
				return packedGradInfer(a, in)
			}
			const op = "ScaledDotProductAttentionGrad"
			if len(in) < 7 {
				core.Panicf(op, "got %d operands, want q, k, v, out, lse, dout, dlse[, mask][, seed]", len(in))
			}
			fwd := append([]*tensor.Tensor{in[0], in[1], in[2]}, in[7:]...)
			batch, l, s, _, ev := attnCheck(op, a, fwd)
			dt := in[0].DType()
			for i, want := range []tensor.Shape{append(batch.Clone(), l, ev), append(batch.Clone(), l), append(batch.Clone(), l, ev), append(batch.Clone(), l)} {
				if x := in[3+i]; !x.Shape().Equal(want) || x.DType() != dt {
					core.Panicf(op, "operand %d (out, lse, dout, dlse) is %v %v, want %v %v", 3+i, x.Shape(), x.DType(), want, dt)
				}
			}
			ms := []tensor.Meta{in[0].Meta(), in[1].Meta(), in[2].Meta()}
			if a.MaskGrad {
				ms = append(ms, tensor.Meta{Shape: append(batch.Clone(), l, s), DType: dt})
			}
			return ms
		},
	})
	AttentionSeedPrim = core.Define(&core.Prim{
		Name:   "AttentionSeed",
		Traits: core.Traits{Impure: true, Fresh: true, Cost: 1},
		// One seed for the whole batch: the examples are distinct batch
		// slices of one attention call, so their masks differ anyway.
		Batch: func(_ any, in []*tensor.Tensor, dims []int) (*tensor.Tensor, int) {
			seed := core.Apply(AttentionSeedPrim, nil, in[0])
			return BroadcastTo(ExpandDims(seed, 0), in[0].Dim(dims[0])), 0
		},
		Infer: func(_ any, in []*tensor.Tensor) tensor.Meta {
			if len(in) != 1 || !in[0].DType().IsFloat() {
				core.Panicf("AttentionSeed", "want one float operand (the query), got %d", len(in))
			}
			return tensor.Meta{Shape: tensor.Shape{}, DType: tensor.Int64}
		},
	})
	registerFloats(AttentionSeedPrim, seedKernel, seedKernel)
	ScaledDotProductAttentionPrim.RegisterN(core.Float32, core.CPU, attentionKernel(attention.Float32))
	ScaledDotProductAttentionPrim.RegisterN(core.Float64, core.CPU, attentionKernel(attention.Float64))
	ScaledDotProductAttentionGradPrim.RegisterN(core.Float32, core.CPU, attentionGradKernel(attention.Float32))
	ScaledDotProductAttentionGradPrim.RegisterN(core.Float64, core.CPU, attentionGradKernel(attention.Float64))
}

// batchAttention is the batching rule of the attention primitives, whose
// first dense operands (q, k, v, and for the gradient out, lse, dout,
// dlse) share the leading axes: they get the batch axis in front, as one
// more leading axis. A batched mask gets unit axes after its batch axis to
// line up with theirs; a batched seed (every element the same, see
// AttentionSeed) is read from its first element.
func batchAttention(pp **core.Prim, dense, packedDense int) func(any, []*tensor.Tensor, []int) ([]*tensor.Tensor, []int) {
	packed := packedBatch(pp, packedDense)
	return func(attrs any, in []*tensor.Tensor, dims []int) ([]*tensor.Tensor, []int) {
		a := attrs.(AttentionAttrs)
		if a.Packed > 0 {
			return packed(attrs, in, dims)
		}
		n := batchSize(in, dims)
		args := make([]*tensor.Tensor, len(in))
		for i := range dense {
			args[i] = front(in[i], dims[i], n)
		}
		i := dense
		if a.HasMask {
			m := in[i]
			if dims[i] >= 0 {
				m = MoveAxis(m, dims[i], 0)
				rank := args[0].Rank()
				if m.Rank() < rank {
					s := append([]int{n}, make([]int, rank-m.Rank())...)
					for j := 1; j < len(s); j++ {
						s[j] = 1
					}
					m = Reshape(m, append(s, m.Shape()[1:]...)...)
				}
			}
			args[i] = m
			i++
		}
		if a.P > 0 {
			seed := in[i]
			if dims[i] >= 0 {
				seed = Reshape(Slice(MoveAxis(seed, dims[i], 0), []int{0}, []int{1}))
			}
			args[i] = seed
		}
		outs := core.ApplyN(*pp, attrs, args...)
		return outs, make([]int, len(outs))
	}
}

// seedKernel draws a dropout seed from the framework's random source on
// every run, so each eager call and each execution of a compiled plan
// drops a fresh set of weights, and the gradient, reading the same seed
// value, regenerates the forward pass's mask.
func seedKernel(_ any, _ []*tensor.Tensor, out *tensor.Tensor) {
	out.Data().([]int64)[0] = int64(core.RandUint64())
}

// attnParams fills the kernel's parameters p from the forward operands.
// Nothing here allocates: a compiled plan runs it on every call.
func attnParams[T float32 | float64](p *attention.Params[T], a AttentionAttrs, fwd []*tensor.Tensor) {
	batch, l, s, e, ev := attnCheck("ScaledDotProductAttention", a, fwd)
	_, _, _, mask, seed := attnInputs(a, fwd)
	*p = attention.Params[T]{B: batch.Size(), L: l, S: s, E: e, Ev: ev, Scale: T(a.Scale), Causal: a.Causal, P: a.P}
	if seed != nil {
		p.Seed = uint64(seed.Data().([]int64)[0])
	}
	if mask == nil {
		return
	}
	if mask.DType() == tensor.Bool {
		p.BoolMask = mask.Data().([]bool)
	} else {
		p.AddMask = mask.Data().([]T)
	}
	p.Batch = batch
	n := len(batch) + 2
	if n > attention.MaxRank {
		core.Panicf("ScaledDotProductAttention", "scores of rank %d; at most %d supported", n, attention.MaxRank)
	}
	ms := mask.Shape()
	stride := 1
	for i := n - 1; i >= 0; i-- {
		mi := i - (n - len(ms))
		if mi < 0 {
			continue
		}
		if ms[mi] != 1 {
			p.MaskStrides[i] = stride
		}
		stride *= ms[mi]
	}
}

// attentionKernel is the forward primitive's kernel for T.
func attentionKernel[T float32 | float64](im *attention.Impl[T]) core.KernelNFunc {
	return func(attrs any, in []*tensor.Tensor, outs []*tensor.Tensor) {
		if attrs.(AttentionAttrs).Packed > 0 {
			packedKernel(im, attrs, in, outs)
			return
		}
		var p attention.Params[T]
		attnParams(&p, attrs.(AttentionAttrs), in)
		im.Forward(&p, in[0].Data().([]T), in[1].Data().([]T), in[2].Data().([]T), outs[0].Data().([]T), outs[1].Data().([]T))
	}
}

// attentionGradKernel is the gradient primitive's kernel for T.
func attentionGradKernel[T float32 | float64](im *attention.Impl[T]) core.KernelNFunc {
	return func(attrs any, in []*tensor.Tensor, outs []*tensor.Tensor) {
		a := attrs.(AttentionAttrs)
		if a.Packed > 0 {
			packedGradKernel(im, attrs, in, outs)
			return
		}
		var buf [5]*tensor.Tensor
		fwd := append(append(buf[:0], in[:3]...), in[7:]...)
		var p attention.Params[T]
		attnParams(&p, a, fwd)
		d := func(t *tensor.Tensor) []T { return t.Data().([]T) }
		var dmask []T
		if a.MaskGrad {
			dmask = d(outs[3])
		}
		im.Backward(&p, d(in[0]), d(in[1]), d(in[2]), d(in[3]), d(in[4]), d(in[5]), d(in[6]), d(outs[0]), d(outs[1]), d(outs[2]), dmask)
	}
}

// ScaledDotProductAttention returns softmax(scale·q·kᵀ + mask)·v with
// dropout on the weights, after torch.nn.functional's function of the same
// name: q is [..., L, E], k [..., S, E], v [..., S, Ev] (the leading batch
// and head axes equal), and the result is [..., L, Ev].
//
// It is one primitive with a fused CPU kernel that works tile by tile
// (FlashAttention): it never builds the L×S matrix of scores, keeping a
// running maximum and sum per query and the log-sum-exp of each query's
// scores (O(L)) for the gradient, which recomputes the weights tile by
// tile and regenerates the dropout mask from its seed. So its working
// memory is O(L·E) per head in both directions.
//
// A query that may attend no key (its mask row all false or −Inf) gets a
// zero output and zero gradients, as torch's scaled_dot_product_attention
// gives since version 2.5 (its "safe softmax" zeroes rows whose scores are
// all −Inf) and as FlashAttention does, rather than the NaN of a plain
// softmax over nothing.
//
// Gradients of gradients and forward-mode derivatives are computed by
// formulas written with ordinary ops over whole L×S matrices (only the
// first-order gradient is fused), and are not available with dropout.
// With dropout, the gradient reads the seed the forward pass drew, so the
// two agree eagerly and inside one traced function (Jit(Grad(f))); like
// ops.Dropout's, a jitted function differentiated from outside
// (Grad(Jit(f))) recomputes its forward pass in its compiled backward
// function and so draws a second mask.
func ScaledDotProductAttention(q, k, v *tensor.Tensor, opt AttentionOptions) *tensor.Tensor {
	const op = "ScaledDotProductAttention"
	if q.Rank() < 2 {
		core.Panicf(op, "want q [..., L, E], got %v", q.Shape())
	}
	scale := opt.Scale
	if scale == 0 {
		scale = 1 / math.Sqrt(float64(q.Dim(q.Rank()-1)))
		if q.Dim(q.Rank()-1) == 0 {
			scale = 1
		}
	}
	a := AttentionAttrs{Scale: scale, Causal: opt.Causal, P: opt.DropoutP, HasMask: opt.Mask != nil}
	if !(a.P >= 0 && a.P < 1) {
		core.Panicf(op, "dropout probability %v is not in [0, 1)", a.P)
	}
	in := []*tensor.Tensor{q, k, v}
	if opt.Mask != nil {
		in = append(in, opt.Mask)
	}
	if a.P > 0 {
		in = append(in, core.Apply(AttentionSeedPrim, nil, q))
	}
	return core.ApplyN(ScaledDotProductAttentionPrim, a, in...)[0]
}

// attentionVJP is the forward primitive's gradient: the fused gradient
// primitive, which recomputes the weights tile by tile.
func attentionVJP(attrs any, in, outs, gs []*tensor.Tensor) []*tensor.Tensor {
	a := attrs.(AttentionAttrs)
	if a.Packed > 0 {
		return packedVJP(a, in, outs, gs)
	}
	q, k, v, mask, seed := attnInputs(a, in)
	ga := a
	ga.MaskGrad = mask != nil && mask.DType() != tensor.Bool && core.NeedsGrad(mask)
	args := []*tensor.Tensor{q, k, v, outs[0], outs[1], gs[0], gs[1]}
	if mask != nil {
		args = append(args, mask)
	}
	if seed != nil {
		args = append(args, seed)
	}
	r := core.ApplyN(ScaledDotProductAttentionGradPrim, ga, args...)
	res := make([]*tensor.Tensor, len(in))
	copy(res, r[:3])
	if ga.MaskGrad {
		res[3] = sumTo(r[3], mask.Shape())
	}
	return res
}

// gradOperands splits the gradient primitive's operands: q, k, v, out,
// lse, dout, dlse, then the optional mask and seed.
func gradOperands(a AttentionAttrs, in []*tensor.Tensor) (q, k, v, out, lse, g, glse, mask *tensor.Tensor) {
	if a.HasMask {
		mask = in[7]
	}
	return in[0], in[1], in[2], in[3], in[4], in[5], in[6], mask
}

// noDropout rejects differentiating the gradient of attention with
// dropout: the formulas below would need the dropout mask as a tensor.
func noDropout(a AttentionAttrs, what string) {
	if a.P > 0 {
		core.Panicf("ScaledDotProductAttention", "%s with dropout (p=%v) are not supported", what, a.P)
	}
}

// attentionGradVJP differentiates the gradient primitive (gradients of
// gradients), over whole L×S matrices. With P = exp(S − lse) the weights,
// the gradient primitive computes
//
//	dV = Pᵀ·G   dP = G·Vᵀ   D = rowsum(G∘O) − glse   dS = P∘(dP − D)
//	dQ = scale·dS·K   dK = scale·dSᵀ·Q
//
// and this rule carries the cotangents of dQ, dK, dV (and dS) back
// through each line in reverse.
func attentionGradVJP(attrs any, in, outs, cs []*tensor.Tensor) []*tensor.Tensor {
	a := attrs.(AttentionAttrs)
	if a.Packed > 0 {
		return packedGradVJP(a, in, outs, cs)
	}
	noDropout(a, "gradients of gradients")
	q, k, v, out, lse, g, glse, mask := gradOperands(a, in)
	cq, ck, cv := cs[0], cs[1], cs[2]
	sc := ScalarLike(q, a.Scale)
	p := attnWeights(a, q, k, mask, lse)
	dp := MatMulT(g, v, false, true)
	d := Sub(SumKeepDims(Mul(g, out), -1), ExpandDims(glse, -1))
	dS := Mul(p, Sub(dp, d))
	// dQ = scale·dS·K and dK = scale·dSᵀ·Q.
	cdS := Mul(Add(MatMulT(cq, k, false, true), MatMulT(q, ck, false, true)), sc)
	if a.MaskGrad {
		cdS = Add(cdS, cs[3])
	}
	gq := Mul(MatMul(dS, ck), sc)
	gk := Mul(MatMulT(dS, cq, true, false), sc)
	// dS = P∘(dP − D).
	cP := Mul(cdS, Sub(dp, d))
	cdP := Mul(cdS, p)
	cD := Neg(SumKeepDims(cdP, -1))
	// D = rowsum(G∘O) − glse.
	gg := Mul(cD, out)
	gout := Mul(cD, g)
	gglse := Neg(Reshape(cD, glse.Shape()...))
	// dP = G·Vᵀ.
	gg = Add(gg, MatMul(cdP, v))
	gv := MatMulT(cdP, g, true, false)
	// dV = Pᵀ·G.
	cP = Add(cP, MatMulT(g, cv, false, true))
	gg = Add(gg, MatMul(p, cv))
	// P = exp(S − lse), S = scale·Q·Kᵀ + mask.
	cS := Mul(cP, p)
	glse2 := Neg(Sum(cS, -1))
	gq = Add(gq, Mul(MatMul(cS, k), sc))
	gk = Add(gk, Mul(MatMulT(cS, q, true, false), sc))
	res := make([]*tensor.Tensor, len(in))
	res[0], res[1], res[2], res[3], res[4], res[5], res[6] = gq, gk, gv, gout, glse2, gg, gglse
	if mask != nil && mask.DType() != tensor.Bool {
		res[7] = sumTo(cS, mask.Shape())
	}
	return res
}

// attentionGradJVP is the gradient primitive's forward-mode rule: the
// tangent of each line of attentionGradVJP's formulas, in order.
func attentionGradJVP(attrs any, in, t, outs []*tensor.Tensor) []*tensor.Tensor {
	a := attrs.(AttentionAttrs)
	if a.Packed > 0 {
		return packedGradJVP(a, in, t, outs)
	}
	noDropout(a, "forward-mode derivatives of gradients")
	q, k, v, out, lse, g, glse, mask := gradOperands(a, in)
	z := func(i int) *tensor.Tensor { return orZeros(t[i], in[i]) }
	tq, tk, tv, tout, tlse, tg, tglse := z(0), z(1), z(2), z(3), z(4), z(5), z(6)
	sc := ScalarLike(q, a.Scale)
	p := attnWeights(a, q, k, mask, lse)
	dp := MatMulT(g, v, false, true)
	d := Sub(SumKeepDims(Mul(g, out), -1), ExpandDims(glse, -1))
	dS := Mul(p, Sub(dp, d))
	tS := Mul(Add(MatMulT(tq, k, false, true), MatMulT(q, tk, false, true)), sc)
	if mask != nil && mask.DType() != tensor.Bool && t[7] != nil {
		tS = Add(tS, t[7])
	}
	// Where P is 0 (masked) tS may be anything finite: the products are 0.
	tP := Mul(p, Sub(tS, ExpandDims(tlse, -1)))
	tdv := Add(MatMulT(tP, g, true, false), MatMulT(p, tg, true, false))
	tdP := Add(MatMulT(tg, v, false, true), MatMulT(g, tv, false, true))
	tD := Sub(SumKeepDims(Add(Mul(tg, out), Mul(g, tout)), -1), ExpandDims(tglse, -1))
	tdS := Add(Mul(tP, Sub(dp, d)), Mul(p, Sub(tdP, tD)))
	tdq := Mul(Add(MatMul(tdS, k), MatMul(dS, tk)), sc)
	tdk := Mul(Add(MatMulT(tdS, q, true, false), MatMulT(dS, tq, true, false)), sc)
	res := []*tensor.Tensor{tdq, tdk, tdv}
	if a.MaskGrad {
		res = append(res, tdS)
	}
	return res
}

// attnScores returns the scaled, masked scores [..., L, S] with −Inf
// where a mask forbids attending: the unfused composition the fused
// kernel computes tile by tile.
func attnScores(a AttentionAttrs, q, k, mask *tensor.Tensor) *tensor.Tensor {
	s := Mul(MatMulT(q, k, false, true), ScalarLike(q, a.Scale))
	neg := ScalarLike(q, math.Inf(-1))
	if mask != nil {
		if mask.DType() == tensor.Bool {
			s = Where(mask, s, neg)
		} else {
			s = Add(s, mask)
		}
	}
	if a.Causal {
		s = Where(causalMask(s.Dim(s.Rank()-2), s.Dim(s.Rank()-1)), s, neg)
	}
	return s
}

// causalMask returns the Bool [L, S] lower triangle j ≤ i.
func causalMask(l, s int) *tensor.Tensor {
	m := make([]bool, l*s)
	for i := range l {
		for j := 0; j <= i && j < s; j++ {
			m[i*s+j] = true
		}
	}
	return tensor.FromSlice(m, l, s)
}

// attnWeights returns exp(S − lse), the attention weights recomputed from
// the log-sum-exp (0 where masked, and on rows that attend nothing, whose
// lse is +Inf).
func attnWeights(a AttentionAttrs, q, k, mask, lse *tensor.Tensor) *tensor.Tensor {
	s := attnScores(a, q, k, mask)
	return Exp(Sub(s, ExpandDims(lse, -1)))
}

// attentionJVP is the forward-mode rule, written with ordinary ops over
// whole L×S matrices: with P the weights and T the scores' tangent,
// the output's tangent is (P∘(T − rowsum(P∘T)))·v + P·tv and the
// log-sum-exp's is rowsum(P∘T).
func attentionJVP(attrs any, in, t, outs []*tensor.Tensor) []*tensor.Tensor {
	a := attrs.(AttentionAttrs)
	if a.Packed > 0 {
		return packedJVP(a, in, t, outs)
	}
	if a.P > 0 {
		core.Panicf("ScaledDotProductAttention", "forward-mode differentiation with dropout (p=%v) is not supported", a.P)
	}
	q, k, v, mask, _ := attnInputs(a, in)
	p := attnWeights(a, q, k, mask, outs[1])
	var ts *tensor.Tensor
	if t[0] != nil {
		ts = MatMulT(t[0], k, false, true)
	}
	if t[1] != nil {
		ts = tadd(ts, MatMulT(q, t[1], false, true))
	}
	if ts != nil {
		ts = Mul(ts, ScalarLike(q, a.Scale))
	}
	if a.HasMask && t[3] != nil {
		ts = tadd(ts, t[3])
	}
	var tout, tlse *tensor.Tensor
	if ts != nil {
		// Where P is 0 (masked) T may be anything finite; the product
		// is 0 either way.
		pt := Mul(p, ts)
		tlse = Sum(pt, -1)
		tp := Sub(pt, Mul(p, ExpandDims(tlse, -1)))
		tout = MatMul(tp, v)
	}
	if t[2] != nil {
		tout = tadd(tout, MatMul(p, t[2]))
	}
	if tout == nil {
		tout = ZerosLike(outs[0])
	}
	if tlse == nil {
		tlse = ZerosLike(outs[1])
	}
	return []*tensor.Tensor{tout, tlse}
}
