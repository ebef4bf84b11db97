package nn_test

import (
	"fmt"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Self-attention over a batch of 2 sequences of 5 tokens, with the last
// token of the second sequence padding, and the weights averaged over the
// heads.
func ExampleMultiheadAttention() {
	spore.SetSeed(1)
	attn := nn.NewMultiheadAttention(16, 4, nn.MultiheadAttentionConfig{BatchFirst: true})
	x := ops.Ones(2, 5, 16)
	padding := tensor.FromSlice([]bool{
		false, false, false, false, false,
		false, false, false, false, true,
	}, 2, 5)
	out, weights := attn.Forward(x, x, x, nn.AttentionOptions{KeyPaddingMask: padding, NeedWeights: true})
	fmt.Println(out.Shape(), weights.Shape())
	for _, p := range attn.NamedParameters() {
		fmt.Println(p.Name, p.Tensor.Shape())
	}
	// Output:
	// [2 5 16] [2 5 5]
	// in_proj_weight [48 16]
	// in_proj_bias [48]
	// out_proj.weight [16 16]
	// out_proj.bias [16]
}

// A pre-norm encoder of two layers with GELU and a final normalisation,
// run causally (each position sees itself and the positions before it),
// after sinusoidal positional encoding.
func ExampleTransformerEncoder() {
	spore.SetSeed(1)
	cfg := nn.TransformerLayerConfig{DimFeedforward: 64, Activation: "gelu", NormFirst: true, BatchFirst: true}
	enc := nn.NewTransformerEncoder(nn.NewTransformerEncoderLayer(16, 4, cfg), 2, nn.NewLayerNorm([]int{16}))
	pe := nn.NewSinusoidalPositionalEncoding(16, nn.SinusoidalPositionalEncodingConfig{BatchFirst: true})
	x := pe.Call(ops.Zeros(3, 7, 16))
	y := enc.Forward(x, nn.EncoderOptions{IsCausal: true})
	fmt.Println(y.Shape(), len(enc.NamedParameters()))
	fmt.Println(enc.NamedParameters()[0].Name)
	// Output:
	// [3 7 16] 26
	// layers.0.self_attn.in_proj_weight
}
