package nn_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/tensor"
)

// blobs returns n points in dim dimensions around k well-separated
// centres, with their class labels, from a fixed seed.
func blobs(seed uint64, n, dim, k int) (*tensor.Tensor, *tensor.Tensor) {
	r := rand.New(rand.NewPCG(seed, 1))
	centres := make([][]float32, k)
	for c := range centres {
		centres[c] = make([]float32, dim)
		for d := range dim {
			centres[c][d] = float32(r.NormFloat64() * 3)
		}
	}
	x := make([]float32, n*dim)
	y := make([]int32, n)
	for i := range n {
		c := i % k
		y[i] = int32(c)
		for d := range dim {
			x[i*dim+d] = centres[c][d] + float32(r.NormFloat64()*0.5)
		}
	}
	return tensor.FromSlice(x, n, dim), tensor.FromSlice(y, n)
}

// tsMLP is a two-layer MLP with a loss, built from the framework seed.
func tsMLP(dim, hidden, classes int) (*nn.SequentialCell, *nn.WithLossCell) {
	spore.SetSeed(42)
	net := nn.NewSequentialCell(nn.NewDense(dim, hidden), nn.NewReLU(), nn.NewDense(hidden, classes))
	return net, nn.NewWithLossCell(net, nn.NewCrossEntropyLoss("", 0))
}

// tsRunMode runs f with the global mode set, restoring it afterwards.
func tsRunMode(mode spore.Mode, f func()) {
	old := spore.GetContext().Mode
	spore.SetContext(spore.WithMode(mode))
	defer spore.SetContext(spore.WithMode(old))
	f()
}

// TestTrainOneStepModesAgree trains the same MLP from the same initial
// weights in PyNative and Graph mode and compares the loss curves; in
// Graph mode every step is one compiled graph holding all the updates.
func TestTrainOneStepModesAgree(t *testing.T) {
	x, y := blobs(3, 64, 8, 3)
	opts := []struct {
		name  string
		make  func(ps []*spore.Tensor) optim.Optimizer
		clip  float64
		slots int
	}{
		{"sgd momentum nesterov", func(ps []*spore.Tensor) optim.Optimizer {
			return optim.NewSGD(ps, optim.SGDConfig{Common: optim.Common{LR: optim.StepDecay(0.05, 0.7, 5), WeightDecay: 1e-3}, Momentum: 0.9, Nesterov: true})
		}, 0, 1},
		{"adam warmup cosine clipped", func(ps []*spore.Tensor) optim.Optimizer {
			return optim.NewAdam(ps, optim.AdamConfig{Common: optim.Common{LR: optim.Sequential([]int{3}, optim.LinearWarmup(0.02, 3), optim.CosineDecay(0.001, 0.02, 20))}})
		}, 1.0, 2},
		{"adamw", func(ps []*spore.Tensor) optim.Optimizer {
			return optim.NewAdamW(ps, optim.AdamConfig{Common: optim.Common{LR: optim.Constant(0.01)}})
		}, 0, 2},
	}
	const steps = 25
	for _, o := range opts {
		t.Run(o.name, func(t *testing.T) {
			curve := func(mode spore.Mode) ([]float64, *nn.TrainOneStepCell) {
				_, wl := tsMLP(8, 16, 3)
				cell := nn.NewTrainOneStepCell(wl, o.make(wl.TrainableParameters()), nn.TrainOneStepConfig{ClipGlobalNorm: o.clip})
				var losses []float64
				tsRunMode(mode, func() {
					for k := range steps {
						if k%2 == 0 {
							losses = append(losses, cell.Step(x, y))
						} else {
							losses = append(losses, cell.Call(x, y).Item())
						}
					}
				})
				return losses, cell
			}
			eager, eagerCell := curve(spore.PyNativeMode)
			graph, cell := curve(spore.GraphMode)
			worst := 0.0
			for k := range eager {
				worst = max(worst, math.Abs(eager[k]-graph[k])/math.Abs(eager[k]))
				if d := math.Abs(eager[k] - graph[k]); d > 1e-5*math.Abs(eager[k]) {
					t.Fatalf("step %d: PyNative loss %.8g, Graph %.8g\nPyNative %v\nGraph    %v", k, eager[k], graph[k], eager, graph)
				}
			}
			t.Logf("loss %.4f → %.4f; largest relative PyNative/Graph difference %.2g", eager[0], eager[steps-1], worst)
			if eager[steps-1] > 0.5*eager[0] {
				t.Errorf("loss did not fall: %v", eager)
			}
			if s := cell.StepStats(); s.Compiles != 1 || s.Hits != steps-1 {
				t.Errorf("Graph mode: %d compiles, %d hits; want 1 and %d", s.Compiles, s.Hits, steps-1)
			}
			if s := eagerCell.StepStats(); s.Compiles != 0 {
				t.Errorf("PyNative mode compiled %d times", s.Compiles)
			}
			ir, err := cell.StepIR(x, y)
			if err != nil {
				t.Fatal(err)
			}
			// 4 parameters, their state slots and global_step.
			want := 4 + 4*o.slots + 1
			if n := strings.Count(ir, "assign %"); n != want {
				t.Errorf("IR has %d assigns, want %d:\n%s", n, want, ir)
			}
		})
	}
}

// TestTrainOneStepEagerUnderGraphMode forces an eager step while the
// global mode is Graph: the network with loss is then compiled on its own
// and differentiated as one tape node, and must train as in PyNative mode.
func TestTrainOneStepEagerUnderGraphMode(t *testing.T) {
	x, y := blobs(3, 64, 8, 3)
	var curves [2][]float64
	for i, m := range []spore.Mode{spore.PyNativeMode, spore.GraphMode} {
		_, wl := tsMLP(8, 16, 3)
		cell := nn.NewTrainOneStepCell(wl, optim.NewAdam(wl.TrainableParameters(), optim.AdamConfig{}), nn.TrainOneStepConfig{Mode: nn.StepEager})
		tsRunMode(m, func() {
			for range 5 {
				curves[i] = append(curves[i], cell.Step(x, y))
			}
		})
	}
	for k := range curves[0] {
		if math.Abs(curves[0][k]-curves[1][k]) > 1e-5*curves[0][k] {
			t.Fatal(curves)
		}
	}
}

// TestTrainOneStepCompiledAllocs checks that the compiled step's hot
// path allocates nothing once compiled.
func TestTrainOneStepCompiledAllocs(t *testing.T) {
	x, y := blobs(5, 32, 8, 3)
	_, wl := tsMLP(8, 16, 3)
	cell := nn.NewTrainOneStepCell(wl, optim.NewSGD(wl.TrainableParameters(), optim.SGDConfig{Momentum: 0.9}), nn.TrainOneStepConfig{Mode: nn.StepCompiled})
	cell.Step(x, y)
	if n := testing.AllocsPerRun(50, func() { cell.Step(x, y) }); n != 0 {
		t.Errorf("compiled Step allocates %v times per call", n)
	}
}

// TestTrainOneStepFrozen checks that frozen parameters keep their values
// and that the optimiser's parameters are those it was given.
func TestTrainOneStepFrozen(t *testing.T) {
	x, y := blobs(5, 32, 8, 3)
	net, wl := tsMLP(8, 16, 3)
	first := net.Cells[0].(*nn.Dense)
	first.Weight.SetRequiresGrad(false)
	before := first.Weight.Float32s()
	opt := optim.NewSGD(wl.Parameters(), optim.SGDConfig{Common: optim.Common{LR: optim.Constant(0.1)}})
	for _, mode := range []nn.StepMode{nn.StepEager, nn.StepCompiled} {
		cell := nn.NewTrainOneStepCell(wl, opt, nn.TrainOneStepConfig{Mode: mode})
		for range 3 {
			cell.Step(x, y)
		}
	}
	after := first.Weight.Float32s()
	for i := range before {
		if before[i] != after[i] {
			t.Fatalf("frozen weight changed at %d", i)
		}
	}
	if !strings.Contains(wl.NamedParameters()[0].Name, "0.weight") {
		t.Errorf("names changed: %v", wl.NamedParameters()[0].Name)
	}
}

func TestClipByGlobalNorm(t *testing.T) {
	cases := []struct {
		name   string
		grads  [][]float64
		max    float64
		norm   float64
		factor float64
	}{
		{"within", [][]float64{{0.3}, {0.4}}, 1, 0.5, 1},
		{"clipped", [][]float64{{3, 0}, {4}}, 1, 5, 0.2},
		{"boundary", [][]float64{{3}, {4}}, 5, 5, 1},
		{"with nil", [][]float64{{6}, nil, {8}}, 2, 10, 0.2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			gs := make([]*spore.Tensor, len(c.grads))
			for i, g := range c.grads {
				if g != nil {
					gs[i] = tensor.FromSlice(g)
				}
			}
			if n := nn.GlobalNorm(gs).Item(); math.Abs(n-c.norm) > 1e-12 {
				t.Errorf("norm %v, want %v", n, c.norm)
			}
			out := nn.ClipByGlobalNorm(gs, c.max)
			for i, g := range c.grads {
				if g == nil {
					if out[i] != nil {
						t.Errorf("nil gradient %d became %v", i, out[i])
					}
					continue
				}
				for j, v := range out[i].Float64s() {
					if math.Abs(v-g[j]*c.factor) > 1e-12 {
						t.Errorf("grad %d[%d] = %v, want %v", i, j, v, g[j]*c.factor)
					}
				}
			}
		})
	}
	defer func() {
		if recover() == nil {
			t.Error("non-positive clip norm accepted")
		}
	}()
	nn.ClipByGlobalNorm([]*spore.Tensor{ops.Ones(1)}, 0)
}
