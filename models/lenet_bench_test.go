package models_test

import (
	"fmt"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/models"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/tensor"
)

// BenchmarkLeNet times LeNet-5 (as spore train --model lenet builds it)
// inference and one SGD training step with cross-entropy, in both modes, at
// batch 1 and 64. bench/lenet.sh runs it beside PyTorch and ONNX Runtime.
func BenchmarkLeNet(b *testing.B) {
	for _, batch := range []int{1, 64} {
		for _, m := range []struct {
			name string
			mode spore.Mode
			step nn.StepMode
		}{{"PyNative", spore.PyNativeMode, nn.StepEager}, {"Graph", spore.GraphMode, nn.StepCompiled}} {
			b.Run(fmt.Sprintf("Infer/%s/batch=%d", m.name, batch), func(b *testing.B) {
				spore.SetContext(spore.WithMode(m.mode))
				defer spore.SetContext(spore.WithMode(spore.PyNativeMode))
				spore.SetSeed(1)
				net := models.NewLeNet5(10)
				x := randImages(batch)
				outs := []*spore.Tensor{net.Call(x)}
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					net.CallInto(outs, x)
				}
			})
			b.Run(fmt.Sprintf("Train/%s/batch=%d", m.name, batch), func(b *testing.B) {
				spore.SetSeed(1)
				net := models.NewLeNet5(10)
				x := randImages(batch)
				labels := make([]int32, batch)
				for i := range labels {
					labels[i] = int32(i % 10)
				}
				y := tensor.FromSlice(labels, batch)
				opt := optim.NewSGD(net.TrainableParameters(), optim.SGDConfig{Common: optim.Common{LR: optim.Constant(0.01)}})
				step := nn.NewTrainOneStepCell(nn.NewWithLossCell(net, nn.NewSoftmaxCrossEntropyWithLogits(true, nn.Mean)), opt, nn.TrainOneStepConfig{Mode: m.step})
				step.Step(x, y)
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					step.Step(x, y)
				}
			})
		}
	}
}
