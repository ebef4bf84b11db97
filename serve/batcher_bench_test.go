package serve

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/tensor"
)

// BenchmarkInferSeedMLP runs the seed network (784-512-512-10) through
// Server.Infer from 64 goroutines, one image per request, with dynamic
// batching off and on: the core's side of the batching claim,
// without a front end. ns/op is per request.
func BenchmarkInferSeedMLP(b *testing.B) {
	tensor.SetSeed(0)
	net := nn.NewSequentialCell(nn.NewFlatten(), nn.NewDense(784, 512), nn.NewReLU(), nn.NewDense(512, 512), nn.NewReLU(), nn.NewDense(512, 10))
	for _, c := range []struct {
		name     string
		maxBatch int
		delay    time.Duration
	}{{"batching=off", 0, 0}, {"batching=64", 64, 0}, {"batching=64/delay=200us", 64, 200 * time.Microsecond}, {"batching=64/delay=1ms", 64, time.Millisecond}} {
		b.Run(c.name, func(b *testing.B) {
			m := Model{
				Inputs:        []TensorMetadata{{Name: "x", Datatype: "FP32", Shape: []int64{1, 28, 28}}},
				Outputs:       []TensorMetadata{{Name: "y", Datatype: "FP32", Shape: []int64{10}}},
				Fn:            One(net.Call),
				MaxBatchSize:  c.maxBatch,
				MaxQueueSize:  1024,
				MaxQueueDelay: c.delay,
			}
			if c.maxBatch == 0 {
				m.Inputs[0].Shape = []int64{1, 1, 28, 28}
				m.Outputs[0].Shape = []int64{1, 10}
			}
			s, err := New(Config{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Shutdown(context.Background())
			if err := s.AddModel("mlp", m); err != nil {
				b.Fatal(err)
			}
			b.SetParallelism(64 / runtime.GOMAXPROCS(0))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				x := tensor.Ones(tensor.Float32, 1, 1, 28, 28)
				req := &InferRequest{Model: "mlp", Inputs: []InferInput{{Name: "x", Datatype: "FP32", Tensor: x}}}
				for pb.Next() {
					if _, err := s.Infer(context.Background(), req); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			v, _ := s.resolve("mlp", "")
			if exec := counterValue(b, v.vm.exec); exec > 0 {
				b.ReportMetric(counterValue(b, v.vm.count)/exec, "rows/exec")
			}
		})
	}
}
