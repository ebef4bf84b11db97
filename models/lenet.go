package models

import (
	"github.com/sporeml/spore"
	"github.com/sporeml/spore/nn"
)

// LeNet5 is MindSpore's LeNet-5 (its model zoo's lenet.py) for 28×28
// single-channel images: two valid 5×5 convolutions with ReLU and 2×2 max
// pooling (28 → 24 → 12 → 8 → 4), then dense layers 256 → 120 → 84 →
// classes.
type LeNet5 struct {
	nn.Cell
	Conv1, Conv2  *nn.Conv2d
	ReLU          *nn.ReLU
	MaxPool2d     *nn.MaxPool2d
	Flatten       *nn.Flatten
	Fc1, Fc2, Fc3 *nn.Dense
}

// Construct classifies a batch of [N, 1, 28, 28] images.
func (l *LeNet5) Construct(x *spore.Tensor) *spore.Tensor {
	x = l.MaxPool2d.Call(l.ReLU.Call(l.Conv1.Call(x)))
	x = l.MaxPool2d.Call(l.ReLU.Call(l.Conv2.Call(x)))
	x = l.Flatten.Call(x)
	x = l.ReLU.Call(l.Fc1.Call(x))
	x = l.ReLU.Call(l.Fc2.Call(x))
	return l.Fc3.Call(x)
}

// NewLeNet5 builds LeNet-5 with the given number of classes, with weights
// from the framework seed.
func NewLeNet5(classes int) *LeNet5 {
	valid := nn.Conv2dConfig{PadMode: "valid"}
	return nn.Init(&LeNet5{
		Conv1:     nn.NewConv2d(1, 6, 5, valid),
		Conv2:     nn.NewConv2d(6, 16, 5, valid),
		ReLU:      nn.NewReLU(),
		MaxPool2d: nn.NewMaxPool2d(2, 2, "valid"),
		Flatten:   nn.NewFlatten(),
		Fc1:       nn.NewDense(16*4*4, 120),
		Fc2:       nn.NewDense(120, 84),
		Fc3:       nn.NewDense(84, classes),
	})
}
