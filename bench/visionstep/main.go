// Command visionstep times an imported ONNX image model in spore's Graph
// mode, for bench/vision.sh: a training step through nn.TrainOneStepCell,
// or inference, optionally under a CPU profile.
//
// The model's one input is the float32 batch in -input (a .npy file), or
// else standard-normal images (seed 0) of shape [batch, 3, size, size]. In -mode train the step is forward
// (training mode), softmax cross-entropy against the labels i mod classes
// (mean over the batch), backward and SGD with momentum (lr 0.01, momentum
// 0.9), compiled into one graph (nn.StepCompiled). In -mode infer it is
// onnx.Model.Run, which compiles the model's graph on first use.
//
// It prints one JSON object: us_per_call is the best, over -rounds rounds
// of -calls calls, of the mean time per call after -warmup calls; threads
// is parallel.Workers(), the kernels' thread count, which follows
// GOMAXPROCS unless -threads sets it; first_loss and second_loss (train)
// are the first two steps' losses (before and after one update), to
// compare with PyTorch's on the same weights and images.
//
//	go run ./bench/visionstep -model M.onnx [-mode train|infer] [-input X.npy | -batch 16]
//	    [-calls 3] [-rounds 3] [-warmup 1] [-threads N] [-cpuprofile F]
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/kernels/parallel"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/npy"
	"github.com/sporeml/spore/onnx"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/tensor"
)

// result is the JSON line visionstep prints; its keys are stable.
type result struct {
	Model       string  `json:"model"`
	Mode        string  `json:"mode"`
	Threads     int     `json:"threads"`
	GOMAXPROCS  int     `json:"gomaxprocs"`
	Batch       int     `json:"batch"`
	Calls       int     `json:"calls"`
	Rounds      int     `json:"rounds"`
	FirstCallMS float64 `json:"first_call_ms"`
	USPerCall   float64 `json:"us_per_call"`
	FirstLoss   float64 `json:"first_loss,omitempty"`
	SecondLoss  float64 `json:"second_loss,omitempty"`
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "visionstep:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("visionstep", flag.ContinueOnError)
	model := fs.String("model", "", "the ONNX model file (one float32 image input, logits output)")
	input := fs.String("input", "", "the input batch, a float32 .npy file (default: -batch random images)")
	mode := fs.String("mode", "train", "train (a TrainOneStepCell step) or infer")
	batch := fs.Int("batch", 16, "batch size")
	size := fs.Int("size", 224, "image height and width")
	classes := fs.Int("classes", 1000, "number of classes the labels cycle through (train)")
	calls := fs.Int("calls", 3, "calls per timing round")
	rounds := fs.Int("rounds", 3, "timing rounds; the best is reported")
	warmup := fs.Int("warmup", 1, "untimed calls after the first (compiling) one")
	threads := fs.Int("threads", 0, "kernel threads (0: GOMAXPROCS)")
	profile := fs.String("cpuprofile", "", "write a CPU profile of the timed calls to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case *model == "":
		return errors.New("-model is required")
	case *mode != "train" && *mode != "infer":
		return fmt.Errorf("-mode %q: want train or infer", *mode)
	case *batch < 1 || *size < 1 || *classes < 1 || *calls < 1 || *rounds < 1:
		return errors.New("-batch, -size, -classes, -calls and -rounds must be positive")
	case *warmup < 0 || *threads < 0:
		return errors.New("-warmup and -threads must not be negative")
	}
	if *threads > 0 {
		parallel.SetWorkers(*threads)
	}

	m, err := onnx.LoadFile(*model)
	if err != nil {
		return err
	}
	spore.SetContext(spore.WithMode(spore.GraphMode))
	tensor.SetSeed(0)
	x := tensor.RandNormal(tensor.Float32, 0, 1, *batch, 3, *size, *size)
	if *input != "" {
		if x, err = npy.ReadFile(*input); err != nil {
			return err
		}
		if x.DType() != tensor.Float32 || x.Rank() != 4 {
			return fmt.Errorf("-input %s: want a float32 batch of images [N, C, H, W], got %v %v", *input, x.DType(), x.Shape())
		}
		*batch = x.Dim(0)
	}

	var call func() (float64, error)
	losses := make([]float64, 0, 2) // the first two steps' (train)
	if *mode == "infer" {
		call = func() (float64, error) {
			_, err := m.Run(x)
			return 0, err
		}
	} else {
		labels := make([]int32, *batch)
		for i := range labels {
			labels[i] = int32(i % *classes)
		}
		y := tensor.FromSlice(labels, *batch)
		net := nn.NewWithLossCell(m.Layer(), nn.NewSoftmaxCrossEntropyWithLogits(true, nn.Mean))
		opt := optim.NewSGD(net.TrainableParameters(), optim.SGDConfig{
			Common: optim.Common{LR: optim.Constant(0.01)}, Momentum: 0.9})
		step := nn.NewTrainOneStepCell(net, opt, nn.TrainOneStepConfig{Mode: nn.StepCompiled})
		call = func() (loss float64, err error) {
			// The step reports a model it cannot train by panicking with
			// the op's error; it is returned here as one.
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("training step: %v", r)
				}
			}()
			loss = step.Step(x, y)
			if len(losses) < cap(losses) {
				losses = append(losses, loss)
			}
			return loss, nil
		}
	}

	start := time.Now()
	if _, err := call(); err != nil {
		return err
	}
	first := time.Since(start)
	for range *warmup {
		if _, err = call(); err != nil {
			return err
		}
	}
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	best := time.Duration(math.MaxInt64)
	for range *rounds {
		start := time.Now()
		for range *calls {
			call() // the same inputs ran without error above
		}
		best = min(best, time.Since(start))
	}
	r := result{Model: *model, Mode: *mode, Threads: parallel.Workers(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		Batch: *batch, Calls: *calls, Rounds: *rounds,
		FirstCallMS: float64(first.Microseconds()) / 1e3,
		USPerCall:   float64(best.Nanoseconds()) / float64(*calls) / 1e3}
	if *mode == "train" {
		r.FirstLoss = losses[0]
		if len(losses) > 1 {
			r.SecondLoss = losses[1]
		}
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}
