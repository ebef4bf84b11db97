package serve

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// request is one Infer call waiting in a model version's queue.
type request struct {
	ctx  context.Context
	xs   []*tensor.Tensor // in the model's input order
	rows int              // batch rows (1 for a model that does not batch)
	key  string           // non-batch shapes: only equal keys batch together
	enq  time.Time
	done chan result // capacity 1: the worker never blocks on a request gone
}

// result is what a worker hands back to a request.
type result struct {
	outs           []*tensor.Tensor // the served outputs, in the spec's order
	err            error
	queue, compute time.Duration
}

// versionMetrics are a version's series, resolved once.
type versionMetrics struct {
	success, count, exec, requestUS, queueUS, computeUS prometheus.Counter
	pending                                             prometheus.Gauge
	failure                                             *prometheus.CounterVec
}

func newVersionMetrics(m *metrics, model, version string) *versionMetrics {
	l := prometheus.Labels{"model": model, "version": version}
	return &versionMetrics{
		success:   m.success.With(l),
		count:     m.count.With(l),
		exec:      m.execCount.With(l),
		requestUS: m.requestUS.With(l),
		queueUS:   m.queueUS.With(l),
		computeUS: m.computeUS.With(l),
		pending:   m.pending.With(l),
		failure:   m.failure.MustCurryWith(l),
	}
}

// batcher is a model version's bounded queue and the workers, one per
// instance, that take batches from it. A worker takes the oldest request
// and every queued request with its key that fits, up to max_batch_size
// rows, waiting for more until the oldest has waited max_queue_delay;
// the batch runs as one call of the instance's compiled function and is
// split back into the requests.
type batcher struct {
	sp *spec
	vm *versionMetrics
	// logf logs what a client is not told (a bug's stack); nil discards.
	logf func(format string, args ...any)

	mu    sync.Mutex
	queue []*request
	// changed is closed (and replaced) when a request arrives or the
	// batcher closes: it wakes every waiting worker.
	changed chan struct{}
	closed  bool
	// arriving counts the requests the front ends are receiving and
	// decoding for this version (Expect): a batch waits for them.
	arriving atomic.Int64

	wg sync.WaitGroup // the workers
}

var errClosed = errors.New("batcher closed")

// newBatcher starts one worker per instance.
func newBatcher(sp *spec, vm *versionMetrics, insts []*instance) *batcher {
	b := &batcher{sp: sp, vm: vm, changed: make(chan struct{})}
	for _, in := range insts {
		b.wg.Add(1)
		go b.work(in)
	}
	return b
}

// expect counts a request on its way until the returned function is
// called (once or more).
func (b *batcher) expect() func() {
	b.arriving.Add(1)
	var done atomic.Bool
	return func() {
		if done.CompareAndSwap(false, true) {
			b.arriving.Add(-1)
		}
	}
}

// submit queues r, refusing it at once when the queue is full.
func (b *batcher) submit(r *request) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return errClosed
	}
	if len(b.queue) >= b.sp.queueSize {
		return errorf(http.StatusTooManyRequests, "model %q version %s: the queue is full (%d requests waiting); try again later", b.sp.name, b.sp.version, len(b.queue))
	}
	b.queue = append(b.queue, r)
	b.vm.pending.Inc()
	b.wake()
	return nil
}

// wake wakes the waiting workers; b.mu is held.
func (b *batcher) wake() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// cancel removes r from the queue if it is still there.
func (b *batcher) cancel(r *request) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, q := range b.queue {
		if q == r {
			b.queue = append(b.queue[:i], b.queue[i+1:]...)
			b.queue[len(b.queue):cap(b.queue)][0] = nil // drop the reference kept past len
			b.vm.pending.Dec()
			return true
		}
	}
	return false
}

// close stops new requests; the workers finish what is queued, without
// waiting for batches to fill, and exit. wait waits for them.
func (b *batcher) close() {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		b.wake()
	}
	b.mu.Unlock()
}

func (b *batcher) wait() { b.wg.Wait() }

// next returns the next batch, or nil once the batcher is closed and
// drained.
//
// A batch that is not full waits for more rows while requests are on
// their way (a front end is receiving or decoding them: Expect), until
// its oldest request has waited max_queue_delay; with nothing on its way
// it leaves after one yield, which lets a request just submitted by a
// runnable goroutine join, so a lone client is answered at once. The
// last millisecond of a wait is not slept but spent yielding to the
// goroutines decoding requests: Go's timers round a shorter sleep up to
// about a millisecond on Linux.
func (b *batcher) next() []*request {
	b.mu.Lock()
	seen := -1 // the rows counted before the last yield
	for {
		b.dropDone()
		if len(b.queue) == 0 {
			if b.closed {
				b.mu.Unlock()
				return nil
			}
			ch := b.changed
			b.mu.Unlock()
			<-ch
			b.mu.Lock()
			seen = -1
			continue
		}
		r0 := b.queue[0]
		rows, full := b.gather(r0)
		wait := time.Until(r0.enq.Add(b.sp.delay))
		coming := b.arriving.Load() > 0
		if full || wait <= 0 || b.closed || (!coming && rows == seen) {
			batch := b.take(r0, rows)
			b.mu.Unlock()
			return batch
		}
		if !coming || wait < yieldWindow {
			seen = rows
			b.mu.Unlock()
			runtime.Gosched()
			b.mu.Lock()
			continue
		}
		ch := b.changed
		b.mu.Unlock()
		t := time.NewTimer(wait - yieldWindow)
		select {
		case <-ch:
		case <-t.C:
		}
		t.Stop()
		b.mu.Lock()
	}
}

// yieldWindow is the part of a batch's wait spent yielding rather than
// sleeping (see next).
const yieldWindow = time.Millisecond

// dropDone removes the queued requests whose context is done (their
// Infer returns the context's error itself); b.mu is held.
func (b *batcher) dropDone() {
	k := 0
	for _, r := range b.queue {
		if r.ctx.Err() != nil {
			b.vm.pending.Dec()
			continue
		}
		b.queue[k] = r
		k++
	}
	clear(b.queue[k:])
	b.queue = b.queue[:k]
}

// gather counts the rows a batch led by r0 would take and whether it is
// full (no more rows fit, or the model does not batch); b.mu is held.
func (b *batcher) gather(r0 *request) (rows int, full bool) {
	if b.sp.maxBatch == 0 {
		return r0.rows, true
	}
	for _, r := range b.queue {
		if r.key == r0.key && rows+r.rows <= b.sp.maxBatch {
			rows += r.rows
		}
	}
	return rows, rows >= b.sp.maxBatch
}

// take removes and returns the batch gather counted; b.mu is held.
func (b *batcher) take(r0 *request, rows int) []*request {
	if b.sp.maxBatch == 0 {
		b.queue = append(b.queue[:0], b.queue[1:]...)
		b.queue[len(b.queue):cap(b.queue)][0] = nil
		b.vm.pending.Dec()
		return []*request{r0}
	}
	var batch []*request
	got, k := 0, 0
	for _, r := range b.queue {
		if r.key == r0.key && got+r.rows <= b.sp.maxBatch {
			batch = append(batch, r)
			got += r.rows
			continue
		}
		b.queue[k] = r
		k++
	}
	clear(b.queue[k:])
	b.queue = b.queue[:k]
	b.vm.pending.Sub(float64(len(batch)))
	return batch
}

// work is an instance's worker loop.
func (b *batcher) work(in *instance) {
	defer b.wg.Done()
	for {
		batch := b.next()
		if batch == nil {
			return
		}
		b.run(in, batch)
		// Let the requests just answered, whose clients often send their
		// next at once, reach the queue before the next batch is taken:
		// with few cores the worker would otherwise take the stragglers
		// of the last batch alone (BenchmarkInferSeedMLP: 2-5 rows per
		// execution without this, about 30 with, at 64 clients).
		runtime.Gosched()
	}
}

// run runs one batch and answers its requests.
func (b *batcher) run(in *instance, batch []*request) {
	start := time.Now()
	xs, rows := b.concat(batch)
	outs, err := in.run(xs)
	if err == nil {
		if b.sp.maxBatch > 0 {
			err = in.checkOutputs(outs, rows)
		} else {
			err = in.checkOutputs(outs, 0)
		}
	}
	compute := time.Since(start)
	b.vm.exec.Inc()
	var ie *internalError
	switch {
	case errors.As(err, &ie):
		if b.logf != nil {
			b.logf("model %s version %s: internal error: %v\n%s", b.sp.name, b.sp.version, ie.err, ie.stack)
		}
		err = errorf(http.StatusInternalServerError, "model %q version %s failed with an internal error (a bug in the model or in spore; the server's log has the details)", b.sp.name, b.sp.version)
	case err != nil:
		err = errorf(http.StatusInternalServerError, "model %q version %s failed: %v", b.sp.name, b.sp.version, err)
	}
	off := 0
	for _, r := range batch {
		res := result{err: err, queue: start.Sub(r.enq), compute: compute}
		if err == nil {
			if len(batch) == 1 {
				res.outs = outs
			} else {
				res.outs = split(outs, off, r.rows)
			}
			b.vm.count.Add(float64(r.rows))
		}
		off += r.rows
		r.done <- res
	}
}

// concat joins the batch's inputs along the batch dimension.
func (b *batcher) concat(batch []*request) ([]*tensor.Tensor, int) {
	if len(batch) == 1 {
		return batch[0].xs, batch[0].rows
	}
	rows := 0
	for _, r := range batch {
		rows += r.rows
	}
	xs := make([]*tensor.Tensor, len(b.sp.inputs))
	for i := range xs {
		first := batch[0].xs[i]
		shape := first.Shape().Clone()
		shape[0] = rows
		x := tensor.New(first.DType(), shape...)
		off := 0
		for _, r := range batch {
			n := r.xs[i].Size()
			core.CopyElems(x, off, r.xs[i], 0, n)
			off += n
		}
		xs[i] = x
	}
	return xs, rows
}

// split returns rows [off, off+n) of each output.
func split(outs []*tensor.Tensor, off, n int) []*tensor.Tensor {
	res := make([]*tensor.Tensor, len(outs))
	for i, o := range outs {
		shape := o.Shape().Clone()
		per := 1
		for _, d := range shape[1:] {
			per *= d
		}
		shape[0] = n
		t := tensor.New(o.DType(), shape...)
		core.CopyElems(t, 0, o, off*per, n*per)
		res[i] = t
	}
	return res
}

// infer queues a checked request and waits for its result.
// arrived, if not nil, is called once r is queued or refused (the
// request's Expect announcement is withdrawn).
func (b *batcher) infer(ctx context.Context, xs []*tensor.Tensor, rows int, key string, arrived func()) (result, error) {
	r := &request{ctx: ctx, xs: xs, rows: rows, key: key, enq: time.Now(), done: make(chan result, 1)}
	err := b.submit(r)
	if arrived != nil {
		arrived()
	}
	if err != nil {
		return result{}, err
	}
	select {
	case res := <-r.done:
		return res, res.err
	case <-ctx.Done():
		b.cancel(r)
		return result{}, ctxError(ctx, b.sp)
	}
}

// ctxError is the *Error of a request whose context ended.
func ctxError(ctx context.Context, sp *spec) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return errorf(http.StatusGatewayTimeout, "model %q version %s: the request's deadline passed before it was answered", sp.name, sp.version)
	}
	return errorf(StatusClientClosedRequest, "model %q version %s: the request was cancelled (the client went away)", sp.name, sp.version)
}
