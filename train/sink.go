package train

import (
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/tensor"
)

// fitSunk is Fit in data sink mode (Model.SinkSize > 0): the epochs run
// through one spore.DataSink over the training cell's step, SinkSize
// steps per call.
//
// The steps compute what unsunk training computes, in the same order, so
// the weights after an epoch are the same (bit for bit at O0). What
// differs is what callbacks can do between steps: the n steps of a call
// have run before any callback hears of them, so after each call every
// callback gets OnStepBegin and OnStepEnd for each of its steps in turn,
// with Step, GlobalStep, Loss and Batch (the step's data and label,
// views of the queue) as an unsunk run would give them; WantGrads is not
// honoured (Grads stays nil: the sunk step does not return gradients). A stop a callback requests takes effect
// after the call's remaining steps, which have already run, are reported.
// The last call of an epoch whose length is not a multiple of the sink
// size runs the steps left over as a shorter Scan (compiled once).
func (m *Model) fitSunk(cell *nn.TrainOneStepCell, epochs int, trainSet, valid Dataset, ctx *RunContext, each func(func(Callback))) error {
	if m.SinkSize < 0 {
		return fmt.Errorf("train: SinkSize %d is negative; use a positive sink size, or 0 to train step by step", m.SinkSize)
	}
	if m.DataParallel() {
		return errors.New("train: SinkSize: data sink mode does not support data parallelism yet; train unsunk (SinkSize 0)")
	}
	step := func(b ...*tensor.Tensor) *tensor.Tensor { return cell.Construct(b[0], b[1]) }
	cfg := spore.SinkConfig{Jit: m.StepConfig.Jit, Epochs: epochs}
	if cfg.Jit.Name == "" {
		cfg.Jit.Name = "TrainOneStepCell.sink"
	}
	switch m.StepConfig.Mode {
	case nn.StepCompiled:
		cfg.Compiled = true
	case nn.StepEager:
		cfg.Jit.Disable = true
	}
	// The sink, and with it the compiled queue plans, is kept from one
	// Fit to the next while nothing it was compiled under changes.
	key := sinkKey{size: m.SinkSize, cfg: cfg, ctx: spore.GetContext().Mode, level: spore.GetContext().JitLevel}
	if m.sink != nil && m.sinkKey.same(key) {
		m.sink.Restart(labelled{trainSet}, epochs)
	} else {
		m.sink = spore.DataSink(step, labelled{trainSet}, m.SinkSize, cfg)
		m.sinkKey = key
	}
	sink := m.sink
	defer sink.Close()
	for epoch := 1; epoch <= epochs && !ctx.stop; epoch++ {
		cell.SetTrain(true)
		ctx.Epoch, ctx.Step = epoch, 0
		clear(ctx.Metrics)
		each(func(cb Callback) { cb.OnEpochBegin(ctx) })
		sum := 0.0
		for !ctx.stop {
			losses, err := sink.Run()
			if err != nil {
				return fmt.Errorf("train: epoch %d: %w", epoch, err)
			}
			for i, l := range losses.Float64s() {
				ctx.Step++
				ctx.GlobalStep++
				ctx.Batch = sink.Batch(i)
				each(func(cb Callback) { cb.OnStepBegin(ctx) })
				ctx.Loss = l
				sum += l
				each(func(cb Callback) { cb.OnStepEnd(ctx) })
				ctx.WantGrads, ctx.Grads = false, nil
			}
			if sink.Position().EpochEnd {
				break
			}
		}
		if err := m.endEpoch(ctx, sum, valid, each); err != nil {
			return err
		}
	}
	return nil
}

// sinkKey is what a Model's sink was compiled under.
type sinkKey struct {
	size  int
	cfg   spore.SinkConfig
	ctx   spore.Mode
	level spore.Level
}

func (k sinkKey) same(o sinkKey) bool {
	a, b := k.cfg, o.cfg
	return k.size == o.size && k.ctx == o.ctx && k.level == o.level && a.Compiled == b.Compiled &&
		a.Jit.Level == b.Jit.Level && a.Jit.Disable == b.Jit.Disable && a.Jit.Name == b.Jit.Name &&
		slices.Equal(a.Jit.DisablePasses, b.Jit.DisablePasses)
}

// SinkStats returns the compile-cache statistics of training in data sink
// mode (SinkSize > 0): one compile per queue length (the sink size, and
// the shorter last queue of an epoch), the other calls hits, over every
// Fit since the sink size, the modes or the levels last changed. It is
// zero before any.
func (m *Model) SinkStats() spore.JitStats {
	if m.sink == nil {
		return spore.JitStats{}
	}
	return m.sink.Stats()
}

// labelled passes a training set's (data, label) pairs to the sink,
// refusing a batch without a label as unsunk training does, and leaving
// out any further tensors of a batch, which the step does not read.
type labelled struct{ ds Dataset }

func (l labelled) All() iter.Seq2[[]*tensor.Tensor, error] {
	return func(yield func([]*tensor.Tensor, error) bool) {
		for batch, err := range l.ds.All() {
			if err == nil && len(batch) < 2 {
				err = fmt.Errorf("a batch has %d tensors, want data and label", len(batch))
			}
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(batch[:2], nil) {
				return
			}
		}
	}
}
