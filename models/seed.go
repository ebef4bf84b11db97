// Package seednet is the network of MindSpore's execution-mode tutorial,
// shared by the five example programs beside it:
//
//	class Network(nn.Cell):
//	    def __init__(self):
//	        super().__init__()
//	        self.flatten = nn.Flatten()
//	        self.dense_relu_sequential = nn.SequentialCell(
//	            nn.Dense(28*28, 512), nn.ReLU(),
//	            nn.Dense(512, 512), nn.ReLU(),
//	            nn.Dense(512, 10))
//
//	    def construct(self, x):
//	        x = self.flatten(x)
//	        logits = self.dense_relu_sequential(x)
//	        return logits
package seednet

import (
	"github.com/sporeml/spore"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/tensor"
)

// Seed is the framework seed every example sets first, so that all five
// build the same weights and print the same output.
const Seed = 1

// Network is the tutorial's network.
type Network struct {
	nn.Cell
	Flatten             *nn.Flatten
	DenseReluSequential *nn.SequentialCell
}

// Construct flattens the images and applies the dense stack.
func (n *Network) Construct(x *spore.Tensor) *spore.Tensor {
	x = n.Flatten.Call(x)
	return n.DenseReluSequential.Call(x)
}

// New builds the network with fresh weights from the framework seed.
func New() *Network {
	return nn.Init(&Network{
		Flatten: nn.NewFlatten(),
		DenseReluSequential: nn.NewSequentialCell(
			nn.NewDense(28*28, 512), nn.NewReLU(),
			nn.NewDense(512, 512), nn.NewReLU(),
			nn.NewDense(512, 10),
		),
	})
}

// Input is the tutorial's input, ops.ones((64, 1, 28, 28)).
func Input() *spore.Tensor { return tensor.Ones(spore.Float32, 64, 1, 28, 28) }
