package onnx_test

import (
	"fmt"

	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/onnx"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/tensor"
)

// Fine-tune an imported CNN: its one-input view goes into a loss cell and
// a training step like any spore network, and its parameters (ONNX's
// initializers) are what the optimiser updates.
func ExampleModel_Layer() {
	m, err := onnx.LoadFile("testdata/torch/cnn.onnx")
	if err != nil {
		fmt.Println(err)
		return
	}
	tensor.SetSeed(1)
	images := tensor.RandNormal(tensor.Float32, 0, 1, 16, 1, 28, 28)
	labels := tensor.FromSlice([]int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5}, 16)
	net := nn.NewWithLossCell(m.Layer(), nn.NewSoftmaxCrossEntropyWithLogits(true, nn.Mean))
	step := nn.NewTrainOneStepCell(net, optim.NewAdam(net.TrainableParameters(), optim.AdamConfig{}))
	first := step.Call(images, labels).Item()
	var last float64
	for range 20 {
		last = step.Call(images, labels).Item()
	}
	fmt.Println("the loss fell:", last < first)
	// Output:
	// the loss fell: true
}
