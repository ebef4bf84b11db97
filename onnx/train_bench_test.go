package onnx

import (
	"github.com/sporeml/spore/internal/testkit"
	"os"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/tensor"
)

// BenchmarkTrainStepResNet18 times one Graph-mode training step of
// torchvision's resnet18 exported to ONNX (SGD with momentum, softmax
// cross-entropy) at batch 16, the measure of the convolution gradients,
// BatchNorm's training pass and the optimiser together. The model is read
// from SPORE_RESNET18_ONNX (default ../bench/models/resnet18.onnx, as bench/vision.sh exports it); the
// benchmark is skipped when it is absent.
func BenchmarkTrainStepResNet18(b *testing.B) {
	path := os.Getenv("SPORE_RESNET18_ONNX")
	if path == "" {
		path = "../bench/models/resnet18.onnx"
	}
	if _, err := os.Stat(path); err != nil {
		b.Skipf("no model at %s: %v", path, err)
	}
	m, err := LoadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	const batch = 16
	tensor.SetSeed(1)
	x := tensor.RandNormal(tensor.Float32, 0, 1, batch, 3, 224, 224)
	labels := make([]int32, batch)
	for i := range labels {
		labels[i] = int32(i * 37 % 1000)
	}
	y := tensor.FromSlice(labels, batch)
	m.SetTrain(true)
	net := nn.NewWithLossCell(m.Layer(), nn.NewSoftmaxCrossEntropyWithLogits(true, nn.Mean))
	step := nn.NewTrainOneStepCell(net, optim.NewSGD(net.TrainableParameters(),
		optim.SGDConfig{Common: optim.Common{LR: optim.Constant(0.01)}, Momentum: 0.9}))
	inMode(spore.GraphMode, func() {
		step.Call(x, y) // trace and compile
		b.ResetTimer()
		cpu0 := testkit.ProcessCPU().Seconds()
		for range b.N {
			step.Call(x, y).Item()
		}
		// Wall time on a shared machine includes what other processes
		// take; CPU time (both threads together) does not.
		b.ReportMetric((testkit.ProcessCPU().Seconds()-cpu0)*1e3/float64(b.N), "cpu-ms/op")
	})
}
