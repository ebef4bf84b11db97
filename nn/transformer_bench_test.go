package nn_test

import (
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// BenchmarkTransformerEncoderLayerStep runs forward and backward (the
// gradients of every parameter) of one pre-norm encoder layer, d_model 64,
// 4 heads, feed-forward 256, batch 32 of 50 tokens, with a key padding
// mask: in PyNative mode, and compiled whole (forward and backward in one
// plan, as a Graph-mode training step is). Compare the two within one run.
func BenchmarkTransformerEncoderLayerStep(b *testing.B) {
	for _, m := range []struct {
		name     string
		compiled bool
	}{{"PyNative", false}, {"Graph", true}} {
		b.Run(m.name, func(b *testing.B) {
			spore.SetSeed(1)
			layer := nn.NewTransformerEncoderLayer(64, 4, nn.TransformerLayerConfig{DimFeedforward: 256, BatchFirst: true, Activation: "gelu", NormFirst: true})
			params := layer.TrainableParameters()
			x := ops.Cast(randT(2, -1, 1, 32, 50, 64), tensor.Float32)
			pad := make([]bool, 32*50)
			for i := range 32 {
				for j := 50 - i; j < 50; j++ {
					pad[i*50+j] = true
				}
			}
			kpm := tensor.FromSlice(pad, 32, 50)
			vg := spore.ValueAndGrad(func(x, kpm *spore.Tensor) *spore.Tensor {
				return ops.Sum(ops.Square(layer.Forward(x, nn.EncoderOptions{KeyPaddingMask: kpm})))
			}, spore.GradPosition(), spore.Weights(params...))
			step := func(xs ...*spore.Tensor) []*spore.Tensor {
				l, g := vg(xs...)
				return append(g, l)
			}
			if m.compiled {
				step = spore.Jit(step)
			}
			step(x, kpm)
			b.ResetTimer()
			for b.Loop() {
				step(x, kpm)
			}
		})
	}
}
