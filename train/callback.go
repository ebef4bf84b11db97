package train

import (
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// RunContext is what callbacks see of a training run, MindSpore's
// RunContext/cb_params.
type RunContext struct {
	// Model is the model being trained.
	Model *Model
	// Epoch is the current epoch, from 1; Epochs is the number requested.
	Epoch, Epochs int
	// Step is the step within the epoch, from 1; StepsPerEpoch is the
	// largest epoch length seen so far (0 during the first epoch).
	Step, StepsPerEpoch int
	// GlobalStep counts optimiser steps over the model's life (it resumes
	// from a loaded checkpoint's global_step).
	GlobalStep int
	// Loss is the last step's loss.
	Loss float64
	// Batch is the current batch, during a step.
	Batch []*tensor.Tensor
	// WantGrads, set by a callback's OnStepBegin, asks the step for its
	// gradients; the step then runs as nn.TrainOneStepCell.StepWithGrads
	// and Grads holds them (one per optimiser parameter, in its order)
	// for OnStepEnd. Both are cleared after every step.
	WantGrads bool
	Grads     []*tensor.Tensor
	// Metrics holds, at epoch end, "loss" (the epoch's mean training loss)
	// and "eval_<name>" for each validation metric of Fit.
	Metrics map[string]float64

	stop bool
	err  error
}

// RequestStop ends training after the current step (or epoch).
func (c *RunContext) RequestStop() { c.stop = true }

// StopWithError ends training; Train returns err.
func (c *RunContext) StopWithError(err error) {
	c.stop = true
	if c.err == nil {
		c.err = err
	}
}

// Stopping reports whether a stop was requested.
func (c *RunContext) Stopping() bool { return c.stop }

// Callback observes and steers training, MindSpore's Callback. Embed
// BaseCallback to implement only the methods you need:
//
//	type printer struct{ train.BaseCallback }
//
//	func (printer) OnEpochEnd(c *train.RunContext) { fmt.Println(c.Epoch, c.Metrics["loss"]) }
type Callback interface {
	// OnTrainBegin runs once before the first epoch.
	OnTrainBegin(*RunContext)
	// OnTrainEnd runs once after training, also when it stops early or
	// fails.
	OnTrainEnd(*RunContext)
	// OnEpochBegin runs before each epoch.
	OnEpochBegin(*RunContext)
	// OnEpochEnd runs after each epoch (and its validation, in Fit).
	OnEpochEnd(*RunContext)
	// OnStepBegin runs before each step.
	OnStepBegin(*RunContext)
	// OnStepEnd runs after each step, with the step's loss in Loss.
	OnStepEnd(*RunContext)
}

// BaseCallback implements every Callback method as a no-op.
type BaseCallback struct{}

// OnTrainBegin does nothing.
func (BaseCallback) OnTrainBegin(*RunContext) {}

// OnTrainEnd does nothing.
func (BaseCallback) OnTrainEnd(*RunContext) {}

// OnEpochBegin does nothing.
func (BaseCallback) OnEpochBegin(*RunContext) {}

// OnEpochEnd does nothing.
func (BaseCallback) OnEpochEnd(*RunContext) {}

// OnStepBegin does nothing.
func (BaseCallback) OnStepBegin(*RunContext) {}

// OnStepEnd does nothing.
func (BaseCallback) OnStepEnd(*RunContext) {}

// LossMonitor prints the loss every Every steps, MindSpore's
// LossMonitor(per_print_times), and stops training with an error when the
// loss becomes NaN or infinite, as MindSpore's does.
type LossMonitor struct {
	BaseCallback
	// Every is the printing period in steps (at least 1).
	Every int
	// Out receives the lines; nil means standard output.
	Out io.Writer
}

// NewLossMonitor returns a LossMonitor printing every n steps.
func NewLossMonitor(every int) *LossMonitor {
	if every < 1 {
		core.Panicf("train.LossMonitor", "period %d must be at least 1", every)
	}
	return &LossMonitor{Every: every}
}

// OnStepEnd prints "epoch: E step: S, loss is L" every Every steps.
func (l *LossMonitor) OnStepEnd(c *RunContext) {
	if math.IsNaN(c.Loss) || math.IsInf(c.Loss, 0) {
		c.StopWithError(fmt.Errorf("train: epoch %d step %d: loss is %v; training stopped", c.Epoch, c.Step, c.Loss))
		return
	}
	if l.Every > 0 && c.Step%l.Every == 0 {
		fmt.Fprintf(out(l.Out), "epoch: %d step: %d, loss is %.6f\n", c.Epoch, c.Step, c.Loss)
	}
}

func out(w io.Writer) io.Writer {
	if w == nil {
		return os.Stdout
	}
	return w
}

// TimeMonitor prints each epoch's duration and mean step time, MindSpore's
// TimeMonitor, and keeps them.
type TimeMonitor struct {
	BaseCallback
	// Out receives the lines; nil means standard output.
	Out io.Writer
	// Epochs holds each finished epoch's duration; StepTimes the mean
	// step time of each.
	Epochs, StepTimes []time.Duration

	start time.Time
}

// NewTimeMonitor returns a TimeMonitor writing to standard output.
func NewTimeMonitor() *TimeMonitor { return &TimeMonitor{} }

// OnEpochBegin starts the clock.
func (t *TimeMonitor) OnEpochBegin(*RunContext) { t.start = time.Now() }

// OnEpochEnd records and prints the epoch's time.
func (t *TimeMonitor) OnEpochEnd(c *RunContext) {
	d := time.Since(t.start)
	per := time.Duration(0)
	if c.Step > 0 {
		per = d / time.Duration(c.Step)
	}
	t.Epochs = append(t.Epochs, d)
	t.StepTimes = append(t.StepTimes, per)
	fmt.Fprintf(out(t.Out), "epoch time: %.3f ms, per step time: %.3f ms\n", ms(d), ms(per))
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// EarlyStopping stops training when a monitored value has stopped
// improving, MindSpore's EarlyStopping: after Patience epochs in which it
// did not improve on the best by more than MinDelta.
type EarlyStopping struct {
	BaseCallback
	// Monitor names the value: "loss" (the epoch's mean training loss) or
	// "eval_<metric>" from Fit's validation, e.g. "eval_accuracy".
	Monitor string
	// Patience is the number of epochs without improvement to tolerate.
	Patience int
	// MinDelta is the smallest change that counts as an improvement.
	MinDelta float64
	// Mode is "min", "max" or "auto" (""): auto maximises names containing
	// "acc" and minimises the rest.
	Mode string
	// RestoreBest copies back the network parameters of the best epoch
	// when training stops early.
	RestoreBest bool

	// Best is the best value seen, BestEpoch its epoch, StoppedEpoch the
	// epoch at which training was stopped (0 if it was not).
	Best                    float64
	BestEpoch, StoppedEpoch int

	wait int
	best []*tensor.Tensor
}

// OnTrainBegin resets the state.
func (e *EarlyStopping) OnTrainBegin(*RunContext) {
	e.wait, e.BestEpoch, e.StoppedEpoch, e.best = 0, 0, 0, nil
	e.Best = math.Inf(1)
	if e.maximise() {
		e.Best = math.Inf(-1)
	}
}

func (e *EarlyStopping) maximise() bool {
	switch e.Mode {
	case "max":
		return true
	case "min":
		return false
	}
	return strings.Contains(e.Monitor, "acc")
}

// OnEpochEnd compares the monitored value with the best so far.
func (e *EarlyStopping) OnEpochEnd(c *RunContext) {
	v, ok := c.Metrics[e.Monitor]
	if !ok {
		c.StopWithError(fmt.Errorf("train: EarlyStopping monitors %q, which is not among the epoch's values %v (validation metrics need Fit with a validation dataset)", e.Monitor, keys(c.Metrics)))
		return
	}
	better := v < e.Best-e.MinDelta
	if e.maximise() {
		better = v > e.Best+e.MinDelta
	}
	if better {
		e.Best, e.BestEpoch, e.wait = v, c.Epoch, 0
		if e.RestoreBest {
			e.best = e.best[:0]
			for _, p := range c.Model.Network.Base().Parameters() {
				e.best = append(e.best, p.Clone())
			}
		}
		return
	}
	e.wait++
	if e.wait >= e.Patience {
		e.StoppedEpoch = c.Epoch
		c.RequestStop()
		if e.RestoreBest && e.best != nil {
			for i, p := range c.Model.Network.Base().Parameters() {
				p.Assign(e.best[i])
			}
		}
	}
}

func keys(m map[string]float64) []string { return slices.Sorted(maps.Keys(m)) }
