package train_test

import (
	"iter"
	"testing"
	"time"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/models"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/tensor"
	"github.com/sporeml/spore/train"
)

// repeated yields n batches, cycling through a few.
type repeated struct {
	batches [][]*tensor.Tensor
	n       int
}

func (r repeated) All() iter.Seq2[[]*tensor.Tensor, error] {
	return func(yield func([]*tensor.Tensor, error) bool) {
		for i := range r.n {
			if !yield(r.batches[i%len(r.batches)], nil) {
				return
			}
		}
	}
}

// timed runs a callback and adds up the time spent in it.
type timed struct {
	cb    train.Callback
	spent time.Duration
}

func (t *timed) run(f func()) {
	start := time.Now()
	f()
	t.spent += time.Since(start)
}

func (t *timed) OnTrainBegin(c *train.RunContext) { t.run(func() { t.cb.OnTrainBegin(c) }) }
func (t *timed) OnTrainEnd(c *train.RunContext)   { t.run(func() { t.cb.OnTrainEnd(c) }) }
func (t *timed) OnEpochBegin(c *train.RunContext) { t.run(func() { t.cb.OnEpochBegin(c) }) }
func (t *timed) OnEpochEnd(c *train.RunContext)   { t.run(func() { t.cb.OnEpochEnd(c) }) }
func (t *timed) OnStepBegin(c *train.RunContext)  { t.run(func() { t.cb.OnStepBegin(c) }) }
func (t *timed) OnStepEnd(c *train.RunContext)    { t.run(func() { t.cb.OnStepEnd(c) }) }

// BenchmarkSummaryCost trains the seed network in Graph mode (MNIST
// shapes, batch 64, SGD with momentum, as "spore train" does) for b.N
// steps in one run, without and with a SummaryCollector at its defaults
// (and with scalars only):
// ns/op is the time per step, so the ratio of the two is what logging
// costs, and "%logging" is the share of the run spent inside the
// collector (scalars every step, histograms every DefaultHistogramFreq
// steps and at the first, the gradient pass's one compilation, the
// graphs). Run the two side by side, with as many steps as a real run:
//
//	go test -run '^$' -bench 'SummaryCost' -benchtime 3000x -count 5 ./train
func BenchmarkSummaryCost(b *testing.B) {
	cases := []struct {
		name string
		on   bool
		cfg  train.SummaryConfig
	}{
		{"off", false, train.SummaryConfig{}},
		{"on", true, train.SummaryConfig{}},
		// The share of the histograms: scalars and graphs alone.
		{"scalars-only", true, train.SummaryConfig{HistogramFreq: -1}},
	}
	for _, c := range cases {
		on := c.on
		b.Run(c.name, func(b *testing.B) {
			withMode(spore.GraphMode, func() {
				spore.SetSeed(1)
				net := models.NewNetwork()
				opt := optim.NewSGD(net.Base().TrainableParameters(), optim.SGDConfig{Common: optim.Common{LR: optim.Constant(0.01)}, Momentum: 0.9})
				m := train.NewModel(net, nn.NewSoftmaxCrossEntropyWithLogits(true, nn.Mean), opt)
				var batches [][]*tensor.Tensor
				for i := range 4 {
					x := tensor.RandNormal(tensor.Float32, 0, 1, 64, 784)
					y := make([]int32, 64)
					for j := range y {
						y[j] = int32((i + j) % 10)
					}
					batches = append(batches, []*tensor.Tensor{x, tensor.FromSlice(y, 64)})
				}
				// Compile the training step first, as the run without a
				// collector would have done by its second step anyway.
				if err := m.Train(1, repeated{batches, 1}); err != nil {
					b.Fatal(err)
				}
				var cbs []train.Callback
				var t *timed
				if on {
					col, err := train.NewSummaryCollector(b.TempDir(), c.cfg)
					if err != nil {
						b.Fatal(err)
					}
					defer col.Close()
					t = &timed{cb: col}
					cbs = append(cbs, t)
				}
				b.ResetTimer()
				start := time.Now()
				if err := m.Train(1, repeated{batches, b.N}, cbs...); err != nil {
					b.Fatal(err)
				}
				total := time.Since(start)
				b.StopTimer()
				if t != nil {
					b.ReportMetric(100*t.spent.Seconds()/total.Seconds(), "%logging")
				}
			})
		})
	}
}
