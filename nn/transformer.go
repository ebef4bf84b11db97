package nn

import (
	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// TransformerEncoderLayerConfig holds TransformerEncoderLayer's optional
// settings. The zero value is PyTorch's and MindSpore's defaults except
// for Dropout, whose zero value means no dropout (their default is 0.1).
type TransformerEncoderLayerConfig struct {
	// DimFeedforward is the hidden width of the feed-forward block; zero
	// means 2048.
	DimFeedforward int
	// Dropout is the drop probability of the attention weights, the
	// feed-forward hidden layer and both residual branches, in training.
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
	// NoBias leaves out the biases of the linear layers and the attention
	// (PyTorch's bias=False); the normalisations keep theirs.
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
// (MindSpore's names for PyTorch's norm1.weight and norm1.bias).
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

	cfg TransformerEncoderLayerConfig
	// nhead is kept for copies (NewTransformerEncoder).
	nhead int
}

// NewTransformerEncoderLayer returns an encoder layer over dModel-wide
// features with nhead attention heads.
func NewTransformerEncoderLayer(dModel, nhead int, cfg ...TransformerEncoderLayerConfig) *TransformerEncoderLayer {
	const op = "nn.TransformerEncoderLayer"
	positive(op, "d_model", dModel)
	positive(op, "nhead", nhead)
	var c TransformerEncoderLayerConfig
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
	dt := floatType(op, c.DType)
	l := &TransformerEncoderLayer{
		SelfAttn: NewMultiheadAttention(dModel, nhead, MultiheadAttentionConfig{
			Dropout: c.Dropout, NoBias: c.NoBias, BatchFirst: c.BatchFirst, DType: dt,
		}),
		Linear1:    NewDense(dModel, c.DimFeedforward, DenseConfig{NoBias: c.NoBias, DType: dt}),
		Linear2:    NewDense(c.DimFeedforward, dModel, DenseConfig{NoBias: c.NoBias, DType: dt}),
		Norm1:      NewLayerNorm([]int{dModel}, LayerNormConfig{Eps: c.LayerNormEps, DType: dt}),
		Norm2:      NewLayerNorm([]int{dModel}, LayerNormConfig{Eps: c.LayerNormEps, DType: dt}),
		Dropout:    NewDropout(c.Dropout),
		Dropout1:   NewDropout(c.Dropout),
		Dropout2:   NewDropout(c.Dropout),
		Activation: c.Activation,
		NormFirst:  c.NormFirst,
		DModel:     dModel,
		cfg:        c,
		nhead:      nhead,
	}
	return Init(l)
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
	h := l.Linear1.Construct(x)
	if l.Activation == "gelu" {
		h = ops.GELU(h)
	} else {
		h = ops.ReLU(h)
	}
	return l.Dropout2.Construct(l.Linear2.Construct(l.Dropout.Construct(h)))
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
	c := NewTransformerEncoderLayer(l.DModel, l.nhead, l.cfg)
	src := l.NamedParameters()
	for i, p := range c.NamedParameters() {
		p.Tensor.Assign(src[i].Tensor)
	}
	c.SetTrain(l.Training())
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
