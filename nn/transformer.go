package nn

import (
	"strings"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/checkpoint"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// TransformerLayerConfig holds the optional settings of
// TransformerEncoderLayer and TransformerDecoderLayer. The zero value is
// PyTorch's and MindSpore's defaults except for Dropout, whose zero value
// means no dropout (their default is 0.1).
type TransformerLayerConfig struct {
	// DimFeedforward is the hidden width of the feed-forward block; zero
	// means 2048.
	DimFeedforward int
	// Dropout is the drop probability of the attention weights, the
	// feed-forward hidden layer and every residual branch, in training.
	Dropout float64
	// Activation is the feed-forward activation, "relu" (the default) or
	// "gelu" (the exact x·Φ(x), as PyTorch's).
	Activation string
	// LayerNormEps is the normalisations' epsilon; zero means 1e-5.
	LayerNormEps float64
	// BatchFirst makes inputs and outputs [batch, seq, feature] instead of
	// [seq, batch, feature].
	BatchFirst bool
	// NormFirst normalises before each block (pre-norm) instead of after
	// each residual addition (post-norm, the original Transformer's).
	NormFirst bool
	// NoBias leaves out the biases of the linear layers and the
	// attention. The normalisations keep their shift, unlike with
	// PyTorch's bias=False, which drops it too.
	NoBias bool
	// DType is the parameters' type; zero means Float32.
	DType tensor.DType
}

// TransformerEncoderLayer is one layer of the Transformer's encoder,
// PyTorch's and MindSpore's nn.TransformerEncoderLayer: self-attention
// then a feed-forward block, each with a residual connection and a layer
// normalisation. Post-norm (the default) computes
//
//	x = norm1(x + dropout1(self_attn(x, x, x)))
//	x = norm2(x + dropout2(linear2(dropout(act(linear1(x))))))
//
// and pre-norm (NormFirst)
//
//	x = x + dropout1(self_attn(norm1(x)))
//	x = x + dropout2(linear2(dropout(act(linear1(norm2(x))))))
//
// Its parameters carry PyTorch's names — self_attn.in_proj_weight,
// self_attn.in_proj_bias, self_attn.out_proj.weight/bias,
// linear1.weight/bias, linear2.weight/bias — except that the
// normalisations' scale and shift are norm1.gamma and norm1.beta
// (MindSpore's names for PyTorch's norm1.weight and norm1.bias, kept so
// that spore's and MindSpore's checkpoints load). TorchParams lists them
// all under PyTorch's names, to load a PyTorch state dict strictly or to
// save one; FromTorchNames takes a dict keyed either way.
type TransformerEncoderLayer struct {
	Cell
	// SelfAttn is the self-attention, named self_attn.
	SelfAttn *MultiheadAttention
	// Linear1 [dim_feedforward, d_model] and Linear2 [d_model,
	// dim_feedforward] are the feed-forward block.
	Linear1, Linear2 *Dense
	// Norm1 and Norm2 normalise around the attention and feed-forward
	// blocks.
	Norm1, Norm2 *LayerNorm
	// Dropout drops in the feed-forward block, Dropout1 and Dropout2 on
	// the residual branches.
	Dropout, Dropout1, Dropout2 *Dropout
	// Activation is "relu" or "gelu".
	Activation string
	// NormFirst selects pre-norm.
	NormFirst bool
	// DModel is the feature width.
	DModel int

	cfg TransformerLayerConfig // for copies (NewTransformerEncoder)
}

// NewTransformerEncoderLayer returns an encoder layer over dModel-wide
// features with nhead attention heads.
func NewTransformerEncoderLayer(dModel, nhead int, cfg ...TransformerLayerConfig) *TransformerEncoderLayer {
	const op = "nn.TransformerEncoderLayer"
	c, dt := transformerConfig(op, dModel, nhead, cfg)
	l := &TransformerEncoderLayer{
		SelfAttn:   c.attention(dModel, nhead, dt),
		Linear1:    NewDense(dModel, c.DimFeedforward, DenseConfig{NoBias: c.NoBias, DType: dt}),
		Linear2:    NewDense(c.DimFeedforward, dModel, DenseConfig{NoBias: c.NoBias, DType: dt}),
		Norm1:      c.norm(dModel, dt),
		Norm2:      c.norm(dModel, dt),
		Dropout:    NewDropout(c.Dropout),
		Dropout1:   NewDropout(c.Dropout),
		Dropout2:   NewDropout(c.Dropout),
		Activation: c.Activation,
		NormFirst:  c.NormFirst,
		DModel:     dModel,
		cfg:        c,
	}
	return Init(l)
}

// transformerConfig checks the sizes and resolves the defaults of a
// layer's configuration.
func transformerConfig(op string, dModel, nhead int, cfg []TransformerLayerConfig) (TransformerLayerConfig, tensor.DType) {
	positive(op, "d_model", dModel)
	positive(op, "nhead", nhead)
	var c TransformerLayerConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	if c.DimFeedforward == 0 {
		c.DimFeedforward = 2048
	}
	positive(op, "dim_feedforward", c.DimFeedforward)
	if c.LayerNormEps == 0 {
		c.LayerNormEps = 1e-5
	}
	if c.LayerNormEps < 0 {
		core.Panicf(op, "layer_norm_eps %v is negative", c.LayerNormEps)
	}
	if !(c.Dropout >= 0 && c.Dropout < 1) {
		core.Panicf(op, "dropout %v is not in [0, 1)", c.Dropout)
	}
	switch c.Activation {
	case "":
		c.Activation = "relu"
	case "relu", "gelu":
	default:
		core.Panicf(op, "unknown activation %q (want relu or gelu)", c.Activation)
	}
	return c, floatType(op, c.DType)
}

// attention returns a layer's attention block for its configuration.
func (c TransformerLayerConfig) attention(dModel, nhead int, dt tensor.DType) *MultiheadAttention {
	return NewMultiheadAttention(dModel, nhead, MultiheadAttentionConfig{
		Dropout: c.Dropout, NoBias: c.NoBias, BatchFirst: c.BatchFirst, DType: dt,
	})
}

// norm returns a layer's normalisation for its configuration.
func (c TransformerLayerConfig) norm(dModel int, dt tensor.DType) *LayerNorm {
	return NewLayerNorm([]int{dModel}, LayerNormConfig{Eps: c.LayerNormEps, DType: dt})
}

// feedForward is the layers' position-wise block:
// linear2(dropout(act(linear1(x)))). It works on the tokens as rows of
// one matrix, reshaping once on each side, so that in Graph mode the
// activation sits right after its GEMM and fuses into its epilogue.
func feedForward(linear1, linear2 *Dense, drop *Dropout, activation string, x *spore.Tensor) *spore.Tensor {
	xs := x.Shape()
	h := linear1.Construct(ops.Reshape(x, -1, xs[len(xs)-1]))
	if activation == "gelu" {
		h = ops.GELU(h)
	} else {
		h = ops.ReLU(h)
	}
	return ops.Reshape(linear2.Construct(drop.Construct(h)), xs...)
}

// copyParams assigns src's parameter values to dst's, two cells built
// with the same settings.
func copyParams(dst, src Module) {
	from := src.Base().NamedParameters()
	for i, p := range dst.Base().NamedParameters() {
		p.Tensor.Assign(from[i].Tensor)
	}
	dst.Base().SetTrain(src.Base().Training())
}

// EncoderOptions holds the masks of an encoder call, with
// MultiheadAttention's conventions (see AttentionOptions): a Bool mask is
// true where attention is not allowed, a float mask is added to the
// scores.
type EncoderOptions struct {
	// Mask is the attention mask, [L, L] or [batch·heads, L, L]
	// (PyTorch's src_mask).
	Mask *spore.Tensor
	// KeyPaddingMask marks padding positions, [batch, L] (PyTorch's
	// src_key_padding_mask).
	KeyPaddingMask *spore.Tensor
	// IsCausal hides from each position every later one.
	IsCausal bool
}

// Construct returns the layer's output for src [L, batch, d_model] (or
// [batch, L, d_model] with BatchFirst), with no mask.
func (l *TransformerEncoderLayer) Construct(src *spore.Tensor) *spore.Tensor {
	return l.Forward(src, EncoderOptions{})
}

// Forward is Construct with masks. It runs eagerly, or is traced when
// called on symbolic tensors.
func (l *TransformerEncoderLayer) Forward(src *spore.Tensor, opts EncoderOptions) *spore.Tensor {
	l.mustInit("nn.TransformerEncoderLayer")
	ao := AttentionOptions{AttnMask: opts.Mask, KeyPaddingMask: opts.KeyPaddingMask, IsCausal: opts.IsCausal}
	x := src
	if l.NormFirst {
		x = ops.Add(x, l.selfAttention(l.Norm1.Construct(x), ao))
		return ops.Add(x, l.feedForward(l.Norm2.Construct(x)))
	}
	x = l.Norm1.Construct(ops.Add(x, l.selfAttention(x, ao)))
	return l.Norm2.Construct(ops.Add(x, l.feedForward(x)))
}

func (l *TransformerEncoderLayer) selfAttention(x *spore.Tensor, ao AttentionOptions) *spore.Tensor {
	y, _ := l.SelfAttn.Forward(x, x, x, ao)
	return l.Dropout1.Construct(y)
}

func (l *TransformerEncoderLayer) feedForward(x *spore.Tensor) *spore.Tensor {
	return l.Dropout2.Construct(feedForward(l.Linear1, l.Linear2, l.Dropout, l.Activation, x))
}

// TransformerEncoder is a stack of encoder layers with an optional final
// normalisation, PyTorch's and MindSpore's nn.TransformerEncoder. Its
// parameters are named layers.0.self_attn.in_proj_weight, ...,
// layers.N.linear2.bias, and norm.gamma and norm.beta for the final norm.
type TransformerEncoder struct {
	Cell
	// Layers are the stacked layers, in order.
	Layers []*TransformerEncoderLayer
	// Norm is the final normalisation, nil for none.
	Norm *LayerNorm
	// NumLayers is len(Layers).
	NumLayers int
}

// NewTransformerEncoder returns numLayers copies of layer, each with its
// own parameters starting from layer's values (as PyTorch and MindSpore
// deep-copy it), followed by norm if it is not nil. layer itself is not
// part of the encoder.
func NewTransformerEncoder(layer *TransformerEncoderLayer, numLayers int, norm *LayerNorm) *TransformerEncoder {
	const op = "nn.TransformerEncoder"
	if layer == nil {
		core.Panicf(op, "encoder_layer is nil")
	}
	layer.mustInit(op)
	positive(op, "num_layers", numLayers)
	e := &TransformerEncoder{Norm: norm, NumLayers: numLayers}
	for range numLayers {
		e.Layers = append(e.Layers, layer.copy())
	}
	return Init(e)
}

// copy returns a new layer with l's settings and a copy of its parameter
// values.
func (l *TransformerEncoderLayer) copy() *TransformerEncoderLayer {
	c := NewTransformerEncoderLayer(l.DModel, l.SelfAttn.NumHeads, l.cfg)
	copyParams(c, l)
	return c
}

// Construct returns the encoder's output for src [L, batch, d_model] (or
// [batch, L, d_model] for layers built with BatchFirst), with no mask.
func (e *TransformerEncoder) Construct(src *spore.Tensor) *spore.Tensor {
	return e.Forward(src, EncoderOptions{})
}

// Forward runs every layer with the same masks, then the final norm.
func (e *TransformerEncoder) Forward(src *spore.Tensor, opts EncoderOptions) *spore.Tensor {
	e.mustInit("nn.TransformerEncoder")
	x := src
	for _, l := range e.Layers {
		x = l.Forward(x, opts)
	}
	if e.Norm != nil {
		x = e.Norm.Construct(x)
	}
	return x
}

// TransformerDecoderLayer is one layer of the Transformer's decoder,
// PyTorch's and MindSpore's nn.TransformerDecoderLayer: self-attention
// over the target, attention from the target to the encoder's output (the
// memory), then a feed-forward block, each with a residual connection and
// a layer normalisation. Post-norm (the default) computes
//
//	x = norm1(x + dropout1(self_attn(x, x, x)))
//	x = norm2(x + dropout2(multihead_attn(x, memory, memory)))
//	x = norm3(x + dropout3(linear2(dropout(act(linear1(x))))))
//
// and pre-norm (NormFirst) x = x + block(norm_k(x)) for each block in turn.
// Parameter names are PyTorch's (self_attn.*, multihead_attn.*, linear1,
// linear2), with norm1/2/3.gamma and .beta for the normalisations, which
// TorchParams and FromTorchNames translate as for TransformerEncoderLayer.
type TransformerDecoderLayer struct {
	Cell
	// SelfAttn attends over the target, MultiheadAttn from the target to
	// the memory.
	SelfAttn, MultiheadAttn *MultiheadAttention
	// Linear1 and Linear2 are the feed-forward block.
	Linear1, Linear2 *Dense
	// Norm1, Norm2 and Norm3 normalise around the three blocks.
	Norm1, Norm2, Norm3 *LayerNorm
	// Dropout drops in the feed-forward block, Dropout1 to Dropout3 on
	// the residual branches.
	Dropout, Dropout1, Dropout2, Dropout3 *Dropout
	// Activation is "relu" or "gelu".
	Activation string
	// NormFirst selects pre-norm.
	NormFirst bool
	// DModel is the feature width.
	DModel int

	cfg TransformerLayerConfig // for copies (NewTransformerDecoder)
}

// NewTransformerDecoderLayer returns a decoder layer over dModel-wide
// features with nhead attention heads.
func NewTransformerDecoderLayer(dModel, nhead int, cfg ...TransformerLayerConfig) *TransformerDecoderLayer {
	const op = "nn.TransformerDecoderLayer"
	c, dt := transformerConfig(op, dModel, nhead, cfg)
	return Init(&TransformerDecoderLayer{
		SelfAttn:      c.attention(dModel, nhead, dt),
		MultiheadAttn: c.attention(dModel, nhead, dt),
		Linear1:       NewDense(dModel, c.DimFeedforward, DenseConfig{NoBias: c.NoBias, DType: dt}),
		Linear2:       NewDense(c.DimFeedforward, dModel, DenseConfig{NoBias: c.NoBias, DType: dt}),
		Norm1:         c.norm(dModel, dt),
		Norm2:         c.norm(dModel, dt),
		Norm3:         c.norm(dModel, dt),
		Dropout:       NewDropout(c.Dropout),
		Dropout1:      NewDropout(c.Dropout),
		Dropout2:      NewDropout(c.Dropout),
		Dropout3:      NewDropout(c.Dropout),
		Activation:    c.Activation,
		NormFirst:     c.NormFirst,
		DModel:        dModel,
		cfg:           c,
	})
}

// DecoderOptions holds the masks of a decoder call, with
// MultiheadAttention's conventions (see AttentionOptions).
type DecoderOptions struct {
	// TgtMask masks the target's self-attention, [T, T] or
	// [batch·heads, T, T].
	TgtMask *spore.Tensor
	// MemoryMask masks the attention to the memory, [T, S] or
	// [batch·heads, T, S].
	MemoryMask *spore.Tensor
	// TgtKeyPaddingMask [batch, T] and MemoryKeyPaddingMask [batch, S]
	// mark padding positions of the target and the memory.
	TgtKeyPaddingMask, MemoryKeyPaddingMask *spore.Tensor
	// TgtIsCausal hides from each target position every later one.
	TgtIsCausal bool
	// MemoryIsCausal hides from target position i every memory position
	// after i.
	MemoryIsCausal bool
}

// Construct returns the layer's output for the target tgt [T, batch,
// d_model] and memory [S, batch, d_model] (batch first with BatchFirst),
// with no mask.
func (l *TransformerDecoderLayer) Construct(tgt, memory *spore.Tensor) *spore.Tensor {
	return l.Forward(tgt, memory, DecoderOptions{})
}

// Forward is Construct with masks. It runs eagerly, or is traced when
// called on symbolic tensors.
func (l *TransformerDecoderLayer) Forward(tgt, memory *spore.Tensor, opts DecoderOptions) *spore.Tensor {
	l.mustInit("nn.TransformerDecoderLayer")
	self := AttentionOptions{AttnMask: opts.TgtMask, KeyPaddingMask: opts.TgtKeyPaddingMask, IsCausal: opts.TgtIsCausal}
	cross := AttentionOptions{AttnMask: opts.MemoryMask, KeyPaddingMask: opts.MemoryKeyPaddingMask, IsCausal: opts.MemoryIsCausal}
	sa := func(x *spore.Tensor) *spore.Tensor {
		y, _ := l.SelfAttn.Forward(x, x, x, self)
		return l.Dropout1.Construct(y)
	}
	ca := func(x *spore.Tensor) *spore.Tensor {
		y, _ := l.MultiheadAttn.Forward(x, memory, memory, cross)
		return l.Dropout2.Construct(y)
	}
	ff := func(x *spore.Tensor) *spore.Tensor {
		return l.Dropout3.Construct(feedForward(l.Linear1, l.Linear2, l.Dropout, l.Activation, x))
	}
	x := tgt
	if l.NormFirst {
		x = ops.Add(x, sa(l.Norm1.Construct(x)))
		x = ops.Add(x, ca(l.Norm2.Construct(x)))
		return ops.Add(x, ff(l.Norm3.Construct(x)))
	}
	x = l.Norm1.Construct(ops.Add(x, sa(x)))
	x = l.Norm2.Construct(ops.Add(x, ca(x)))
	return l.Norm3.Construct(ops.Add(x, ff(x)))
}

// TransformerDecoder is a stack of decoder layers with an optional final
// normalisation, PyTorch's and MindSpore's nn.TransformerDecoder, its
// parameters named layers.0.self_attn.in_proj_weight, ..., norm.gamma.
type TransformerDecoder struct {
	Cell
	// Layers are the stacked layers, in order.
	Layers []*TransformerDecoderLayer
	// Norm is the final normalisation, nil for none.
	Norm *LayerNorm
	// NumLayers is len(Layers).
	NumLayers int
}

// NewTransformerDecoder returns numLayers copies of layer, each with its
// own parameters starting from layer's values, followed by norm if it is
// not nil. layer itself is not part of the decoder.
func NewTransformerDecoder(layer *TransformerDecoderLayer, numLayers int, norm *LayerNorm) *TransformerDecoder {
	const op = "nn.TransformerDecoder"
	if layer == nil {
		core.Panicf(op, "decoder_layer is nil")
	}
	layer.mustInit(op)
	positive(op, "num_layers", numLayers)
	d := &TransformerDecoder{Norm: norm, NumLayers: numLayers}
	for range numLayers {
		c := NewTransformerDecoderLayer(layer.DModel, layer.SelfAttn.NumHeads, layer.cfg)
		copyParams(c, layer)
		d.Layers = append(d.Layers, c)
	}
	return Init(d)
}

// Construct returns the decoder's output for tgt and memory, with no mask.
func (d *TransformerDecoder) Construct(tgt, memory *spore.Tensor) *spore.Tensor {
	return d.Forward(tgt, memory, DecoderOptions{})
}

// Forward runs every layer with the same memory and masks, then the final
// norm.
func (d *TransformerDecoder) Forward(tgt, memory *spore.Tensor, opts DecoderOptions) *spore.Tensor {
	d.mustInit("nn.TransformerDecoder")
	x := tgt
	for _, l := range d.Layers {
		x = l.Forward(x, memory, opts)
	}
	if d.Norm != nil {
		x = d.Norm.Construct(x)
	}
	return x
}

// TorchParams lists m's parameters as NamedParameters does, but with the
// scale and shift of each LayerNorm in m (m itself included) under
// PyTorch's names, weight and bias, rather than spore's and MindSpore's
// gamma and beta: with the transformer layers' other names, which are
// PyTorch's already, a transformer's parameters then match its PyTorch
// state dict name for name. It is the destination for loading such a
// dict strictly,
//
//	checkpoint.LoadInto(nn.TorchParams(layer), stateDict, true)
//
// and the source for saving one, checkpoint.Save(path,
// nn.TorchParams(layer), nil). The tensors are m's own, so loading
// assigns m's parameters.
func TorchParams(m Module) checkpoint.Params {
	torch := layerNormTorchNames(m)
	var ps checkpoint.Params
	for _, p := range m.Base().NamedParameters() {
		name := p.Name
		if suffix, ok := torch[p.Tensor]; ok {
			// The path's last element is the LayerNorm's field name.
			name = name[:strings.LastIndexByte(name, '.')+1] + suffix
		}
		ps = append(ps, checkpoint.Param{Name: name, Tensor: p.Tensor})
	}
	return ps
}

// FromTorchNames returns src with each of PyTorch's names for a LayerNorm
// parameter of m (norm1.weight, norm1.bias; see TorchParams) renamed to
// spore's (norm1.gamma, norm1.beta), and every other entry as it is, so
// that a state dict keyed either way, or a mix, loads into m by spore's
// names, strictly or not:
//
//	train.LoadParamIntoNet(net, nn.FromTorchNames(net, params), true)
//
// A dict holding a parameter under both names then has a duplicate name,
// which the loader refuses rather than picking one. src is not modified.
func FromTorchNames(m Module, src []checkpoint.Param) []checkpoint.Param {
	own := m.Base().NamedParameters()
	rename := map[string]string{}
	for i, p := range TorchParams(m) {
		if p.Name != own[i].Name {
			rename[p.Name] = own[i].Name
		}
	}
	out := make([]checkpoint.Param, len(src))
	for i, p := range src {
		if name, ok := rename[p.Name]; ok {
			p.Name = name
		}
		out[i] = p
	}
	return out
}

// layerNormTorchNames maps the scale and shift of every LayerNorm in m to
// PyTorch's names for them. It goes by tensor, not by name, so that a
// parameter of another cell that happens to be called gamma keeps its
// name.
func layerNormTorchNames(m Module) map[*spore.Tensor]string {
	cells := []Module{m}
	for _, c := range m.Base().NamedCells() {
		cells = append(cells, c.Cell)
	}
	names := map[*spore.Tensor]string{}
	for _, c := range cells {
		if ln, ok := c.(*LayerNorm); ok {
			names[ln.Gamma] = "weight"
			names[ln.Beta] = "bias"
		}
	}
	return names
}
