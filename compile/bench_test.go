package compile_test

import (
	"testing"

	"github.com/sporeml/spore/compile"
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
