package train_test

import (
	"fmt"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/comm"
	"github.com/sporeml/spore/dataset"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/train"
)

// Data-parallel training as a program launched by mpirun writes it: the
// same code runs in every rank (and, as here, in one process, where comm
// has one rank and the all-reduce of the gradients is an identity).
func Example_dataParallel() {
	x, y := blobs(1, 512, 10, 4)
	ds := dataset.FromTensors(x, y)
	n, globalBatch := ds.Len(), 32
	run := func() error {
		if err := comm.Init(); err != nil { // MPI under mpirun; one process otherwise
			return err
		}
		defer comm.Finalize()
		spore.SetAutoParallelContext(spore.AutoParallelContext{ParallelMode: spore.DataParallel, GradientsMean: true})
		batches, err := ds.Shuffle(n).ShardedBatch(globalBatch, true, comm.Size(), comm.Rank())
		// ... model.Train(epochs, batches): broadcast at start, rank-0 checkpoints, metrics summed over ranks
		if err != nil {
			return err
		}
		defer spore.ResetAutoParallelContext()
		spore.SetSeed(1)
		net := nn.NewSequentialCell(nn.NewDense(10, 32), nn.NewReLU(), nn.NewDense(32, 4))
		opt := optim.NewAdam(net.TrainableParameters(), optim.AdamConfig{Common: optim.Common{LR: optim.Constant(0.01)}})
		model := train.NewModel(net, nn.NewCrossEntropyLoss("", 0), opt, train.NewAccuracy())
		if err := model.Train(3, batches); err != nil {
			return err
		}
		res, err := model.Eval(batches)
		if err != nil {
			return err
		}
		fmt.Printf("%d rank(s), accuracy above 0.9: %v\n", comm.Size(), res["accuracy"] > 0.9)
		return nil
	}
	if err := run(); err != nil {
		fmt.Println(err)
	}
	// Output: 1 rank(s), accuracy above 0.9: true
}
