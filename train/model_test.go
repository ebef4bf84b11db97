package train_test

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/checkpoint"
	"github.com/sporeml/spore/dataset"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/tensor"
	"github.com/sporeml/spore/train"
)

// blobs returns n points in dim dimensions around k separated centres
// (the same for every seed), with class labels; seed picks the sample.
func blobs(seed uint64, n, dim, k int) (*tensor.Tensor, *tensor.Tensor) {
	rc := rand.New(rand.NewPCG(17, 1))
	centres := make([][]float32, k)
	for c := range centres {
		centres[c] = make([]float32, dim)
		for d := range dim {
			centres[c][d] = float32(rc.NormFloat64() * 2)
		}
	}
	r := rand.New(rand.NewPCG(seed, 2))
	x := make([]float32, n*dim)
	y := make([]int32, n)
	for i := range n {
		c := r.IntN(k)
		y[i] = int32(c)
		for d := range dim {
			x[i*dim+d] = centres[c][d] + float32(r.NormFloat64()*0.6)
		}
	}
	return tensor.FromSlice(x, n, dim), tensor.FromSlice(y, n)
}

func blobData(seed uint64, n, batch int) *dataset.Dataset {
	x, y := blobs(seed, n, 10, 4)
	return dataset.FromTensors(x, y).Batch(batch, false)
}

// newModel builds a 2-layer MLP model from the framework seed.
func newModel(seed int64, opt func([]*tensor.Tensor) optim.Optimizer) *train.Model {
	spore.SetSeed(seed)
	net := nn.NewSequentialCell(nn.NewDense(10, 32), nn.NewReLU(), nn.NewDense(32, 4))
	return train.NewModel(net, nn.NewCrossEntropyLoss("", 0), opt(net.TrainableParameters()),
		train.NewAccuracy(), train.NewLoss(), train.TopKCategoricalAccuracy(2))
}

func sgd(ps []*tensor.Tensor) optim.Optimizer {
	return optim.NewSGD(ps, optim.SGDConfig{Common: optim.Common{LR: optim.Constant(0.05)}, Momentum: 0.9})
}

func adam(ps []*tensor.Tensor) optim.Optimizer {
	return optim.NewAdam(ps, optim.AdamConfig{Common: optim.Common{LR: optim.CosineDecay(1e-3, 1e-2, 40)}})
}

func withMode(mode spore.Mode, f func()) {
	old := spore.GetContext().Mode
	spore.SetContext(spore.WithMode(mode))
	defer spore.SetContext(spore.WithMode(old))
	f()
}

// recorder is a user callback that logs the calls it receives.
type recorder struct {
	train.BaseCallback
	calls  []string
	loss   []float64
	params [][][]float32 // the network's parameters at each epoch's end
}

func (r *recorder) OnTrainBegin(*train.RunContext) { r.calls = append(r.calls, "train") }
func (r *recorder) OnTrainEnd(*train.RunContext)   { r.calls = append(r.calls, "end") }
func (r *recorder) OnEpochBegin(c *train.RunContext) {
	r.calls = append(r.calls, "epoch")
}
func (r *recorder) OnStepEnd(c *train.RunContext) { r.loss = append(r.loss, c.Loss) }
func (r *recorder) OnEpochEnd(c *train.RunContext) {
	var snap [][]float32
	for _, p := range c.Model.Network.Base().Parameters() {
		snap = append(snap, p.Float32s())
	}
	r.params = append(r.params, snap)
}

func TestTrainReachesHighAccuracy(t *testing.T) {
	for _, mode := range []spore.Mode{spore.PyNativeMode, spore.GraphMode} {
		t.Run(mode.String(), func(t *testing.T) {
			withMode(mode, func() {
				m := newModel(1, sgd)
				rec := &recorder{}
				var log bytes.Buffer
				lm := train.NewLossMonitor(4)
				lm.Out = &log
				tm := train.NewTimeMonitor()
				tm.Out = &log
				if err := m.Train(5, blobData(1, 256, 32), rec, lm, tm); err != nil {
					t.Fatal(err)
				}
				res, err := m.Eval(blobData(2, 256, 50))
				if err != nil {
					t.Fatal(err)
				}
				if res["accuracy"] < 0.95 || res["top_2_categorical_accuracy"] < res["accuracy"] || res["loss"] > 0.3 {
					t.Errorf("eval %v", res)
				}
				if want := []string{"train", "epoch", "epoch", "epoch", "epoch", "epoch", "end"}; !slices.Equal(rec.calls, want) {
					t.Errorf("callbacks %v, want %v", rec.calls, want)
				}
				if len(rec.loss) != 40 || m.GlobalStep() != 40 {
					t.Errorf("%d step losses, global step %d; want 40", len(rec.loss), m.GlobalStep())
				}
				if n := strings.Count(log.String(), "loss is"); n != 10 {
					t.Errorf("LossMonitor printed %d lines, want 10:\n%s", n, log.String())
				}
				if len(tm.Epochs) != 5 || !strings.Contains(log.String(), "per step time") {
					t.Errorf("TimeMonitor recorded %d epochs", len(tm.Epochs))
				}
				if mode == spore.GraphMode {
					if s := m.TrainCell().StepStats(); s.Compiles != 1 {
						t.Errorf("%d compiled training steps, want 1", s.Compiles)
					}
				}
				p := m.Predict(tensor.Zeros(tensor.Float32, 3, 10))
				if !p.Shape().Equal(tensor.Shape{3, 4}) {
					t.Errorf("Predict shape %v", p.Shape())
				}
				if !m.Network.Base().Training() {
					t.Errorf("Eval/Predict left the network in inference mode")
				}
			})
		})
	}
}

func TestModelCheckpointKeepLast(t *testing.T) {
	cases := []struct {
		name   string
		cfg    train.CheckpointConfig
		epochs int
		want   []string
	}{
		{"steps keep 2", train.CheckpointConfig{Prefix: "mlp", SaveSteps: 3, KeepLast: 2}, 2, []string{"mlp-2_4.safetensors", "mlp-2_7.safetensors"}},
		{"epochs keep all ckpt", train.CheckpointConfig{SaveEpochs: 1, Format: ".ckpt"}, 2, []string{"checkpoint-1_8.ckpt", "checkpoint-2_8.ckpt"}},
		{"steps and epochs", train.CheckpointConfig{Prefix: "m", SaveSteps: 4, SaveEpochs: 1, KeepLast: 3}, 2, []string{"m-1_8.safetensors", "m-2_4.safetensors", "m-2_8.safetensors"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			c.cfg.Dir = filepath.Join(dir, "ckpt")
			mc := train.NewModelCheckpoint(c.cfg)
			m := newModel(1, adam)
			if err := m.Train(c.epochs, blobData(1, 256, 32), mc); err != nil {
				t.Fatal(err)
			}
			ents, err := os.ReadDir(c.cfg.Dir)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range ents {
				got = append(got, e.Name())
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("files %v, want %v", got, c.want)
			}
			if filepath.Base(mc.Latest()) != c.want[len(c.want)-1] {
				t.Errorf("Latest %s", mc.Latest())
			}
		})
	}
}

// TestResume checks that a checkpoint holds the network and the
// optimiser's state: training resumed from it continues exactly as the
// uninterrupted run did, in both modes.
func TestResume(t *testing.T) {
	for _, mode := range []spore.Mode{spore.PyNativeMode, spore.GraphMode} {
		t.Run(mode.String(), func(t *testing.T) {
			withMode(mode, func() {
				data := blobData(3, 128, 32)
				dir := t.TempDir()
				a := newModel(1, adam)
				mc := train.NewModelCheckpoint(train.CheckpointConfig{Dir: dir, SaveEpochs: 1})
				recA := &recorder{}
				if err := a.Train(3, data, mc, recA); err != nil {
					t.Fatal(err)
				}
				first := filepath.Join(dir, "checkpoint-1_4.safetensors")

				b := newModel(99, adam) // different initial weights
				if err := b.LoadCheckpoint(first); err != nil {
					t.Fatal(err)
				}
				if b.GlobalStep() != 4 {
					t.Fatalf("resumed global step %d, want 4", b.GlobalStep())
				}
				recB := &recorder{}
				if err := b.Train(2, data, recB); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(recB.loss, recA.loss[4:]) {
					t.Fatalf("resumed losses %v, want %v", recB.loss, recA.loss[4:])
				}
				pa, pb := a.CheckpointParams(), b.CheckpointParams()
				for i := range pa {
					if pa[i].Name != pb[i].Name || !slices.Equal(pa[i].Tensor.Float64s(), pb[i].Tensor.Float64s()) {
						t.Fatalf("after resuming, %s differs", pa[i].Name)
					}
				}

				// A file without the optimiser state loads the network
				// alone; continuing from fresh moments and step differs, so
				// the state really matters.
				all, _, err := checkpoint.Load(first)
				if err != nil {
					t.Fatal(err)
				}
				netOnly := filepath.Join(dir, "net.ckpt")
				if err := checkpoint.Save(netOnly, all[:4], nil); err != nil {
					t.Fatal(err)
				}
				c := newModel(99, adam)
				if err := c.LoadCheckpoint(netOnly); err != nil {
					t.Fatal(err)
				}
				recC := &recorder{}
				if err := c.Train(2, data, recC); err != nil {
					t.Fatal(err)
				}
				if c.GlobalStep() != 8 || recC.loss[0] != recA.loss[4] || slices.Equal(recC.loss, recA.loss[4:]) {
					t.Errorf("network-only resume: step %d, losses %v vs %v", c.GlobalStep(), recC.loss, recA.loss[4:])
				}
			})
		})
	}
}

func TestLoadCheckpointErrors(t *testing.T) {
	dir := t.TempDir()
	m := newModel(1, adam)
	good := filepath.Join(dir, "good.safetensors")
	if err := m.SaveCheckpoint(good); err != nil {
		t.Fatal(err)
	}
	// A model of another shape refuses the file and changes nothing.
	spore.SetSeed(5)
	other := nn.NewSequentialCell(nn.NewDense(10, 16), nn.NewReLU(), nn.NewDense(16, 4))
	om := train.NewModel(other, nn.NewCrossEntropyLoss("", 0), adam(other.TrainableParameters()))
	before := other.Parameters()[0].Float32s()
	err := om.LoadCheckpoint(good)
	var le interface{ Error() string }
	if err == nil || !errors.As(err, &le) || !strings.Contains(err.Error(), "mismatched") {
		t.Fatalf("loading into another shape: %v", err)
	}
	if !slices.Equal(before, other.Parameters()[0].Float32s()) {
		t.Error("a failed load changed parameters")
	}
	if err := m.LoadCheckpoint(filepath.Join(dir, "missing.safetensors")); err == nil {
		t.Error("missing file loaded")
	}
}

// A checkpoint refused for its optimizer state says so (not "network"),
// in one sentence without a pile of package prefixes, and changes nothing;
// a model without an optimizer loads the network and skips the state.
func TestLoadCheckpointNamesTheHalfThatFailed(t *testing.T) {
	dir := t.TempDir()
	withAdam := filepath.Join(dir, "adam.safetensors")
	if err := newModel(1, adam).SaveCheckpoint(withAdam); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		model   *train.Model
		want    string // "" for success
		notWant string
	}{
		{"another optimizer", newModel(2, sgd), "the optimizer state does not fit, nothing was loaded", "network"},
		{"no optimizer", func() *train.Model { m := newModel(2, sgd); m.Optimizer = nil; return m }(), "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := c.model.Network.Base().Parameters()[0].Float32s()
			err := c.model.LoadCheckpoint(withAdam)
			if c.want == "" {
				if err != nil {
					t.Fatalf("load: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("loaded")
			}
			msg := err.Error()
			if !strings.Contains(msg, c.want) || strings.Contains(msg, c.notWant) || strings.Contains(msg, "checkpoint:") || !strings.Contains(msg, "moment1.") {
				t.Errorf("error %q: want %q, naming the state, without %q or a checkpoint: prefix", msg, c.want, c.notWant)
			}
			var le *checkpoint.LoadError
			if !errors.As(err, &le) {
				t.Errorf("error %T does not unwrap to *checkpoint.LoadError", err)
			}
			if !slices.Equal(before, c.model.Network.Base().Parameters()[0].Float32s()) {
				t.Error("a refused load changed the network")
			}
		})
	}
}

func TestEarlyStopping(t *testing.T) {
	frozen := func(ps []*tensor.Tensor) optim.Optimizer {
		return optim.NewSGD(ps, optim.SGDConfig{Common: optim.Common{LR: optim.Constant(0)}})
	}
	cases := []struct {
		name     string
		opt      func([]*tensor.Tensor) optim.Optimizer
		es       *train.EarlyStopping
		valid    bool
		stopped  int
		best     int
		errMatch string
	}{
		{"no progress stops", frozen, &train.EarlyStopping{Monitor: "eval_loss", Patience: 2}, true, 3, 1, ""},
		{"accuracy max mode", frozen, &train.EarlyStopping{Monitor: "eval_accuracy", Patience: 1}, true, 2, 1, ""},
		{"training loss improves", sgd, &train.EarlyStopping{Monitor: "loss", Patience: 2}, false, 0, 6, ""},
		{"huge min delta", sgd, &train.EarlyStopping{Monitor: "loss", Patience: 2, MinDelta: 100, RestoreBest: true}, false, 3, 1, ""},
		{"unknown monitor", sgd, &train.EarlyStopping{Monitor: "eval_loss", Patience: 2}, false, 0, 0, "not among"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newModel(1, c.opt)
			var valid train.Dataset
			if c.valid {
				valid = blobData(2, 64, 32)
			}
			rec := &recorder{}
			err := m.Fit(6, blobData(1, 128, 32), valid, c.es, rec)
			if c.errMatch != "" {
				if err == nil || !strings.Contains(err.Error(), c.errMatch) {
					t.Fatalf("error %v, want %q", err, c.errMatch)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.es.StoppedEpoch != c.stopped || c.es.BestEpoch != c.best {
				t.Fatalf("stopped at %d (best %d), want %d (best %d)", c.es.StoppedEpoch, c.es.BestEpoch, c.stopped, c.best)
			}
			epochs := 6
			if c.stopped > 0 {
				epochs = c.stopped
			}
			if n := strings.Count(strings.Join(rec.calls, " "), "epoch"); n != epochs {
				t.Errorf("%d epochs ran, want %d", n, epochs)
			}
			// RestoreBest puts back the best epoch's parameters; otherwise
			// the last epoch's stay.
			want := rec.params[len(rec.params)-1]
			if c.es.RestoreBest {
				want = rec.params[c.es.BestEpoch-1]
			}
			for i, p := range m.Network.Base().Parameters() {
				if !slices.Equal(p.Float32s(), want[i]) {
					t.Fatalf("parameter %s is not the expected epoch's", p.Name())
				}
			}
		})
	}
}

func TestMetrics(t *testing.T) {
	logits := tensor.FromSlice([]float32{
		0.1, 0.7, 0.2, // 1
		0.5, 0.3, 0.2, // 0
		0.2, 0.3, 0.5, // 2
		0.4, 0.4, 0.2, // tie 0/1
	}, 4, 3)
	idx := tensor.FromSlice([]int32{1, 1, 0, 1}, 4)
	onehot := tensor.FromSlice([]float32{0, 1, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0}, 4, 3)
	cases := []struct {
		name   string
		m      train.Metric
		labels *tensor.Tensor
		want   float64
	}{
		{"accuracy", train.NewAccuracy(), idx, 0.25},
		{"accuracy one-hot", train.NewAccuracy(), onehot, 0.25},
		{"top1", train.TopKCategoricalAccuracy(1), idx, 0.25},
		{"top2", train.TopKCategoricalAccuracy(2), idx, 0.75},
		{"top3", train.TopKCategoricalAccuracy(3), idx, 1},
		{"loss", train.NewLoss(), idx, 0.5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.m.Reset()
			if c.m.Value() != 0 {
				t.Fatal("value before updates")
			}
			c.m.Update(logits, c.labels, 0.5)
			if got := c.m.Value(); math.Abs(got-c.want) > 1e-12 {
				t.Errorf("%s = %v, want %v", c.m.Name(), got, c.want)
			}
		})
	}
	l := train.NewLoss()
	l.Update(tensor.Zeros(tensor.Float32, 3, 2), nil, 1)
	l.Update(tensor.Zeros(tensor.Float32, 1, 2), nil, 5)
	if l.Value() != 2 {
		t.Errorf("weighted loss %v, want 2", l.Value())
	}
}

func TestLossMonitorStopsOnNaN(t *testing.T) {
	m := newModel(1, func(ps []*tensor.Tensor) optim.Optimizer {
		return optim.NewSGD(ps, optim.SGDConfig{Common: optim.Common{LR: optim.Constant(1e30)}})
	})
	lm := train.NewLossMonitor(1000)
	err := m.Train(3, blobData(1, 128, 32), lm)
	if err == nil || !strings.Contains(err.Error(), "loss is") {
		t.Fatalf("error %v, want a non-finite loss", err)
	}
}
