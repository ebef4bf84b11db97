package train_test

import (
	"fmt"
	"os"

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

// fitSmall trains a small MLP with a loss monitor and checkpoints every
// epoch, keeping the last three in dir, then evaluates it.
func fitSmall(dir string) (map[string]float64, error) {
	x, y := blobs(3, 256, 10, 4)
	ds := dataset.FromTensors(x, y).Batch(32, false) // 8 steps per epoch
	tx, ty := blobs(4, 128, 10, 4)
	testSet := dataset.FromTensors(tx, ty).Batch(64, false)
	spore.SetSeed(1)
	net := nn.NewSequentialCell(nn.NewDense(10, 32), nn.NewReLU(), nn.NewDense(32, 4))
	opt := optim.NewAdam(net.TrainableParameters(), optim.AdamConfig{Common: optim.Common{LR: optim.Constant(0.01)}})

	model := train.NewModel(net, nn.NewCrossEntropyLoss("", 0), opt, train.NewAccuracy())
	err := model.Train(10, ds, train.NewLossMonitor(100),
		train.NewModelCheckpoint(train.CheckpointConfig{Dir: dir, SaveEpochs: 1, KeepLast: 3}))
	if err != nil {
		return nil, err
	}
	return model.Eval(testSet) // map[accuracy:0.97]
}

func ExampleModel_Train() {
	dir, err := os.MkdirTemp("", "ckpt")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	res, err := fitSmall(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	files, err := os.ReadDir(dir)
	fmt.Printf("%d checkpoints kept (%v), accuracy above 0.9: %v\n", len(files), err, res["accuracy"] > 0.9)
	// Output: 3 checkpoints kept (<nil>), accuracy above 0.9: true
}

// Any *dataset.Dataset is a Dataset for Train, Fit and Eval.
func ExampleModel_Eval() {
	images, labels := blobs(5, 128, 10, 4)
	ds := dataset.FromTensors(images, labels).Shuffle(60000).Batch(64, true)
	spore.SetSeed(1)
	net := nn.NewSequentialCell(nn.NewDense(10, 4))
	model := train.NewModel(net, nn.NewCrossEntropyLoss("", 0), nil, train.NewAccuracy())
	res, err := model.Eval(ds)
	fmt.Println(len(res), err)
	// Output: 1 <nil>
}
