package comm

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/sporeml/spore/internal/core"
)

// backend is what a transport provides: collectives over typed Go slices
// ([]float32, []float64, []int32, []int64, []uint8, []bool), in place.
// Sums only: Mean is a Sum divided by Size, done by the callers, so that
// every backend averages the same way.
type backend interface {
	name() string
	rank() int
	size() int
	// allReduce combines buf across ranks with op (Sum or Max), in place.
	allReduce(buf any, op ReduceOp) error
	// startAllReduce begins a non-blocking allReduce of buf; buf must stay
	// untouched, and alive, until the returned request's wait returns (the
	// backend pins it if the transport keeps its address).
	startAllReduce(buf any, op ReduceOp) (request, error)
	// broadcast overwrites buf on every rank with root's buf.
	broadcast(buf any, root int) error
	// allGather writes each rank's send, in rank order, into recv, whose
	// length is size() times send's.
	allGather(send, recv any) error
	// reduce writes the sum of every rank's send into root's recv, and
	// zeros into the others'.
	reduce(send, recv any, root int) error
	// reduceScatter writes block rank() of the sum of every rank's send
	// into recv, whose length is send's divided by size().
	reduceScatter(send, recv any) error
	barrier() error
	finalize() error
}

// request is a collective under way.
type request interface {
	wait() error
}

// single is the backend of one process: every collective over one rank is
// the identity (or a copy).
type single struct{}

func (single) name() string                                  { return "single-process" }
func (single) rank() int                                     { return 0 }
func (single) size() int                                     { return 1 }
func (single) allReduce(any, ReduceOp) error                 { return nil }
func (single) broadcast(any, int) error                      { return nil }
func (single) barrier() error                                { return nil }
func (single) finalize() error                               { return nil }
func (single) allGather(send, recv any) error                { core.CopyBuf(recv, send); return nil }
func (single) startAllReduce(any, ReduceOp) (request, error) { return done{}, nil }
func (single) reduce(send, recv any, _ int) error            { core.CopyBuf(recv, send); return nil }
func (single) reduceScatter(send, recv any) error            { core.CopyBuf(recv, send); return nil }

// closed is the backend after MPI_Finalize: it remembers the rank and
// size, and refuses every collective.
type closed struct{ r, n int }

var errFinalized = errors.New("communication was finalized (comm.Finalize)")

func (c closed) name() string                                { return "finalized" }
func (c closed) rank() int                                   { return c.r }
func (c closed) size() int                                   { return c.n }
func (closed) allReduce(any, ReduceOp) error                 { return errFinalized }
func (closed) startAllReduce(any, ReduceOp) (request, error) { return nil, errFinalized }
func (closed) broadcast(any, int) error                      { return errFinalized }
func (closed) allGather(any, any) error                      { return errFinalized }
func (closed) reduce(any, any, int) error                    { return errFinalized }
func (closed) reduceScatter(any, any) error                  { return errFinalized }
func (closed) barrier() error                                { return errFinalized }
func (closed) finalize() error                               { return nil }

// done is a request that has already completed.
type done struct{}

func (done) wait() error { return nil }

// clearSlice zeroes a numeric slice.
func clearSlice(buf any) {
	switch b := buf.(type) {
	case []float32:
		clear(b)
	case []float64:
		clear(b)
	case []int32:
		clear(b)
	case []int64:
		clear(b)
	}
}

// sliceInfo returns the address of buf's first element, its length, and
// its element size in bytes; the address is nil for an empty slice.
func sliceInfo(buf any) (p unsafe.Pointer, n, elem int) {
	switch b := buf.(type) {
	case []float32:
		n, elem = len(b), 4
		if n > 0 {
			p = unsafe.Pointer(&b[0])
		}
	case []float64:
		n, elem = len(b), 8
		if n > 0 {
			p = unsafe.Pointer(&b[0])
		}
	case []int32:
		n, elem = len(b), 4
		if n > 0 {
			p = unsafe.Pointer(&b[0])
		}
	case []int64:
		n, elem = len(b), 8
		if n > 0 {
			p = unsafe.Pointer(&b[0])
		}
	case []uint8:
		n, elem = len(b), 1
		if n > 0 {
			p = unsafe.Pointer(&b[0])
		}
	case []bool:
		n, elem = len(b), 1
		if n > 0 {
			p = unsafe.Pointer(&b[0])
		}
	default:
		panic(fmt.Sprintf("comm: unsupported buffer %T", buf))
	}
	return p, n, elem
}
