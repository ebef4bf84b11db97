package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/comm"
	"github.com/sporeml/spore/dataset"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/profile"
	"github.com/sporeml/spore/train"
)

// trainFlags are the flags train shares with the commands that build a
// model.
type trainFlags struct {
	mode, model, optimizer, schedule, save, resume, data string
	summaryDir, plot, dashboard, lossLog                 string
	dashboardKeep                                        bool
	epochs, batch, steps, histogramFreq                  int
	lr                                                   float64
	seed                                                 int64
}

func cmdTrain(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("train", "Trains a model on MNIST (embedded in spore; --data for other IDX files),\n"+
		"shows progress, and reports test accuracy, wall time and throughput.\n\n"+
		"Launched by mpirun (a binary built with -tags mpi), it trains data-parallel:\n"+
		"--batch is the global batch, split evenly over the processes, and rank 0\n"+
		"alone prints and writes files.\n\n"+
		"Ctrl-C (or SIGTERM) stops training after the step in progress and, with\n"+
		"--save, saves that step's checkpoint (for --resume) before exiting with\n"+
		"status 130 (143 for SIGTERM); a second Ctrl-C ends it at once.", stdout)
	var f trainFlags
	fs.StringVar(&f.mode, "mode", "graph", "execution mode: graph or pynative")
	fs.StringVar(&f.model, "model", "mlp", "model: mlp (the seed network), lenet or vit (a vision transformer)")
	fs.IntVar(&f.epochs, "epochs", 0, "training epochs (0: the model's default, "+defaultsHelp(func(d modelDefaults) string { return fmt.Sprint(d.epochs) })+")")
	fs.IntVar(&f.batch, "batch", 0, "batch size (0: the model's default, "+defaultsHelp(func(d modelDefaults) string { return fmt.Sprint(d.batch) })+")")
	fs.Float64Var(&f.lr, "lr", 0, "learning rate, the peak one with --schedule cosine (default: the model's, "+defaultsHelp(func(d modelDefaults) string { return fmt.Sprint(d.lr) })+")")
	fs.StringVar(&f.optimizer, "optimizer", "", "optimizer: sgd, momentum (SGD with momentum 0.9), nesterov, adam or adamw (default: the model's, "+defaultsHelp(func(d modelDefaults) string { return d.optimizer })+")")
	fs.StringVar(&f.schedule, "schedule", "", "learning-rate schedule: constant, or cosine (linear warmup over the first 5% of the steps, then cosine decay to 0 at the last) (default: the model's, "+defaultsHelp(func(d modelDefaults) string { return d.schedule })+")")
	fs.Int64Var(&f.seed, "seed", 1, "framework seed (weights, shuffling)")
	fs.StringVar(&f.save, "save", "", "write a checkpoint here after training, or when Ctrl-C stops it (.safetensors or .ckpt)")
	fs.StringVar(&f.resume, "resume", "", "start from this checkpoint (parameters and optimizer state)")
	fs.StringVar(&f.data, "data", "", "directory with the four MNIST-format IDX files (train-* and t10k-*, 28×28 images, labels 0-9) to use instead of MNIST")
	fs.IntVar(&f.steps, "steps", 0, "stop each epoch after this many steps (0: whole epochs)")
	fs.StringVar(&f.summaryDir, "summary-dir", "", "write TensorBoard summaries (loss, lr, throughput, accuracy, histograms) and the compiled graphs here")
	fs.IntVar(&f.histogramFreq, "histogram-freq", train.DefaultHistogramFreq, "with --summary-dir: parameter and gradient histograms at the first step and every this many steps (0 or negative: none)")
	fs.StringVar(&f.plot, "plot", "", "draw the per-step loss curve to this .svg file")
	fs.StringVar(&f.dashboard, "dashboard", "", "serve the dashboard of this run at host:port (127.0.0.1:6006) while it trains, over --summary-dir or a temporary directory")
	fs.BoolVar(&f.dashboardKeep, "dashboard-keep", false, "keep serving the --dashboard after training, until Ctrl-C")
	fs.StringVar(&f.lossLog, "loss-log", "", "write every step's loss to this file when training ends: one line per step, the global step and the loss (the global batch's, under mpirun)")
	ampFlag := fs.String("amp-level", "O0", "mixed precision, MindSpore's amp_level: O0 (float32), O2 (matmuls and convolutions in bfloat16 with float32 master weights) or O3 (every op with a bfloat16 kernel in bfloat16)")
	var sink sinkFlag
	sink.register(fs)
	var prof profileFlags
	prof.register(fs, false)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := prof.check(); err != nil {
		return err
	}
	amp, err := parseAmpLevel(*ampFlag)
	if err != nil {
		return err
	}
	if err := f.applyDefaults(fs); err != nil {
		return err
	}
	// Under mpirun every process runs this command; comm tells them
	// apart. Started before anything else so that the checks below can
	// look at the rank, and finished only at the end of a successful run
	// (not in a defer, which a panic would run too): a process that fails
	// exits without finishing, and mpirun then stops the others, which
	// may be waiting for it in a collective that would never complete.
	dp, err := startParallel(f.batch)
	if err != nil {
		return err
	}
	if dp.rank != 0 {
		// Rank 0 reports, logs and serves for all: the ranks' replicas
		// are the same model.
		stdout = io.Discard
		f.summaryDir, f.plot, f.dashboard, f.dashboardKeep = "", "", "", false
	}
	// Everything that can be refused is refused here, before the data is
	// read or a step is run, so that a bad flag costs no training time.
	if err := setMode(f.mode); err != nil {
		return err
	}
	if err := checkEnv(); err != nil {
		return err
	}
	if err := sink.check(dp.size); err != nil {
		return err
	}
	// Rank 0 writes the files; the others may run where the paths do
	// not exist.
	for _, out := range []struct{ flag, path string }{{"--save", f.save}, {"--loss-log", f.lossLog}} {
		if out.path == "" || dp.rank != 0 {
			continue
		}
		check := checkSavePath
		if out.flag == "--loss-log" {
			check = func(p string) error { return checkOutPath("--loss-log", p) }
		}
		if err := check(out.path); err != nil {
			return err
		}
	}
	if f.summaryDir != "" {
		if err := checkSummaryDir(f.summaryDir); err != nil {
			return err
		}
	}
	if f.plot != "" {
		if err := checkPlotPath(f.plot); err != nil {
			return err
		}
	}
	dash, err := serveTraining(f.dashboard, &f.summaryDir, f.dashboardKeep, stdout)
	if err != nil {
		return err
	}
	defer dash.close()
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
	// Every rank shuffles alike (the same seed) and takes its part of
	// each global batch: together the ranks' batches are the batches of a
	// single process.
	batches, err := trainSet.Shuffle(trainSet.Len()).ShardedBatch(f.batch, true, dp.size, dp.rank)
	if err != nil {
		return err
	}
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
	m.AmpLevel = amp
	sink.apply(m, batches.Len())
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
	if amp != nn.O0 {
		fmt.Fprintf(stdout, "mixed precision: amp level %s, bfloat16 with float32 master weights\n", amp)
	}
	if dp.size > 1 {
		fmt.Fprintf(stdout, "data parallel: %d processes (%s), %d samples per process per step\n", dp.size, comm.Backend(), f.batch/dp.size)
	}

	// mpirun forwards the ranks' output line by line, through a terminal
	// of its own: a bar redrawn in place would come out as one long line.
	tty := stdout == io.Writer(os.Stdout) && isTerminal(os.Stdout) && dp.size == 1
	bar := &progressCallback{p: newProgress(stdout, tty, f.epochs, f.batch), steps: batches.Len()}
	callbacks := []train.Callback{bar}
	var losses *lossRecorder
	if f.lossLog != "" {
		losses = &lossRecorder{}
		callbacks = append(callbacks, losses)
	}
	var collector *train.SummaryCollector
	if f.summaryDir != "" {
		freq := f.histogramFreq
		if freq == 0 {
			freq = -1 // no histograms, as "every 0 steps" reads
		}
		if collector, err = train.NewSummaryCollector(f.summaryDir, train.SummaryConfig{HistogramFreq: freq}); err != nil {
			return err
		}
		defer collector.Close()
		callbacks = append(callbacks, collector)
	}
	var curve *lossCurve
	if f.plot != "" {
		curve = &lossCurve{}
		callbacks = append(callbacks, curve)
	}
	// Ctrl-C stops training at the end of the step in progress and saves
	// that step's checkpoint (see interrupt); not under mpirun.
	var intr *interrupt
	if dp.size == 1 {
		intr = catchInterrupt()
		defer intr.stop()
		callbacks = append(callbacks, intr)
	}
	session, err := prof.start()
	if err != nil {
		return err
	}
	start := time.Now()
	err = m.Train(f.epochs, batches, callbacks...)
	var profiled *profile.Report
	if session != nil {
		profiled = session.Stop()
	}
	if err != nil {
		return err
	}
	if sig := intr.received(); sig != nil {
		return interrupted(sig, m, f.save)
	}
	wall := time.Since(start)
	samples := bar.total * f.batch

	if dp.size > 1 {
		// Data parallelism promises identical replicas; check it, so that
		// the report below speaks for every rank's weights.
		if err := m.CheckReplicas(); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "replicas: the parameters of all %d processes are bitwise identical\n", dp.size)
	}
	// Each rank evaluates its shard of the test set; Eval adds the counts.
	acc, evaluated, err := accuracy(m, testSet.Shard(dp.size, dp.rank))
	if err != nil {
		return err
	}
	if sig := intr.received(); sig != nil {
		// Training ended; the interrupt came during the evaluation.
		return interrupted(sig, m, f.save)
	}
	fmt.Fprintf(stdout, "test accuracy %.2f%% on %d images\n", 100*acc, evaluated)
	if collector != nil {
		collector.Writer().AddScalar("eval/accuracy", int64(m.GlobalStep()), acc)
		if err := collector.Close(); err != nil {
			return err
		}
		over := collector.Overhead()
		fmt.Fprintf(stdout, "summaries in %s (logging took %v, %.1f%% of the training time)\n", f.summaryDir, over.Round(time.Millisecond), 100*over.Seconds()/wall.Seconds())
	}
	if curve != nil {
		if err := curve.writePlot(f.plot, f.model, mode, stdout); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "training: %s in %v, %.0f samples/s (%s)\n", plural(bar.total, "step"), wall.Round(time.Millisecond), float64(samples)/wall.Seconds(), mode)
	if st := m.TrainCell().StepStats(); st.Compiles > 0 {
		fmt.Fprintf(stdout, "graph: %d compilation(s), %v compiling, %d cached steps\n", st.Compiles, st.CompileTime.Round(time.Microsecond), st.Hits)
	}
	sink.report(m, stdout)
	if err := prof.report(profiled, stdout, f.summaryDir); err != nil {
		return err
	}
	if f.save != "" {
		if err := m.SaveCheckpoint(f.save); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "saved %s\n", f.save)
	}
	if losses != nil && dp.rank == 0 {
		if err := losses.write(f.lossLog); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %d losses to %s\n", len(losses.lines), f.lossLog)
	}
	intr.stop() // a Ctrl-C from here on is --dashboard-keep's
	dash.finish()
	return finishParallel()
}

// accuracy evaluates m on the test set in batches of 1000 and returns the
// accuracy and the number of images it counts (over all ranks, under
// data parallelism). m's metrics must include a *train.Accuracy.
func accuracy(m *train.Model, test *dataset.Dataset) (float64, int, error) {
	res, err := m.Eval(test.Batch(1000, false))
	if err != nil {
		return 0, 0, err
	}
	n := 0
	for _, mt := range m.Metrics {
		if a, ok := mt.(*train.Accuracy); ok {
			n = int(a.Sums()[1])
		}
	}
	return res["accuracy"], n, nil
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
