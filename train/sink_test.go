package train_test

import (
	"errors"
	"fmt"
	"iter"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/dataset"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/tensor"
	"github.com/sporeml/spore/train"
)

// stepLog records what the step callbacks see.
type stepLog struct {
	train.BaseCallback
	steps   []int // Step, GlobalStep pairs
	losses  []float64
	batches []string  // each step's data and label
	epochs  []float64 // the epoch's mean loss
}

func (s *stepLog) OnStepEnd(c *train.RunContext) {
	s.steps = append(s.steps, c.Step, c.GlobalStep)
	s.losses = append(s.losses, c.Loss)
	s.batches = append(s.batches, fmt.Sprint(c.Batch[0].Shape(), c.Batch[0].Float32s(), c.Batch[1].Shape(), c.Batch[1].Data()))
}

func (s *stepLog) OnEpochEnd(c *train.RunContext) { s.epochs = append(s.epochs, c.Metrics["loss"]) }

// trained trains a fresh small model (same seed every time) for two
// epochs of 10 batches of 4 at sink size n (0: unsunk) and returns every
// parameter and optimiser state tensor with what the callbacks saw.
func trained(t *testing.T, n int, opt func([]*tensor.Tensor) optim.Optimizer, dropout bool) ([]*tensor.Tensor, *stepLog) {
	t.Helper()
	spore.SetSeed(7)
	layers := []nn.Layer{nn.NewDense(10, 32), nn.NewReLU()}
	if dropout {
		layers = append(layers, nn.NewDropout(0.3))
	}
	net := nn.NewSequentialCell(append(layers, nn.NewDense(32, 4))...)
	m := train.NewModel(net, nn.NewCrossEntropyLoss("", 0), opt(net.TrainableParameters()))
	m.SinkSize = n
	log := &stepLog{}
	if err := m.Train(2, blobData(3, 40, 4), log); err != nil {
		t.Fatalf("sink size %d: %v", n, err)
	}
	return append(net.TrainableParameters(), m.Optimizer.State()...), log
}

// A sunk run trains exactly as an unsunk one: at O0 every parameter and
// optimiser state holds the same bits after two epochs, for sink sizes
// that divide the 10-step epoch and sizes that leave a shorter last
// queue, and the callbacks see the same batches and losses at the same
// step numbers.
func TestSinkSameWeightsAsUnsunk(t *testing.T) {
	old := spore.GetContext()
	defer spore.SetContext(spore.WithMode(old.Mode), spore.WithJitLevel(old.JitLevel))
	for _, mode := range []spore.Mode{spore.GraphMode, spore.PyNativeMode} {
		for _, o := range []struct {
			name string
			opt  func([]*tensor.Tensor) optim.Optimizer
		}{{"momentum", sgd}, {"adam", adam}} {
			spore.SetContext(spore.WithMode(mode), spore.WithJitLevel(spore.O0))
			want, wantLog := trained(t, 0, o.opt, false)
			for _, n := range []int{1, 3, 5, 10, 16} {
				got, log := trained(t, n, o.opt, false)
				for i := range want {
					if d := firstBitDiff(want[i], got[i]); d >= 0 {
						t.Errorf("%v %s sink size %d: %s differs from the unsunk run at element %d: %v vs %v",
							mode, o.name, n, want[i].Name(), d, got[i].Float32s()[d], want[i].Float32s()[d])
					}
				}
				if !slices.Equal(log.batches, wantLog.batches) {
					t.Errorf("%v %s sink size %d: callbacks saw other batches than unsunk", mode, o.name, n)
				}
				if !sameFloats(log.losses, wantLog.losses) || !sameInts(log.steps, wantLog.steps) || !sameFloats(log.epochs, wantLog.epochs) {
					t.Errorf("%v %s sink size %d: callbacks saw steps %v losses %v epoch losses %v, unsunk %v %v %v",
						mode, o.name, n, log.steps, log.losses, log.epochs, wantLog.steps, wantLog.losses, wantLog.epochs)
				}
			}
		}
	}
}

// Dropout draws its masks from the framework's random source when each
// step runs, sunk or not, so a sunk run with dropout draws the same masks
// in the same order and ends with the same weights.
func TestSinkDropoutSameWeights(t *testing.T) {
	old := spore.GetContext()
	defer spore.SetContext(spore.WithMode(old.Mode), spore.WithJitLevel(old.JitLevel))
	spore.SetContext(spore.WithMode(spore.GraphMode), spore.WithJitLevel(spore.O0))
	want, _ := trained(t, 0, sgd, true)
	got, _ := trained(t, 3, sgd, true)
	for i := range want {
		if d := firstBitDiff(want[i], got[i]); d >= 0 {
			t.Errorf("%s differs from the unsunk run at element %d", want[i].Name(), d)
		}
	}
}

func firstBitDiff(a, b *tensor.Tensor) int {
	x, y := a.Float32s(), b.Float32s()
	if len(x) != len(y) {
		return 0
	}
	for i := range x {
		if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
			return i
		}
	}
	return -1
}

func sameFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

func sameInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// failing yields good batches, then fails at a given step.
type failing struct {
	ds     *dataset.Dataset
	failAt int
}

var errBroken = errors.New("disk on fire")

func (f failing) All() iter.Seq2[[]*tensor.Tensor, error] {
	return func(yield func([]*tensor.Tensor, error) bool) {
		i := 0
		for b, err := range f.ds.All() {
			i++
			if i == f.failAt {
				yield(nil, errBroken)
				return
			}
			if !yield(b, err) {
				return
			}
		}
	}
}

// A dataset failure in sink mode runs the steps before it, as unsunk
// training does, and the error names the epoch and the step.
func TestSinkDatasetError(t *testing.T) {
	old := spore.GetContext().Mode
	defer spore.SetContext(spore.WithMode(old))
	spore.SetContext(spore.WithMode(spore.GraphMode))
	for _, n := range []int{0, 3} {
		m := newModel(1, sgd)
		m.SinkSize = n
		log := &stepLog{}
		err := m.Train(1, failing{blobData(3, 40, 4), 8}, log)
		if !errors.Is(err, errBroken) {
			t.Fatalf("sink size %d: error %v, want the dataset's", n, err)
		}
		if len(log.losses) != 7 {
			t.Errorf("sink size %d: %d steps ran before the failure at step 8, want 7", n, len(log.losses))
		}
		if n > 0 && !strings.Contains(err.Error(), "epoch 1, step 8") {
			t.Errorf("sink size %d: error %q does not name epoch 1, step 8", n, err)
		}
	}
}

// Bad sink configurations are refused with errors that say what to do.
func TestSinkRefusals(t *testing.T) {
	m := newModel(1, sgd)
	m.SinkSize = -2
	if err := m.Train(1, blobData(3, 40, 4)); err == nil || !strings.Contains(err.Error(), "SinkSize -2 is negative") {
		t.Errorf("negative sink size: error %v", err)
	}
	m = newModel(1, sgd)
	m.SinkSize = 2
	bad := dataset.FromTensors(tensor.Ones(spore.Float32, 8, 10)).Batch(4, false)
	if err := m.Train(1, bad); err == nil || !strings.Contains(err.Error(), "want data and label") {
		t.Errorf("batches without labels: error %v", err)
	}
}

// Fit after Fit keeps the sink's compiled plans and trains on as one
// longer unsunk run would.
func TestSinkAcrossFits(t *testing.T) {
	old := spore.GetContext()
	defer spore.SetContext(spore.WithMode(old.Mode), spore.WithJitLevel(old.JitLevel))
	spore.SetContext(spore.WithMode(spore.GraphMode), spore.WithJitLevel(spore.O0))
	want, _ := trained(t, 0, sgd, false) // two epochs in one Train
	spore.SetSeed(7)
	net := nn.NewSequentialCell(nn.NewDense(10, 32), nn.NewReLU(), nn.NewDense(32, 4))
	m := train.NewModel(net, nn.NewCrossEntropyLoss("", 0), sgd(net.TrainableParameters()))
	m.SinkSize = 3
	for range 2 {
		if err := m.Train(1, blobData(3, 40, 4)); err != nil {
			t.Fatal(err)
		}
	}
	got := append(net.TrainableParameters(), m.Optimizer.State()...)
	for i := range want {
		if d := firstBitDiff(want[i], got[i]); d >= 0 {
			t.Errorf("%s differs from one two-epoch run at element %d", want[i].Name(), d)
		}
	}
	if st := m.SinkStats(); st.Compiles != 2 || st.Hits != 6 {
		t.Errorf("two Fits of 10 steps at sink size 3: %d compiles and %d hits, want 2 (queues of 3 and 1) and 6", st.Compiles, st.Hits)
	}
}

// At O1 the scanned step compiles to the plan the unsunk step compiles
// to, so here too the weights come out the same, bit for bit.
func TestSinkSameWeightsAtO1(t *testing.T) {
	old := spore.GetContext()
	defer spore.SetContext(spore.WithMode(old.Mode), spore.WithJitLevel(old.JitLevel))
	spore.SetContext(spore.WithMode(spore.GraphMode), spore.WithJitLevel(spore.O1))
	want, _ := trained(t, 0, adam, false)
	got, _ := trained(t, 3, adam, false)
	for i := range want {
		if d := firstBitDiff(want[i], got[i]); d >= 0 {
			t.Errorf("%s differs from the unsunk run at element %d", want[i].Name(), d)
		}
	}
}
