package dataset

import (
	"errors"
	"fmt"
	"io"
	"iter"
	"runtime"
	"sync"

	"github.com/sporeml/spore/tensor"
)

// Dataset is a pipeline of rows: a source (FromTensors, FromGenerator,
// FromFunc) followed by zero or more operations (Map, Shuffle, Batch,
// Repeat, Take, Prefetch). A row is a []*tensor.Tensor, one tensor per
// column — MindSpore's column tuple — such as (image, label) for a sample or
// (images, labels) for a batch.
//
// A Dataset is a description, not a position: operations return a new
// Dataset and leave the receiver as it was, and each call to Iter or All
// starts a new epoch from the beginning. A Dataset may be iterated by several
// goroutines at once, each with its own Iterator, provided the functions given
// to its source and to Map are safe for that.
type Dataset struct {
	n node
}

// node is one stage of a pipeline.
type node interface {
	// open starts an epoch of this stage (and, recursively, of the stages
	// it reads from).
	open() stream
	// size is the number of rows per epoch, unknown (-1) or infinite (-2).
	size() int
}

// stream is one epoch of a node. It is used by one goroutine at a time.
type stream interface {
	// next returns the next row, io.EOF after the last one, or another
	// error, after which the stream must only be closed.
	next() ([]*tensor.Tensor, error)
	// close releases what the stream holds (goroutines, coroutines). It is
	// called once, possibly before the end of the epoch.
	close()
}

// Len returns the number of rows one epoch yields — samples, or batches
// after Batch — or -1 when that is unknown (a generator source) or infinite
// (Repeat with a negative count). It is MindSpore's get_dataset_size.
func (d *Dataset) Len() int { return max(d.n.size(), unknown) }

// Special values of node.size.
const (
	unknown  = -1
	infinite = -2
)

// Iter starts a new epoch and returns an iterator over its rows. The caller
// must call Close if it stops before Next reports the end; an iterator that
// becomes unreachable is closed by the garbage collector eventually, but
// relying on that keeps a Prefetch goroutine alive until then.
func (d *Dataset) Iter() *Iterator {
	c := &closer{s: d.n.open()}
	it := &Iterator{c: c}
	runtime.AddCleanup(it, (*closer).close, c)
	return it
}

// All starts a new epoch and returns it as a range-over-func sequence. It
// yields (row, nil) for each row; if the pipeline fails it yields one final
// (nil, err) and stops. Breaking out of the loop closes the epoch, stopping
// any Prefetch goroutine.
//
//	for batch, err := range ds.All() {
//		if err != nil {
//			return err
//		}
//		x, y := batch[0], batch[1]
//		...
//	}
func (d *Dataset) All() iter.Seq2[[]*tensor.Tensor, error] {
	return func(yield func([]*tensor.Tensor, error) bool) {
		it := d.Iter()
		defer it.Close()
		for {
			row, ok := it.Next()
			if !ok {
				break
			}
			if !yield(row, nil) {
				return
			}
		}
		if err := it.Err(); err != nil {
			yield(nil, err)
		}
	}
}

// Iterator walks one epoch of a Dataset, in the style of bufio.Scanner:
//
//	it := ds.Iter()
//	defer it.Close()
//	for row, ok := it.Next(); ok; row, ok = it.Next() {
//		...
//	}
//	if err := it.Err(); err != nil {
//		...
//	}
//
// An Iterator is for one goroutine.
type Iterator struct {
	c    *closer
	err  error
	done bool
}

// closer owns an epoch's stream. It is separate from Iterator so that a
// cleanup attached to the Iterator can close the stream without keeping the
// Iterator reachable.
type closer struct {
	s    stream
	once sync.Once
}

func (c *closer) close() { c.once.Do(c.s.close) }

// Next returns the next row. It returns false at the end of the epoch or on
// an error (see Err); the epoch's resources are released then. The tensors
// of a row may share memory with the source (FromTensors yields views) and
// must be treated as read-only.
func (it *Iterator) Next() ([]*tensor.Tensor, bool) {
	if it.done {
		return nil, false
	}
	row, err := it.c.s.next()
	if err != nil {
		it.done = true
		if err != io.EOF {
			it.err = err
		}
		it.c.close()
		return nil, false
	}
	return row, true
}

// Err returns the error that ended the epoch, or nil if it ended normally
// or has not ended.
func (it *Iterator) Err() error { return it.err }

// Close ends the epoch early, stopping any Prefetch goroutine and waiting
// for it to exit. It is safe to call more than once and after the end.
func (it *Iterator) Close() {
	it.done = true
	it.c.close()
}

// Error is the error a pipeline stage returns when its input is bad: a
// failing source or Map function, or rows that Batch cannot stack. It names
// the stage and, where there is one, the row.
type Error struct {
	Op  string // the stage: "Batch", "Map", "FromFunc", "FromGenerator", ...
	Row int    // index of the offending row within the epoch of that stage, or -1
	Msg string // what was wrong
	Err error  // the underlying error from user code, if any
}

// Error formats the error as one line.
func (e *Error) Error() string {
	s := "dataset: " + e.Op
	if e.Row >= 0 {
		s += fmt.Sprintf(": row %d", e.Row)
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// wrap attaches op and row to an error from user code. An io.EOF from user
// code is wrapped too, so that it cannot pass for the end of the epoch.
func wrap(op string, row int, err error) error {
	var de *Error
	if err == nil || (err != io.EOF && errors.As(err, &de)) {
		return err
	}
	return &Error{Op: op, Row: row, Err: err}
}
