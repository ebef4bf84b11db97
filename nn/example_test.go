package nn_test

import (
	"fmt"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/ops"
)

// Network is the seed network of the MindSpore quick start.
type Network struct {
	nn.Cell
	Flatten             *nn.Flatten
	DenseReluSequential *nn.SequentialCell
}

// Construct flattens the images and runs the MLP.
func (n *Network) Construct(x *spore.Tensor) *spore.Tensor {
	return n.DenseReluSequential.Call(n.Flatten.Call(x))
}

func newNetwork() *Network {
	return nn.Init(&Network{
		Flatten: nn.NewFlatten(),
		DenseReluSequential: nn.NewSequentialCell(
			nn.NewDense(28*28, 512), nn.NewReLU(),
			nn.NewDense(512, 512), nn.NewReLU(),
			nn.NewDense(512, 10),
		),
	})
}

func Example() {
	spore.SetSeed(1)
	net := newNetwork()
	for _, p := range net.NamedParameters() {
		fmt.Println(p.Name, p.Tensor.Shape())
	}
	logits := net.Call(ops.Ones(64, 1, 28, 28))
	fmt.Printf("(%d, %d)\n", logits.Dim(0), logits.Dim(1)) // MindSpore prints shapes as tuples
	// Output:
	// dense_relu_sequential.0.weight [512 784]
	// dense_relu_sequential.0.bias [512]
	// dense_relu_sequential.2.weight [512 512]
	// dense_relu_sequential.2.bias [512]
	// dense_relu_sequential.4.weight [10 512]
	// dense_relu_sequential.4.bias [10]
	// (64, 10)
}
