package ops

import (
	"math"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/kernels/attention"
	"github.com/sporeml/spore/tensor"
)

// Self-attention on a packed projection. Multi-head self-attention
// projects its input with one GEMM by the packed weight [3·H·D, E] into
// qkv [N, L, 3·H·D] (q, k and v of every head side by side per token),
// and its output projection reads [N, L, H·D]. Splitting the heads takes a
// transpose to [3, N, H, L, D] and a split forward, and in the gradient a
// concatenation and a transpose back; merging them takes another
// transpose each way. With AttentionAttrs.Packed the attention primitives
// read q, k and v straight from qkv and write their output as [N, L, H·D]
// (the kernels' layouts), so none of these copies is made. The gradient
// primitive writes the three gradients into one [N, L, 3·H·D] tensor:
// the gradient of the projection's output, ready for its GEMMs.
//
// The packed forward primitive's operands are qkv, then the optional mask
// and seed; its gradient's are qkv, out, lse, dout, dlse, then the
// optional mask and seed, and its results are dqkv and, with MaskGrad,
// the scores' gradient. Higher-order rules and batching rules split the
// operands with ordinary ops and reuse the unpacked formulas.

// PackedSelfAttention returns multi-head scaled dot-product
// self-attention of the packed projection qkv, [N, L, 3·heads·D] (or
// [L, N, 3·heads·D] with seqFirst): head h of token i has its query at
// qkv[n, i, h·D : (h+1)·D], its key heads·D further and its value 2·heads·D
// further. The result is [N, L, heads·D] (or [L, N, heads·D]), each
// token's heads side by side: the same as splitting q, k and v into
// [N, heads, L, D], calling ScaledDotProductAttention and merging the
// heads back, without the copies. A mask broadcasts to [N, heads, L, L];
// opt.Scale 0 means 1/√D.
func PackedSelfAttention(qkv *tensor.Tensor, heads int, seqFirst bool, opt AttentionOptions) *tensor.Tensor {
	const op = "PackedSelfAttention"
	if heads < 1 {
		core.Panicf(op, "heads must be positive, got %d", heads)
	}
	if qkv.Rank() != 3 || qkv.Dim(2)%(3*heads) != 0 {
		core.Panicf(op, "want qkv [N, L, 3·heads·D] (or [L, N, 3·heads·D]) with %d heads, got %v", heads, qkv.Shape())
	}
	d := qkv.Dim(2) / (3 * heads)
	scale := opt.Scale
	if scale == 0 {
		scale = 1 / math.Sqrt(float64(max(d, 1)))
	}
	a := AttentionAttrs{Scale: scale, Causal: opt.Causal, P: opt.DropoutP, HasMask: opt.Mask != nil, Packed: heads, SeqFirst: seqFirst}
	if !(a.P >= 0 && a.P < 1) {
		core.Panicf(op, "dropout probability %v is not in [0, 1)", a.P)
	}
	in := []*tensor.Tensor{qkv}
	if opt.Mask != nil {
		in = append(in, opt.Mask)
	}
	if a.P > 0 {
		in = append(in, core.Apply(AttentionSeedPrim, nil, qkv))
	}
	return core.ApplyN(ScaledDotProductAttentionPrim, a, in...)[0]
}

// packedDims returns N, L, H and D of a packed projection x [N, L, 3·H·D]
// (or [L, N, 3·H·D]), or of an output [N, L, H·D] when qkv is false.
func packedDims(a AttentionAttrs, x *tensor.Tensor, qkv bool) (n, l, h, d int) {
	s := x.Shape()
	n, l = s[0], s[1]
	if a.SeqFirst {
		n, l = l, n
	}
	w := a.Packed
	if qkv {
		w *= 3
	}
	return n, l, a.Packed, s[2] / w
}

// packedCheck validates the packed forward primitive's operands and
// returns N, L, H and D.
func packedCheck(op string, a AttentionAttrs, in []*tensor.Tensor) (n, l, h, d int) {
	want := 1
	if a.HasMask {
		want++
	}
	if a.P > 0 {
		want++
	}
	if len(in) != want {
		core.Panicf(op, "got %d operands, want %d (qkv%s%s)", len(in), want,
			map[bool]string{true: ", mask"}[a.HasMask], map[bool]string{true: ", seed"}[a.P > 0])
	}
	qkv := in[0]
	if qkv.Rank() != 3 || a.Packed < 1 || qkv.Dim(2)%(3*a.Packed) != 0 || !qkv.DType().IsFloat() {
		core.Panicf(op, "want a float qkv [N, L, 3·H·D] (or [L, N, 3·H·D]) with H = %d, got %v %v", a.Packed, qkv.Shape(), qkv.DType())
	}
	if !(a.P >= 0 && a.P < 1) {
		core.Panicf(op, "dropout probability %v is not in [0, 1)", a.P)
	}
	if math.IsNaN(a.Scale) || math.IsInf(a.Scale, 0) {
		core.Panicf(op, "scale %v is not finite", a.Scale)
	}
	n, l, h, d = packedDims(a, qkv, true)
	i := 1
	if a.HasMask {
		mask := in[i]
		i++
		if mask.DType() != tensor.Bool && mask.DType() != qkv.DType() {
			core.Panicf(op, "mask must be Bool or %v like qkv, got %v %v", qkv.DType(), mask.Shape(), mask.DType())
		}
		if !broadcastsTo(mask.Shape(), tensor.Shape{n, h}, l, l) {
			core.Panicf(op, "mask %v does not broadcast to the scores' shape %v (qkv %v)", mask.Shape(), tensor.Shape{n, h, l, l}, qkv.Shape())
		}
	}
	if a.P > 0 {
		if seed := in[i]; seed.DType() != tensor.Int64 || seed.Rank() != 0 {
			core.Panicf(op, "dropout seed must be an Int64 scalar, got %v %v", seed.Shape(), seed.DType())
		}
	}
	return n, l, h, d
}

// packedOutShape returns the output's shape [N, L, H·D] (or [L, N, H·D]).
func packedOutShape(a AttentionAttrs, n, l, h, d int) tensor.Shape {
	if a.SeqFirst {
		return tensor.Shape{l, n, h * d}
	}
	return tensor.Shape{n, l, h * d}
}

// packedInfer is the packed forward primitive's shape rule.
func packedInfer(a AttentionAttrs, in []*tensor.Tensor) []tensor.Meta {
	n, l, h, d := packedCheck("ScaledDotProductAttention", a, in)
	dt := in[0].DType()
	return []tensor.Meta{{Shape: packedOutShape(a, n, l, h, d), DType: dt}, {Shape: tensor.Shape{n, h, l}, DType: dt}}
}

// packedGradInfer is the packed gradient primitive's shape rule.
func packedGradInfer(a AttentionAttrs, in []*tensor.Tensor) []tensor.Meta {
	const op = "ScaledDotProductAttentionGrad"
	if len(in) < 5 {
		core.Panicf(op, "got %d operands, want qkv, out, lse, dout, dlse[, mask][, seed]", len(in))
	}
	fwd := append([]*tensor.Tensor{in[0]}, in[5:]...)
	n, l, h, d := packedCheck(op, a, fwd)
	dt := in[0].DType()
	os, ls := packedOutShape(a, n, l, h, d), tensor.Shape{n, h, l}
	for i, want := range []tensor.Shape{os, ls, os, ls} {
		if x := in[1+i]; !x.Shape().Equal(want) || x.DType() != dt {
			core.Panicf(op, "operand %d (out, lse, dout, dlse) is %v %v, want %v %v", 1+i, x.Shape(), x.DType(), want, dt)
		}
	}
	ms := []tensor.Meta{in[0].Meta()}
	if a.MaskGrad {
		ms = append(ms, tensor.Meta{Shape: tensor.Shape{n, h, l, l}, DType: dt})
	}
	return ms
}

// packedParams fills the kernel's parameters from the packed forward
// operands (qkv, mask, seed): the layouts of q, k and v in qkv and of the
// interleaved output. Nothing here allocates.
func packedParams[T float32 | float64](p *attention.Params[T], a AttentionAttrs, fwd []*tensor.Tensor, batch *[2]int) {
	n, l, h, d := packedCheck("ScaledDotProductAttention", a, fwd)
	*p = attention.Params[T]{B: n * h, L: l, S: l, E: d, Ev: d, Scale: T(a.Scale), Causal: a.Causal, P: a.P}
	hd := h * d
	// Token i of sequence n starts at n·L·W + i·W (batch first) or at
	// i·N·W + n·W (sequence first), W the token's width.
	tok := func(w int) (nStride, row int) {
		if a.SeqFirst {
			return w, n * w
		}
		return l * w, w
	}
	ns, row := tok(3 * hd)
	p.Q = attention.Layout{Heads: h, N: ns, Head: d, Row: max(row, 1)}
	p.K, p.V = p.Q, p.Q
	p.K.Base, p.V.Base = hd, 2*hd
	ns, row = tok(hd)
	p.O = attention.Layout{Heads: h, N: ns, Head: d, Row: max(row, 1)}
	i := 1
	var mask *tensor.Tensor
	if a.HasMask {
		mask = fwd[i]
		i++
	}
	if a.P > 0 {
		p.Seed = uint64(fwd[i].Data().([]int64)[0])
	}
	if mask == nil {
		return
	}
	if mask.DType() == tensor.Bool {
		p.BoolMask = mask.Data().([]bool)
	} else {
		p.AddMask = mask.Data().([]T)
	}
	batch[0], batch[1] = n, h
	p.Batch = batch[:]
	maskStrides(p, mask.Shape(), 4)
}

// maskStrides sets p.MaskStrides for a mask of shape ms broadcast to the
// scores' rank-n shape.
func maskStrides[T float32 | float64](p *attention.Params[T], ms tensor.Shape, n int) {
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

// packedKernel is the packed forward primitive's kernel for T.
func packedKernel[T float32 | float64](im *attention.Impl[T], attrs any, in, outs []*tensor.Tensor) {
	var p attention.Params[T]
	var batch [2]int
	packedParams(&p, attrs.(AttentionAttrs), in, &batch)
	qkv := in[0].Data().([]T)
	im.Forward(&p, qkv, qkv, qkv, outs[0].Data().([]T), outs[1].Data().([]T))
}

// packedGradKernel is the packed gradient primitive's kernel for T.
func packedGradKernel[T float32 | float64](im *attention.Impl[T], attrs any, in, outs []*tensor.Tensor) {
	a := attrs.(AttentionAttrs)
	var buf [3]*tensor.Tensor
	fwd := append(append(buf[:0], in[0]), in[5:]...)
	var p attention.Params[T]
	var batch [2]int
	packedParams(&p, a, fwd, &batch)
	dt := func(t *tensor.Tensor) []T { return t.Data().([]T) }
	var dmask []T
	if a.MaskGrad {
		dmask = dt(outs[1])
	}
	qkv, dqkv := dt(in[0]), dt(outs[0])
	im.Backward(&p, qkv, qkv, qkv, dt(in[1]), dt(in[2]), dt(in[3]), dt(in[4]), dqkv, dqkv, dqkv, dmask)
}

// unpacked returns a with the packed layout off: the attributes of the
// equivalent call on separate q, k and v.
func unpacked(a AttentionAttrs) AttentionAttrs {
	a.Packed, a.SeqFirst = 0, false
	return a
}

// splitQKV returns q, k and v [N, H, L, D] of a packed projection (nil
// for nil).
func splitQKV(a AttentionAttrs, qkv *tensor.Tensor) (q, k, v *tensor.Tensor) {
	if qkv == nil {
		return nil, nil, nil
	}
	n, l, h, d := packedDims(a, qkv, true)
	var t *tensor.Tensor
	if a.SeqFirst {
		t = Transpose(Reshape(qkv, l, n, 3, h, d), 2, 1, 3, 0, 4)
	} else {
		t = Transpose(Reshape(qkv, n, l, 3, h, d), 2, 0, 3, 1, 4)
	}
	p := Unstack(t, 0)
	return p[0], p[1], p[2]
}

// joinQKV is splitQKV's inverse.
func joinQKV(a AttentionAttrs, q, k, v *tensor.Tensor) *tensor.Tensor {
	s := q.Shape() // [N, H, L, D]
	n, h, l, d := s[0], s[1], s[2], s[3]
	t := Stack(0, q, k, v)
	if a.SeqFirst {
		return Reshape(Transpose(t, 3, 1, 0, 2, 4), l, n, 3*h*d)
	}
	return Reshape(Transpose(t, 1, 3, 0, 2, 4), n, l, 3*h*d)
}

// splitHeads returns an output-shaped x [N, L, H·D] (or [L, N, H·D]) as
// [N, H, L, D] (nil for nil).
func splitHeads(a AttentionAttrs, x *tensor.Tensor) *tensor.Tensor {
	if x == nil {
		return nil
	}
	n, l, h, d := packedDims(a, x, false)
	if a.SeqFirst {
		return Transpose(Reshape(x, l, n, h, d), 1, 2, 0, 3)
	}
	return Transpose(Reshape(x, n, l, h, d), 0, 2, 1, 3)
}

// mergeHeads is splitHeads' inverse.
func mergeHeads(a AttentionAttrs, x *tensor.Tensor) *tensor.Tensor {
	if x == nil {
		return nil
	}
	s := x.Shape()
	n, h, l, d := s[0], s[1], s[2], s[3]
	if a.SeqFirst {
		return Reshape(Transpose(x, 2, 0, 1, 3), l, n, h*d)
	}
	return Reshape(Transpose(x, 0, 2, 1, 3), n, l, h*d)
}

// packedVJP is the packed forward primitive's gradient: the packed
// gradient primitive, whose dqkv is qkv's whole gradient.
func packedVJP(a AttentionAttrs, in, outs, gs []*tensor.Tensor) []*tensor.Tensor {
	var mask, seed *tensor.Tensor
	i := 1
	if a.HasMask {
		mask = in[i]
		i++
	}
	if a.P > 0 {
		seed = in[i]
	}
	ga := a
	ga.MaskGrad = mask != nil && mask.DType() != tensor.Bool && core.NeedsGrad(mask)
	args := []*tensor.Tensor{in[0], outs[0], outs[1], gs[0], gs[1]}
	if mask != nil {
		args = append(args, mask)
	}
	if seed != nil {
		args = append(args, seed)
	}
	r := core.ApplyN(ScaledDotProductAttentionGradPrim, ga, args...)
	res := make([]*tensor.Tensor, len(in))
	res[0] = r[0]
	if ga.MaskGrad {
		res[1] = sumTo(r[1], mask.Shape())
	}
	return res
}

// packedForwardUnpacked returns the unpacked forward primitive's operands
// for packed ones (and likewise for tangents, nil staying nil).
func packedForwardUnpacked(a AttentionAttrs, in []*tensor.Tensor) []*tensor.Tensor {
	q, k, v := splitQKV(a, in[0])
	return append([]*tensor.Tensor{q, k, v}, in[1:]...)
}

// packedJVP is the packed forward primitive's forward-mode rule: the
// unpacked rule on the split operands.
func packedJVP(a AttentionAttrs, in, t, outs []*tensor.Tensor) []*tensor.Tensor {
	uin := packedForwardUnpacked(a, in)
	ut := packedForwardUnpacked(a, t)
	r := attentionJVP(unpacked(a), uin, ut, []*tensor.Tensor{splitHeads(a, outs[0]), outs[1]})
	return []*tensor.Tensor{mergeHeads(a, r[0]), r[1]}
}

// packedGradUnpacked returns the unpacked gradient primitive's operands
// q, k, v, out, lse, dout, dlse[, mask][, seed] for packed ones qkv, out,
// lse, dout, dlse[, mask][, seed] (and likewise for tangents).
func packedGradUnpacked(a AttentionAttrs, in []*tensor.Tensor) []*tensor.Tensor {
	q, k, v := splitQKV(a, in[0])
	r := []*tensor.Tensor{q, k, v, splitHeads(a, in[1]), in[2], splitHeads(a, in[3]), in[4]}
	return append(r, in[5:]...)
}

// packedGradVJP differentiates the packed gradient primitive with the
// unpacked formulas.
func packedGradVJP(a AttentionAttrs, in, outs, cs []*tensor.Tensor) []*tensor.Tensor {
	cq, ck, cv := splitQKV(a, cs[0])
	ucs := []*tensor.Tensor{cq, ck, cv}
	if a.MaskGrad {
		ucs = append(ucs, cs[1])
	}
	r := attentionGradVJP(unpacked(a), packedGradUnpacked(a, in), nil, ucs)
	res := make([]*tensor.Tensor, len(in))
	res[0] = joinQKV(a, r[0], r[1], r[2])
	res[1], res[2], res[3], res[4] = mergeHeads(a, r[3]), r[4], mergeHeads(a, r[5]), r[6]
	copy(res[5:], r[7:])
	return res
}

// packedGradJVP is the packed gradient primitive's forward-mode rule: the
// unpacked rule on the split operands and tangents.
func packedGradJVP(a AttentionAttrs, in, t, outs []*tensor.Tensor) []*tensor.Tensor {
	r := attentionGradJVP(unpacked(a), packedGradUnpacked(a, in), packedGradUnpacked(a, t), nil)
	res := []*tensor.Tensor{joinQKV(a, r[0], r[1], r[2])}
	return append(res, r[3:]...)
}

// packedBatch is the batching rule of the packed primitives: the batch
// axis joins the sequences' axis N (moved next to it and merged), so the
// call stays one packed call over B·N sequences. dense is the number of
// leading dense operands (1 forward; 5 for the gradient: qkv, out, lse,
// dout, dlse); lse-shaped operands ([N, H, L]) and the second result (lse,
// or the scores' gradient) have N first whatever the layout.
func packedBatch(pp **core.Prim, dense int) func(any, []*tensor.Tensor, []int) ([]*tensor.Tensor, []int) {
	return func(attrs any, in []*tensor.Tensor, dims []int) ([]*tensor.Tensor, []int) {
		a := attrs.(AttentionAttrs)
		nb := batchSize(in, dims)
		nAxis := 0
		if a.SeqFirst {
			nAxis = 1
		}
		// merge returns x (batched at d, or shared when d < 0) with the
		// batch folded into axis ax: moved just before it and merged.
		merge := func(x *tensor.Tensor, d, ax int) *tensor.Tensor {
			x = MoveAxis(front(x, d, nb), 0, ax)
			s := x.Shape()
			ns := append(append(s[:ax:ax], s[ax]*s[ax+1]), s[ax+2:]...)
			return Reshape(x, ns...)
		}
		args := make([]*tensor.Tensor, len(in))
		for i := range dense {
			ax := nAxis
			if i == 2 || i == 4 { // lse, dlse
				ax = 0
			}
			args[i] = merge(in[i], dims[i], ax)
		}
		bn, l, h, _ := packedDims(a, args[0], true)
		n := bn / nb
		i := dense
		if a.HasMask {
			m := in[i]
			if dims[i] >= 0 {
				// Unit axes after the batch axis line the mask up with
				// [N, H, L, L] from the right.
				m = MoveAxis(m, dims[i], 0)
				s := m.Shape()
				ns := append([]int{nb}, make([]int, 4-(len(s)-1))...)
				for k := 1; k < len(ns); k++ {
					ns[k] = 1
				}
				m = BroadcastTo(Reshape(m, append(ns, s[1:]...)...), nb, n, h, l, l)
			} else {
				m = BroadcastTo(ExpandDims(BroadcastTo(m, n, h, l, l), 0), nb, n, h, l, l)
			}
			args[i] = Reshape(m, nb*n, h, l, l)
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
		res := make([]*tensor.Tensor, len(outs))
		bdims := make([]int, len(outs))
		for k, o := range outs {
			ax := nAxis
			if k == 1 {
				ax = 0
			}
			s := o.Shape()
			ns := append(append(s[:ax:ax], nb, s[ax]/nb), s[ax+1:]...)
			res[k], bdims[k] = Reshape(o, ns...), ax
		}
		return res, bdims
	}
}
