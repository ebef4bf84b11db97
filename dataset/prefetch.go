package dataset

import (
	"io"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// Prefetch returns a dataset that computes up to n rows of d ahead of the
// consumer in a goroutine of its own, so that loading, Map and Batch overlap
// with training. Put it last in the pipeline.
//
// Each epoch starts one goroutine. It exits when the epoch ends, or when the
// consumer closes its Iterator (or breaks out of an All loop); Close waits
// for it, so nothing is left running. A panic in the pipeline below Prefetch
// is re-raised in the consumer's goroutine, from Next.
func (d *Dataset) Prefetch(n int) *Dataset {
	if n < 1 {
		core.Panicf("Prefetch", "buffer size %d; need at least 1", n)
	}
	return &Dataset{n: &prefetchNode{up: d.n, n: n}}
}

type prefetchNode struct {
	up node
	n  int
}

func (p *prefetchNode) size() int { return p.up.size() }

func (p *prefetchNode) open() stream {
	s := &prefetchStream{
		ch:     make(chan item, p.n),
		done:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	go s.produce(p.up.open())
	return s
}

// item is one message from the producer: a row, the end (io.EOF), an
// error, or a panic to re-raise.
type item struct {
	row      []*tensor.Tensor
	err      error
	panicked bool
	panicVal any
}

type prefetchStream struct {
	ch       chan item
	done     chan struct{} // closed by the consumer to stop the producer
	exited   chan struct{} // closed by the producer as its last act
	finished bool          // the consumer has seen the last item
}

// produce runs in the producer goroutine, which owns up.
func (s *prefetchStream) produce(up stream) {
	defer close(s.exited)
	defer up.close()
	defer func() {
		if r := recover(); r != nil {
			select {
			case s.ch <- item{panicked: true, panicVal: r}:
			case <-s.done:
			}
		}
	}()
	for {
		r, err := up.next()
		select {
		case s.ch <- item{row: r, err: err}:
		case <-s.done:
			return
		}
		if err != nil {
			return
		}
	}
}

func (s *prefetchStream) next() ([]*tensor.Tensor, error) {
	if s.finished {
		return nil, io.EOF
	}
	it := <-s.ch
	if it.panicked {
		s.finished = true
		// The original value, so that callers can still match it (for
		// instance a *tensor.Error with errors.As after recover).
		panic(it.panicVal)
	}
	if it.err != nil {
		s.finished = true
	}
	return it.row, it.err
}

func (s *prefetchStream) close() {
	close(s.done)
	<-s.exited
}
