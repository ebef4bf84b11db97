package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/dataset"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/train"
)

// trainFlags are the flags train shares with the commands that build a
// model.
type trainFlags struct {
	mode, model, optimizer, save, resume, data string
	epochs, batch, steps                       int
	lr                                         float64
	seed                                       int64
}

func cmdTrain(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("train", "Trains a model on MNIST (embedded in spore; --data for other IDX files),\n"+
		"shows progress, and reports test accuracy, wall time and throughput.", stdout)
	var f trainFlags
	fs.StringVar(&f.mode, "mode", "graph", "execution mode: graph or pynative")
	fs.StringVar(&f.model, "model", "mlp", "model: mlp (the seed network) or lenet")
	fs.IntVar(&f.epochs, "epochs", 0, "training epochs (0: the model's default, 3 for mlp and 5 for lenet)")
	fs.IntVar(&f.batch, "batch", 64, "batch size")
	fs.Float64Var(&f.lr, "lr", 0.01, "learning rate")
	fs.StringVar(&f.optimizer, "optimizer", "momentum", "optimizer: sgd, momentum (SGD with momentum 0.9), nesterov, adam or adamw")
	fs.Int64Var(&f.seed, "seed", 1, "framework seed (weights, shuffling)")
	fs.StringVar(&f.save, "save", "", "write a checkpoint here after training (.safetensors or .ckpt)")
	fs.StringVar(&f.resume, "resume", "", "start from this checkpoint (parameters and optimizer state)")
	fs.StringVar(&f.data, "data", "", "directory with the four MNIST-format IDX files to use instead of MNIST")
	fs.IntVar(&f.steps, "steps", 0, "stop each epoch after this many steps (0: whole epochs)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if f.epochs < 0 || f.batch <= 0 || f.steps < 0 {
		return usagef("--batch must be positive and --epochs and --steps not negative")
	}
	if f.epochs == 0 {
		// Enough for the MLP to pass 97% and LeNet-5 98.5% on MNIST.
		f.epochs = map[string]int{"mlp": 3, "lenet": 5}[f.model]
	}
	if err := setMode(f.mode); err != nil {
		return err
	}
	spore.SetSeed(f.seed)
	net, err := newModel(f.model)
	if err != nil {
		return err
	}
	opt, err := newOptimizer(f.optimizer, net.Base().TrainableParameters(), f.lr)
	if err != nil {
		return err
	}
	m := train.NewModel(net, nn.NewSoftmaxCrossEntropyWithLogits(true, nn.Mean), opt, train.NewAccuracy())
	if f.resume != "" {
		if err := m.LoadCheckpoint(f.resume); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "resumed from %s at step %d\n", f.resume, m.GlobalStep())
	}
	trainSet, testSet, err := loadData(f.data)
	if err != nil {
		return err
	}
	batches := trainSet.Shuffle(trainSet.Len()).Batch(f.batch, true)
	if f.steps > 0 {
		batches = batches.Take(f.steps)
	}
	fmt.Fprintf(stdout, "training %s on %d images, %d epochs of %d steps, batch %d, %s, %s mode\n",
		f.model, trainSet.Len(), f.epochs, batches.Len(), f.batch, f.optimizer, f.mode)

	bar := &progressCallback{p: newProgress(stdout, stdout == io.Writer(os.Stdout) && isTerminal(os.Stdout), f.epochs, f.batch), steps: batches.Len()}
	start := time.Now()
	if err := m.Train(f.epochs, batches, bar); err != nil {
		return err
	}
	wall := time.Since(start)
	samples := bar.total * f.batch

	acc, err := accuracy(m, testSet)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "test accuracy %.2f%% on %d images\n", 100*acc, testSet.Len())
	fmt.Fprintf(stdout, "training: %d steps in %v, %.0f samples/s (%s mode)\n", bar.total, wall.Round(time.Millisecond), float64(samples)/wall.Seconds(), f.mode)
	if st := m.TrainCell().StepStats(); st.Compiles > 0 {
		fmt.Fprintf(stdout, "graph: %d compilation(s), %v compiling, %d cached steps\n", st.Compiles, st.CompileTime.Round(time.Microsecond), st.Hits)
	}
	if f.save != "" {
		if err := m.SaveCheckpoint(f.save); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "saved %s\n", f.save)
	}
	return nil
}

// accuracy evaluates m on the test set in batches of 1000.
func accuracy(m *train.Model, test *dataset.Dataset) (float64, error) {
	res, err := m.Eval(test.Batch(1000, false))
	if err != nil {
		return 0, err
	}
	return res["accuracy"], nil
}

// progressCallback drives the progress display from the training loop.
type progressCallback struct {
	train.BaseCallback
	p     *progress
	steps int // steps per epoch
	total int // steps run
}

func (c *progressCallback) OnEpochBegin(ctx *train.RunContext) { c.p.beginEpoch(ctx.Epoch, c.steps) }

func (c *progressCallback) OnStepEnd(ctx *train.RunContext) {
	c.total++
	c.p.step(ctx.Step, ctx.Loss)
}

func (c *progressCallback) OnEpochEnd(ctx *train.RunContext) {
	c.p.endEpoch()
	fmt.Fprintf(c.p.w, "epoch %d/%d: mean loss %.4f\n", ctx.Epoch, ctx.Epochs, ctx.Metrics["loss"])
}
