package models_test

import (
	"fmt"
	"log"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/dataset/mnist"
	"github.com/sporeml/spore/models"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/train"
)

// The seed network, run eagerly and then in Graph mode.
func Example_modes() {
	defer spore.SetContext(spore.WithMode(spore.GetContext().Mode))
	spore.SetSeed(1)

	net := models.NewNetwork()
	x := spore.Ones(spore.Float32, 64, 1, 28, 28)
	fmt.Println(net.Call(x).Shape()) // PyNative: runs now

	spore.SetContext(spore.WithMode(spore.GraphMode))
	fmt.Println(net.Call(x).Shape()) // traced, optimised, compiled once per input signature
	// Output:
	// [64 10]
	// [64 10]
}

// Three epochs of MNIST with SGD and momentum, as `spore train` does. It is
// compiled but not run by go test: a full training run takes too long for a
// unit test.
func Example_train() {
	net := models.NewNetwork()
	opt := optim.NewSGD(net.TrainableParameters(), optim.SGDConfig{Momentum: 0.9, Common: optim.Common{LR: optim.Constant(0.01)}})
	model := train.NewModel(net, nn.NewSoftmaxCrossEntropyWithLogits(true, nn.Mean), opt, train.NewAccuracy())
	trainSet, err := mnist.Train(mnist.Normalize())
	if err != nil {
		log.Fatal(err)
	}
	if err := model.Train(3, trainSet.Shuffle(60000).Batch(64, true), train.NewLossMonitor(100)); err != nil {
		log.Fatal(err)
	}
}
