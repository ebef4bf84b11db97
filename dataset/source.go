package dataset

import (
	"io"
	"iter"
	"slices"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// FromTensors returns an in-memory dataset whose row i holds xs[0][i],
// xs[1][i], ...: each tensor is sliced along its first axis, as MindSpore's
// NumpySlicesDataset does. All tensors must be concrete, of rank at least 1,
// and agree on the extent of axis 0 (the number of rows); otherwise
// FromTensors panics with a *tensor.Error, as for any misuse in model code.
//
// Rows are views: the row tensors share memory with xs, which costs nothing
// per row beyond a small header, so the xs must not be changed while the
// dataset is in use.
func FromTensors(xs ...*tensor.Tensor) *Dataset {
	if len(xs) == 0 {
		core.Panicf("FromTensors", "no tensors")
	}
	n := -1
	cols := make([]column, len(xs))
	for j, x := range xs {
		switch {
		case x == nil:
			core.Panicf("FromTensors", "tensor %d is nil", j)
		case x.IsSymbolic():
			core.Panicf("FromTensors", "tensor %d is symbolic; a dataset holds concrete data", j)
		case x.Rank() == 0:
			core.Panicf("FromTensors", "tensor %d is a scalar; need rank >= 1 to slice along axis 0", j)
		}
		if n < 0 {
			n = x.Dim(0)
		} else if x.Dim(0) != n {
			core.Panicf("FromTensors", "tensor %d has %d rows (shape %v), tensor 0 has %d", j, x.Dim(0), x.Shape(), n)
		}
		rs := x.Shape()[1:].Clone()
		cols[j] = column{t: x, rowShape: rs, rowSize: rs.Size()}
	}
	return &Dataset{n: &sliceNode{cols: cols, n: n}}
}

type column struct {
	t        *tensor.Tensor
	rowShape tensor.Shape // shared by every row's tensor; never modified
	rowSize  int
}

type sliceNode struct {
	cols []column
	n    int
}

func (s *sliceNode) size() int    { return s.n }
func (s *sliceNode) open() stream { return &sliceStream{node: s} }
func (s *sliceStream) close()     {}

type sliceStream struct {
	node *sliceNode
	i    int
}

func (s *sliceStream) next() ([]*tensor.Tensor, error) {
	if s.i >= s.node.n {
		return nil, io.EOF
	}
	r := make([]*tensor.Tensor, len(s.node.cols))
	for j, c := range s.node.cols {
		r[j] = view(c.t, s.i*c.rowSize, c.rowSize, c.rowShape)
	}
	s.i++
	return r, nil
}

// view returns the n elements of t from flat offset off as a tensor of the
// given shape, sharing t's buffer. The slice's capacity is clipped so that
// nothing can append into the neighbouring row.
func view(t *tensor.Tensor, off, n int, shape tensor.Shape) *tensor.Tensor {
	lo, hi := off, off+n
	switch b := t.Data().(type) {
	case []float32:
		return core.FromBuffer(b[lo:hi:hi], shape)
	case []float64:
		return core.FromBuffer(b[lo:hi:hi], shape)
	case []int32:
		return core.FromBuffer(b[lo:hi:hi], shape)
	case []int64:
		return core.FromBuffer(b[lo:hi:hi], shape)
	case []bool:
		return core.FromBuffer(b[lo:hi:hi], shape)
	case []uint8:
		return core.FromBuffer(b[lo:hi:hi], shape)
	}
	core.Panicf("FromTensors", "unsupported buffer type %T", t.Data())
	return nil
}

// Generator produces one epoch of rows by calling yield once per row, in
// the push style of Go's range-over-func iterators. It must return as soon
// as yield returns false (the consumer stopped early), and returns a non-nil
// error to end the epoch with that error.
type Generator func(yield func(row ...*tensor.Tensor) bool) error

// FromGenerator returns a dataset whose rows come from gen, which is called
// afresh for every epoch — MindSpore's GeneratorDataset over a generator
// function. Its length is unknown (Len reports -1); use FromFunc for a
// source with random access and a known length.
//
// gen runs as a coroutine of the consumer (iter.Pull), so it costs no
// goroutine; put Prefetch after it to overlap it with training.
func FromGenerator(gen Generator) *Dataset {
	if gen == nil {
		core.Panicf("FromGenerator", "nil generator")
	}
	return &Dataset{n: genNode{gen}}
}

type genNode struct{ gen Generator }

func (g genNode) size() int { return -1 }

func (g genNode) open() stream {
	seq := func(yield func([]*tensor.Tensor, error) bool) {
		err := g.gen(func(r ...*tensor.Tensor) bool {
			// The generator may reuse the slice it passes; the row we hand
			// on must stay as it is.
			return yield(slices.Clone(r), nil)
		})
		if err != nil {
			yield(nil, err)
		}
	}
	next, stop := iter.Pull2(seq)
	return &genStream{pull: next, stop: stop}
}

type genStream struct {
	pull func() ([]*tensor.Tensor, error, bool)
	stop func()
	i    int
}

func (g *genStream) next() ([]*tensor.Tensor, error) {
	r, err, ok := g.pull()
	if !ok {
		return nil, io.EOF
	}
	if err != nil {
		return nil, wrap("FromGenerator", g.i, err)
	}
	g.i++
	if r == nil {
		r = []*tensor.Tensor{}
	}
	return r, nil
}

func (g *genStream) close() { g.stop() }

// FromFunc returns a dataset of n rows whose row i is at(i) — MindSpore's
// GeneratorDataset over a random-access source. at is called in order
// 0, 1, ..., n-1 each epoch; an error from it ends the epoch with that error.
func FromFunc(n int, at func(i int) ([]*tensor.Tensor, error)) *Dataset {
	if n < 0 {
		core.Panicf("FromFunc", "negative length %d", n)
	}
	if at == nil {
		core.Panicf("FromFunc", "nil function")
	}
	return &Dataset{n: funcNode{n, at}}
}

type funcNode struct {
	n  int
	at func(int) ([]*tensor.Tensor, error)
}

func (f funcNode) size() int    { return f.n }
func (f funcNode) open() stream { return &funcStream{node: f} }

type funcStream struct {
	node funcNode
	i    int
}

func (f *funcStream) next() ([]*tensor.Tensor, error) {
	if f.i >= f.node.n {
		return nil, io.EOF
	}
	r, err := f.node.at(f.i)
	if err != nil {
		return nil, wrap("FromFunc", f.i, err)
	}
	f.i++
	return r, nil
}

func (f *funcStream) close() {}
