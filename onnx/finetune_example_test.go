package onnx_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/onnx"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/tensor"
	"github.com/sporeml/spore/train"
)

// The whole round trip: a CNN exported by PyTorch is loaded, fine-tuned,
// saved as a checkpoint under its ONNX names and exported again as ONNX.
func Example_fineTune() {
	dir, err := os.MkdirTemp("", "finetune")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	tensor.SetSeed(1)
	images := tensor.RandNormal(tensor.Float32, 0, 1, 8, 1, 28, 28)
	labels := tensor.FromSlice([]int32{0, 1, 2, 3, 4, 5, 6, 7}, 8)

	m, err := onnx.LoadFile("testdata/torch/cnn.onnx")
	if err != nil {
		fmt.Println(err)
		return
	}
	net := nn.NewWithLossCell(m.Layer(), nn.NewSoftmaxCrossEntropyWithLogits(true, nn.Mean))
	step := nn.NewTrainOneStepCell(net, optim.NewAdam(net.TrainableParameters(), optim.AdamConfig{}))
	for range 5 {
		step.Call(images, labels)
	}
	if err := train.SaveCheckpoint(m, filepath.Join(dir, "tuned.safetensors")); err != nil {
		fmt.Println(err)
		return
	}
	if err := onnx.Export(m, []*tensor.Tensor{images}, filepath.Join(dir, "tuned.onnx"), onnx.DynamicBatch()); err != nil {
		fmt.Println(err)
		return
	}

	back, err := onnx.LoadFile(filepath.Join(dir, "tuned.onnx"))
	if err != nil {
		fmt.Println(err)
		return
	}
	x := tensor.Ones(tensor.Float32, 3, 1, 28, 28)
	a, b := m.Call(x).Float32s(), back.Call(x).Float32s()
	worst := 0.0
	for i := range a {
		worst = max(worst, float64(a[i]-b[i]), float64(b[i]-a[i]))
	}
	fmt.Println("exported and reloaded, batch 3, largest difference below 1e-5:", worst < 1e-5)
	fmt.Println(m.NamedParameters()[0].Name, "is", back.NamedParameters()[0].Name)
	// Output:
	// exported and reloaded, batch 3, largest difference below 1e-5: true
	// conv1.weight is conv1.weight
}
