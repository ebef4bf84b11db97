package nn

import (
	"math"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/nn/initializer"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// MultiheadAttentionConfig holds MultiheadAttention's optional settings;
// the zero value is PyTorch's and MindSpore's defaults.
type MultiheadAttentionConfig struct {
	// Dropout is the probability of dropping an attention weight, in
	// training.
	Dropout float64
	// NoBias leaves out the input and output projection biases (bias=False).
	NoBias bool
	// KDim and VDim are the feature widths of key and value; zero means
	// embed_dim. When either differs from embed_dim, the projections are
	// three separate weights (q_proj_weight, k_proj_weight,
	// v_proj_weight) instead of the packed in_proj_weight, as in PyTorch.
	KDim, VDim int
	// BatchFirst makes inputs and outputs [batch, seq, feature] instead of
	// [seq, batch, feature].
	BatchFirst bool
	// DType is the parameters' type; zero means Float32.
	DType tensor.DType
}

// MultiheadAttention is multi-head scaled dot-product attention,
// PyTorch's nn.MultiheadAttention and MindSpore 2.x's, with their
// parameter names. For H heads of width D = E/H,
//
//	head_h = softmax(q_h·k_hᵀ/√D + mask)·v_h
//	out    = concat(head_1, ..., head_H)·W_outᵀ + b_out
//
// where q_h, k_h and v_h are the h-th D-wide slices of the projections
// query·W_qᵀ + b_q, key·W_kᵀ + b_k and value·W_vᵀ + b_v. The parameters
// are
//
//	in_proj_weight   [3E, E]   W_q, W_k, W_v stacked (XavierUniform)
//	in_proj_bias     [3E]      b_q, b_k, b_v stacked (zeros)
//	out_proj.weight  [E, E]    (Dense's default initialiser)
//	out_proj.bias    [E]       (zeros)
//
// or, when key or value are not E wide, q_proj_weight [E, E],
// k_proj_weight [E, kdim] and v_proj_weight [E, vdim] in place of
// in_proj_weight. Construct(query, key, value) returns the output; Forward
// also takes masks and returns the attention weights.
//
// Without NeedWeights the attention is one ops.ScaledDotProductAttention,
// the fused kernel that works tile by tile and never builds the L×S
// weights (for self-attention with the packed in-projection,
// ops.PackedSelfAttention, which also reads the heads from the
// projection and writes them back merged without transposes); with it, the weights are built by the plain composition of
// ops (MatMul, mask, Softmax, Dropout, MatMul). The two agree to rounding.
//
// Add_bias_kv and add_zero_attn, rarely used options of PyTorch's layer,
// are not provided.
type MultiheadAttention struct {
	Cell
	// InProjWeight is the packed [3E, E] projection, nil when KDim or VDim
	// differ from EmbedDim.
	InProjWeight *spore.Tensor
	// QProjWeight [E, E], KProjWeight [E, kdim] and VProjWeight [E, vdim]
	// are the separate projections, nil when InProjWeight is used.
	QProjWeight, KProjWeight, VProjWeight *spore.Tensor
	// InProjBias is the packed [3E] projection bias; nil without bias.
	InProjBias *spore.Tensor
	// OutProj is the output projection, named out_proj.
	OutProj *Dense
	// EmbedDim (E), NumHeads (H), KDim and VDim are the layer's sizes;
	// HeadDim is E/H.
	EmbedDim, NumHeads, HeadDim, KDim, VDim int
	// Dropout is the attention-weight drop probability, in training.
	Dropout float64
	// BatchFirst says inputs and outputs are [batch, seq, feature].
	BatchFirst bool
}

// NewMultiheadAttention returns multi-head attention over embedDim-wide
// features with numHeads heads; numHeads must divide embedDim.
func NewMultiheadAttention(embedDim, numHeads int, cfg ...MultiheadAttentionConfig) *MultiheadAttention {
	const op = "nn.MultiheadAttention"
	positive(op, "embed_dim", embedDim)
	positive(op, "num_heads", numHeads)
	if embedDim%numHeads != 0 {
		core.Panicf(op, "embed_dim %d is not divisible by num_heads %d", embedDim, numHeads)
	}
	var c MultiheadAttentionConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	if !(c.Dropout >= 0 && c.Dropout < 1) {
		core.Panicf(op, "dropout %v is not in [0, 1)", c.Dropout)
	}
	if c.KDim == 0 {
		c.KDim = embedDim
	}
	if c.VDim == 0 {
		c.VDim = embedDim
	}
	positive(op, "kdim", c.KDim)
	positive(op, "vdim", c.VDim)
	dt := floatType(op, c.DType)
	m := &MultiheadAttention{
		EmbedDim: embedDim, NumHeads: numHeads, HeadDim: embedDim / numHeads,
		KDim: c.KDim, VDim: c.VDim, Dropout: c.Dropout, BatchFirst: c.BatchFirst,
	}
	xavier := initializer.XavierUniform(1)
	if c.KDim == embedDim && c.VDim == embedDim {
		m.InProjWeight = newParam("in_proj_weight", xavier, dt, 3*embedDim, embedDim)
	} else {
		m.QProjWeight = newParam("q_proj_weight", xavier, dt, embedDim, embedDim)
		m.KProjWeight = newParam("k_proj_weight", xavier, dt, embedDim, c.KDim)
		m.VProjWeight = newParam("v_proj_weight", xavier, dt, embedDim, c.VDim)
	}
	if !c.NoBias {
		m.InProjBias = newParam("in_proj_bias", initializer.Zero(), dt, 3*embedDim)
	}
	m.OutProj = NewDense(embedDim, embedDim, DenseConfig{NoBias: c.NoBias, BiasInit: initializer.Zero(), DType: dt})
	return Init(m)
}

// AttentionOptions holds the optional inputs of an attention call. The
// zero value attends everywhere and returns no weights.
//
// Masks follow PyTorch's convention for nn.MultiheadAttention (the
// opposite of scaled_dot_product_attention's): a Bool mask is true where
// attention is NOT allowed, and a float mask (of the query's dtype) is
// added to the scores. A query whose keys are all masked gets zero
// weights, so its attention output is the output projection's bias, and
// zero gradients: the answer of torch's fused attention kernels and of
// FlashAttention, where PyTorch's plain softmax path gives NaN.
type AttentionOptions struct {
	// KeyPaddingMask marks keys to ignore per batch element: [batch, S]
	// ([S] for unbatched input).
	KeyPaddingMask *spore.Tensor
	// AttnMask masks query–key pairs: [L, S], shared by every batch
	// element and head, or [batch·heads, L, S].
	AttnMask *spore.Tensor
	// IsCausal masks every key after the query's own position (key j is
	// hidden from query i when j > i), in addition to AttnMask if that is
	// also given. PyTorch's is_causal is a hint that AttnMask is the
	// causal mask; here the layer builds that mask itself.
	IsCausal bool
	// NeedWeights makes Forward return the attention weights (after
	// dropout, as PyTorch does). Unlike PyTorch's need_weights, it
	// defaults to false, the fast choice.
	NeedWeights bool
	// PerHeadWeights returns weights per head, [batch, heads, L, S],
	// rather than averaged over heads to [batch, L, S] (PyTorch's
	// average_attn_weights=False).
	PerHeadWeights bool
}

// Construct returns the attention output for query [L, batch, E] (or
// [batch, L, E] with BatchFirst, or [L, E] unbatched), key [S, batch,
// kdim] and value [S, batch, vdim], with no mask. The output is shaped as
// the query.
func (m *MultiheadAttention) Construct(query, key, value *spore.Tensor) *spore.Tensor {
	out, _ := m.Forward(query, key, value, AttentionOptions{})
	return out
}

// Forward is Construct with masks: it returns the output and, with
// opts.NeedWeights, the attention weights ([batch, L, S], or [batch,
// heads, L, S] with PerHeadWeights; no batch axis for unbatched input),
// otherwise nil. It runs eagerly, or is traced when called on symbolic
// tensors (inside spore.Jit or a compiled Construct).
func (m *MultiheadAttention) Forward(query, key, value *spore.Tensor, opts AttentionOptions) (out, weights *spore.Tensor) {
	const op = "nn.MultiheadAttention"
	m.mustInit(op)
	E, D := m.EmbedDim, m.HeadDim
	dt := m.OutProj.Weight.DType()
	unbatched, N, L, S := m.checkInputs(op, query, key, value, dt)
	if unbatched {
		ax := 1
		if m.BatchFirst {
			ax = 0
		}
		query, key, value = ops.ExpandDims(query, ax), ops.ExpandDims(key, ax), ops.ExpandDims(value, ax)
	}
	mk := m.masks(op, opts, unbatched, N, L, S, dt)
	drop := 0.0
	if m.Training() {
		drop = m.Dropout
	}

	var o, p *spore.Tensor // [N, H, L, D] and the weights [N, H, L, S]
	var merged *spore.Tensor
	if m.InProjWeight != nil && query == key && key == value && !opts.NeedWeights {
		// Self-attention on the packed projection: the kernels read the
		// heads from it and write them back side by side, so neither the
		// split nor the merge of the heads is a copy.
		qkv := linear(query, m.InProjWeight, m.InProjBias)
		merged = ops.PackedSelfAttention(qkv, m.NumHeads, !m.BatchFirst, ops.AttentionOptions{Mask: mk.kernelMask(), Causal: opts.IsCausal, DropoutP: drop})
	} else if !opts.NeedWeights {
		// The fused kernel never builds the [L, S] weights; it masks
		// causally by itself, skipping the tiles above the diagonal.
		q, k, v := m.projectHeads(query, key, value, N, L, S)
		o = ops.ScaledDotProductAttention(q, k, v, ops.AttentionOptions{Mask: mk.kernelMask(), Causal: opts.IsCausal, DropoutP: drop})
	} else {
		q, k, v := m.projectHeads(query, key, value, N, L, S)
		// The weights are wanted, so they are built: the composition of
		// ops that the fused kernel computes tile by tile.
		scores := ops.MatMulT(ops.MulScalar(q, 1/math.Sqrt(float64(D))), k, false, true)
		mask := mk.additive
		if mk.masked != nil {
			mask = toAdditive(op, "mask", mk.masked, dt)
		}
		if opts.IsCausal {
			mask = addMask(mask, CausalMask(dt, L, S))
		}
		if mask != nil {
			p = maskedSoftmax(ops.Add(scores, mask))
		} else {
			p = ops.Softmax(scores, -1)
		}
		p = ops.Dropout(p, drop, drop > 0)
		o = ops.MatMul(p, v)
	}

	switch {
	case merged != nil:
		o = merged
	case m.BatchFirst:
		o = ops.Reshape(ops.Transpose(o, 0, 2, 1, 3), N, L, E)
	default:
		o = ops.Reshape(ops.Transpose(o, 2, 0, 1, 3), L, N, E)
	}
	out = m.OutProj.Construct(o)
	if opts.NeedWeights {
		weights = p
		if !opts.PerHeadWeights {
			weights = ops.Mean(p, 1)
		}
		if unbatched {
			weights = ops.Squeeze(weights, 0)
		}
	}
	if unbatched {
		ax := 1
		if m.BatchFirst {
			ax = 0
		}
		out = ops.Squeeze(out, ax)
	}
	return out, weights
}

// checkInputs validates the shapes and dtypes of query, key and value and
// returns whether they are unbatched, and the batch size and the query and
// key lengths.
func (m *MultiheadAttention) checkInputs(op string, query, key, value *spore.Tensor, dt tensor.DType) (unbatched bool, N, L, S int) {
	qs, ks, vs := query.Shape(), key.Shape(), value.Shape()
	layout := "[seq, batch, feature]"
	if m.BatchFirst {
		layout = "[batch, seq, feature]"
	}
	r := len(qs)
	if r != 2 && r != 3 || len(ks) != r || len(vs) != r {
		core.Panicf(op, "query %v, key %v and value %v must all be %s or all unbatched [seq, feature]", qs, ks, vs, layout)
	}
	for _, c := range []struct {
		what  string
		s     tensor.Shape
		width int
		t     *spore.Tensor
	}{{"query", qs, m.EmbedDim, query}, {"key", ks, m.KDim, key}, {"value", vs, m.VDim, value}} {
		if c.s[r-1] != c.width {
			core.Panicf(op, "%s %v does not end in its feature width %d (embed_dim %d, kdim %d, vdim %d)", c.what, c.s, c.width, m.EmbedDim, m.KDim, m.VDim)
		}
		if c.t.DType() != dt {
			core.Panicf(op, "%s %v is %v but the parameters are %v", c.what, c.s, c.t.DType(), dt)
		}
		if c.s.Size() == 0 {
			core.Panicf(op, "%s %v is empty", c.what, c.s)
		}
	}
	if r == 2 {
		if ks[0] != vs[0] {
			core.Panicf(op, "key %v and value %v differ in sequence length", ks, vs)
		}
		return true, 1, qs[0], ks[0]
	}
	seq, batch := 0, 1
	if m.BatchFirst {
		seq, batch = 1, 0
	}
	if qs[batch] != ks[batch] || ks[batch] != vs[batch] {
		core.Panicf(op, "query %v, key %v and value %v differ in batch size (layout %s)", qs, ks, vs, layout)
	}
	if ks[seq] != vs[seq] {
		core.Panicf(op, "key %v and value %v differ in sequence length (layout %s)", ks, vs, layout)
	}
	return false, qs[batch], qs[seq], ks[seq]
}

// projectHeads applies the input projections and splits the heads,
// returning q [N, H, L, D] and k, v [N, H, S, D] from inputs [seq, N, ·]
// (or [N, seq, ·] with BatchFirst).
func (m *MultiheadAttention) projectHeads(query, key, value *spore.Tensor, N, L, S int) (q, k, v *spore.Tensor) {
	H, D := m.NumHeads, m.HeadDim
	// heads splits [seq, N, E] (or [N, seq, E]) into [N, H, seq, D].
	heads := func(x *spore.Tensor, n int) *spore.Tensor {
		if m.BatchFirst {
			return ops.Transpose(ops.Reshape(x, N, n, H, D), 0, 2, 1, 3)
		}
		return ops.Transpose(ops.Reshape(x, n, N, H, D), 1, 2, 0, 3)
	}
	if m.InProjWeight != nil && query == key && key == value {
		// Self-attention: one GEMM by the packed weight, then one
		// transpose to [3, N, H, L, D] and a split along its leading
		// axis, rather than a slice and a transpose per operand.
		qkv := linear(query, m.InProjWeight, m.InProjBias)
		if m.BatchFirst {
			qkv = ops.Transpose(ops.Reshape(qkv, N, L, 3, H, D), 2, 0, 3, 1, 4)
		} else {
			qkv = ops.Transpose(ops.Reshape(qkv, L, N, 3, H, D), 2, 1, 3, 0, 4)
		}
		p := ops.Unstack(qkv, 0)
		return p[0], p[1], p[2]
	}
	var bq, bk, bv *spore.Tensor
	if m.InProjBias != nil {
		b := ops.SplitN(m.InProjBias, 0, 3)
		bq, bk, bv = b[0], b[1], b[2]
	}
	wq, wk, wv := m.QProjWeight, m.KProjWeight, m.VProjWeight
	if m.InProjWeight != nil {
		w := ops.SplitN(m.InProjWeight, 0, 3)
		wq, wk, wv = w[0], w[1], w[2]
	}
	return heads(linear(query, wq, bq), L), heads(linear(key, wk, bk), S), heads(linear(value, wv, bv), S)
}

// linear returns x·wᵀ + b for x [..., in], w [out, in] and b [out] (or nil).
func linear(x, w, b *spore.Tensor) *spore.Tensor {
	xs := x.Shape()
	in, out := w.Dim(1), w.Dim(0)
	y := ops.MatMulT(ops.Reshape(x, -1, in), w, false, true)
	if b != nil {
		y = ops.Add(y, b)
	}
	s := append(append([]int(nil), xs[:len(xs)-1]...), out)
	return ops.Reshape(y, s...)
}

// attnMasks is the masks of a call, combined: either masked, a Bool mask
// that is true where attention is not allowed (when every mask given is
// Bool), or additive, a float mask added to the scores; both broadcast
// against the [N, H, L, S] scores. Both are nil when there is no mask;
// the causal mask is not included.
type attnMasks struct{ masked, additive *spore.Tensor }

// kernelMask returns the mask in the form the fused kernels take: a Bool
// mask saying where to attend, or the additive one; nil for none.
func (mk attnMasks) kernelMask() *spore.Tensor {
	switch {
	case mk.masked != nil:
		return ops.LogicalNot(mk.masked)
	case mk.additive != nil:
		return mk.additive
	}
	return nil
}

// masks checks and combines the attention and key padding masks of opts.
func (m *MultiheadAttention) masks(op string, opts AttentionOptions, unbatched bool, N, L, S int, dt tensor.DType) attnMasks {
	H := m.NumHeads
	var parts []*spore.Tensor // each shaped to broadcast against [N, H, L, S]
	allBool := true
	if a := opts.AttnMask; a != nil {
		as := a.Shape()
		switch {
		case as.Equal(tensor.Shape{L, S}):
			parts = append(parts, ops.Reshape(checkMask(op, "attn_mask", a, dt), 1, 1, L, S))
		case as.Equal(tensor.Shape{N * H, L, S}):
			parts = append(parts, ops.Reshape(checkMask(op, "attn_mask", a, dt), N, H, L, S))
		default:
			core.Panicf(op, "attn_mask %v is neither [L, S] = %v nor [batch·heads, L, S] = %v", as, tensor.Shape{L, S}, tensor.Shape{N * H, L, S})
		}
	}
	if kp := opts.KeyPaddingMask; kp != nil {
		want := tensor.Shape{N, S}
		if unbatched {
			want = tensor.Shape{S}
		}
		if !kp.Shape().Equal(want) {
			core.Panicf(op, "key_padding_mask %v is not [batch, S] = %v", kp.Shape(), want)
		}
		parts = append(parts, ops.Reshape(checkMask(op, "key_padding_mask", kp, dt), N, 1, 1, S))
	}
	for _, p := range parts {
		allBool = allBool && p.DType() == tensor.Bool
	}
	var out attnMasks
	for _, p := range parts {
		if allBool {
			if out.masked == nil {
				out.masked = p
			} else {
				out.masked = ops.LogicalOr(out.masked, p)
			}
			continue
		}
		if p.DType() == tensor.Bool {
			p = toAdditive(op, "mask", p, dt)
		}
		out.additive = addMask(out.additive, p)
	}
	return out
}

// addMask returns a + b for additive masks, either of which may be nil.
func addMask(a, b *spore.Tensor) *spore.Tensor {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	return ops.Add(a, b)
}

// checkMask checks that a mask is Bool or of the scores' dtype.
func checkMask(op, what string, mask *spore.Tensor, dt tensor.DType) *spore.Tensor {
	if d := mask.DType(); d != tensor.Bool && d != dt {
		panic(core.Errorf(op, "%s %v is %v; want Bool (true = masked) or %v (added to the scores)", what, mask.Shape(), d, dt))
	}
	return mask
}

// maskedSoftmax is the softmax of masked scores over the last axis, with
// zero weights, rather than NaN, on rows where every score is −∞. The
// scores of such a row are replaced by zeros before the softmax, so that
// no NaN arises in the forward pass or in the gradient (a NaN there would
// survive a later Select, multiplied by its zero).
func maskedSoftmax(scores *spore.Tensor) *spore.Tensor {
	dead := ops.Equal(ops.MaxKeepDims(scores, -1), tensor.Full(scores.DType(), math.Inf(-1)))
	zero := tensor.Full(scores.DType(), 0)
	p := ops.Softmax(ops.Select(dead, zero, scores), -1)
	return ops.Select(dead, zero, p)
}

// toAdditive turns a Bool mask (true = masked) into 0 and −∞.
func toAdditive(op, what string, mask *spore.Tensor, dt tensor.DType) *spore.Tensor {
	checkMask(op, what, mask, dt)
	return ops.Select(mask, tensor.Full(dt, math.Inf(-1)), tensor.Full(dt, 0))
}

// CausalMask returns the [L, S] additive mask that hides from query i
// every key j > i: 0 on and below the diagonal, −∞ above it (PyTorch's
// generate_square_subsequent_mask for L = S). It is a concrete tensor,
// a constant of any graph that uses it.
func CausalMask(dt tensor.DType, L, S int) *spore.Tensor {
	v := make([]float64, L*S)
	for i := range L {
		for j := i + 1; j < S; j++ {
			v[i*S+j] = math.Inf(-1)
		}
	}
	return ops.Cast(tensor.FromSlice(v, L, S), dt)
}
