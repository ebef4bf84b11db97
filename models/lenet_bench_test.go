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
// batch 1, 16, 64, 256 and 1024 (spore bench's sweep), for profiles and
// side-by-side runs of two builds (bench/lenet.sh compares 'spore bench
// --model lenet' with PyTorch and ONNX Runtime). Train/Graph-noconvbackward is the compiled step without
// the convbackward pass (the pooling gradient left as its own op, the
// convolution gradients copying it), so that one run gives that pass's
// ratio.
// Besides wall time it reports cpu-ns/op, the process's CPU time per call
// (Linux only), which on a shared machine excludes the time other
// processes take; at -cpu 1 it is the work itself.
func BenchmarkLeNet(b *testing.B) {
	for _, batch := range []int{1, 16, 64, 256, 1024} {
		for _, m := range []struct {
			name string
			mode spore.Mode
			step nn.StepMode
			off  []string // passes the compiled step skips
		}{{"PyNative", spore.PyNativeMode, nn.StepEager, nil}, {"Graph", spore.GraphMode, nn.StepCompiled, nil},
			{"Graph-noconvbackward", spore.GraphMode, nn.StepCompiled, []string{"convbackward"}}} {
			b.Run(fmt.Sprintf("Infer/%s/batch=%d", m.name, batch), func(b *testing.B) {
				if m.off != nil {
					b.Skip("the pass changes only training steps")
				}
				spore.SetContext(spore.WithMode(m.mode))
				defer spore.SetContext(spore.WithMode(spore.PyNativeMode))
				spore.SetSeed(1)
				net := models.NewLeNet5(10)
				x := randImages(batch)
				outs := []*spore.Tensor{net.Call(x)}
				b.ReportAllocs()
				b.ResetTimer()
				cpu := processCPU()
				for b.Loop() {
					net.CallInto(outs, x)
				}
				reportCPU(b, cpu)
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
				step := nn.NewTrainOneStepCell(nn.NewWithLossCell(net, nn.NewSoftmaxCrossEntropyWithLogits(true, nn.Mean)), opt, nn.TrainOneStepConfig{Mode: m.step, Jit: spore.JitConfig{DisablePasses: m.off}})
				step.Step(x, y)
				b.ReportAllocs()
				b.ResetTimer()
				cpu := processCPU()
				for b.Loop() {
					step.Step(x, y)
				}
				reportCPU(b, cpu)
			})
		}
	}
}

// reportCPU reports the process CPU time per iteration since start, where
// it can be read.
func reportCPU(b *testing.B, start float64) {
	if end := processCPU(); end > 0 && b.N > 0 {
		b.ReportMetric((end-start)*1e9/float64(b.N), "cpu-ns/op")
	}
}
