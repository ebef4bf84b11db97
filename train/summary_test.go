package train_test

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/summary"
	"github.com/sporeml/spore/tensor"
	"github.com/sporeml/spore/train"
)

// applied records, around each step, the parameters before and after it:
// with plain SGD, (before - after) / lr is the gradient the step applied.
type applied struct {
	train.BaseCallback
	before [][]float32
	grads  map[int64][][]float64 // by global step
	lr     float64
	loss   []float64
}

func (a *applied) OnStepBegin(c *train.RunContext) {
	a.before = a.before[:0]
	for _, p := range c.Model.Optimizer.Parameters() {
		a.before = append(a.before, p.Float32s())
	}
}

func (a *applied) OnStepEnd(c *train.RunContext) {
	a.loss = append(a.loss, c.Loss)
	var gs [][]float64
	for i, p := range c.Model.Optimizer.Parameters() {
		after := p.Float32s()
		g := make([]float64, len(after))
		for j := range after {
			g[j] = (float64(a.before[i][j]) - float64(after[j])) / a.lr
		}
		gs = append(gs, g)
	}
	a.grads[int64(c.GlobalStep)] = gs
}

// The collector's record of a Fit with validation, in both modes: a loss,
// lr and throughput point per step equal to what training saw, the
// validation accuracy per epoch, parameter and gradient histograms at
// the histogram steps whose gradients are the ones the steps applied,
// and in Graph mode the compiled step with its passes.
func TestSummaryCollector(t *testing.T) {
	const lr, epochs, steps, histFreq = 0.05, 2, 6, 4 // 48 samples in batches of 8
	results := map[spore.Mode][]summary.Scalar{}
	for _, mode := range []spore.Mode{spore.PyNativeMode, spore.GraphMode} {
		t.Run(map[spore.Mode]string{spore.PyNativeMode: "pynative", spore.GraphMode: "graph"}[mode], func(t *testing.T) {
			withMode(mode, func() {
				dir := filepath.Join(t.TempDir(), "run")
				m := newModel(3, func(ps []*tensor.Tensor) optim.Optimizer {
					return optim.NewSGD(ps, optim.SGDConfig{Common: optim.Common{LR: optim.Constant(lr)}})
				})
				col, err := train.NewSummaryCollector(dir, train.SummaryConfig{HistogramFreq: histFreq})
				if err != nil {
					t.Fatal(err)
				}
				rec := &applied{grads: map[int64][][]float64{}, lr: lr}
				if err := m.Fit(epochs, blobData(1, 48, 8), blobData(2, 32, 8), rec, col); err != nil {
					t.Fatal(err)
				}
				if err := col.Close(); err != nil {
					t.Fatal(err)
				}
				runs, err := summary.ReadLogdir(dir)
				if err != nil || len(runs) != 1 {
					t.Fatalf("ReadLogdir: %v, %d runs", err, len(runs))
				}
				run := runs[0]
				if len(run.Warnings) > 0 {
					t.Errorf("warnings: %q", run.Warnings)
				}
				loss := run.Scalars["loss"]
				results[mode] = loss
				if len(loss) != epochs*steps {
					t.Fatalf("%d loss points, want %d", len(loss), epochs*steps)
				}
				for i, s := range loss {
					if s.Step != int64(i+1) || s.Value != float64(float32(rec.loss[i])) {
						t.Errorf("loss point %d: step %d value %v, training saw %v", i, s.Step, s.Value, rec.loss[i])
					}
				}
				for _, tag := range []string{"lr", "throughput"} {
					if len(run.Scalars[tag]) != epochs*steps {
						t.Errorf("%d %s points, want %d", len(run.Scalars[tag]), tag, epochs*steps)
					}
				}
				for _, s := range run.Scalars["lr"] {
					if s.Value != float64(float32(lr)) {
						t.Errorf("lr at step %d is %v, want %v", s.Step, s.Value, lr)
					}
				}
				for _, s := range run.Scalars["throughput"] {
					if !(s.Value > 0) || math.IsInf(s.Value, 0) {
						t.Errorf("throughput at step %d is %v", s.Step, s.Value)
					}
				}
				if acc := run.Scalars["eval/accuracy"]; len(acc) != epochs || acc[0].Step != steps || acc[1].Step != 2*steps {
					t.Errorf("eval/accuracy points %v, want one at steps %d and %d", acc, steps, 2*steps)
				}
				// Histograms at step 1 and every histFreq steps.
				params := m.Optimizer.Parameters()
				wantSteps := []int64{1, 4, 8, 12}
				for i, p := range params {
					ph, gh := run.Histograms["param/"+p.Name()], run.Histograms["grad/"+p.Name()]
					var got []int64
					for _, h := range gh {
						got = append(got, h.Step)
					}
					if len(ph) != len(wantSteps) || !slices.Equal(got, wantSteps) {
						t.Fatalf("%s: %d param and grad histograms at %v, want steps %v", p.Name(), len(ph), got, wantSteps)
					}
					for _, h := range gh {
						g := rec.grads[h.Step][i]
						sum, lo, hi := 0.0, math.Inf(1), math.Inf(-1)
						for _, v := range g {
							sum += v
							lo, hi = min(lo, v), max(hi, v)
						}
						scale := max(hi-lo, 1e-3)
						if h.Num != float64(p.Size()) || math.Abs(h.Sum-sum) > 1e-3*scale*math.Sqrt(float64(len(g))) || math.Abs(h.Min-lo) > 1e-3*scale || math.Abs(h.Max-hi) > 1e-3*scale {
							t.Errorf("grad/%s at step %d: num %v sum %v [%v, %v]; the step applied sum %v [%v, %v]", p.Name(), h.Step, h.Num, h.Sum, h.Min, h.Max, sum, lo, hi)
						}
					}
				}
				if mode == spore.GraphMode {
					if !slices.ContainsFunc(run.Graphs, func(g string) bool { return strings.HasPrefix(g, "graphs/TrainOneStepCell-") }) {
						t.Errorf("graphs %q lack the training step", run.Graphs)
					}
				}
			})
		})
	}
	// The two modes record the same curve.
	g, p := results[spore.GraphMode], results[spore.PyNativeMode]
	for i := range min(len(g), len(p)) {
		if math.Abs(g[i].Value-p[i].Value) > 1e-4*max(1, math.Abs(p[i].Value)) {
			t.Errorf("loss at step %d: graph %v, pynative %v", g[i].Step, g[i].Value, p[i].Value)
		}
	}
}

func TestSummaryCollectorBadInput(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := writeFile(file); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		dir  string
		cfg  train.SummaryConfig
		want string
	}{
		{"dir under a file", filepath.Join(file, "run"), train.SummaryConfig{}, "not a directory"},
		{"negative collect freq", t.TempDir(), train.SummaryConfig{CollectFreq: -1}, "CollectFreq -1 is negative"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := train.NewSummaryCollector(c.dir, c.cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err %v, want one saying %q", err, c.want)
			}
		})
	}
}

func writeFile(path string) error { return os.WriteFile(path, []byte("x"), 0o644) }

// Asking for gradient histograms does not change training: the gradients
// come from the step itself, so a network with Dropout and BatchNorm ends
// with bitwise the same parameters and statistics as without the
// collector, in both modes (Graph mode at O0, where the step that also
// returns its gradients rounds as the plain one does).
func TestSummaryCollectorLeavesTrainingAlone(t *testing.T) {
	for _, mode := range []spore.Mode{spore.PyNativeMode, spore.GraphMode} {
		t.Run(map[spore.Mode]string{spore.PyNativeMode: "pynative", spore.GraphMode: "graph"}[mode], func(t *testing.T) {
			run := func(collect bool) [][]float32 {
				var out [][]float32
				withMode(mode, func() {
					spore.SetSeed(7)
					net := nn.NewSequentialCell(nn.NewDense(10, 32), nn.NewBatchNorm1d(32), nn.NewReLU(), nn.NewDropout(0.3), nn.NewDense(32, 4))
					opt := optim.NewSGD(net.TrainableParameters(), optim.SGDConfig{Common: optim.Common{LR: optim.Constant(0.05)}, Momentum: 0.9})
					m := train.NewModel(net, nn.NewCrossEntropyLoss("", 0), opt)
					m.StepConfig.Jit.Level = spore.O0
					var cbs []train.Callback
					if collect {
						col, err := train.NewSummaryCollector(filepath.Join(t.TempDir(), "run"), train.SummaryConfig{HistogramFreq: 2})
						if err != nil {
							t.Fatal(err)
						}
						defer col.Close()
						cbs = append(cbs, col)
					}
					if err := m.Train(2, blobData(3, 48, 8), cbs...); err != nil {
						t.Fatal(err)
					}
					for _, p := range net.Parameters() {
						out = append(out, p.Float32s())
					}
				})
				return out
			}
			plain, collected := run(false), run(true)
			if len(plain) != len(collected) {
				t.Fatalf("%d and %d parameters", len(plain), len(collected))
			}
			for i := range plain {
				if !slices.Equal(plain[i], collected[i]) {
					t.Errorf("parameter %d differs with the collector: %v… vs %v…", i, plain[i][:min(4, len(plain[i]))], collected[i][:min(4, len(collected[i]))])
				}
			}
		})
	}
}
