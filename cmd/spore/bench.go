package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/models"
	"github.com/sporeml/spore/tensor"
)

// benchResult is what spore bench measures; the JSON keys are stable.
type benchResult struct {
	Batch            int     `json:"batch"`
	Threads          int     `json:"threads"`
	PyNativeInferUS  float64 `json:"pynative_infer_us"`
	GraphInferUS     float64 `json:"graph_infer_us"`
	PyNativeTrainUS  float64 `json:"pynative_train_us"`
	GraphTrainUS     float64 `json:"graph_train_us"`
	CompileMS        float64 `json:"compile_ms"`
	InferCompileMS   float64 `json:"infer_compile_ms"`
	InferSpeedup     float64 `json:"infer_speedup"`
	TrainSpeedup     float64 `json:"train_speedup"`
	PyNativeInferAlc float64 `json:"pynative_infer_allocs"`
	GraphInferAlc    float64 `json:"graph_infer_allocs"`
	// Allocations of a plain Call, which returns a new tensor; the
	// inference figures above write into a reused output (CallInto).
	PyNativeCallAlc  float64 `json:"pynative_call_allocs"`
	GraphCallAlc     float64 `json:"graph_call_allocs"`
	PyNativeTrainAlc float64 `json:"pynative_train_allocs"`
	GraphTrainAlc    float64 `json:"graph_train_allocs"`
	GFLOPSGraphInfer float64 `json:"graph_infer_gflops"`
}

func cmdBench(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench", "Times the seed network (Flatten → Dense 784→512 → ReLU → Dense 512→512 → ReLU →\n"+
		"Dense 512→10) in PyNative and Graph mode: inference and a full training step (forward,\n"+
		"cross-entropy, backward, SGD update), per call, best of 5 rounds.", stdout)
	asJSON := fs.Bool("json", false, "print one JSON object instead of a table")
	batch := fs.Int("batch", 64, "batch size")
	rounds := fs.Int("iters", 100, "calls per timing round")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *batch <= 0 || *rounds <= 0 {
		return usagef("--batch and --iters must be positive")
	}
	if err := checkEnv(); err != nil {
		return err
	}
	if spore.GetContext().DisableJit {
		// Graph mode would run eagerly: the comparison would be a lie.
		return errors.New("SPORE_JIT=0 turns Graph mode's compilation off, and bench compares the two modes; unset it")
	}
	x := models.Ones(*batch)
	labels := make([]int32, *batch)
	for i := range labels {
		labels[i] = int32(i % 10)
	}
	y := tensor.FromSlice(labels, *batch)
	r := benchResult{Batch: *batch, Threads: runtime.GOMAXPROCS(0)}

	for _, mode := range []spore.Mode{spore.PyNativeMode, spore.GraphMode} {
		spore.SetContext(spore.WithMode(mode))
		spore.SetSeed(1)
		net := models.NewNetwork()
		// Inference writes into a reused output, as a serving loop does;
		// a plain Call allocates the tensor it returns besides, counted
		// separately below.
		start := time.Now()
		outs := []*spore.Tensor{net.Call(x)} // compiles in Graph mode
		compile := time.Since(start)
		infer := func() { net.CallInto(outs, x) }
		us, allocs := timeCall(infer, *rounds)
		_, callAllocs := timeCall(func() { net.Call(x) }, *rounds)

		step := sgdStep(net)
		trainStep := func() { step.Step(x, y) }
		trainStep()
		tus, tallocs := timeCall(trainStep, max(*rounds/4, 1))
		if mode == spore.GraphMode {
			r.GraphInferUS, r.GraphInferAlc, r.GraphTrainUS, r.GraphTrainAlc = us, allocs, tus, tallocs
			r.GraphCallAlc = callAllocs
			r.InferCompileMS = ms(compile)
			r.CompileMS = ms(step.StepStats().LastCompileTime)
		} else {
			r.PyNativeInferUS, r.PyNativeInferAlc, r.PyNativeTrainUS, r.PyNativeTrainAlc = us, allocs, tus, tallocs
			r.PyNativeCallAlc = callAllocs
		}
	}
	spore.SetContext(spore.WithMode(spore.PyNativeMode))
	r.InferSpeedup = r.PyNativeInferUS / r.GraphInferUS
	r.TrainSpeedup = r.PyNativeTrainUS / r.GraphTrainUS
	flop := 2.0 * float64(*batch) * (784*512 + 512*512 + 512*10)
	r.GFLOPSGraphInfer = flop / r.GraphInferUS / 1e3

	if *asJSON {
		enc := json.NewEncoder(stdout)
		return enc.Encode(r)
	}
	fmt.Fprintf(stdout, "seed network, batch %d, %d threads\n\n", r.Batch, r.Threads)
	fmt.Fprintf(stdout, "%-16s %12s %12s %9s\n", "", "PyNative", "Graph", "speed-up")
	fmt.Fprintf(stdout, "%-16s %9.1f µs %9.1f µs %8.2fx\n", "inference", r.PyNativeInferUS, r.GraphInferUS, r.InferSpeedup)
	fmt.Fprintf(stdout, "%-16s %9.1f µs %9.1f µs %8.2fx\n", "training step", r.PyNativeTrainUS, r.GraphTrainUS, r.TrainSpeedup)
	fmt.Fprintf(stdout, "%-16s %12.0f %12.0f\n", "allocs/inference", r.PyNativeInferAlc, r.GraphInferAlc)
	fmt.Fprintf(stdout, "%-16s %12.0f %12.0f   (Call, which returns a new tensor)\n", "", r.PyNativeCallAlc, r.GraphCallAlc)
	fmt.Fprintf(stdout, "%-16s %12.0f %12.0f\n", "allocs/step", r.PyNativeTrainAlc, r.GraphTrainAlc)
	fmt.Fprintf(stdout, "\ncompile: training step %.2f ms, inference %.2f ms; Graph inference %.1f GFLOP/s\n", r.CompileMS, r.InferCompileMS, r.GFLOPSGraphInfer)
	return nil
}

// timeCall returns f's best per-call time over 5 rounds of n calls, in µs,
// and its heap allocations per call.
func timeCall(f func(), n int) (us, allocs float64) {
	for range max(n/10, 2) {
		f()
	}
	best := time.Duration(1<<63 - 1)
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	for range 5 {
		start := time.Now()
		for range n {
			f()
		}
		best = min(best, time.Since(start))
	}
	runtime.ReadMemStats(&ms1)
	return float64(best.Nanoseconds()) / float64(n) / 1e3, float64(ms1.Mallocs-ms0.Mallocs) / float64(5*n)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
