package models

import (
	"github.com/sporeml/spore"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/tensor"
)

// Network is the network of MindSpore's execution-mode tutorial, spore's
// seed network:
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

// NewNetwork builds the network with fresh weights from the framework seed.
func NewNetwork() *Network {
	return nn.Init(&Network{
		Flatten: nn.NewFlatten(),
		DenseReluSequential: nn.NewSequentialCell(
			nn.NewDense(28*28, 512), nn.NewReLU(),
			nn.NewDense(512, 512), nn.NewReLU(),
			nn.NewDense(512, 10),
		),
	})
}

// Ones is the tutorial's input, ops.ones((batch, 1, 28, 28)).
func Ones(batch int) *spore.Tensor { return tensor.Ones(spore.Float32, batch, 1, 28, 28) }
