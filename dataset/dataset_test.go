package dataset

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// collect runs one epoch and returns its rows.
func collect(t *testing.T, d *Dataset) [][]*tensor.Tensor {
	t.Helper()
	var rows [][]*tensor.Tensor
	for r, err := range d.All() {
		if err != nil {
			t.Fatalf("epoch failed: %v", err)
		}
		rows = append(rows, r)
	}
	return rows
}

// firsts returns the first element of column col of each row, as ints.
func firsts(rows [][]*tensor.Tensor, col int) []int {
	out := make([]int, len(rows))
	for i, r := range rows {
		out[i] = int(r[col].Float64s()[0])
	}
	return out
}

// seq returns the Int32 tensor [0 1 ... n-1] and a Float32 [n 2] tensor
// whose row i is (i, -i).
func seq(n int) (*tensor.Tensor, *tensor.Tensor) {
	ids := make([]int32, n)
	xs := make([]float32, 2*n)
	for i := range n {
		ids[i] = int32(i)
		xs[2*i], xs[2*i+1] = float32(i), -float32(i)
	}
	return tensor.FromSlice(ids), tensor.FromSlice(xs, n, 2)
}

func TestFromTensors(t *testing.T) {
	ids, xs := seq(5)
	d := FromTensors(xs, ids)
	if d.Len() != 5 {
		t.Fatalf("Len %d", d.Len())
	}
	rows := collect(t, d)
	if len(rows) != 5 {
		t.Fatalf("%d rows", len(rows))
	}
	for i, r := range rows {
		if len(r) != 2 || !r[0].Shape().Equal(tensor.Shape{2}) || !r[1].Shape().Equal(tensor.Shape{}) {
			t.Fatalf("row %d shapes %v %v", i, r[0].Shape(), r[1].Shape())
		}
		if got := r[0].Float32s(); got[0] != float32(i) || got[1] != -float32(i) || r[1].Item() != float64(i) {
			t.Errorf("row %d = %v %v", i, got, r[1].Item())
		}
	}
	// Every dtype slices.
	for _, x := range []*tensor.Tensor{
		tensor.FromSlice([]float64{1, 2}), tensor.FromSlice([]int64{1, 2}),
		tensor.FromSlice([]bool{true, false}), tensor.FromSlice([]uint8{1, 2}),
	} {
		rows := collect(t, FromTensors(x))
		if len(rows) != 2 || rows[1][0].DType() != x.DType() || rows[1][0].Rank() != 0 {
			t.Fatalf("%v: rows %v", x.DType(), rows)
		}
		if x.DType() != tensor.Bool && rows[1][0].Item() != 2 {
			t.Errorf("%v: row 1 = %v", x.DType(), rows[1][0])
		}
	}
}

func TestMisusePanics(t *testing.T) {
	ids, xs := seq(4)
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"no tensors", func() { FromTensors() }, "no tensors"},
		{"scalar", func() { FromTensors(tensor.Scalar[float32](1)) }, "scalar"},
		{"lengths", func() { FromTensors(ids, tensor.Zeros(tensor.Float32, 3, 2)) }, "tensor 1 has 3 rows"},
		{"nil", func() { FromTensors(xs, nil) }, "tensor 1 is nil"},
		{"batch 0", func() { FromTensors(xs).Batch(0, false) }, "batch size 0"},
		{"shuffle 0", func() { FromTensors(xs).Shuffle(0) }, "buffer size 0"},
		{"prefetch 0", func() { FromTensors(xs).Prefetch(0) }, "buffer size 0"},
		{"take -1", func() { FromTensors(xs).Take(-1) }, "negative"},
		{"nil map", func() { FromTensors(xs).Map(nil) }, "nil function"},
		{"nil generator", func() { FromGenerator(nil) }, "nil generator"},
		{"FromFunc -1", func() { FromFunc(-1, func(int) ([]*tensor.Tensor, error) { return nil, nil }) }, "negative length"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				err, ok := r.(error)
				var te *tensor.Error
				if !ok || !errors.As(err, &te) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("panic %v; want a *tensor.Error containing %q", r, tc.want)
				}
			}()
			tc.f()
		})
	}
}

func TestBatch(t *testing.T) {
	ids, xs := seq(10)
	tests := []struct {
		size   int
		drop   bool
		sizes  []int
		length int
	}{
		{3, false, []int{3, 3, 3, 1}, 4},
		{3, true, []int{3, 3, 3}, 3},
		{5, false, []int{5, 5}, 2},
		{5, true, []int{5, 5}, 2},
		{10, true, []int{10}, 1},
		{11, false, []int{10}, 1},
		{11, true, nil, 0},
		{1, false, []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 10},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%d/%v", tc.size, tc.drop), func(t *testing.T) {
			d := FromTensors(xs, ids).Batch(tc.size, tc.drop)
			if d.Len() != tc.length {
				t.Errorf("Len %d, want %d", d.Len(), tc.length)
			}
			rows := collect(t, d)
			var sizes []int
			next := 0
			for _, b := range rows {
				n := b[0].Dim(0)
				sizes = append(sizes, n)
				if !b[0].Shape().Equal(tensor.Shape{n, 2}) || !b[1].Shape().Equal(tensor.Shape{n}) || b[1].DType() != tensor.Int32 {
					t.Fatalf("batch shapes %v %v", b[0].Shape(), b[1].Shape())
				}
				for k, v := range b[1].Int32s() {
					if int(v) != next || b[0].At(k, 1) != -float64(next) {
						t.Fatalf("batch holds id %d, x %v at %d; want %d", v, b[0].At(k, 1), k, next)
					}
					next++
				}
			}
			if !slices.Equal(sizes, tc.sizes) {
				t.Errorf("batch sizes %v, want %v", sizes, tc.sizes)
			}
		})
	}
}

// gen returns a generator of the given rows.
func gen(rows ...[]*tensor.Tensor) *Dataset {
	return FromGenerator(func(yield func(...*tensor.Tensor) bool) error {
		for _, r := range rows {
			if !yield(r...) {
				return nil
			}
		}
		return nil
	})
}

func TestBatchErrors(t *testing.T) {
	f := func(v ...float32) *tensor.Tensor { return tensor.FromSlice(v) }
	i := func(v ...int32) *tensor.Tensor { return tensor.FromSlice(v) }
	r := func(ts ...*tensor.Tensor) []*tensor.Tensor { return ts }
	tests := []struct {
		name string
		d    *Dataset
		want string
	}{
		{"shape", gen(r(f(1, 2)), r(f(1, 2)), r(f(1, 2)), r(f(1, 2, 3))), "dataset: Batch: row 1: sample 1 column 0 has shape [3], sample 0 has [2]"},
		{"dtype", gen(r(f(1)), r(i(1))), "row 0: sample 1 column 0 has dtype Int32, sample 0 has Float32"},
		{"columns", gen(r(f(1), i(1)), r(f(1))), "sample 1 has 1 columns, sample 0 has 2"},
		{"nil", gen(r(f(1), nil), r(f(1), i(1))), "sample 0 column 1 is nil"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			it := tc.d.Batch(2, false).Iter()
			defer it.Close()
			for _, ok := it.Next(); ok; _, ok = it.Next() {
			}
			var de *Error
			if err := it.Err(); !errors.As(err, &de) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want *Error containing %q", err, tc.want)
			}
		})
	}
}

func TestMap(t *testing.T) {
	ids, xs := seq(6)
	double := func(r []*tensor.Tensor) ([]*tensor.Tensor, error) {
		v := r[0].Int32s()
		for i := range v {
			v[i] *= 2
		}
		return []*tensor.Tensor{tensor.FromSlice(v, r[0].Shape()...), r[1]}, nil
	}
	// Per sample, then per batch after Batch.
	if got := firsts(collect(t, FromTensors(ids, xs).Map(double)), 0); !slices.Equal(got, []int{0, 2, 4, 6, 8, 10}) {
		t.Errorf("per sample: %v", got)
	}
	if got := firsts(collect(t, FromTensors(ids, xs).Batch(2, false).Map(double)), 0); !slices.Equal(got, []int{0, 4, 8}) {
		t.Errorf("per batch: %v", got)
	}
	// The source is untouched: rows are views, but Map made new tensors.
	if ids.Int32s()[3] != 3 {
		t.Errorf("source changed: %v", ids.Int32s())
	}
	neg := FromTensors(ids, xs).MapColumn(1, func(x *tensor.Tensor) (*tensor.Tensor, error) {
		return tensor.FromSlice([]float32{x.Float32s()[1]}), nil
	})
	if got := firsts(collect(t, neg), 1); !slices.Equal(got, []int{0, -1, -2, -3, -4, -5}) {
		t.Errorf("MapColumn: %v", got)
	}

	// An error ends the epoch, naming Map and the row, and wraps the cause.
	boom := errors.New("boom")
	d := FromTensors(ids).Map(func(r []*tensor.Tensor) ([]*tensor.Tensor, error) {
		if r[0].Item() == 4 {
			return nil, boom
		}
		return r, nil
	})
	n := 0
	var last error
	for _, err := range d.All() {
		if err != nil {
			last = err
			break
		}
		n++
	}
	if n != 4 || !errors.Is(last, boom) || last.Error() != "dataset: Map: row 4: boom" {
		t.Errorf("%d rows then %v", n, last)
	}
	if _, err := collectErr(FromTensors(ids).MapColumn(3, func(x *tensor.Tensor) (*tensor.Tensor, error) { return x, nil })); err == nil || !strings.Contains(err.Error(), "column 3 of a row with 1 columns") {
		t.Errorf("MapColumn out of range: %v", err)
	}
}

// collectErr runs an epoch and returns its rows and error.
func collectErr(d *Dataset) ([][]*tensor.Tensor, error) {
	var rows [][]*tensor.Tensor
	for r, err := range d.All() {
		if err != nil {
			return rows, err
		}
		rows = append(rows, r)
	}
	return rows, nil
}

func isPerm(p []int) bool {
	s := slices.Sorted(slices.Values(p))
	for i, v := range s {
		if v != i {
			return false
		}
	}
	return true
}

func TestShuffle(t *testing.T) {
	ids, _ := seq(100)
	for _, buf := range []int{1, 10, 100, 1 << 30} {
		tensor.SetSeed(7)
		d := FromTensors(ids).Shuffle(buf)
		e0 := firsts(collect(t, d), 0)
		e1 := firsts(collect(t, d), 0)
		if !isPerm(e0) || !isPerm(e1) || len(e0) != 100 {
			t.Fatalf("buffer %d: not a permutation: %v", buf, e0)
		}
		if buf == 1 {
			if !slices.Equal(e0, firsts(collect(t, FromTensors(ids)), 0)) {
				t.Errorf("buffer 1 changed the order")
			}
			continue
		}
		if slices.Equal(e0, e1) {
			t.Errorf("buffer %d: epochs 0 and 1 in the same order", buf)
		}
		if slices.IsSorted(e0) {
			t.Errorf("buffer %d: not shuffled", buf)
		}
		// The same seed gives the same epochs.
		tensor.SetSeed(7)
		d2 := FromTensors(ids).Shuffle(buf)
		if !slices.Equal(e0, firsts(collect(t, d2), 0)) || !slices.Equal(e1, firsts(collect(t, d2), 0)) {
			t.Errorf("buffer %d: not reproducible with SetSeed", buf)
		}
		// Another seed, another order.
		tensor.SetSeed(8)
		if slices.Equal(e0, firsts(collect(t, FromTensors(ids).Shuffle(buf)), 0)) {
			t.Errorf("buffer %d: seeds 7 and 8 give the same order", buf)
		}
	}
	// A small buffer only moves rows a bounded distance ahead: row i can be
	// yielded no earlier than position i-(buf-1).
	got := firsts(collect(t, FromTensors(ids).ShuffleSeed(4, 1)), 0)
	for pos, v := range got {
		if v > pos+3 {
			t.Errorf("row %d yielded at position %d with buffer 4", v, pos)
		}
	}
	// Rows stay intact: columns travel together.
	id2, xs := seq(50)
	for _, r := range collect(t, FromTensors(id2, xs).ShuffleSeed(50, 3)) {
		if r[1].Float32s()[1] != -float32(r[0].Item()) {
			t.Fatalf("row split apart: %v %v", r[0], r[1])
		}
	}
}

func TestShuffleUniform(t *testing.T) {
	// With a full buffer every row is equally likely in first place.
	ids, _ := seq(4)
	d := FromTensors(ids).ShuffleSeed(4, 42)
	var count [4]int
	const epochs = 4000
	for range epochs {
		count[firsts(collect(t, d.Take(1)), 0)[0]]++
	}
	for i, c := range count {
		if c < epochs/4-200 || c > epochs/4+200 {
			t.Errorf("row %d first %d times in %d epochs", i, c, epochs)
		}
	}
}

func TestGenerator(t *testing.T) {
	var calls atomic.Int32
	d := FromGenerator(func(yield func(...*tensor.Tensor) bool) error {
		calls.Add(1)
		r := make([]*tensor.Tensor, 1)
		for i := range 5 {
			r[0] = tensor.Scalar(int32(i)) // reusing the slice must be harmless
			if !yield(r...) {
				return nil
			}
		}
		return nil
	})
	if d.Len() != -1 {
		t.Errorf("Len %d", d.Len())
	}
	for range 2 {
		if got := firsts(collect(t, d), 0); !slices.Equal(got, []int{0, 1, 2, 3, 4}) {
			t.Errorf("rows %v", got)
		}
	}
	if calls.Load() != 2 {
		t.Errorf("generator called %d times for 2 epochs", calls.Load())
	}
	if got := firsts(collect(t, d.Batch(2, false)), 0); !slices.Equal(got, []int{0, 2, 4}) {
		t.Errorf("batched %v", got)
	}

	// An infinite generator is stopped by Take, and returns.
	var returned atomic.Bool
	inf := FromGenerator(func(yield func(...*tensor.Tensor) bool) error {
		defer returned.Store(true)
		for i := int32(0); ; i++ {
			if !yield(tensor.Scalar(i)) {
				return nil
			}
		}
	})
	if got := firsts(collect(t, inf.Take(3)), 0); !slices.Equal(got, []int{0, 1, 2}) || !returned.Load() {
		t.Errorf("Take(3) of infinite: %v, generator returned %v", got, returned.Load())
	}

	// An error from the generator ends the epoch after the rows before it.
	bad := FromGenerator(func(yield func(...*tensor.Tensor) bool) error {
		yield(tensor.Scalar[int32](0))
		return errors.New("disk on fire")
	})
	rows, err := collectErr(bad)
	if len(rows) != 1 || err == nil || err.Error() != "dataset: FromGenerator: row 1: disk on fire" {
		t.Errorf("rows %d, error %v", len(rows), err)
	}
}

func TestFromFunc(t *testing.T) {
	d := FromFunc(4, func(i int) ([]*tensor.Tensor, error) {
		if i == 3 {
			return nil, fmt.Errorf("no row %d", i)
		}
		return []*tensor.Tensor{tensor.Scalar(int32(i * i))}, nil
	})
	if d.Len() != 4 {
		t.Errorf("Len %d", d.Len())
	}
	rows, err := collectErr(d)
	if got := firsts(rows, 0); !slices.Equal(got, []int{0, 1, 4}) || err == nil || err.Error() != "dataset: FromFunc: row 3: no row 3" {
		t.Errorf("rows %v, error %v", got, err)
	}
}

func TestRepeatTake(t *testing.T) {
	ids, _ := seq(3)
	tests := []struct {
		name string
		d    *Dataset
		want []int
		len  int
	}{
		{"repeat 2", FromTensors(ids).Repeat(2), []int{0, 1, 2, 0, 1, 2}, 6},
		{"repeat 0", FromTensors(ids).Repeat(0), nil, 0},
		{"repeat forever, take", FromTensors(ids).Repeat(-1).Take(7), []int{0, 1, 2, 0, 1, 2, 0}, 7},
		{"take", FromTensors(ids).Take(2), []int{0, 1}, 2},
		{"take more", FromTensors(ids).Take(5), []int{0, 1, 2}, 3},
		{"batch across repeats", FromTensors(ids).Repeat(2).Batch(4, false), []int{0, 1}, 2},
		{"empty forever", FromTensors(ids).Take(0).Repeat(-1), nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := firsts(collect(t, tc.d), 0); !slices.Equal(got, tc.want) {
				t.Errorf("rows %v, want %v", got, tc.want)
			}
			if tc.d.Len() != tc.len {
				t.Errorf("Len %d, want %d", tc.d.Len(), tc.len)
			}
		})
	}
	for _, d := range []*Dataset{FromTensors(ids).Repeat(-1), FromTensors(ids).Repeat(-1).Batch(2, true).Map(func(r []*tensor.Tensor) ([]*tensor.Tensor, error) { return r, nil }), gen().Take(3), gen().Repeat(2)} {
		if n := d.Len(); n != -1 {
			t.Errorf("Len of infinite or unknown: %d", n)
		}
	}
	if n := FromTensors(ids).Repeat(-1).Batch(2, true).Take(5).Len(); n != 5 {
		t.Errorf("Len of Take(5) of infinite: %d", n)
	}
	// A shuffle below a repeat reshuffles every repetition.
	id8, _ := seq(8)
	got := firsts(collect(t, FromTensors(id8).ShuffleSeed(8, 5).Repeat(2)), 0)
	if !isPerm(got[:8]) || !isPerm(got[8:]) || slices.Equal(got[:8], got[8:]) {
		t.Errorf("repeat of shuffle: %v", got)
	}
}

// waitGoroutines waits for the goroutine count to drop to at most n.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, want at most %d:\n%s", runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}

func TestPrefetch(t *testing.T) {
	ids, xs := seq(100)
	base := FromTensors(xs, ids).ShuffleSeed(100, 9).Batch(8, false)
	want := collect(t, base)
	pf := FromTensors(xs, ids).ShuffleSeed(100, 9).Batch(8, false).Prefetch(3)
	if pf.Len() != base.Len() {
		t.Errorf("Len %d, want %d", pf.Len(), base.Len())
	}
	got := collect(t, pf)
	if len(got) != len(want) {
		t.Fatalf("%d batches, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i][0].String() != want[i][0].String() || got[i][1].String() != want[i][1].String() {
			t.Fatalf("batch %d differs", i)
		}
	}

	g0 := runtime.NumGoroutine()
	// Stopping early, three ways: Close, break out of All, an error.
	for range 20 {
		it := pf.Iter()
		it.Next()
		it.Close()
		it.Close() // idempotent
		if _, ok := it.Next(); ok {
			t.Fatal("Next after Close")
		}
		for range pf.All() {
			break
		}
	}
	waitGoroutines(t, g0)

	// A producer blocked on a full buffer of an infinite pipeline.
	inf := FromTensors(ids).Repeat(-1).Prefetch(2)
	it := inf.Iter()
	it.Next()
	time.Sleep(10 * time.Millisecond)
	it.Close()
	waitGoroutines(t, g0)

	// Errors cross the goroutine.
	bad := FromTensors(ids).Map(func(r []*tensor.Tensor) ([]*tensor.Tensor, error) {
		if r[0].Item() == 50 {
			return nil, errors.New("bad row")
		}
		return r, nil
	}).Prefetch(4)
	rows, err := collectErr(bad)
	if len(rows) != 50 || err == nil || err.Error() != "dataset: Map: row 50: bad row" {
		t.Errorf("%d rows, error %v", len(rows), err)
	}
	waitGoroutines(t, g0)
}

func TestPrefetchPanic(t *testing.T) {
	g0 := runtime.NumGoroutine()
	ids, _ := seq(10)
	d := FromTensors(ids).Map(func(r []*tensor.Tensor) ([]*tensor.Tensor, error) {
		if r[0].Item() == 5 {
			core.Panicf("MyOp", "bad")
		}
		return r, nil
	}).Prefetch(2)
	func() {
		defer func() {
			r := recover()
			var te *tensor.Error
			if err, ok := r.(error); !ok || !errors.As(err, &te) || te.Op != "MyOp" {
				t.Errorf("recovered %v; want the original *tensor.Error", r)
			}
		}()
		for range d.All() {
		}
	}()
	waitGoroutines(t, g0)
}

func TestAbandonedIterator(t *testing.T) {
	// An iterator dropped without Close is closed by its cleanup once
	// garbage-collected, so its producer goroutine goes too.
	g0 := runtime.NumGoroutine()
	ids, _ := seq(100)
	func() {
		it := FromTensors(ids).Repeat(-1).Prefetch(1).Iter()
		it.Next()
	}()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > g0 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > g0 {
		t.Errorf("%d goroutines after GC, want %d", n, g0)
	}
}

func TestIteratorErrAndEnd(t *testing.T) {
	ids, _ := seq(2)
	it := FromTensors(ids).Iter()
	defer it.Close()
	n := 0
	for _, ok := it.Next(); ok; _, ok = it.Next() {
		n++
	}
	if n != 2 || it.Err() != nil {
		t.Errorf("%d rows, err %v", n, it.Err())
	}
	if _, ok := it.Next(); ok {
		t.Error("Next after the end")
	}
	// User code returning io.EOF is an error, not a quiet end.
	d := FromFunc(3, func(i int) ([]*tensor.Tensor, error) {
		if i == 1 {
			return nil, ioEOF()
		}
		return []*tensor.Tensor{tensor.Scalar(int32(i))}, nil
	})
	if _, err := collectErr(d); err == nil {
		t.Error("io.EOF from user code ended the epoch silently")
	}
}

func ioEOF() error { return io.EOF }
