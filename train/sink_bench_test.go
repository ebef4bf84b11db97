package train_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/dataset"
	"github.com/sporeml/spore/dataset/mnist"
	"github.com/sporeml/spore/models"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/tensor"
	"github.com/sporeml/spore/train"
)

// A training epoch of the seed network in Graph mode, as spore train
// runs it (MNIST images shuffled and batched, SGD with momentum 0.9),
// step by step and in data sink mode, at batch 1 and 16. Each iteration
// runs one unsunk and one sunk epoch back to back, each on its own model
// from the same seed reading the same batches, so the two see the same
// machine and train alike (the benchmark fails unless they end with the
// same weights, so that neither runs a cheaper computation). It reports
// both rates, the ratio of their best epochs, and the ratio of the CPU
// time the process spent on each (cpu-sunk/unsunk, where the system
// reports it: the work sinking saves, which load from other processes
// does not blur, but which leaves out what overlapping the data pipeline
// with the steps gains on an idle second core):
//
//	go test -run XXX -bench SinkEpoch -benchtime 5x ./train
//
// The epoch is the first 1024 images at batch 1 and the first 8192 at
// batch 16. The small network (784→16→10) shows what sinking saves where
// a step's arithmetic is cheap beside its per-step costs.
func BenchmarkSinkEpoch(b *testing.B) {
	for _, c := range []struct {
		net                 string
		batch, images, sink int
	}{{"seed", 1, 1024, 64}, {"seed", 16, 8192, 64}, {"small", 1, 1024, 64}, {"small", 16, 8192, 64}} {
		b.Run(fmt.Sprintf("%s/batch=%d/sink=%d", c.net, c.batch, c.sink), func(b *testing.B) {
			old := spore.GetContext().Mode
			spore.SetContext(spore.WithMode(spore.GraphMode))
			defer spore.SetContext(spore.WithMode(old))
			x, y := mnistHead(b, c.images)
			models := []*train.Model{seedModel(c.net, 0), seedModel(c.net, c.sink)}
			// Each model reads its own copy of one pipeline, so that both
			// see the same batches in the same order and train alike.
			var sets []*dataset.Dataset
			for range models {
				sets = append(sets, dataset.FromTensors(x, y).ShuffleSeed(c.images, 7).Batch(c.batch, true))
			}
			// A first epoch each compiles.
			for i, m := range models {
				if err := m.Train(1, sets[i]); err != nil {
					b.Fatal(err)
				}
			}
			best := [2]time.Duration{1 << 62, 1 << 62}
			var total, cpu [2]time.Duration
			cpuKnown := true
			for b.Loop() {
				for i, m := range models {
					c0, ok0 := processCPU()
					t0 := time.Now()
					if err := m.Train(1, sets[i]); err != nil {
						b.Fatal(err)
					}
					d := time.Since(t0)
					c1, ok1 := processCPU()
					cpuKnown = cpuKnown && ok0 && ok1
					best[i] = min(best[i], d)
					total[i] += d
					cpu[i] += c1 - c0
				}
			}
			// The sunk model must have trained exactly as the other.
			for i, p := range models[0].CheckpointParams() {
				q := models[1].CheckpointParams()[i]
				if firstBitDiff(p.Tensor, q.Tensor) >= 0 {
					b.Fatalf("after the epochs, %s differs between the sunk and the unsunk model", p.Name)
				}
			}
			n := float64(b.N * c.images)
			b.ReportMetric(n/total[0].Seconds(), "unsunk-samples/s")
			b.ReportMetric(n/total[1].Seconds(), "sunk-samples/s")
			b.ReportMetric(best[0].Seconds()/best[1].Seconds(), "sunk/unsunk")
			if cpuKnown && cpu[0] > 0 && cpu[1] > 0 {
				// The process's CPU time (every thread: the feeding
				// goroutine and the kernels' workers too) per epoch of
				// each mode: the work each does, which other load on a
				// shared machine does not change.
				b.ReportMetric(cpu[0].Seconds()/cpu[1].Seconds(), "cpu-sunk/unsunk")
			}
		})
	}
}

// seedModel is the seed network ("seed") or a small one (784→16→10,
// whose steps cost little beside the per-step overhead: "small") with
// spore train's loss and optimiser, from seed 1, training in data sink
// mode of size sink (0: step by step).
func seedModel(name string, sink int) *train.Model {
	spore.SetSeed(1)
	var net nn.Layer = models.NewNetwork()
	if name == "small" {
		net = nn.NewSequentialCell(nn.NewFlatten(), nn.NewDense(28*28, 16), nn.NewReLU(), nn.NewDense(16, 10))
	}
	opt := optim.NewSGD(net.Base().TrainableParameters(), optim.SGDConfig{Common: optim.Common{LR: optim.Constant(0.01)}, Momentum: 0.9})
	m := train.NewModel(net, nn.NewSoftmaxCrossEntropyWithLogits(true, nn.Mean), opt)
	m.SinkSize = sink
	return m
}

var mnistOnce = sync.OnceValues(func() (*tensor.Tensor, *tensor.Tensor) {
	x, y, err := mnist.TrainTensors(mnist.Normalize())
	if err != nil {
		panic(err)
	}
	return x, y
})

// mnistHead returns the first n training images and labels.
func mnistHead(b *testing.B, n int) (*tensor.Tensor, *tensor.Tensor) {
	x, y := mnistOnce()
	return ops.Slice(x, []int{0, 0, 0, 0}, []int{n, 1, 28, 28}), ops.Slice(y, []int{0}, []int{n})
}
