package onnx

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/checkpoint"
	"github.com/sporeml/spore/dataset/mnist"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/npy"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/tensor"
	"github.com/sporeml/spore/train"
)

// torchCase is one entry of testdata/torch/manifest.json, written by
// make_fixtures.py: a model exported by PyTorch, inputs, and PyTorch's
// outputs for them.
type torchCase struct {
	Name    string            `json:"name"`
	Model   string            `json:"model"`
	Inputs  map[string]string `json:"inputs"`
	Outputs map[string]string `json:"outputs"`
	Note    string            `json:"note"`
}

func torchCases(t testing.TB) []torchCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "torch", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var man struct {
		Cases []torchCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &man); err != nil {
		t.Fatal(err)
	}
	if len(man.Cases) == 0 {
		t.Fatal("manifest.json lists no cases")
	}
	return man.Cases
}

// maxRelErr is the largest |got-want| / max(|want|, floor) over the
// elements, where floor is 1e-3 of the largest |want|: relative error,
// except that elements near zero are measured against the output's scale
// rather than against themselves.
func maxRelErr(got, want []float64) float64 {
	scale := 0.0
	for _, w := range want {
		scale = math.Max(scale, math.Abs(w))
	}
	floor := math.Max(1e-3*scale, 1e-30)
	worst := 0.0
	for i := range got {
		e := math.Abs(got[i]-want[i]) / math.Max(math.Abs(want[i]), floor)
		if math.IsNaN(e) {
			return math.Inf(1)
		}
		worst = math.Max(worst, e)
	}
	return worst
}

// TestTorchFixtures runs every PyTorch fixture in PyNative mode, in Graph
// mode (Outputs under GraphMode) and through nn.Jit, and compares each
// with PyTorch's outputs to 1e-4 relative.
func TestTorchFixtures(t *testing.T) {
	const tol = 1e-4
	for _, c := range torchCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			m, err := LoadFile(filepath.Join("testdata", "torch", c.Model))
			if err != nil {
				t.Fatal(err)
			}
			var xs []*tensor.Tensor
			for _, in := range m.Inputs() {
				f, ok := c.Inputs[in.Name]
				if !ok {
					t.Fatalf("the manifest gives no value for input %q", in.Name)
				}
				x, err := npy.ReadFile(filepath.Join("testdata", "torch", f))
				if err != nil {
					t.Fatal(err)
				}
				xs = append(xs, x)
			}
			eager, err := m.Run(xs...)
			if err != nil {
				t.Fatal(err)
			}
			var graph []*tensor.Tensor
			inMode(spore.GraphMode, func() { graph, err = m.Run(xs...) })
			if err != nil {
				t.Fatal(err)
			}
			jitted := nn.Jit(m).Call(xs...)
			for i, out := range m.OutputInfo() {
				f, ok := c.Outputs[out.Name]
				if !ok {
					continue
				}
				want, err := npy.ReadFile(filepath.Join("testdata", "torch", f))
				if err != nil {
					t.Fatal(err)
				}
				runs := map[string]*tensor.Tensor{"PyNative": eager[i], "Graph mode": graph[i]}
				if i == 0 {
					runs["nn.Jit"] = jitted
				}
				for _, mode := range sortedKeys(runs) {
					got := runs[mode]
					if !got.Shape().Equal(want.Shape()) {
						t.Fatalf("%s: output %q has shape %v, PyTorch's %v", mode, out.Name, got.Shape(), want.Shape())
					}
					e := maxRelErr(got.Float64s(), want.Float64s())
					t.Logf("%s: output %q: max relative error %.2g against PyTorch", mode, out.Name, e)
					if e > tol {
						t.Errorf("%s: output %q differs from PyTorch's by %.3g relative (tolerance %g)", mode, out.Name, e, tol)
					}
				}
			}
		})
	}
}

// fixtureInputs loads a fixture's model and its inputs.
func fixtureInputs(t *testing.T, name string) (*Model, []*tensor.Tensor) {
	t.Helper()
	for _, c := range torchCases(t) {
		if c.Name != name {
			continue
		}
		m, err := LoadFile(filepath.Join("testdata", "torch", c.Model))
		if err != nil {
			t.Fatal(err)
		}
		var xs []*tensor.Tensor
		for _, in := range m.Inputs() {
			x, err := npy.ReadFile(filepath.Join("testdata", "torch", c.Inputs[in.Name]))
			if err != nil {
				t.Fatal(err)
			}
			xs = append(xs, x)
		}
		return m, xs
	}
	t.Fatalf("no fixture %q", name)
	return nil, nil
}

// TestTorchOnePlan checks that one compiled model serves the dynamic
// batch at two sizes (two plans, both right) and both branches of the If
// fixture (one plan whose Cond picks at run time).
func TestTorchOnePlan(t *testing.T) {
	m := nn.Jit(func() *Model { m, _ := fixtureInputs(t, "dynbatch"); return m }())
	for _, name := range []string{"dynbatch", "dynbatch_b5", "dynbatch"} {
		_, xs := fixtureInputs(t, name)
		want := fixtureOutput(t, name)
		if e := maxRelErr(m.Call(xs...).Float64s(), want.Float64s()); e > 1e-4 {
			t.Errorf("%s: relative error %g", name, e)
		}
	}
	if st := m.JitStats(); st.Compiles != 2 || st.Hits != 1 {
		t.Errorf("two batch sizes: %d compiles, %d hits; want 2 and 1", st.Compiles, st.Hits)
	}
	m = nn.Jit(func() *Model { m, _ := fixtureInputs(t, "ifmodel"); return m }())
	for _, name := range []string{"ifmodel", "ifmodel_else"} {
		_, xs := fixtureInputs(t, name)
		if e := maxRelErr(m.Call(xs...).Float64s(), fixtureOutput(t, name).Float64s()); e > 1e-4 {
			t.Errorf("%s: relative error %g", name, e)
		}
	}
	if st := m.JitStats(); st.Compiles != 1 {
		t.Errorf("both branches of the If compiled %d plans, want 1", st.Compiles)
	}
}

// fixtureOutput reads a fixture's first listed output.
func fixtureOutput(t *testing.T, name string) *tensor.Tensor {
	t.Helper()
	for _, c := range torchCases(t) {
		if c.Name == name {
			for _, f := range c.Outputs {
				y, err := npy.ReadFile(filepath.Join("testdata", "torch", f))
				if err != nil {
					t.Fatal(err)
				}
				return y
			}
		}
	}
	t.Fatalf("no fixture %q", name)
	return nil
}

// TestTorchGradients compares the gradients of imported PyTorch models
// between PyNative and Graph mode and against finite differences, on
// float64 copies of the models.
func TestTorchGradients(t *testing.T) {
	for _, name := range []string{"mlp", "cnn", "encoder", "ifmodel", "ifmodel_else"} {
		t.Run(name, func(t *testing.T) {
			var model string
			for _, c := range torchCases(t) {
				if c.Name == name {
					model = c.Model
				}
			}
			mp := readModel(t, filepath.Join("testdata", "torch", model))
			_, xs := fixtureInputs(t, name)
			checkGradients(t, mp, xs...)
		})
	}
}

// TestTorchFineTuneCNN fine-tunes the imported CNN on 256 MNIST images
// for 20 steps through TrainOneStepCell, in PyNative and in Graph mode:
// the loss on those images must fall, the two modes must follow the same
// curve, and the trained parameters must survive a checkpoint.
func TestTorchFineTuneCNN(t *testing.T) {
	images, labels, err := mnist.TestTensors(mnist.Normalize())
	if err != nil {
		t.Fatal(err)
	}
	const n, batch, steps = 256, 32, 20
	xAll := ops.Slice(images, []int{0, 0, 0, 0}, []int{n, 1, 28, 28})
	yAll := ops.Slice(labels, []int{0}, []int{n})
	lossFn := nn.NewSoftmaxCrossEntropyWithLogits(true, nn.Mean)
	evalLoss := func(m *Model) float64 {
		m.SetTrain(false)
		return lossFn.Call(m.Call(xAll), yAll).Item()
	}
	curves := map[spore.Mode][]float64{}
	var trained *Model
	var before, after float64
	for _, mode := range []spore.Mode{spore.PyNativeMode, spore.GraphMode} {
		m, _ := fixtureInputs(t, "cnn")
		before = evalLoss(m)
		net := nn.NewWithLossCell(m.Layer(), lossFn)
		step := nn.NewTrainOneStepCell(net, optim.NewAdam(net.TrainableParameters(), optim.AdamConfig{Common: optim.Common{LR: optim.Constant(0.03)}}))
		inMode(mode, func() {
			for k := range steps {
				b := k % (n / batch)
				x := ops.Slice(xAll, []int{b * batch, 0, 0, 0}, []int{batch, 1, 28, 28})
				y := ops.Slice(yAll, []int{b * batch}, []int{batch})
				curves[mode] = append(curves[mode], step.Call(x, y).Item())
			}
		})
		after = evalLoss(m)
		trained = m
	}
	g, e := curves[spore.GraphMode], curves[spore.PyNativeMode]
	t.Logf("Graph-mode step losses: %.3f", g)
	t.Logf("loss on the %d images: %.3f before, %.3f after %d Graph-mode steps", n, before, after, steps)
	if !(after < 0.9*before) {
		t.Errorf("the loss on the training images fell only from %.3f to %.3f; want a fall of at least 10%%", before, after)
	}
	if d := maxRelErr(g, e); d > 1e-3 {
		t.Errorf("Graph mode and PyNative loss curves differ by %.3g relative:\n%v\n%v", d, g, e)
	}
	path := filepath.Join(t.TempDir(), "cnn.safetensors")
	if err := checkpoint.Save(path, train.NetParams(trained), nil); err != nil {
		t.Fatal(err)
	}
	loaded, _, err := checkpoint.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	fresh, xs := fixtureInputs(t, "cnn")
	if _, _, _, err := checkpoint.LoadInto(train.NetParams(fresh), loaded, true); err != nil {
		t.Fatal(err)
	}
	if e := maxRelErr(fresh.Call(xs...).Float64s(), trained.Call(xs...).Float64s()); e != 0 {
		t.Errorf("the reloaded CNN differs from the trained one by %g", e)
	}
	if e := maxRelErr(fresh.Call(xs...).Float64s(), fixtureOutput(t, "cnn").Float64s()); e < 1e-2 {
		t.Errorf("the fine-tuned CNN still computes PyTorch's outputs (relative difference %g): training changed nothing", e)
	}
}
