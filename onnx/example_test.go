package onnx_test

import (
	"fmt"

	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/onnx"
	"github.com/sporeml/spore/tensor"
)

// Load a CNN exported by torch.onnx.export, look at its inputs and
// parameters, and run it eagerly and compiled.
func Example() {
	m, err := onnx.LoadFile("testdata/torch/cnn.onnx")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("inputs:", m.Inputs())
	fmt.Println("outputs:", m.OutputInfo())
	for _, p := range m.NamedParameters()[:6] {
		fmt.Println(p.Name, p.Tensor.Shape(), "trainable:", p.Tensor.RequiresGrad())
	}

	x := tensor.Ones(tensor.Float32, 3, 1, 28, 28) // any batch size
	eager := m.Call(x)
	compiled := nn.Jit(m).Call(x)
	fmt.Println(eager.Shape(), compiled.Shape())

	// Bad input is a clear error from Run (Call panics with it).
	_, err = m.Run(tensor.Ones(tensor.Float32, 3, 28, 28))
	fmt.Println(err)
	// Output:
	// inputs: [x [batch 1 28 28] Float32]
	// outputs: [logits [batch 10] Float32]
	// conv1.weight [8 1 3 3] trainable: true
	// conv1.bias [8] trainable: true
	// bn1.weight [8] trainable: true
	// bn1.bias [8] trainable: true
	// bn1.running_mean [8] trainable: false
	// bn1.running_var [8] trainable: false
	// [3 10] [3 10]
	// spore: onnx.Model: input "x" has shape [3 28 28], the model wants x [batch 1 28 28] Float32
}

// Check describes a model without loading its weights: what `spore onnx
// check` prints.
func ExampleCheckFile() {
	rep, err := onnx.CheckFile("testdata/torch/mlp.onnx")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(rep)
	// Output:
	// ONNX IR version 8, ai.onnx opset 17, producer pytorch 1.13.0
	// graph "torch_jit": 5 nodes, 6 initializers (2058 values)
	// input   x [4 20] Float32
	// output  y [4 10] Float32
	// ops: Gemm 3, Relu 2
	// unsupported ops: none
	// spore can load this model
}
