package nn

import (
	"sync"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/comm"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// Optimizer is what TrainOneStepCell needs of an optimiser; every
// optimiser of package optim implements it.
type Optimizer interface {
	// Parameters returns the parameters to update, in the order Step
	// expects their gradients.
	Parameters() []*spore.Tensor
	// Step updates the parameters (and the optimiser's state) in place
	// from gradients, with ops and Assign, so that it can be traced.
	Step(grads []*spore.Tensor)
}

// StepMode says how TrainOneStepCell runs a step.
type StepMode int

const (
	// StepFollowContext compiles the step in Graph mode and runs it
	// eagerly in PyNative mode (the default).
	StepFollowContext StepMode = iota
	// StepEager always runs the step eagerly.
	StepEager
	// StepCompiled always runs the step as one compiled graph.
	StepCompiled
)

// TrainOneStepConfig configures TrainOneStepCell.
type TrainOneStepConfig struct {
	// ClipGlobalNorm, when positive, clips the gradients to this global
	// norm (ClipByGlobalNorm) before the update.
	ClipGlobalNorm float64
	// Mode chooses eager or compiled execution; see StepMode.
	Mode StepMode
	// Jit configures the compiled step; a zero Level follows the context's
	// JitLevel.
	Jit spore.JitConfig
	// Parallel, when set, overrides the process-wide
	// spore.GetAutoParallelContext for this cell. With DataParallel the
	// step all-reduces the gradients across ranks before clipping and the
	// update, and returns the loss averaged across ranks (see package comm
	// and dataparallel.go).
	Parallel *spore.AutoParallelContext
}

// TrainOneStepCell is MindSpore's nn.TrainOneStepCell: one call runs the
// forward pass of a network with loss, the backward pass for the
// optimiser's parameters, optional gradient clipping, and the optimiser's
// in-place update, and returns the loss.
//
// With data parallelism (spore.SetAutoParallelContext, or
// TrainOneStepConfig.Parallel, read when the cell is made) the gradients
// are all-reduced across ranks in buckets before clipping and the update,
// overlapping the backward pass in Graph mode, and the loss returned is the
// mean over ranks.
//
// In PyNative mode the step runs eagerly. In Graph mode (or with
// StepCompiled) the whole step — forward, backward and update — is traced
// once per input signature into ONE compiled graph whose plan assigns the
// new parameters and optimiser state in place; later steps only run the
// plan, and Step runs it without allocating.
//
// Like WithLossCell it adds no name segment, so its parameters keep the
// network's names. A TrainOneStepCell is not safe for concurrent use.
type TrainOneStepCell struct {
	Cell
	// Network computes the scalar loss from (data, label), typically a
	// WithLossCell.
	Network Module `nn:",inline"`
	// Optimizer updates the parameters.
	Optimizer Optimizer `nn:"-"`

	cfg      TrainOneStepConfig
	grad     func(...*spore.Tensor) (*spore.Tensor, []*spore.Tensor)
	stepMu   sync.Mutex
	jits     map[stepKey]*spore.JitFunc[func(x, y *spore.Tensor) *spore.Tensor]
	gradJits map[stepKey]*spore.JitFunc[func(...*spore.Tensor) []*spore.Tensor]
	args     []*spore.Tensor
	outs     []*spore.Tensor
	lossBuf  map[stepKey]*spore.Tensor
	sigEpoch int64 // trainEpoch when sig was computed, +1 (0: never)
	sig      string
}

type stepKey struct {
	level spore.Level
	train string
	// ranks is the number of ranks a data-parallel step was traced for
	// (its 1/N scaling is a constant of the graph); 0 stand-alone.
	ranks int
}

// NewTrainOneStepCell returns the training cell for a network with loss
// (a cell whose Construct takes data and label and returns a scalar loss)
// and an optimiser, and switches the network to training mode.
func NewTrainOneStepCell(netWithLoss Module, opt Optimizer, cfg ...TrainOneStepConfig) *TrainOneStepCell {
	const op = "nn.TrainOneStepCell"
	if netWithLoss == nil || opt == nil {
		core.Panicf(op, "network and optimizer must not be nil")
	}
	t := &TrainOneStepCell{Network: netWithLoss, Optimizer: opt}
	if len(cfg) > 0 {
		t.cfg = cfg[0]
	}
	if t.cfg.ClipGlobalNorm < 0 {
		core.Panicf(op, "clip norm %v is negative", t.cfg.ClipGlobalNorm)
	}
	weights := opt.Parameters()
	loss := func(x, y *spore.Tensor) *spore.Tensor { return netWithLoss.Base().Call(x, y) }
	if t.cfg.Parallel == nil {
		pc := spore.GetAutoParallelContext()
		t.cfg.Parallel = &pc
	} else if err := t.cfg.Parallel.Validate(); err != nil {
		core.Panicf(op, "%v", err)
	} else {
		pc := *t.cfg.Parallel // the caller's value may change later
		t.cfg.Parallel = &pc
	}
	if pc := t.cfg.Parallel; pc.ParallelMode == spore.DataParallel && pc.GradientsMean {
		t.grad = meanScaledGrad(loss, weights)
	} else {
		t.grad = spore.ValueAndGrad(loss, spore.GradPosition(), spore.Weights(weights...))
	}
	t.args = make([]*spore.Tensor, 2)
	t.outs = make([]*spore.Tensor, 1)
	Init(t)
	t.SetTrain(true)
	return t
}

// Construct runs one training step eagerly on concrete tensors, or
// records it into the graph being traced on symbolic ones, and returns the
// loss.
func (t *TrainOneStepCell) Construct(data, label *spore.Tensor) *spore.Tensor {
	loss, _ := t.construct(data, label)
	return loss
}

// construct is Construct that also returns the gradients the update
// applied: after the data-parallel reduction, before clipping.
func (t *TrainOneStepCell) construct(data, label *spore.Tensor) (*spore.Tensor, []*spore.Tensor) {
	loss, grads := t.grad(data, label)
	if t.cfg.Parallel.ParallelMode == spore.DataParallel {
		loss, grads = allReduceStep(loss, grads, *t.cfg.Parallel)
	}
	applied := grads
	if t.cfg.ClipGlobalNorm > 0 {
		applied = ClipByGlobalNorm(grads, t.cfg.ClipGlobalNorm)
	}
	t.Optimizer.Step(applied)
	return loss, grads
}

// StepWithGrads runs one training step, as Step does, and also returns
// the gradients the step computed for the optimiser's parameters, in
// their order, as new tensors: after the data-parallel reduction and
// before any ClipGlobalNorm. It is the same step, not an extra pass:
// Dropout draws one mask and BatchNorm updates its statistics once, so a
// run that asks for the gradients at some steps trains as one that never
// does — bit for bit at O0; at higher levels the compiled step that also
// returns the gradients may round differently in the last place, since
// its gradients must be materialised rather than fused into the update.
// In Graph mode it is compiled once per input signature, beside Step's
// plan.
func (t *TrainOneStepCell) StepWithGrads(data, label *spore.Tensor) (float64, []*spore.Tensor) {
	if !t.compiledMode() {
		loss, grads := t.construct(data, label)
		return loss.Item(), grads
	}
	t.stepMu.Lock()
	defer t.stepMu.Unlock()
	k, _ := t.compiled()
	j := t.gradJits[k]
	if j == nil {
		cfg := t.jitConfig()
		cfg.Name += "WithGrads"
		j = spore.NewJit(func(xs ...*spore.Tensor) []*spore.Tensor {
			loss, grads := t.construct(xs[0], xs[1])
			return append([]*spore.Tensor{loss}, grads...)
		}, cfg)
		if t.gradJits == nil {
			t.gradJits = map[stepKey]*spore.JitFunc[func(...*spore.Tensor) []*spore.Tensor]{}
		}
		t.gradJits[k] = j
	}
	out := j.Fn(data, label)
	return out[0].Item(), out[1:]
}

// Call runs one training step on (data, label) and returns the loss, a
// new tensor. It runs compiled or eagerly as the cell's StepMode and the
// global mode say; see TrainOneStepCell.
func (t *TrainOneStepCell) Call(xs ...*spore.Tensor) *spore.Tensor {
	if len(xs) != 2 {
		core.Panicf("nn.TrainOneStepCell", "Call takes data and label, got %d tensors", len(xs))
	}
	if !t.compiledMode() || anySymbolic(xs) {
		return t.Construct(xs[0], xs[1])
	}
	return t.runCompiled(xs[0], xs[1]).Clone()
}

// Step runs one training step and returns the loss as a float64. Once the
// input signature is compiled, a compiled step allocates nothing: it is
// the hot path of a training loop.
func (t *TrainOneStepCell) Step(data, label *spore.Tensor) float64 {
	if !t.compiledMode() {
		return t.Construct(data, label).Item()
	}
	return t.runCompiled(data, label).Item()
}

func (t *TrainOneStepCell) compiledMode() bool {
	switch t.cfg.Mode {
	case StepEager:
		return false
	case StepCompiled:
		return true
	}
	return spore.GetContext().Mode == spore.GraphMode
}

// runCompiled runs the compiled step and returns the cell's loss buffer,
// which the next step overwrites.
func (t *TrainOneStepCell) runCompiled(data, label *spore.Tensor) *spore.Tensor {
	t.stepMu.Lock()
	defer t.stepMu.Unlock()
	k, j := t.compiled()
	buf := t.lossBuf[k]
	if buf == nil {
		// The first call compiles and tells the loss's type.
		loss := j.Fn(data, label)
		buf = core.NewOf(tensor.Meta{Shape: loss.Shape().Clone(), DType: loss.DType()})
		core.Copy(buf, loss)
		t.lossBuf[k] = buf
		return buf
	}
	t.args[0], t.args[1] = data, label
	t.outs[0] = buf
	j.RunInto(t.args, t.outs)
	t.args[0], t.args[1] = nil, nil
	return buf
}

// jitConfig is the configuration of the compiled step: the cell's, at
// the context's level unless it names one.
func (t *TrainOneStepCell) jitConfig() spore.JitConfig {
	cfg := t.cfg.Jit
	if cfg.Level == spore.Level(0) {
		cfg.Level = spore.GetContext().JitLevel
	}
	if cfg.Name == "" {
		cfg.Name = "TrainOneStepCell"
	}
	return cfg
}

// compiled returns the compiled step for the current level and training
// flags, creating it on first use.
func (t *TrainOneStepCell) compiled() (stepKey, *spore.JitFunc[func(x, y *spore.Tensor) *spore.Tensor]) {
	cfg := t.jitConfig()
	// The training flags are read at trace time (Dropout, BatchNorm), so
	// they key the compiled step; they are re-read only after a SetTrain.
	if e := trainEpoch.Load() + 1; e != t.sigEpoch {
		t.sig = trainSignature(t)
		t.sigEpoch = e
	}
	k := stepKey{level: cfg.Level, train: t.sig}
	if t.cfg.Parallel.ParallelMode == spore.DataParallel {
		k.ranks = comm.Size()
	}
	j := t.jits[k]
	if j == nil {
		j = spore.NewJit(func(x, y *spore.Tensor) *spore.Tensor { return t.Construct(x, y) }, cfg)
		if t.jits == nil {
			t.jits = map[stepKey]*spore.JitFunc[func(x, y *spore.Tensor) *spore.Tensor]{}
			t.lossBuf = map[stepKey]*spore.Tensor{}
		}
		t.jits[k] = j
	}
	return k, j
}

// StepStats returns the compile-cache statistics of the compiled step,
// summed over levels and training states: after any number of steps with
// one input signature, Compiles is 1.
func (t *TrainOneStepCell) StepStats() spore.JitStats {
	t.stepMu.Lock()
	defer t.stepMu.Unlock()
	var s spore.JitStats
	for _, j := range t.jits {
		s = s.Add(j.Stats())
	}
	for _, j := range t.gradJits {
		s = s.Add(j.Stats())
	}
	return s
}

// StepIR returns the optimised IR of the compiled step for inputs shaped
// like data and label, as text (see spore.IR): the parameter and state
// updates appear as "assign" lines.
func (t *TrainOneStepCell) StepIR(data, label *spore.Tensor) (string, error) {
	cfg := t.cfg.Jit
	if cfg.Name == "" {
		cfg.Name = "TrainOneStepCell"
	}
	return spore.IR(func(x, y *spore.Tensor) *spore.Tensor { return t.Construct(x, y) }, []any{data, label}, cfg)
}
