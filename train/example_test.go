package train_test

import (
	"fmt"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/dataset"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/train"
)

// epochPrinter is a user callback printing the mean loss of each epoch.
type epochPrinter struct{ train.BaseCallback }

func (epochPrinter) OnEpochEnd(c *train.RunContext) {
	fmt.Printf("epoch %d: loss below 0.1: %v\n", c.Epoch, c.Metrics["loss"] < 0.1)
}

// Train a small MLP on four separable clusters, then evaluate it.
func Example() {
	x, y := blobs(1, 512, 10, 4)
	trainSet := dataset.FromTensors(x, y).Batch(32, false)
	tx, ty := blobs(2, 256, 10, 4)
	testSet := dataset.FromTensors(tx, ty).Batch(64, false)

	spore.SetSeed(1)
	net := nn.NewSequentialCell(nn.NewDense(10, 32), nn.NewReLU(), nn.NewDense(32, 4))
	opt := optim.NewAdam(net.TrainableParameters(), optim.AdamConfig{
		Common: optim.Common{LR: optim.Constant(0.01)},
	})
	model := train.NewModel(net, nn.NewCrossEntropyLoss("", 0), opt, train.NewAccuracy())
	if err := model.Train(3, trainSet, epochPrinter{}); err != nil {
		fmt.Println(err)
		return
	}
	res, err := model.Eval(testSet)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("steps: %d, test accuracy: %.2f\n", model.GlobalStep(), res["accuracy"])
	// Output:
	// epoch 1: loss below 0.1: false
	// epoch 2: loss below 0.1: true
	// epoch 3: loss below 0.1: true
	// steps: 48, test accuracy: 1.00
}
