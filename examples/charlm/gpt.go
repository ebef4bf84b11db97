package main

import (
	"github.com/sporeml/spore"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/nn/initializer"
	"github.com/sporeml/spore/ops"
)

// gptConfig sizes the model.
type gptConfig struct {
	ctx, dim, layers, heads int
}

// GPT is a decoder-only transformer over characters: a token embedding
// plus a learned position embedding, pre-norm blocks of causal
// self-attention and a ReLU feed-forward (nn.TransformerEncoderLayer
// called with IsCausal, so each position sees only itself and earlier
// ones), a final normalisation, and an output layer tied to the token
// embedding: the logits are the hidden states times the embedding table
// transposed, as in GPT-2, which saves vocab×dim parameters and helps a
// small model. (GPT-2 uses GELU; ReLU's backward is a mask, where GELU's
// evaluates erf and exp per element, which on two cores buys more steps
// in the same time.)
type GPT struct {
	nn.Cell
	// TokEmbed is the [vocab, dim] token embedding, also the output layer.
	TokEmbed *nn.Embedding
	// PosEmbed holds one learned vector per position up to the context.
	PosEmbed *nn.PositionalEmbedding
	// Blocks are the transformer blocks.
	Blocks []*nn.TransformerEncoderLayer
	// Norm is the final normalisation.
	Norm *nn.LayerNorm
}

// newGPT builds the model with weights from the framework seed.
func newGPT(c gptConfig) *GPT {
	g := &GPT{
		TokEmbed: nn.NewEmbedding(vocab, c.dim, nn.EmbeddingConfig{Init: initializer.Normal(0.02, 0)}),
		PosEmbed: nn.NewPositionalEmbedding(c.ctx, c.dim, nn.PositionalEmbeddingConfig{BatchFirst: true}),
		Norm:     nn.NewLayerNorm([]int{c.dim}),
	}
	for range c.layers {
		g.Blocks = append(g.Blocks, nn.NewTransformerEncoderLayer(c.dim, c.heads, nn.TransformerLayerConfig{
			DimFeedforward: 4 * c.dim,
			Activation:     "relu",
			BatchFirst:     true,
			NormFirst:      true,
		}))
	}
	return nn.Init(g)
}

// Construct returns the next-token logits [batch·L, vocab] for token ids
// [batch, L] (L at most the context), row b·L+t predicting the token after
// position t of sequence b.
func (g *GPT) Construct(ids *spore.Tensor) *spore.Tensor {
	n, l := ids.Dim(0), ids.Dim(1)
	h := g.PosEmbed.Construct(g.TokEmbed.Construct(ids))
	for _, b := range g.Blocks {
		h = b.Forward(h, nn.EncoderOptions{IsCausal: true})
	}
	h = ops.Reshape(g.Norm.Construct(h), n*l, -1)
	return ops.MatMulT(h, g.TokEmbed.EmbeddingTable, false, true)
}
