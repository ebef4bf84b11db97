package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/kernels/gemm"
	"github.com/sporeml/spore/models"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/profile"
	"github.com/sporeml/spore/tensor"
)

// benchResult is what spore bench measures; the JSON keys are stable.
type benchResult struct {
	Model     string `json:"model"`
	Precision string `json:"precision"`
	// BF16Kernel names the bfloat16 GEMM kernel (amx, avx512bf16,
	// generic) at --precision bf16; empty at fp32.
	BF16Kernel       string  `json:"bf16_kernel,omitempty"`
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
	fs := newFlags("bench", "Times a network in PyNative and Graph mode: inference and a full training step\n"+
		"(forward, cross-entropy, backward, SGD update), per call, best of 5 rounds. --model mlp is\n"+
		"the seed network (Flatten → Dense 784→512 → ReLU → Dense 512→512 → ReLU → Dense 512→10),\n"+
		"--model lenet is LeNet-5 as 'spore train --model lenet' builds it. --batch takes a list\n"+
		"(--batch 1,16,64,256,1024) for a sweep: one table row, or one JSON object, per batch.\n"+
		"--precision bf16 runs the network at mixed precision O2 (matmuls and convolutions in\n"+
		"bfloat16 with float32 accumulation, float32 master weights).", stdout)
	asJSON := fs.Bool("json", false, "print one JSON object per batch instead of a table")
	batchList := fs.String("batch", "64", "batch size, or a comma-separated list of them for a sweep")
	model := fs.String("model", "mlp", "network: mlp (the seed network) or lenet")
	precision := fs.String("precision", "fp32", "fp32, or bf16 (mixed precision O2)")
	rounds := fs.Int("iters", 0, "calls per timing round (0: about 6400 samples' worth, 10 to 2000 calls)")
	var prof profileFlags
	prof.register(fs, false)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := prof.check(); err != nil {
		return err
	}
	batches, err := parseBatches(*batchList)
	if err != nil {
		return err
	}
	if *rounds < 0 {
		return usagef("--iters must be positive (or 0 for automatic), got %d", *rounds)
	}
	if *precision != "fp32" && *precision != "bf16" {
		return usagef("unknown --precision %q (want fp32 or bf16)", *precision)
	}
	macs, ok := benchMACs[*model]
	if !ok {
		return usagef("unknown --model %q for bench (want mlp or lenet)", *model)
	}
	if err := checkEnv(); err != nil {
		return err
	}
	if spore.GetContext().DisableJit {
		// Graph mode would run eagerly: the comparison would be a lie.
		return errors.New("SPORE_JIT=0 turns Graph mode's compilation off, and bench compares the two modes; unset it")
	}
	session, err := prof.start() // the Graph-mode calls are profiled as they are timed
	if err != nil {
		return err
	}
	defer func() {
		if session != nil {
			session.Stop()
		}
	}()
	var results []benchResult
	for _, batch := range batches {
		n := *rounds
		if n == 0 {
			n = min(max(6400/batch, 10), 2000)
		}
		r, err := benchOne(*model, *precision, batch, n)
		if err != nil {
			return err
		}
		r.GFLOPSGraphInfer = 2 * float64(batch) * macs / r.GraphInferUS / 1e3
		if *asJSON {
			if err := json.NewEncoder(stdout).Encode(r); err != nil {
				return err
			}
			continue
		}
		results = append(results, r)
	}
	var profiled *profile.Report
	if session != nil {
		profiled, session = session.Stop(), nil
	}
	if *asJSON {
		if profiled == nil {
			return nil
		}
		pj, err := prof.reportJSON(profiled)
		if err != nil {
			return err
		}
		return json.NewEncoder(stdout).Encode(map[string]any{"profile": pj})
	}
	printBenchTable(stdout, *model, *precision, results)
	return prof.report(profiled, stdout, "")
}

// benchMACs is each benchable network's multiply-adds per sample in
// inference, for the GFLOP/s column.
var benchMACs = map[string]float64{
	"mlp": 784*512 + 512*512 + 512*10,
	// conv1 (24·24 outputs × 6 channels × 25 taps), conv2 (8·8 × 16 × 150),
	// then the dense layers 256→120→84→10.
	"lenet": 24*24*6*25 + 8*8*16*150 + 256*120 + 120*84 + 84*10,
}

// maxBenchBatch bounds --batch: a sweep allocates inputs and activations
// per batch, and beyond this a typo (an extra zero) would exhaust memory.
const maxBenchBatch = 1 << 16

// parseBatches reads --batch: one size or a comma-separated list.
func parseBatches(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		b, err := strconv.Atoi(f)
		if err != nil {
			return nil, usagef("--batch %q: %q is not a whole number (want sizes like 1,16,64)", s, f)
		}
		if b <= 0 || b > maxBenchBatch {
			return nil, usagef("--batch %q: batch size %d must be positive and at most %d", s, b, maxBenchBatch)
		}
		out = append(out, b)
	}
	return out, nil
}

// benchOne times one network at one batch size and precision in both
// modes.
func benchOne(model, precision string, batch, rounds int) (benchResult, error) {
	x := models.Ones(batch)
	labels := make([]int32, batch)
	for i := range labels {
		labels[i] = int32(i % 10)
	}
	y := tensor.FromSlice(labels, batch)
	r := benchResult{Model: model, Precision: precision, Batch: batch, Threads: runtime.GOMAXPROCS(0)}
	if precision == "bf16" {
		r.BF16Kernel = gemm.BF16Kernel()
	}
	defer spore.SetContext(spore.WithMode(spore.PyNativeMode))
	for _, mode := range []spore.Mode{spore.PyNativeMode, spore.GraphMode} {
		spore.SetContext(spore.WithMode(mode))
		spore.SetSeed(1)
		net, err := newModel(model)
		if err != nil {
			return r, err
		}
		if precision == "bf16" {
			nn.AutoMixedPrecision(net, nn.O2)
		}
		// Inference writes into a reused output, as a serving loop does;
		// a plain Call allocates the tensor it returns besides, counted
		// separately below.
		start := time.Now()
		outs := []*spore.Tensor{net.Base().Call(x)} // compiles in Graph mode
		compile := time.Since(start)
		infer := func() { net.Base().CallInto(outs, x) }
		us, allocs := timeCall(infer, rounds)
		_, callAllocs := timeCall(func() { net.Base().Call(x) }, rounds)

		step := sgdStep(net)
		trainStep := func() { step.Step(x, y) }
		trainStep()
		tus, tallocs := timeCall(trainStep, max(rounds/4, 1))
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
	r.InferSpeedup = r.PyNativeInferUS / r.GraphInferUS
	r.TrainSpeedup = r.PyNativeTrainUS / r.GraphTrainUS
	return r, nil
}

// printBenchTable prints one row per batch size.
func printBenchTable(w io.Writer, model, precision string, rs []benchResult) {
	name := model
	if model == "mlp" {
		name = "seed network (mlp)"
	}
	prec := precision
	if precision == "bf16" {
		prec = "bf16 (amp O2, " + gemm.BF16Kernel() + " kernel)"
	}
	fmt.Fprintf(w, "%s, %s, %d threads; µs per call, best of 5 rounds\n\n", name, prec, runtime.GOMAXPROCS(0))
	fmt.Fprintf(w, "%6s | %-39s | %-30s | %s\n", "", "inference", "training step", "allocations, PyNative / Graph")
	fmt.Fprintf(w, "%6s | %10s %10s %8s %8s | %10s %10s %8s | %12s %11s\n",
		"batch", "PyNative", "Graph", "speed-up", "GFLOP/s", "PyNative", "Graph", "speed-up", "per call", "per step")
	for _, r := range rs {
		fmt.Fprintf(w, "%6d | %10.1f %10.1f %7.2fx %8.1f | %10.1f %10.1f %7.2fx | %5.0f / %-4.0f %4.0f / %-4.0f\n",
			r.Batch, r.PyNativeInferUS, r.GraphInferUS, r.InferSpeedup, r.GFLOPSGraphInfer,
			r.PyNativeTrainUS, r.GraphTrainUS, r.TrainSpeedup,
			r.PyNativeInferAlc, r.GraphInferAlc, r.PyNativeTrainAlc, r.GraphTrainAlc)
	}
	fmt.Fprintf(w, "\ncompile (ms), training step / inference:")
	for _, r := range rs {
		fmt.Fprintf(w, " batch %d %.1f / %.1f;", r.Batch, r.CompileMS, r.InferCompileMS)
	}
	fmt.Fprintln(w)
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
