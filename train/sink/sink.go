package sink

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"

	"github.com/sporeml/spore/internal/control"
	"github.com/sporeml/spore/internal/jit"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// Dataset is what DataSink reads batches from: each call of All
// starts an epoch and yields its batches (tensors of one batch, such as
// data and label), ending with an error if the source fails.
// *dataset.Dataset and train.Dataset satisfy it.
type Dataset interface {
	All() iter.Seq2[[]*Tensor, error]
}

// Config configures DataSink.
type Config struct {
	// Jit configures the compiled call; a zero Level follows the
	// context's JitLevel. With Jit.Disable the queues run eagerly.
	Jit jit.Config
	// Compiled runs the queues compiled whatever the context's mode (as
	// nn.StepCompiled does for a training cell); by default they run
	// compiled in Graph mode only.
	Compiled bool
	// Epochs, when positive, stops the sink after that many epochs of the
	// dataset: Run then returns ErrDone. Zero cycles through the
	// dataset for ever, as MindSpore's data_sink does.
	Epochs int
	// Context, when not nil, stops the sink when it is done: the filling
	// goroutine exits and Run returns the context's error.
	Context context.Context
}

// ErrDone is what Sink.Run returns after the last epoch that
// Config.Epochs asked for.
var ErrDone = errors.New("spore: DataSink: no more epochs")

// Position says where in the dataset a Sink.Run call's steps came
// from.
type Position struct {
	// Epoch is the dataset epoch of the steps, from 1.
	Epoch int
	// Step is the step within the epoch of the first of them, from 1.
	Step int
	// Steps is how many steps the call ran: the sink size, or fewer at the
	// end of an epoch and where the batches' shapes change.
	Steps int
	// EpochEnd says that the last of them was the epoch's last step.
	EpochEnd bool
}

// Sink runs a training step over a dataset n steps per call, MindSpore's
// data sink mode; DataSink makes one. A Sink is for one goroutine; Close
// it when done.
type Sink struct {
	step   func(batch ...*Tensor) *Tensor
	n      int
	cfg    Config
	jit    *jit.Func[func(...*Tensor) *Tensor]
	feed   *sinkFeed
	pos    Position
	err    error // sticky: the sink stops at its first failure
	closed bool
	// held is the last run's queue, kept for Batch until the next Run.
	held sinkQueue
}

// New returns step sunk over ds, MindSpore's mindspore.data_sink:
// each call of the Sink's Run takes the next n batches of ds, stacked
// along a new leading axis into one queue, runs step on each of them in
// turn as ONE call — a Scan over the queue, which under Graph mode is a
// single compiled plan looping over the queue without returning to Go
// between steps — and returns the n losses.
//
// step takes one batch's tensors and returns a scalar loss; it is
// typically a training step (nn.TrainOneStepCell's Construct) whose
// parameter and optimiser-state updates are Assigns: the scanned plan
// performs them in place at the end of every step, so step i+1 sees the
// weights step i wrote, and n sunk steps compute what n separate calls of
// step would (bit for bit at O0; see train.Model's SinkSize).
//
// In Graph mode (or with Config.Compiled) each queue runs compiled,
// one plan per queue shape; in PyNative mode (or with Jit.Disable) the
// Scan is a Go loop running step eagerly, as MindSpore's data_sink runs
// without a jit_config.
//
// A goroutine fills the next queue while the current call runs (at most
// one queue ahead), so that reading, shuffling and stacking the data
// overlaps the training. A queue never spans two epochs: the last call of
// an epoch whose length is not a multiple of n runs the steps left over,
// a shorter Scan (compiled once for that length). A batch whose shapes
// differ from the queue's (a last partial batch) also starts a queue of
// its own. A failure of the dataset surfaces on the Run after the steps
// that preceded it, naming the epoch and step; a panic in the dataset is
// re-raised by Run. The sink holds two queues of at most n batches: the
// one running and the next.
//
// Randomness: Dropout and the other random ops draw from the framework's
// random source when each step runs, sunk or not, so a sunk run draws
// what a step-by-step run draws, in the same order, and ends with the
// same weights. That fails only for a dataset pipeline that draws from
// the framework's source itself (a random augmentation in a Map): it runs
// on the filling goroutine, concurrently with the steps, and the two
// interleave differently from run to run. Shuffle seeds itself once, when
// it is built, and is unaffected.
//
// New panics if step or ds is nil or n is not positive.
func New(step func(batch ...*Tensor) *Tensor, ds Dataset, n int, cfg ...Config) *Sink {
	const op = "DataSink"
	switch {
	case step == nil:
		core.Panicf(op, "step is nil")
	case ds == nil:
		core.Panicf(op, "dataset is nil")
	case n < 1:
		core.Panicf(op, "sink size %d; need at least 1", n)
	}
	s := &Sink{step: step, n: n}
	if len(cfg) > 0 {
		s.cfg = cfg[0]
	}
	if s.cfg.Epochs < 0 {
		core.Panicf(op, "epochs %d is negative", s.cfg.Epochs)
	}
	jc := s.cfg.Jit
	if jc.Name == "" {
		jc.Name = "DataSink"
	}
	s.jit = jit.New(s.scanned, jc)
	s.feed = newSinkFeed(ds, n, s.cfg.Epochs, s.cfg.Context)
	return s
}

// scanned runs step over every queued batch: the function DataSink
// compiles.
func (s *Sink) scanned(queue ...*Tensor) *Tensor {
	_, ys := control.Scan(func(_, batch []*Tensor) ([]*Tensor, []*Tensor) {
		loss := s.step(batch...)
		if loss == nil || loss.Rank() != 0 || !loss.DType().IsFloat() {
			core.Panicf("DataSink", "the step must return a floating-point scalar loss, got %s", describe(loss))
		}
		return nil, []*Tensor{loss}
	}, nil, queue)
	return ys[0]
}

func describe(t *Tensor) string {
	if t == nil {
		return "nil"
	}
	return fmt.Sprintf("%v %v", t.Shape(), t.DType())
}

// Run takes the next queue of batches, runs the step on each, and returns
// the losses, a new one-dimensional tensor with one element per step run
// (n, or fewer at the end of an epoch; see Position). It returns
// ErrDone after the last epoch Config.Epochs asked for, the
// dataset's failure (after running the steps before it), or the
// context's error; after an error every later Run returns it again.
func (s *Sink) Run() (*Tensor, error) {
	if s.closed {
		return nil, errors.New("spore: DataSink: Run after Close")
	}
	if s.err != nil {
		return nil, s.err
	}
	s.release()
	q := s.feed.next()
	if q.panicked {
		s.err = fmt.Errorf("spore: DataSink: epoch %d, step %d: the dataset panicked: %v", q.pos.Epoch, q.pos.Step, q.panicVal)
		panic(q.panicVal)
	}
	if q.err != nil {
		s.err = q.err
		return nil, s.err
	}
	s.pos = q.pos
	var losses *Tensor
	if s.compiled() {
		losses = s.jit.Fn(q.xs...)
	} else {
		losses = s.scanned(q.xs...)
	}
	s.held = q
	return losses, nil
}

// release hands the last run's queue back to the feeder.
func (s *Sink) release() {
	if s.held.xs != nil {
		s.feed.release(s.held)
		s.held = sinkQueue{}
	}
}

// Batch returns the tensors of step i (from 0) of the last Run's queue,
// views that stay valid until the next Run, Restart or Close: what a
// step-by-step loop would have passed to the step.
func (s *Sink) Batch(i int) []*Tensor {
	if s.held.xs == nil || i < 0 || i >= s.pos.Steps {
		core.Panicf("DataSink.Batch", "step %d of a queue of %d steps", i, s.pos.Steps)
	}
	out := make([]*Tensor, len(s.held.xs))
	for k, x := range s.held.xs {
		out[k] = row(x, i)
	}
	return out
}

// row is row i of x along its leading axis, sharing x's buffer.
func row(x *Tensor, i int) *Tensor {
	shape := x.Shape()[1:].Clone()
	n := shape.Size()
	return control.RowView(x, i*n, (i+1)*n, shape)
}

// compiled reports whether a queue runs as one compiled call: under
// Graph mode or when configured so, unless the configuration disables
// Jit.
func (s *Sink) compiled() bool {
	return (s.cfg.Compiled || jit.GetContext().Mode == jit.GraphMode) && !s.cfg.Jit.Disable
}

// Position says where the steps of the last successful Run came from.
func (s *Sink) Position() Position { return s.pos }

// Size returns the sink size n.
func (s *Sink) Size() int { return s.n }

// Stats returns the compile-cache statistics of the compiled queue
// call: one compile per queue shape (full queues, and the shorter last
// queue of an epoch).
func (s *Sink) Stats() jit.Stats { return s.jit.Stats() }

// Close stops the goroutine filling queues and waits for it to exit
// (after the batch the dataset is producing, if any). Call it when done
// with the sink, whatever Run last returned; it is safe to call more than
// once.
func (s *Sink) Close() error {
	if !s.closed {
		s.closed = true
		s.held = sinkQueue{}
		s.feed.close()
	}
	return nil
}

// Restart stops the goroutine filling queues (as Close does) and starts
// reading ds from its first epoch, for epochs epochs (0: for ever),
// keeping the compiled queue plans: a training loop that sinks the same
// step over new data, or over the same data again, compiles nothing
// more. Errors of the previous feed are forgotten.
func (s *Sink) Restart(ds Dataset, epochs int) {
	const op = "DataSink.Restart"
	switch {
	case ds == nil:
		core.Panicf(op, "dataset is nil")
	case epochs < 0:
		core.Panicf(op, "epochs %d is negative", epochs)
	}
	s.Close()
	s.cfg.Epochs = epochs
	s.feed = newSinkFeed(ds, s.n, epochs, s.cfg.Context)
	s.pos, s.err, s.closed = Position{}, nil, false
}

// sinkQueue is one queue the feeder hands over: steps batches stacked, or
// the failure that ended the feed.
type sinkQueue struct {
	xs       []*Tensor
	set      *queueSet // the pooled buffers xs lives in, returned after the run; nil if xs was allocated
	pos      Position
	err      error
	panicked bool
	panicVal any
}

// queueSet is one queue's stacked tensors, room for rows batches (n once
// a full queue has been filled), reused from call to call while the
// batches keep their shapes.
type queueSet struct {
	rows  int
	xs    []*Tensor
	metas []tensor.Meta // of one batch's tensors
	cp    []core.Copier
	size  []int
}

func (q *queueSet) fits(batch []*Tensor) bool {
	if len(batch) != len(q.metas) {
		return false
	}
	for i, t := range batch {
		if t.DType() != q.metas[i].DType || !t.Shape().Equal(q.metas[i].Shape) {
			return false
		}
	}
	return true
}

// sinkFeed fills queues on a goroutine of its own, one queue ahead of the
// consumer, with two sets of buffers that the two sides hand back and
// forth.
type sinkFeed struct {
	ds     Dataset
	n      int
	epochs int
	ctx    context.Context
	ready  chan sinkQueue
	free   chan *queueSet
	done   chan struct{}
	exited chan struct{}
	once   sync.Once
	last   sinkQueue // the final item, returned again on every later next
	ended  bool
}

func newSinkFeed(ds Dataset, n, epochs int, ctx context.Context) *sinkFeed {
	f := &sinkFeed{
		ds: ds, n: n, epochs: epochs, ctx: ctx,
		ready:  make(chan sinkQueue, 1),
		free:   make(chan *queueSet, 2),
		done:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	f.free <- nil // two sets, allocated on first use
	f.free <- nil
	go f.produce()
	return f
}

// next returns the next queue, or the final item (an error) again.
func (f *sinkFeed) next() sinkQueue {
	if f.ended {
		return f.last
	}
	var q sinkQueue
	var ctxDone <-chan struct{}
	if f.ctx != nil {
		ctxDone = f.ctx.Done()
	}
	select {
	case q = <-f.ready:
	case <-ctxDone:
		q = sinkQueue{err: fmt.Errorf("spore: DataSink: %w", f.ctx.Err())}
	}
	if q.err != nil || q.panicked {
		f.ended, f.last = true, q
	}
	return q
}

// release hands a run queue's buffers back to the feeder.
func (f *sinkFeed) release(q sinkQueue) {
	if q.set != nil {
		f.free <- q.set // never blocks: there are two sets and two slots
	}
}

func (f *sinkFeed) close() {
	f.once.Do(func() { close(f.done) })
	<-f.exited
}

// send hands q to the consumer; it reports false when the consumer has
// gone.
func (f *sinkFeed) send(q sinkQueue) bool {
	var ctxDone <-chan struct{}
	if f.ctx != nil {
		ctxDone = f.ctx.Done()
	}
	select {
	case f.ready <- q:
		return true
	case <-f.done:
		return false
	case <-ctxDone:
		return false
	}
}

// takeSet waits for a free buffer set; nil, false when the consumer has
// gone.
func (f *sinkFeed) takeSet() (*queueSet, bool) {
	var ctxDone <-chan struct{}
	if f.ctx != nil {
		ctxDone = f.ctx.Done()
	}
	select {
	case s := <-f.free:
		if s == nil {
			s = &queueSet{}
		}
		return s, true
	case <-f.done:
		return nil, false
	case <-ctxDone:
		return nil, false
	}
}

// produce runs on the feeder's goroutine: it reads the epochs, stacks
// their batches into queues and sends them, ending with an error item.
func (f *sinkFeed) produce() {
	defer close(f.exited)
	var where Position
	defer func() {
		if r := recover(); r != nil {
			f.send(sinkQueue{panicked: true, panicVal: r, pos: where})
		}
	}()
	for epoch := 1; f.epochs == 0 || epoch <= f.epochs; epoch++ {
		if !f.epoch(epoch, &where) {
			return
		}
	}
	f.send(sinkQueue{err: ErrDone})
}

// epoch feeds one epoch; it reports false when the feed must stop (the
// consumer left, or an error was sent).
func (f *sinkFeed) epoch(epoch int, where *Position) bool {
	var (
		set  *queueSet // the queue being filled
		k    int       // batches in it
		held *sinkQueue
		step int
	)
	// flush sends the held full queue, which is now known not to end the
	// epoch.
	flush := func(end bool) bool {
		if held == nil {
			return true
		}
		held.pos.EpochEnd = end
		q := *held
		held = nil
		return f.send(q)
	}
	// finish turns the queue being filled into a sendable one.
	finish := func() *sinkQueue {
		q := &sinkQueue{pos: Position{Epoch: epoch, Step: step - k + 1, Steps: k}}
		if k == f.n {
			q.xs, q.set = set.xs, set
		} else {
			// A short queue gets tensors of its own length; the set
			// goes straight back to the pool.
			q.xs = make([]*Tensor, len(set.xs))
			for i, x := range set.xs {
				m := set.metas[i]
				t := core.NewOf(tensor.Meta{Shape: append(tensor.Shape{k}, m.Shape...), DType: m.DType})
				set.cp[i](t, 0, x, 0, k*set.size[i])
				q.xs[i] = t
			}
			f.free <- set
		}
		set, k = nil, 0
		return q
	}
	for batch, err := range f.ds.All() {
		*where = Position{Epoch: epoch, Step: step + 1}
		if err == nil {
			err = checkBatch(batch, set)
		}
		if err != nil {
			if !flush(false) {
				return false
			}
			if set != nil && k > 0 {
				q := finish()
				if !f.send(*q) {
					return false
				}
			}
			f.send(sinkQueue{err: fmt.Errorf("spore: DataSink: epoch %d, step %d: %w", epoch, step+1, err)})
			return false
		}
		if set != nil && !set.fits(batch) {
			// New shapes: the queue so far runs on its own.
			q := finish()
			if !flush(false) {
				return false
			}
			held = q
		}
		step++
		if !flush(false) {
			return false
		}
		if set == nil {
			s, ok := f.takeSet()
			if !ok {
				return false
			}
			set = s
			set.prepare(batch, f.n)
		}
		if k == set.rows {
			set.grow(k, f.n)
		}
		for i, t := range batch {
			set.cp[i](set.xs[i], k*set.size[i], t, 0, set.size[i])
		}
		k++
		if k == f.n {
			held = finish()
		}
	}
	if set != nil && k > 0 {
		if !flush(false) {
			return false
		}
		held = finish()
	}
	if held == nil {
		f.send(sinkQueue{err: fmt.Errorf("spore: DataSink: epoch %d of the dataset has no batches", epoch)})
		return false
	}
	return flush(true)
}

// checkBatch refuses a batch that cannot be stacked: empty, or holding a
// nil or symbolic tensor.
func checkBatch(batch []*Tensor, set *queueSet) error {
	if len(batch) == 0 {
		return errors.New("a batch has no tensors")
	}
	for i, t := range batch {
		switch {
		case t == nil:
			return fmt.Errorf("tensor %d of the batch is nil", i)
		case t.IsSymbolic():
			return fmt.Errorf("tensor %d of the batch is symbolic; a dataset yields concrete data", i)
		}
	}
	if set != nil && len(set.metas) > 0 && len(batch) != len(set.metas) {
		return fmt.Errorf("a batch has %d tensors, the one before it %d", len(batch), len(set.metas))
	}
	return nil
}

// prepare makes the set hold batches shaped like batch, reusing its
// buffers when they already fit. The buffers start at room for a few
// batches and grow (grow) as the queue fills, up to n: a sink size larger
// than the epoch costs no memory beyond the epoch.
func (q *queueSet) prepare(batch []*Tensor, n int) {
	if q.metas != nil && q.fits(batch) {
		return
	}
	q.xs, q.metas, q.cp, q.size = nil, nil, nil, nil
	q.rows = min(n, initialRows)
	for _, t := range batch {
		m := tensor.Meta{Shape: t.Shape().Clone(), DType: t.DType()}
		q.metas = append(q.metas, m)
		q.xs = append(q.xs, core.NewOf(tensor.Meta{Shape: append(tensor.Shape{q.rows}, m.Shape...), DType: m.DType}))
		q.cp = append(q.cp, core.CopierFor(m.DType))
		q.size = append(q.size, m.Shape.Size())
	}
}

// initialRows is the number of batches a queue's buffers first hold.
const initialRows = 16

// grow doubles the rows the set holds, up to n, keeping the first k.
func (q *queueSet) grow(k, n int) {
	q.rows = min(2*q.rows, n)
	for i, x := range q.xs {
		m := q.metas[i]
		y := core.NewOf(tensor.Meta{Shape: append(tensor.Shape{q.rows}, m.Shape...), DType: m.DType})
		q.cp[i](y, 0, x, 0, k*q.size[i])
		q.xs[i] = y
	}
}
