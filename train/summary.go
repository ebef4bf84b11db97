package train

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/summary"
	"github.com/sporeml/spore/tensor"
)

// DefaultHistogramFreq is how often, in steps, a SummaryCollector records
// parameter and gradient histograms unless told otherwise. A round of
// histograms costs several training steps of the seed network: the
// gradients need a forward and backward pass of their own, and each
// histogram is two passes over a parameter or gradient (400k values for
// the seed network's first layer). Measured inside the run
// (BenchmarkSummaryCost's %logging, the seed network in Graph mode on a
// busy 2-core machine), a round every 500 steps put all logging at about
// 3% of the run, the whole budget; every 1000 steps (about once per
// MNIST epoch at batch 64, plus the first step) put it at 1.4% over 3000
// steps.
const DefaultHistogramFreq = 1000

// SummaryConfig configures a SummaryCollector; the zero value takes the
// defaults.
type SummaryConfig struct {
	// CollectFreq records the scalars every CollectFreq steps; 0 means
	// every step. MindSpore's collect_freq.
	CollectFreq int
	// HistogramFreq records the histograms every HistogramFreq steps
	// (and at the first step); 0 means DefaultHistogramFreq and a
	// negative value turns histograms off. MindSpore's
	// collect_tensor_freq.
	HistogramFreq int
	// NoGradients leaves out the gradient histograms (and the step's
	// second compiled form that returns them).
	NoGradients bool
	// NoGraphs leaves out the compiled graphs.
	NoGraphs bool
}

// SummaryCollector records a training run for TensorBoard and spore's
// dashboard, MindSpore's SummaryCollector callback. Into its run
// directory (see package summary) it writes:
//
//   - per step (every CollectFreq steps), the scalars "loss" (the step's
//     loss), "lr" (the learning rate the step applied, from the
//     optimiser) and "throughput" (samples per second over the steps
//     since the last record, counting the steps' time and not the
//     collector's own);
//   - per epoch, "eval/<metric>" for each validation metric of Fit
//     ("eval/accuracy"), and whatever the program adds through Writer
//     (the CLI adds its test accuracy);
//   - every HistogramFreq steps, histograms "param/<name>" of each
//     trainable parameter before the step and "grad/<name>" of the
//     gradient the step applies (before any ClipGlobalNorm);
//   - the record of every function compiled during training (the
//     training step, the validation forward pass, ...) with its IR after
//     each compiler pass, as graphs/<name>-<n>.json (spore.WatchCompiles).
//
// Steps are numbered by RunContext.GlobalStep, so a resumed run continues
// its curves.
//
// Gradients come from the training step itself: at a histogram step the
// collector asks for them (RunContext.WantGrads) and the step runs as
// nn.TrainOneStepCell.StepWithGrads, which returns the gradients it
// applied. No extra pass runs, so Dropout draws no extra masks and
// BatchNorm's statistics move once per step, as without the collector;
// in Graph mode that step is compiled once more, with the gradients as
// results ("TrainOneStepCellWithGrads").
//
// The event file is flushed every second and at the end of training;
// Close closes it. A write error (a full disk) stops training at the next
// epoch end with that error.
type SummaryCollector struct {
	BaseCallback
	cfg SummaryConfig
	w   *summary.Writer

	stopWatch  func()
	graphMu    sync.Mutex
	graphErr   error
	graphTime  time.Duration // writing graphs, under graphMu
	spent      time.Duration // in the callbacks
	last       time.Time     // when the last throughput record was taken
	samples    int           // samples since then
	own        time.Duration // the collector's own time since then
	stepsSince int
	lr         float64 // the learning rate of the current step
	hasLR      bool
	tags       []string // reused by OnStepEnd
	vals       []float64
}

// NewSummaryCollector returns a collector writing a new event file in
// dir (created if needed), MindSpore's SummaryCollector(summary_dir).
func NewSummaryCollector(dir string, cfg ...SummaryConfig) (*SummaryCollector, error) {
	c := &SummaryCollector{}
	if len(cfg) > 0 {
		c.cfg = cfg[0]
	}
	if c.cfg.CollectFreq < 0 {
		return nil, fmt.Errorf("train: SummaryCollector: CollectFreq %d is negative", c.cfg.CollectFreq)
	}
	if c.cfg.CollectFreq == 0 {
		c.cfg.CollectFreq = 1
	}
	if c.cfg.HistogramFreq == 0 {
		c.cfg.HistogramFreq = DefaultHistogramFreq
	}
	w, err := summary.NewWriter(dir)
	if err != nil {
		return nil, err
	}
	c.w = w
	return c, nil
}

// Writer returns the collector's summary writer, for values of the
// program's own (a test accuracy measured after training).
func (c *SummaryCollector) Writer() *summary.Writer { return c.w }

// Close stops watching compilations and closes the event file.
func (c *SummaryCollector) Close() error {
	c.unwatch()
	return errors.Join(c.w.Close(), c.takeGraphErr())
}

// Overhead returns the time the collector has spent on its own work
// since it was made: its callbacks (scalars, the gradient passes and
// histograms, flushing) and writing the compiled graphs. It is what
// logging cost the run, measured inside the run, so it holds up on a
// machine too busy for two runs to be compared. Not included: what the
// compiler spends keeping the per-pass IR for WatchCompiles while it
// compiles.
func (c *SummaryCollector) Overhead() time.Duration {
	c.graphMu.Lock()
	defer c.graphMu.Unlock()
	return c.spent + c.graphTime
}

// timeSpent adds the time since start to the collector's overhead.
func (c *SummaryCollector) timeSpent(start time.Time) { c.spent += time.Since(start) }

// OnTrainBegin starts watching compilations.
func (c *SummaryCollector) OnTrainBegin(ctx *RunContext) {
	defer c.timeSpent(time.Now())
	c.last, c.samples, c.own, c.stepsSince = time.Now(), 0, 0, 0
	if !c.cfg.NoGraphs && c.stopWatch == nil {
		c.stopWatch = spore.WatchCompiles(func(rec spore.CompileRecord) {
			start := time.Now()
			err := c.w.AddGraph(rec)
			c.graphMu.Lock()
			c.graphTime += time.Since(start)
			if err != nil && c.graphErr == nil {
				c.graphErr = err
			}
			c.graphMu.Unlock()
		})
	}
}

func (c *SummaryCollector) unwatch() {
	if c.stopWatch != nil {
		c.stopWatch()
		c.stopWatch = nil
	}
}

func (c *SummaryCollector) takeGraphErr() error {
	c.graphMu.Lock()
	defer c.graphMu.Unlock()
	err := c.graphErr
	c.graphErr = nil
	return err
}

// OnTrainEnd stops watching compilations and flushes the event file.
func (c *SummaryCollector) OnTrainEnd(ctx *RunContext) {
	defer c.timeSpent(time.Now())
	c.unwatch()
	c.check(ctx, c.w.Flush())
}

// check stops training with a logging error.
func (c *SummaryCollector) check(ctx *RunContext, err error) {
	if err = errors.Join(err, c.takeGraphErr()); err != nil {
		ctx.StopWithError(fmt.Errorf("train: SummaryCollector: %w", err))
	}
}

func (c *SummaryCollector) histogramStep(ctx *RunContext) bool {
	f := c.cfg.HistogramFreq
	return f > 0 && (ctx.GlobalStep%f == 0 || ctx.Step == 1 && ctx.Epoch == 1)
}

func (c *SummaryCollector) scalarStep(ctx *RunContext) bool {
	return ctx.GlobalStep%c.cfg.CollectFreq == 0
}

// OnStepBegin records the learning rate and, at a histogram step, the
// parameters and gradients the step is about to use.
func (c *SummaryCollector) OnStepBegin(ctx *RunContext) {
	start := time.Now()
	defer func() {
		d := time.Since(start)
		c.own += d
		c.spent += d
	}()
	step := int64(ctx.GlobalStep)
	m := ctx.Model
	c.lr, c.hasLR = 0, false
	if c.scalarStep(ctx) && m.Optimizer != nil {
		// Read before the step: the rate this step applies.
		c.lr, c.hasLR = m.Optimizer.LR(), true
	}
	if !c.histogramStep(ctx) || m.Optimizer == nil {
		return
	}
	for _, p := range m.Optimizer.Parameters() {
		c.w.AddHistogram("param/"+paramName(p), step, float32s(p))
	}
	if !c.cfg.NoGradients {
		ctx.WantGrads = true
	}
}

// gradHistograms records the gradients a step returned (RunContext.Grads).
func (c *SummaryCollector) gradHistograms(ctx *RunContext) {
	params := ctx.Model.Optimizer.Parameters()
	for i, g := range ctx.Grads {
		if g != nil && i < len(params) {
			c.w.AddHistogram("grad/"+paramName(params[i]), int64(ctx.GlobalStep), float32s(g))
		}
	}
}

// float32s returns t's elements as float32: its own buffer, read only,
// when it is float32 (a copy of a large parameter at every histogram
// would cost more than the histogram), a converted copy otherwise.
func float32s(t *tensor.Tensor) []float32 {
	if v, ok := t.Data().([]float32); ok {
		return v
	}
	return t.Float32s()
}

// paramName is a parameter's name, or a stand-in for an unnamed one.
func paramName(p *tensor.Tensor) string {
	if n := p.Name(); n != "" {
		return n
	}
	return "unnamed" + strings.ReplaceAll(p.Shape().String(), " ", "x")
}

// OnStepEnd records the loss and the throughput.
func (c *SummaryCollector) OnStepEnd(ctx *RunContext) {
	now := time.Now()
	defer c.timeSpent(now)
	if len(ctx.Grads) > 0 {
		c.gradHistograms(ctx)
	}
	if len(ctx.Batch) > 0 && ctx.Batch[0].Rank() > 0 {
		c.samples += ctx.Batch[0].Dim(0)
	}
	c.stepsSince++
	if !c.scalarStep(ctx) {
		return
	}
	c.tags, c.vals = append(c.tags[:0], "loss"), append(c.vals[:0], ctx.Loss)
	if c.hasLR {
		c.tags, c.vals = append(c.tags, "lr"), append(c.vals, c.lr)
	}
	if d := now.Sub(c.last) - c.own; d > 0 && c.samples > 0 {
		c.tags, c.vals = append(c.tags, "throughput"), append(c.vals, float64(c.samples)/d.Seconds())
	}
	// One event per step for all three: a third of the cost of three.
	c.w.AddScalars(int64(ctx.GlobalStep), c.tags, c.vals)
	c.samples, c.stepsSince, c.own = 0, 0, 0
	c.last = time.Now()
}

// OnEpochBegin restarts the throughput clock, so that validation and
// epoch-end work between epochs do not count as step time.
func (c *SummaryCollector) OnEpochBegin(*RunContext) {
	c.last, c.samples, c.own, c.stepsSince = time.Now(), 0, 0, 0
}

// OnEpochEnd records the validation metrics of Fit as "eval/<metric>"
// and reports a writer's error.
func (c *SummaryCollector) OnEpochEnd(ctx *RunContext) {
	defer c.timeSpent(time.Now())
	for k, v := range ctx.Metrics {
		if name, ok := strings.CutPrefix(k, "eval_"); ok {
			c.w.AddScalar("eval/"+name, int64(ctx.GlobalStep), v)
		}
	}
	c.check(ctx, c.w.Err())
}
