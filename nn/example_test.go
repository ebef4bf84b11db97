package nn_test

import (
	"fmt"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/tensor"
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

// A network is a struct embedding Cell, built with Init.
func ExampleInit() {
	spore.SetSeed(1)
	x := ops.Ones(64, 1, 28, 28)
	net := nn.Init(&Network{
		Flatten: nn.NewFlatten(),
		DenseReluSequential: nn.NewSequentialCell(
			nn.NewDense(28*28, 512), nn.NewReLU(),
			nn.NewDense(512, 512), nn.NewReLU(),
			nn.NewDense(512, 10),
		),
	})
	logits := net.Call(x)
	fmt.Println(logits.Shape())
	// Output: [64 10]
}

// The loss and its gradients with respect to every trainable parameter.
func ExampleWithLossCell() {
	spore.SetSeed(1)
	net := newNetwork()
	x := ops.Ones(8, 1, 28, 28)
	labels := tensor.FromSlice([]int32{0, 1, 2, 3, 4, 5, 6, 7}, 8)
	train := nn.NewWithLossCell(net, nn.NewSoftmaxCrossEntropyWithLogits(true, nn.Mean))
	train.SetTrain(true)
	loss, grads := spore.ValueAndGrad(train.Construct, spore.GradPosition(),
		spore.Weights(train.TrainableParameters()...))(x, labels)
	fmt.Println(loss.Shape(), len(grads), grads[0].Shape())
	// Output: [] 6 [512 784]
}

// One training step (forward, backward and the optimiser's update) per
// call; the loss falls on a fixed batch.
func ExampleTrainOneStepCell() {
	spore.SetSeed(1)
	net := newNetwork()
	x := ops.Ones(8, 1, 28, 28)
	labels := tensor.FromSlice([]int32{3, 3, 3, 3, 3, 3, 3, 3}, 8)
	train := nn.NewWithLossCell(net, nn.NewSoftmaxCrossEntropyWithLogits(true, nn.Mean))
	opt := optim.NewSGD(train.TrainableParameters(), optim.SGDConfig{Common: optim.Common{LR: optim.Constant(0.01)}})
	step := nn.NewTrainOneStepCell(train, opt)
	loss := step.Step(x, labels)
	first := loss
	for range 10 {
		loss = step.Step(x, labels)
	}
	fmt.Println(loss < first)
	// Output: true
}
