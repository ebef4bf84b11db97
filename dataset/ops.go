package dataset

import (
	"fmt"
	"io"
	"math/rand/v2"
	"sync/atomic"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// MapFunc transforms one row into another. It may return a row with a
// different number of columns. It must not modify the tensors it is given
// (they may be views of the source); it returns new ones instead.
type MapFunc func(row []*tensor.Tensor) ([]*tensor.Tensor, error)

// Map returns a dataset that applies fn to every row of d — each sample,
// or each batch if Map comes after Batch (MindSpore's per_batch_map). An
// error from fn ends the epoch with that error.
func (d *Dataset) Map(fn MapFunc) *Dataset {
	if fn == nil {
		core.Panicf("Map", "nil function")
	}
	return &Dataset{n: &mapNode{up: d.n, fn: fn}}
}

// MapColumn returns a dataset that replaces column col of every row of d by
// fn of it, leaving the other columns as they are. It is MindSpore's map
// with one input column, such as
//
//	ds.MapColumn(0, func(img *tensor.Tensor) (*tensor.Tensor, error) { ... })
func (d *Dataset) MapColumn(col int, fn func(*tensor.Tensor) (*tensor.Tensor, error)) *Dataset {
	if fn == nil {
		core.Panicf("MapColumn", "nil function")
	}
	if col < 0 {
		core.Panicf("MapColumn", "negative column %d", col)
	}
	return d.Map(func(r []*tensor.Tensor) ([]*tensor.Tensor, error) {
		if col >= len(r) {
			return nil, fmt.Errorf("MapColumn: column %d of a row with %d columns", col, len(r))
		}
		t, err := fn(r[col])
		if err != nil {
			return nil, err
		}
		out := append([]*tensor.Tensor(nil), r...)
		out[col] = t
		return out, nil
	})
}

type mapNode struct {
	up node
	fn MapFunc
}

func (m *mapNode) size() int    { return m.up.size() }
func (m *mapNode) open() stream { return &mapStream{up: m.up.open(), fn: m.fn} }

type mapStream struct {
	up stream
	fn MapFunc
	i  int
}

func (m *mapStream) next() ([]*tensor.Tensor, error) {
	r, err := m.up.next()
	if err != nil {
		return nil, err
	}
	out, err := m.fn(r)
	if err != nil {
		return nil, wrap("Map", m.i, err)
	}
	m.i++
	return out, nil
}

func (m *mapStream) close() { m.up.close() }

// Shuffle returns a dataset that yields d's rows in random order, using a
// buffer of bufferSize rows as MindSpore's shuffle does: the buffer is
// filled from d, and each output row is drawn uniformly from it and
// replaced by the next row of d. A buffer at least as long as d gives a
// uniform random permutation; a shorter one only mixes nearby rows.
//
// The shuffle is seeded from the framework's random source (core.RandUint64)
// when Shuffle is called, so a program that calls tensor.SetSeed before
// building its pipeline sees the same order on every run. Each epoch is
// shuffled differently, and deterministically: epoch e uses a generator
// seeded with (seed, e), where e counts the epochs started from this
// Dataset (including those started by a Repeat above it).
func (d *Dataset) Shuffle(bufferSize int) *Dataset {
	return d.ShuffleSeed(bufferSize, core.RandUint64())
}

// ShuffleSeed is Shuffle with an explicit seed instead of one drawn from the
// framework's random source.
func (d *Dataset) ShuffleSeed(bufferSize int, seed uint64) *Dataset {
	if bufferSize < 1 {
		core.Panicf("Shuffle", "buffer size %d; need at least 1", bufferSize)
	}
	return &Dataset{n: &shuffleNode{up: d.n, buf: bufferSize, seed: seed}}
}

type shuffleNode struct {
	up    node
	buf   int
	seed  uint64
	epoch atomic.Uint64
}

func (s *shuffleNode) size() int { return s.up.size() }

func (s *shuffleNode) open() stream {
	e := s.epoch.Add(1) - 1
	// Preallocate the buffer only up to a modest size: bufferSize is often
	// "bigger than the dataset", e.g. 1<<30.
	n := s.buf
	if sz := s.up.size(); sz >= 0 && sz < n {
		n = sz
	}
	return &shuffleStream{
		up:  s.up.open(),
		rng: rand.New(rand.NewPCG(s.seed, e)),
		max: s.buf,
		buf: make([][]*tensor.Tensor, 0, min(n, 1<<16)),
	}
}

type shuffleStream struct {
	up     stream
	rng    *rand.Rand
	max    int
	buf    [][]*tensor.Tensor
	upDone bool
}

func (s *shuffleStream) next() ([]*tensor.Tensor, error) {
	for !s.upDone && len(s.buf) < s.max {
		r, err := s.up.next()
		if err == io.EOF {
			s.upDone = true
			break
		}
		if err != nil {
			return nil, err
		}
		s.buf = append(s.buf, r)
	}
	if len(s.buf) == 0 {
		return nil, io.EOF
	}
	i := s.rng.IntN(len(s.buf))
	r := s.buf[i]
	last := len(s.buf) - 1
	s.buf[i] = s.buf[last]
	s.buf[last] = nil
	s.buf = s.buf[:last]
	return r, nil
}

func (s *shuffleStream) close() { s.up.close() }

// Batch returns a dataset whose rows are batches of size consecutive rows
// of d, each column stacked along a new leading axis: rows of shapes
// ([1 28 28], []) become a batch of shapes ([size 1 28 28], [size]). The
// last batch of an epoch holds the rows left over and may be smaller,
// unless dropRemainder is set, in which case it is dropped.
//
// Every row of a batch must have the same number of columns, and each
// column the same dtype and shape; otherwise the epoch ends with an *Error
// naming the batch, the row and the column. The batch tensors are fresh
// copies, owned by the consumer.
func (d *Dataset) Batch(size int, dropRemainder bool) *Dataset {
	if size < 1 {
		core.Panicf("Batch", "batch size %d; need at least 1", size)
	}
	return &Dataset{n: &batchNode{up: d.n, bs: size, drop: dropRemainder, shards: 1, op: "Batch"}}
}

// batchNode reads bs rows of its input per batch and keeps those of its
// shard: row i of each batch goes to shard i % shards (ShardedBatch), so
// a plain Batch is the one shard of one.
type batchNode struct {
	up         node
	bs         int
	drop       bool
	shards, id int
	op         string // the method, for errors
}

func (b *batchNode) open() stream {
	return &batchStream{node: b, up: b.up.open(), rows: make([][]*tensor.Tensor, 0, b.bs/b.shards)}
}

func (b *batchNode) size() int {
	n := b.up.size()
	if n < 0 {
		return n
	}
	full, rem := n/b.bs, n%b.bs
	if !b.drop && rem > b.id {
		full++ // this shard's part of the short last batch is not empty
	}
	return full
}

type batchStream struct {
	node *batchNode
	up   stream
	rows [][]*tensor.Tensor
	i    int // batches produced
	done bool
}

func (b *batchStream) next() ([]*tensor.Tensor, error) {
	if b.done {
		return nil, io.EOF
	}
	nd := b.node
	rows := b.rows[:0]
	got := 0 // rows of the whole batch read
	for got < nd.bs {
		r, err := b.up.next()
		if err == io.EOF {
			b.done = true
			break
		}
		if err != nil {
			return nil, err
		}
		if got%nd.shards == nd.id {
			rows = append(rows, r)
		}
		got++
	}
	defer clear(rows) // let the samples go as soon as they are copied
	if len(rows) == 0 || (got < nd.bs && nd.drop) {
		return nil, io.EOF
	}
	out, err := stack(rows)
	if err != nil {
		return nil, &Error{Op: nd.op, Row: b.i, Msg: err.Error()}
	}
	b.i++
	return out, nil
}

func (b *batchStream) close() { b.up.close() }

// stack stacks rows column by column into fresh tensors.
func stack(rows [][]*tensor.Tensor) ([]*tensor.Tensor, error) {
	first := rows[0]
	for i, r := range rows {
		if len(r) != len(first) {
			return nil, fmt.Errorf("sample %d has %d columns, sample 0 has %d", i, len(r), len(first))
		}
	}
	out := make([]*tensor.Tensor, len(first))
	for j, t0 := range first {
		if t0 == nil || t0.IsSymbolic() {
			return nil, fmt.Errorf("sample 0 column %d is %s", j, nilOrSymbolic(t0))
		}
		shape := t0.Shape()
		n := t0.Size()
		bs := make([]int, 0, len(shape)+1)
		bs = append(append(bs, len(rows)), shape...)
		dst := tensor.New(t0.DType(), bs...)
		for i, r := range rows {
			t := r[j]
			switch {
			case t == nil || t.IsSymbolic():
				return nil, fmt.Errorf("sample %d column %d is %s", i, j, nilOrSymbolic(t))
			case t.DType() != t0.DType():
				return nil, fmt.Errorf("sample %d column %d has dtype %v, sample 0 has %v", i, j, t.DType(), t0.DType())
			case !t.Shape().Equal(shape):
				return nil, fmt.Errorf("sample %d column %d has shape %v, sample 0 has %v", i, j, t.Shape(), shape)
			}
			core.CopyElems(dst, i*n, t, 0, n)
		}
		out[j] = dst
	}
	return out, nil
}

func nilOrSymbolic(t *tensor.Tensor) string {
	if t == nil {
		return "nil"
	}
	return "symbolic (a dataset holds concrete data)"
}

// Repeat returns a dataset that runs n epochs of d back to back as one
// epoch; a negative n repeats forever. A Shuffle before Repeat reshuffles
// for every repetition.
func (d *Dataset) Repeat(n int) *Dataset {
	return &Dataset{n: &repeatNode{up: d.n, n: n}}
}

type repeatNode struct {
	up node
	n  int
}

func (r *repeatNode) size() int {
	m := r.up.size()
	switch {
	case r.n == 0 || m == 0:
		return 0
	case m < 0:
		return m
	case r.n < 0:
		return infinite
	}
	return m * r.n
}

func (r *repeatNode) open() stream { return &repeatStream{node: r} }

type repeatStream struct {
	node *repeatNode
	cur  stream
	k    int  // epochs of up started
	got  bool // whether the current epoch of up yielded anything
}

func (r *repeatStream) next() ([]*tensor.Tensor, error) {
	for {
		if r.cur == nil {
			if r.node.n >= 0 && r.k >= r.node.n {
				return nil, io.EOF
			}
			r.cur = r.node.up.open()
			r.k++
			r.got = false
		}
		row, err := r.cur.next()
		if err != io.EOF {
			r.got = r.got || err == nil
			return row, err
		}
		r.cur.close()
		r.cur = nil
		if !r.got && r.node.n < 0 {
			// An empty dataset repeated forever would spin; it is empty.
			return nil, io.EOF
		}
	}
}

func (r *repeatStream) close() {
	if r.cur != nil {
		r.cur.close()
		r.cur = nil
	}
}

// Take returns a dataset of at most the first n rows of each epoch of d,
// for smoke tests and quick runs.
func (d *Dataset) Take(n int) *Dataset {
	if n < 0 {
		core.Panicf("Take", "negative count %d", n)
	}
	return &Dataset{n: &takeNode{up: d.n, n: n}}
}

type takeNode struct {
	up node
	n  int
}

func (t *takeNode) size() int {
	switch m := t.up.size(); m {
	case unknown:
		// At most n, but possibly fewer.
		return unknown
	case infinite:
		return t.n
	default:
		return min(m, t.n)
	}
}

func (t *takeNode) open() stream { return &takeStream{up: t.up.open(), left: t.n} }

type takeStream struct {
	up   stream
	left int
}

func (t *takeStream) next() ([]*tensor.Tensor, error) {
	if t.left <= 0 {
		return nil, io.EOF
	}
	r, err := t.up.next()
	if err == nil {
		t.left--
	}
	return r, err
}

func (t *takeStream) close() { t.up.close() }
