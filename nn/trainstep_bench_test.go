package nn_test

import (
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/tensor"
)

// The seed network's training step through TrainOneStepCell (Flatten →
// Dense 784→512 → ReLU → Dense 512→512 → ReLU → Dense 512→10, batch 64,
// SGD with momentum 0.9, CrossEntropyLoss), eagerly and as one compiled
// graph. Compare side by side in one run:
//
//	go test -run XXX -bench TrainOneStep -benchmem ./nn

func seedTrainCell(mode nn.StepMode) (*nn.TrainOneStepCell, *spore.Tensor, *spore.Tensor) {
	spore.SetSeed(1)
	net := nn.Init(&Network{
		Flatten: nn.NewFlatten(),
		DenseReluSequential: nn.NewSequentialCell(
			nn.NewDense(28*28, 512), nn.NewReLU(),
			nn.NewDense(512, 512), nn.NewReLU(),
			nn.NewDense(512, 10),
		),
	})
	wl := nn.NewWithLossCell(net, nn.NewCrossEntropyLoss("", 0))
	opt := optim.NewSGD(wl.TrainableParameters(), optim.SGDConfig{Common: optim.Common{LR: optim.Constant(0.01)}, Momentum: 0.9})
	x := tensor.RandNormal(tensor.Float32, 0, 1, 64, 1, 28, 28)
	labels := make([]int32, 64)
	for i := range labels {
		labels[i] = int32(i % 10)
	}
	return nn.NewTrainOneStepCell(wl, opt, nn.TrainOneStepConfig{Mode: mode}), x, tensor.FromSlice(labels, 64)
}

func BenchmarkTrainOneStepSeedPyNative(b *testing.B) {
	cell, x, y := seedTrainCell(nn.StepEager)
	b.ReportAllocs()
	for b.Loop() {
		cell.Step(x, y)
	}
}

func BenchmarkTrainOneStepSeedGraph(b *testing.B) {
	cell, x, y := seedTrainCell(nn.StepCompiled)
	cell.Step(x, y)
	b.ReportAllocs()
	for b.Loop() {
		cell.Step(x, y)
	}
	b.ReportMetric(float64(cell.StepStats().LastCompileTime.Microseconds())/1000, "compile-ms")
}
