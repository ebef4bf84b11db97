package nn_test

import (
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// TestGraphModeGradients differentiates a cell called in Graph mode: the
// compiled plan is one node on the tape, its gradient a compiled function.
func TestGraphModeGradients(t *testing.T) {
	tests := []struct {
		name  string
		build func() nn.Layer
		x     *tensor.Tensor
	}{
		{"mlp", func() nn.Layer { return newNetwork() }, ops.Cast(randT(5, -1, 1, 3, 1, 28, 28), tensor.Float32)},
		{"conv batchnorm", func() nn.Layer { return newBNNet() }, ops.Cast(randT(5, -1, 1, 3, 2, 4, 4), tensor.Float32)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spore.SetSeed(12)
			net := tt.build()
			spore.SetSeed(12)
			ref := tt.build()
			net.Base().SetTrain(true)
			ref.Base().SetTrain(true)
			loss := func(c nn.Layer) func(*spore.Tensor) *spore.Tensor {
				return func(x *spore.Tensor) *spore.Tensor { return ops.Sum(ops.Square(c.Base().Call(x))) }
			}
			for range 2 {
				le, ge := spore.ValueAndGrad(loss(ref), spore.GradPosition(), spore.Weights(ref.Base().TrainableParameters()...))(tt.x)
				var lg *spore.Tensor
				var gg []*spore.Tensor
				withMode(spore.GraphMode, spore.O1, func() {
					lg, gg = spore.ValueAndGrad(loss(net), spore.GradPosition(), spore.Weights(net.Base().TrainableParameters()...))(tt.x)
				})
				sameValues(t, "loss", lg, le, 1e-5)
				for i := range ge {
					sameValues(t, "gradient "+ref.Base().TrainableParameters()[i].Name(), gg[i], ge[i], 1e-4)
				}
			}
		})
	}
}

// TestJitTrainingStepWithBatchNorm compiles forward, backward and the
// running-statistics updates into one graph, as a training step does, and
// checks it against PyNative.
func TestJitTrainingStepWithBatchNorm(t *testing.T) {
	spore.SetSeed(13)
	net := newBNNet()
	spore.SetSeed(13)
	ref := newBNNet()
	net.SetTrain(true)
	ref.SetTrain(true)
	x := ops.Cast(randT(6, -1, 1, 3, 2, 4, 4), tensor.Float32)
	step := func(c *bnNet) func(*spore.Tensor) []*spore.Tensor {
		vg := spore.ValueAndGrad(func(x *spore.Tensor) *spore.Tensor { return ops.Sum(ops.Square(c.Construct(x))) },
			spore.GradPosition(), spore.Weights(c.TrainableParameters()...))
		return func(x *spore.Tensor) []*spore.Tensor {
			l, g := vg(x)
			return append([]*spore.Tensor{l}, g...)
		}
	}
	compiled := spore.Jit(step(net))
	eager := step(ref)
	for range 3 {
		got, want := compiled(x), eager(x)
		for i := range want {
			sameValues(t, "loss and gradients", got[i], want[i], 1e-4)
		}
		sameValues(t, "moving mean", net.BN.MovingMean, ref.BN.MovingMean, 1e-5)
		sameValues(t, "moving variance", net.BN.MovingVariance, ref.BN.MovingVariance, 1e-5)
	}
}
