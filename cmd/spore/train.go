package main

import (
	"fmt"
	"io"
	"math"
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
	mode, model, optimizer, schedule, save, resume, data string
	epochs, batch, steps                                 int
	lr                                                   float64
	seed                                                 int64
}

func cmdTrain(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("train", "Trains a model on MNIST (embedded in spore; --data for other IDX files),\n"+
		"shows progress, and reports test accuracy, wall time and throughput.", stdout)
	var f trainFlags
	fs.StringVar(&f.mode, "mode", "graph", "execution mode: graph or pynative")
	fs.StringVar(&f.model, "model", "mlp", "model: mlp (the seed network), lenet or vit (a vision transformer)")
	fs.IntVar(&f.epochs, "epochs", 0, "training epochs (0: the model's default, "+defaultsHelp(func(d modelDefaults) string { return fmt.Sprint(d.epochs) })+")")
	fs.IntVar(&f.batch, "batch", 0, "batch size (0: the model's default, "+defaultsHelp(func(d modelDefaults) string { return fmt.Sprint(d.batch) })+")")
	fs.Float64Var(&f.lr, "lr", 0, "learning rate, the peak one with --schedule cosine (default: the model's, "+defaultsHelp(func(d modelDefaults) string { return fmt.Sprint(d.lr) })+")")
	fs.StringVar(&f.optimizer, "optimizer", "", "optimizer: sgd, momentum (SGD with momentum 0.9), nesterov, adam or adamw (default: the model's, "+defaultsHelp(func(d modelDefaults) string { return d.optimizer })+")")
	fs.StringVar(&f.schedule, "schedule", "", "learning-rate schedule: constant, or cosine (linear warmup over the first 5% of the steps, then cosine decay to 0 at the last) (default: the model's, "+defaultsHelp(func(d modelDefaults) string { return d.schedule })+")")
	fs.Int64Var(&f.seed, "seed", 1, "framework seed (weights, shuffling)")
	fs.StringVar(&f.save, "save", "", "write a checkpoint here after training (.safetensors or .ckpt)")
	fs.StringVar(&f.resume, "resume", "", "start from this checkpoint (parameters and optimizer state)")
	fs.StringVar(&f.data, "data", "", "directory with the four MNIST-format IDX files (train-* and t10k-*, 28×28 images, labels 0-9) to use instead of MNIST")
	fs.IntVar(&f.steps, "steps", 0, "stop each epoch after this many steps (0: whole epochs)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := f.applyDefaults(fs); err != nil {
		return err
	}
	// Everything that can be refused is refused here, before the data is
	// read or a step is run, so that a bad flag costs no training time.
	if err := setMode(f.mode); err != nil {
		return err
	}
	if err := checkEnv(); err != nil {
		return err
	}
	if f.save != "" {
		if err := checkSavePath(f.save); err != nil {
			return err
		}
	}
	spore.SetSeed(f.seed)
	net, err := newModel(f.model)
	if err != nil {
		return err
	}
	trainSet, err := loadSplit(f.data, trainSplit)
	if err != nil {
		return err
	}
	testSet, err := loadSplit(f.data, testSplit)
	if err != nil {
		return err
	}
	if trainSet.Len() < f.batch {
		// Batches drop the remainder: no step would run.
		return usagef("--batch %d is larger than the %s (%d images); use a smaller --batch", f.batch, dataName(f.data, "training set"), trainSet.Len())
	}
	batches := trainSet.Shuffle(trainSet.Len()).Batch(f.batch, true)
	if f.steps > 0 {
		batches = batches.Take(f.steps)
	}
	// The schedule spans the run, so the optimiser is built once the
	// number of steps is known.
	sched, startAt := newSchedule(f.schedule, f.lr, f.epochs*batches.Len())
	opt, err := newOptimizerWith(f.optimizer, net.Base().TrainableParameters(), sched)
	if err != nil {
		return err
	}
	m := train.NewModel(net, nn.NewSoftmaxCrossEntropyWithLogits(true, nn.Mean), opt, train.NewAccuracy())
	if f.resume != "" {
		if err := m.LoadCheckpoint(f.resume); err != nil {
			return err
		}
		startAt(m.GlobalStep())
		fmt.Fprintf(stdout, "resumed from %s at step %d\n", f.resume, m.GlobalStep())
	}
	mode := modeLabel(f.mode)
	fmt.Fprintf(stdout, "training %s on %d images, %s of %s, batch %d, %s lr %v (%s), %s\n",
		f.model, trainSet.Len(), plural(f.epochs, "epoch"), plural(batches.Len(), "step"), f.batch, f.optimizer, f.lr, f.schedule, mode)

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
	fmt.Fprintf(stdout, "training: %s in %v, %.0f samples/s (%s)\n", plural(bar.total, "step"), wall.Round(time.Millisecond), float64(samples)/wall.Seconds(), mode)
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

// dataName names a split for messages: "--data DIR's training set", or
// "MNIST training set".
func dataName(dir, split string) string {
	if dir == "" {
		return "MNIST " + split
	}
	return "--data " + dir + " " + split
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
	// A diverged run trains on NaN weights to a chance-level accuracy;
	// stop at once, as MindSpore's LossMonitor does, and say what to try.
	if math.IsNaN(ctx.Loss) || math.IsInf(ctx.Loss, 0) {
		ctx.StopWithError(fmt.Errorf("epoch %d step %d: the loss is %v, training diverged; try a smaller --lr", ctx.Epoch, ctx.Step, ctx.Loss))
	}
}

func (c *progressCallback) OnEpochEnd(ctx *train.RunContext) {
	c.p.endEpoch()
	fmt.Fprintf(c.p.w, "epoch %d/%d: mean loss %.4f\n", ctx.Epoch, ctx.Epochs, ctx.Metrics["loss"])
}
