package train

import (
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/checkpoint"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/tensor"
)

// Dataset is a source of batches, one epoch per call of All: each batch is
// (data, label, ...) tensors, and a failing source yields a final error.
// *dataset.Dataset satisfies it.
type Dataset interface {
	All() iter.Seq2[[]*tensor.Tensor, error]
}

// Model is MindSpore's mindspore.train.Model: a network with a loss, an
// optimiser and metrics, trained with Train (or Fit, with validation),
// measured with Eval, and run with Predict.
//
// Training runs through an nn.TrainOneStepCell, so it honours the global
// mode: in PyNative mode each step runs eagerly, in Graph mode each step —
// forward, backward and the optimiser update — runs as one compiled graph.
type Model struct {
	// Network maps data to predictions.
	Network nn.Layer
	// LossFn compares predictions with labels.
	LossFn nn.Loss
	// Optimizer updates the network's parameters; nil for a model used
	// only for Eval and Predict.
	Optimizer optim.Optimizer
	// Metrics are what Eval reports; with none, Eval reports the loss.
	Metrics []Metric
	// StepConfig configures the training cell (gradient clipping, forced
	// eager or compiled execution); set it before the first Train.
	StepConfig nn.TrainOneStepConfig
	// AmpLevel is the network's mixed precision, MindSpore's amp_level:
	// O2 or O3 run it under nn.AutoMixedPrecision for training, Eval and
	// Predict; O0 in full precision; empty leaves the network as it is.
	AmpLevel nn.AmpLevel
	// SinkSize, when positive, trains in data sink mode, MindSpore's
	// dataset_sink_mode with sink_size: SinkSize steps per call, run as
	// one compiled Scan over a queue of batches filled ahead on another
	// goroutine (see package train/sink and this package's sink.go). Zero trains step by
	// step.
	SinkSize int

	withLoss *nn.WithLossCell
	cell     *nn.TrainOneStepCell
	parallel spore.AutoParallelContext // the cell's data-parallel setting
	sink     *spore.Sink               // the sunk training's sink, kept from Fit to Fit
	sinkKey  sinkKey                   // what sink was made under
}

// NewModel returns a model, MindSpore's Model(network, loss_fn, optimizer,
// metrics).
func NewModel(network nn.Layer, lossFn nn.Loss, opt optim.Optimizer, metrics ...Metric) *Model {
	if network == nil || lossFn == nil {
		core.Panicf("train.Model", "network and loss must not be nil")
	}
	return &Model{Network: network, LossFn: lossFn, Optimizer: opt, Metrics: metrics}
}

// TrainCell returns the training cell, building it on first use.
func (m *Model) TrainCell() *nn.TrainOneStepCell {
	if m.cell == nil {
		if m.Optimizer == nil {
			core.Panicf("train.Model", "no optimizer: the model cannot be trained")
		}
		m.applyAmp()
		m.withLoss = nn.NewWithLossCell(m.Network, m.LossFn)
		m.parallel = stepParallel(m.StepConfig)
		m.cell = nn.NewTrainOneStepCell(m.withLoss, m.Optimizer, m.StepConfig)
	}
	return m.cell
}

// GlobalStep returns the number of optimiser steps taken so far (from the
// optimiser's state, so it survives LoadCheckpoint).
func (m *Model) GlobalStep() int {
	if g, ok := m.Optimizer.(interface{ GlobalStep() int }); ok {
		return g.GlobalStep()
	}
	return 0
}

// Train trains for epochs passes over ds, MindSpore's Model.train, calling
// the callbacks along the way. It returns the dataset's error, a
// callback's error (RunContext.StopWithError), or nil; a callback's
// RequestStop ends training early without error.
func (m *Model) Train(epochs int, ds Dataset, callbacks ...Callback) error {
	return m.Fit(epochs, ds, nil, callbacks...)
}

// Fit is Train that also evaluates on valid after every epoch (when valid
// is not nil), MindSpore's Model.fit: the results are in
// RunContext.Metrics as "eval_<metric name>" for the epoch-end callbacks
// (EarlyStopping monitors them).
//
// Under data parallelism (DataParallel), Fit first makes the ranks'
// replicas agree (SyncReplicas) and fails on every rank if their models
// differ; each rank should iterate its own part of every global batch
// (dataset's ShardedBatch), the same number of steps on every rank.
func (m *Model) Fit(epochs int, trainSet, valid Dataset, callbacks ...Callback) (err error) {
	if epochs < 0 {
		core.Panicf("train.Model.Train", "epochs %d is negative", epochs)
	}
	if trainSet == nil {
		core.Panicf("train.Model.Train", "no dataset")
	}
	cell := m.TrainCell()
	if err := m.SyncReplicas(); err != nil {
		return err
	}
	ctx := &RunContext{Model: m, Epochs: epochs, GlobalStep: m.GlobalStep(), Metrics: map[string]float64{}}
	each := func(f func(Callback)) {
		for _, cb := range callbacks {
			f(cb)
		}
	}
	each(func(cb Callback) { cb.OnTrainBegin(ctx) })
	defer func() {
		each(func(cb Callback) { cb.OnTrainEnd(ctx) })
		if err == nil {
			err = ctx.err
		}
	}()
	if m.SinkSize != 0 {
		return m.fitSunk(cell, epochs, trainSet, valid, ctx, each)
	}
	for epoch := 1; epoch <= epochs && !ctx.stop; epoch++ {
		cell.SetTrain(true)
		ctx.Epoch, ctx.Step = epoch, 0
		clear(ctx.Metrics)
		each(func(cb Callback) { cb.OnEpochBegin(ctx) })
		sum := 0.0
		for batch, err := range trainSet.All() {
			if err != nil {
				return fmt.Errorf("train: epoch %d: %w", epoch, err)
			}
			if len(batch) < 2 {
				return fmt.Errorf("train: epoch %d: a batch has %d tensors, want data and label", epoch, len(batch))
			}
			ctx.Step++
			ctx.GlobalStep++
			ctx.Batch = batch
			each(func(cb Callback) { cb.OnStepBegin(ctx) })
			if ctx.WantGrads {
				ctx.Loss, ctx.Grads = cell.StepWithGrads(batch[0], batch[1])
			} else {
				ctx.Loss = cell.Step(batch[0], batch[1])
			}
			sum += ctx.Loss
			each(func(cb Callback) { cb.OnStepEnd(ctx) })
			ctx.WantGrads, ctx.Grads = false, nil
			if ctx.stop {
				break
			}
		}
		if err := m.endEpoch(ctx, sum, valid, each); err != nil {
			return err
		}
	}
	return nil
}

// Eval runs the network in inference mode over ds and returns every
// metric by name, MindSpore's Model.eval. With no metrics it reports the
// mean loss as "loss".
//
// Under data parallelism (DataParallel) each rank evaluates its shard of
// the set (dataset.Shard) and Eval adds the ranks' sums (Summable), so
// that every rank returns the metrics of the whole set.
func (m *Model) Eval(ds Dataset) (map[string]float64, error) {
	metrics := m.Metrics
	if len(metrics) == 0 {
		metrics = []Metric{NewLoss()}
	}
	for _, mt := range metrics {
		mt.Reset()
	}
	m.applyAmp()
	net := m.Network.Base()
	was := net.Training()
	net.SetTrain(false)
	defer net.SetTrain(was)
	n := 0
	for batch, err := range ds.All() {
		if err != nil {
			return nil, fmt.Errorf("train: eval: %w", err)
		}
		if len(batch) < 2 {
			return nil, fmt.Errorf("train: eval: a batch has %d tensors, want data and label", len(batch))
		}
		logits := net.Call(batch[0])
		loss := m.LossFn.Base().Call(logits, batch[1]).Item()
		for _, mt := range metrics {
			mt.Update(logits, batch[1], loss)
		}
		n++
	}
	if m.DataParallel() {
		// Every rank reaches this point, even one whose shard of the
		// set is empty: the check below runs on the combined count.
		if err := reduceMetrics(metrics, &n); err != nil {
			return nil, err
		}
	}
	if n == 0 {
		return nil, errors.New("train: eval: the dataset has no batches")
	}
	out := make(map[string]float64, len(metrics))
	for _, mt := range metrics {
		out[mt.Name()] = mt.Value()
	}
	return out, nil
}

// Predict runs the network in inference mode on x, MindSpore's
// Model.predict.
func (m *Model) Predict(x *tensor.Tensor) *tensor.Tensor {
	m.applyAmp()
	net := m.Network.Base()
	was := net.Training()
	net.SetTrain(false)
	defer net.SetTrain(was)
	return net.Call(x)
}

// CheckpointParams returns what a checkpoint of the model holds: the
// network's parameters under their names, then the optimiser's state
// ("global_step", "moment1.<name>", ...).
func (m *Model) CheckpointParams() []checkpoint.Param {
	out := []checkpoint.Param(NetParams(m.Network))
	if m.Optimizer != nil {
		out = append(out, checkpoint.FromTensors(m.Optimizer.State()...)...)
	}
	return out
}

// SaveCheckpoint writes the network's parameters and the optimiser's
// state to path (.safetensors or .ckpt, by extension), atomically. In a
// data-parallel run only rank 0 writes (see WritesCheckpoints); the other
// ranks, whose replicas are the same, return nil without writing.
func (m *Model) SaveCheckpoint(path string) error {
	if !m.WritesCheckpoints() {
		return nil
	}
	return checkpoint.Save(path, m.CheckpointParams(), nil)
}

// LoadCheckpoint restores a checkpoint written by SaveCheckpoint (or by
// ModelCheckpoint), so that training resumes where it stopped. The
// network's parameters must all be present with matching shapes; the
// optimiser's state is restored when the file has any of it (a file of
// bare network parameters, such as one from MindSpore's
// save_checkpoint(net), loads the network alone), and then must be
// complete. A model without an optimiser loads the network and ignores
// the optimiser state in the file. Nothing is changed on error, and the
// error says which half did not fit: the network's parameters or the
// optimizer state (one saved by another kind of optimiser, say).
func (m *Model) LoadCheckpoint(path string) error {
	src, _, err := checkpoint.Load(path)
	if err != nil {
		return err
	}
	var state checkpoint.Params
	if m.Optimizer != nil {
		state = checkpoint.FromTensors(m.Optimizer.State()...)
	}
	isState := map[string]bool{}
	for _, s := range state {
		isState[s.Name] = true
	}
	netDst := NetParams(m.Network)
	isNet := map[string]bool{}
	for _, p := range netDst {
		isNet[p.Name] = true
	}
	var netSrc, stateSrc []checkpoint.Param
	for _, p := range src {
		switch {
		case isState[p.Name]:
			stateSrc = append(stateSrc, p)
		case isNet[p.Name]:
			netSrc = append(netSrc, p)
		case looksLikeState(p.Name, isNet):
			// Another optimiser's slots: report them with the
			// optimizer state, not as strangers in the network.
			if m.Optimizer != nil {
				stateSrc = append(stateSrc, p)
			}
		default:
			netSrc = append(netSrc, p)
		}
	}
	// Check both halves before changing either: LoadInto assigns only
	// when its own check passes, so run the strict checks on copies first.
	if err := dryRun(netDst, netSrc); err != nil {
		return &loadError{path, "the network's parameters do not fit", err}
	}
	if len(stateSrc) > 0 {
		if err := dryRun(state, stateSrc); err != nil {
			return &loadError{path, "the optimizer state does not fit", err}
		}
	}
	if _, _, _, err := checkpoint.LoadInto(netDst, netSrc, true); err != nil {
		return &loadError{path, "the network's parameters do not fit", err}
	}
	if len(stateSrc) > 0 {
		if _, _, _, err := checkpoint.LoadInto(state, stateSrc, true); err != nil {
			return &loadError{path, "the optimizer state does not fit", err}
		}
	}
	return nil
}

// looksLikeState reports whether a checkpoint name is optimiser state as
// optim names it: "global_step", or a slot "<slot>.<parameter name>".
func looksLikeState(name string, isNet map[string]bool) bool {
	if name == "global_step" {
		return true
	}
	slot, param, ok := strings.Cut(name, ".")
	return ok && slot != "" && isNet[param]
}

// loadError says which half of a checkpoint did not fit. It formats a
// strict load's refusal itself, so that the message reads as one sentence
// rather than a pile of package prefixes, and unwraps to the checkpoint
// package's error.
type loadError struct {
	path, part string
	err        error
}

func (e *loadError) Error() string {
	var le *checkpoint.LoadError
	if !errors.As(e.err, &le) {
		return fmt.Sprintf("train: %s: %s: %v", e.path, e.part, e.err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "train: %s: %s, nothing was loaded:", e.path, e.part)
	sep := " "
	list := func(what string, names []string) {
		if len(names) > 0 {
			fmt.Fprintf(&b, "%s%d %s (%s)", sep, len(names), what, strings.Join(names, ", "))
			sep = "; "
		}
	}
	list("missing from the checkpoint", le.Missing)
	list("unexpected in the checkpoint", le.Unexpected)
	list("mismatched", le.Details)
	return b.String()
}

func (e *loadError) Unwrap() error { return e.err }

// dryRun runs a strict LoadInto against stand-in parameters of dst's
// names, shapes and dtypes, reporting what the real load would.
func dryRun(dst, src []checkpoint.Param) error {
	fake := make(checkpoint.Params, len(dst))
	for i, p := range dst {
		fake[i] = checkpoint.Param{Name: p.Name, Tensor: tensor.NewParameter(p.Name, tensor.Zeros(p.Tensor.DType(), p.Tensor.Shape()...))}
	}
	_, _, _, err := checkpoint.LoadInto(fake, src, true)
	return err
}

// endEpoch closes an epoch of Fit, sunk or not: the epoch's mean loss, the
// validation metrics, and OnEpochEnd.
func (m *Model) endEpoch(ctx *RunContext, sum float64, valid Dataset, each func(func(Callback))) error {
	ctx.Batch = nil
	ctx.StepsPerEpoch = max(ctx.StepsPerEpoch, ctx.Step)
	if ctx.Step > 0 {
		ctx.Metrics["loss"] = sum / float64(ctx.Step)
	}
	if valid != nil && !ctx.stop {
		res, err := m.Eval(valid)
		if err != nil {
			return fmt.Errorf("train: validation after epoch %d: %w", ctx.Epoch, err)
		}
		for k, v := range res {
			ctx.Metrics["eval_"+k] = v
		}
	}
	each(func(cb Callback) { cb.OnEpochEnd(ctx) })
	return nil
}
