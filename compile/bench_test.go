package compile_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/sporeml/spore/compile"
	"github.com/sporeml/spore/internal/kernels/parallel"
	"github.com/sporeml/spore/tensor"
)

// BenchmarkSeedMLP times the seed network's compiled inference and SGD
// training step at batch 64, at O0 (one kernel per traced op) and O1 (all
// passes). Compare the levels side by side in one run:
//
//	go test -run NONE -bench SeedMLP ./compile
func BenchmarkSeedMLP(b *testing.B) {
	for _, bc := range []struct {
		name  string
		train bool
	}{{"infer", false}, {"train", true}} {
		for _, lvl := range []compile.Level{compile.O0, compile.O1} {
			b.Run(bc.name+"/b64/"+lvl.String(), func(b *testing.B) {
				m := newMLP()
				args := mlpInputs(64)
				g := traceMLP(b, m, bc.train, args)
				if !bc.train {
					args = args[:1]
				}
				res, err := compile.Run(g, compile.Options{Level: lvl})
				if err != nil {
					b.Fatal(err)
				}
				outs := make([]*tensor.Tensor, len(res.Graph.Outputs))
				for i, o := range res.Graph.Outputs {
					outs[i] = tensor.New(o.Meta.DType, o.Meta.Shape...)
				}
				for b.Loop() {
					res.Plan.RunInto(args, outs)
				}
				b.ReportMetric(float64(res.Plan.NumSteps()), "steps")
			})
		}
	}
}

// BenchmarkSeedMLPBatch times the seed network's compiled (O1) inference
// and training step at every batch size of spore bench's sweep, with as
// many GEMM threads as GOMAXPROCS. Compare thread counts side by side:
//
//	go test -run NONE -bench SeedMLPBatch -cpu 1,2 ./compile
func BenchmarkSeedMLPBatch(b *testing.B) {
	defer parallel.SetWorkers(parallel.SetWorkers(runtime.GOMAXPROCS(0)))
	for _, train := range []bool{false, true} {
		for _, batch := range []int{1, 16, 64, 256, 1024} {
			name := "infer"
			if train {
				name = "train"
			}
			b.Run(fmt.Sprintf("%s/b%d", name, batch), func(b *testing.B) {
				m := newMLP()
				args := mlpInputs(batch)
				g := traceMLP(b, m, train, args)
				if !train {
					args = args[:1]
				}
				res, err := compile.Run(g, compile.Options{Level: compile.O1})
				if err != nil {
					b.Fatal(err)
				}
				outs := make([]*tensor.Tensor, len(res.Graph.Outputs))
				for i, o := range res.Graph.Outputs {
					outs[i] = tensor.New(o.Meta.DType, o.Meta.Shape...)
				}
				for b.Loop() {
					res.Plan.RunInto(args, outs)
				}
				flops := 2 * float64(batch) * (784*512 + 512*512 + 512*10)
				if train {
					flops *= 3
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
