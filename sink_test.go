package spore_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/dataset"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// regression is a least-squares model y ≈ x·w + b trained by SGD: its
// step computes the loss and gradients and assigns the updated
// parameters, as a training cell does.
type regression struct{ w, b *spore.Tensor }

func newRegression() *regression {
	return &regression{
		w: spore.NewParameter("w", spore.FromSlice([]float32{0.1, -0.2, 0.3}, 3, 1)),
		b: spore.NewParameter("b", spore.FromSlice([]float32{0}, 1)),
	}
}

func (r *regression) step() func(batch ...*spore.Tensor) *spore.Tensor {
	grad := spore.ValueAndGrad(func(x, y *spore.Tensor) *spore.Tensor {
		d := ops.Sub(ops.Add(ops.MatMul(x, r.w), r.b), y)
		return ops.Mean(ops.Mul(d, d))
	}, spore.GradPosition(), spore.Weights(r.w, r.b))
	return func(batch ...*spore.Tensor) *spore.Tensor {
		loss, gs := grad(batch[0], batch[1])
		for i, p := range []*spore.Tensor{r.w, r.b} {
			p.Assign(ops.Sub(p, ops.MulScalar(gs[i], 0.05)))
		}
		return loss
	}
}

// regressionData has rows rows of (x [3], y [1]) in batches of batch,
// the last one shorter when batch does not divide rows.
func regressionData(rows, batch int) *dataset.Dataset {
	x := make([]float32, rows*3)
	y := make([]float32, rows)
	for i := range rows {
		for j := range 3 {
			x[i*3+j] = float32(math.Sin(float64(i*3 + j)))
		}
		y[i] = 0.5*x[i*3] - x[i*3+1] + 0.25*x[i*3+2] + 0.1
	}
	return dataset.FromTensors(spore.FromSlice(x, rows, 3), spore.FromSlice(y, rows, 1)).Batch(batch, false)
}

func withContext(t *testing.T, opts ...spore.ContextOption) {
	t.Helper()
	old := spore.GetContext()
	spore.SetContext(opts...)
	t.Cleanup(func() { spore.SetContext(spore.WithMode(old.Mode), spore.WithJitLevel(old.JitLevel)) })
}

// drain runs s until ErrSinkDone and returns every loss and position.
func drain(t *testing.T, s *spore.Sink) ([]float32, []spore.SinkPosition) {
	t.Helper()
	var losses []float32
	var pos []spore.SinkPosition
	for {
		l, err := s.Run()
		if errors.Is(err, spore.ErrSinkDone) {
			return losses, pos
		}
		if err != nil {
			t.Fatal(err)
		}
		if l.Rank() != 1 || l.Dim(0) != s.Position().Steps {
			t.Fatalf("losses of shape %v for %d steps", l.Shape(), s.Position().Steps)
		}
		losses = append(losses, l.Float32s()...)
		pos = append(pos, s.Position())
	}
}

// Sunk steps compute what the same steps called one by one compute, bit
// for bit at O0, in both modes; queues never span epochs, and the short
// last queue of an epoch runs as a shorter Scan compiled once.
func TestDataSinkSameAsSteps(t *testing.T) {
	for _, mode := range []spore.Mode{spore.GraphMode, spore.PyNativeMode} {
		withContext(t, spore.WithMode(mode), spore.WithJitLevel(spore.O0))
		r := newRegression()
		step := r.step()
		if mode == spore.GraphMode {
			step = spore.Jit(step)
		}
		ds := regressionData(20, 2) // 10 batches an epoch
		var want []float32
		for range 2 {
			for b, err := range ds.All() {
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, float32(step(b...).Item()))
			}
		}
		wantW := append(r.w.Float32s(), r.b.Float32s()...)

		for _, tc := range []struct {
			n        int
			pos      string
			compiles int
		}{
			{1, "", 1},
			{3, "1:1+3 1:4+3 1:7+3 1:10+1$ 2:1+3 2:4+3 2:7+3 2:10+1$", 2},
			{4, "1:1+4 1:5+4 1:9+2$ 2:1+4 2:5+4 2:9+2$", 2},
			{10, "1:1+10$ 2:1+10$", 1},
			{16, "1:1+10$ 2:1+10$", 1},
			// Queues hold what the epoch has, not room for 2³⁰ batches.
			{1 << 30, "1:1+10$ 2:1+10$", 1},
		} {
			r2 := newRegression()
			s := spore.DataSink(r2.step(), ds, tc.n, spore.SinkConfig{Epochs: 2})
			got, pos := drain(t, s)
			s.Close()
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%v n=%d: losses %v, step by step %v", mode, tc.n, got, want)
			}
			if gotW := append(r2.w.Float32s(), r2.b.Float32s()...); !sameBits(gotW, wantW) {
				t.Errorf("%v n=%d: weights %v, step by step %v", mode, tc.n, gotW, wantW)
			}
			if tc.pos != "" && positions(pos) != tc.pos {
				t.Errorf("%v n=%d: positions %q, want %q", mode, tc.n, positions(pos), tc.pos)
			}
			compiles := 0
			if mode == spore.GraphMode {
				compiles = tc.compiles
			}
			if c := s.Stats().Compiles; c != compiles {
				t.Errorf("%v n=%d: %d compiles, want %d", mode, tc.n, c, compiles)
			}
		}
	}
}

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// positions writes epoch:step+steps per call, $ marking an epoch's end.
func positions(ps []spore.SinkPosition) string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d:%d+%d", p.Epoch, p.Step, p.Steps)
		if p.EpochEnd {
			b.WriteByte('$')
		}
	}
	return b.String()
}

// A batch of new shapes (the short last batch of Batch without
// dropRemainder) ends the queue before it and starts one of its own.
func TestDataSinkShapeChange(t *testing.T) {
	withContext(t, spore.WithMode(spore.GraphMode))
	r := newRegression()
	s := spore.DataSink(r.step(), regressionData(20, 3), 4, spore.SinkConfig{Epochs: 1}) // 6 batches of 3, one of 2
	defer s.Close()
	_, pos := drain(t, s)
	if got, want := positions(pos), "1:1+4 1:5+2 1:7+1$"; got != want {
		t.Errorf("positions %q, want %q", got, want)
	}
}

// Without Epochs the sink cycles through the dataset for ever, as
// MindSpore's data_sink does.
func TestDataSinkCycles(t *testing.T) {
	withContext(t, spore.WithMode(spore.GraphMode))
	r := newRegression()
	s := spore.DataSink(r.step(), regressionData(8, 2), 3) // 4 batches an epoch
	defer s.Close()
	var pos []spore.SinkPosition
	for range 6 {
		if _, err := s.Run(); err != nil {
			t.Fatal(err)
		}
		pos = append(pos, s.Position())
	}
	if got, want := positions(pos), "1:1+3 1:4+1$ 2:1+3 2:4+1$ 3:1+3 3:4+1$"; got != want {
		t.Errorf("positions %q, want %q", got, want)
	}
}

// failAt wraps a dataset so that its epochs fail at one step.
type failAt struct {
	ds    *dataset.Dataset
	step  int
	panic bool
}

var errDisk = errors.New("disk on fire")

func (f failAt) All() iter.Seq2[[]*spore.Tensor, error] {
	return func(yield func([]*spore.Tensor, error) bool) {
		i := 0
		for b, err := range f.ds.All() {
			if i++; i == f.step {
				if f.panic {
					panic("bad sample")
				}
				yield(nil, errDisk)
				return
			}
			if !yield(b, err) {
				return
			}
		}
	}
}

// A failing dataset: the steps before the failure run, then Run returns
// the error with the epoch and step, and keeps returning it; a panic in
// the dataset is re-raised by Run.
func TestDataSinkDatasetFailure(t *testing.T) {
	withContext(t, spore.WithMode(spore.GraphMode))
	r := newRegression()
	s := spore.DataSink(r.step(), failAt{ds: regressionData(20, 2), step: 5}, 3)
	defer s.Close()
	var steps []int
	var err error
	for range 4 {
		var l *spore.Tensor
		if l, err = s.Run(); err != nil {
			break
		}
		steps = append(steps, l.Dim(0))
	}
	if fmt.Sprint(steps) != "[3 1]" {
		t.Errorf("ran queues of %v steps before the failure at step 5, want [3 1]", steps)
	}
	if !errors.Is(err, errDisk) || !strings.Contains(err.Error(), "epoch 1, step 5") {
		t.Errorf("error %v, want the dataset's, at epoch 1, step 5", err)
	}
	if _, again := s.Run(); again != err {
		t.Errorf("Run after the failure: %v, want %v again", again, err)
	}

	p := spore.DataSink(r.step(), failAt{ds: regressionData(20, 2), step: 2, panic: true}, 3)
	defer p.Close()
	func() {
		defer func() {
			if v := recover(); v != "bad sample" {
				t.Errorf("recovered %v, want the dataset's panic", v)
			}
		}()
		p.Run()
	}()
}

// Closing a sink early stops the goroutine filling its queues, whether
// or not it ran; a cancelled context stops it too.
func TestDataSinkStopsEarly(t *testing.T) {
	withContext(t, spore.WithMode(spore.GraphMode))
	base := runtime.NumGoroutine()
	r := newRegression()
	for _, runs := range []int{0, 1, 2} {
		s := spore.DataSink(r.step(), regressionData(40, 2), 3)
		for range runs {
			if _, err := s.Run(); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
		s.Close()
		if _, err := s.Run(); err == nil || !strings.Contains(err.Error(), "after Close") {
			t.Errorf("Run after Close: %v", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := spore.DataSink(r.step(), regressionData(40, 2), 3, spore.SinkConfig{Context: ctx})
	if _, err := s.Run(); err != nil {
		t.Fatal(err)
	}
	cancel()
	var err error
	for range 3 { // a queue filled before the cancellation may still run
		if _, err = s.Run(); err != nil {
			break
		}
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run after cancel: %v, want context.Canceled", err)
	}
	s.Close()
	waitGoroutines(t, base)
}

// waitGoroutines waits (boundedly) for goroutines that have finished
// their work to exit.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	for range 5000 {
		if runtime.NumGoroutine() <= n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	buf := make([]byte, 1<<16)
	t.Fatalf("%d goroutines, want at most %d:\n%s", runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
}

// Misuse is refused with messages that name the problem.
func TestDataSinkMisuse(t *testing.T) {
	withContext(t, spore.WithMode(spore.GraphMode))
	r := newRegression()
	ds := regressionData(8, 2)
	for _, tc := range []struct {
		name, want string
		f          func()
	}{
		{"zero size", "sink size 0", func() { spore.DataSink(r.step(), ds, 0) }},
		{"nil step", "step is nil", func() { spore.DataSink(nil, ds, 2) }},
		{"nil dataset", "dataset is nil", func() { spore.DataSink(r.step(), nil, 2) }},
		{"vector loss", "scalar loss", func() {
			s := spore.DataSink(func(b ...*spore.Tensor) *spore.Tensor { return b[0] }, ds, 2)
			defer s.Close()
			s.Run()
		}},
	} {
		func() {
			defer func() {
				v := recover()
				var e *tensor.Error
				if err, ok := v.(error); !ok || !errors.As(err, &e) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: recovered %v, want a *tensor.Error about %q", tc.name, v, tc.want)
				}
			}()
			tc.f()
		}()
	}
	empty := spore.DataSink(r.step(), regressionData(8, 2).Take(0), 2)
	defer empty.Close()
	if _, err := empty.Run(); err == nil || !strings.Contains(err.Error(), "no batches") {
		t.Errorf("empty dataset: %v", err)
	}
}

// Restart reads a dataset afresh and keeps the compiled queue plans.
func TestDataSinkRestart(t *testing.T) {
	withContext(t, spore.WithMode(spore.GraphMode))
	r := newRegression()
	s := spore.DataSink(r.step(), regressionData(20, 2), 4, spore.SinkConfig{Epochs: 1})
	defer s.Close()
	_, first := drain(t, s)
	compiles := s.Stats().Compiles
	s.Restart(regressionData(20, 2), 2)
	_, again := drain(t, s)
	if got, want := positions(again), positions(first)+" "+strings.ReplaceAll(positions(first), "1:", "2:"); got != want {
		t.Errorf("after Restart: positions %q, want %q", got, want)
	}
	if c := s.Stats().Compiles; c != compiles || compiles != 2 {
		t.Errorf("compiles: %d before Restart, %d after; want 2 both times", compiles, c)
	}
}
