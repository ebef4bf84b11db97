package onnx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/compile"
	"github.com/sporeml/spore/models"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/npy"
	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// exportTol is how closely ONNX Runtime must reproduce spore's outputs:
// 1e-5 relative, norm-wise: the largest difference over the largest
// magnitude of spore's output. (Element by element, an output that
// cancels to a thousandth of its neighbours carries the rounding of the
// terms it cancelled, which two runtimes summing in different orders do
// not share.)
const exportTol = 1e-5

// exportKeep, from SPORE_EXPORT_KEEP, is a folder where the export tests
// leave the models they write, for a look with other tools (onnx's
// checker, Netron).
var exportKeep = os.Getenv("SPORE_EXPORT_KEEP")

// relErr returns max|got-want| / max|want|.
func relErr(t testing.TB, what string, got, want *tensor.Tensor) float64 {
	t.Helper()
	if !got.Shape().Equal(want.Shape()) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape(), want.Shape())
	}
	g, w := got.Float64s(), want.Float64s()
	peak, diff := 0.0, 0.0
	for i := range g {
		if math.IsNaN(g[i]) != math.IsNaN(w[i]) {
			t.Fatalf("%s: element %d is %g, want %g", what, i, g[i], w[i])
		}
		peak = math.Max(peak, math.Abs(w[i]))
		diff = math.Max(diff, math.Abs(g[i]-w[i]))
	}
	if peak == 0 {
		// A reference of zeros would let a runtime that computes nothing
		// pass: the tests choose inputs that avoid it.
		t.Fatalf("%s: spore's output is all zeros; the comparison would prove nothing", what)
	}
	return diff / peak
}

// assertMatch fails unless got matches want to exportTol, and logs the
// error found.
func assertMatch(t testing.TB, what string, got, want *tensor.Tensor) {
	t.Helper()
	e := relErr(t, what, got, want)
	t.Logf("%s: ONNX Runtime vs spore, largest relative error %.2g", what, e)
	if e > exportTol {
		t.Errorf("%s: ONNX Runtime differs from spore by %.3g relative (tolerance %g)", what, e, exportTol)
	}
}

// randn returns a seeded standard-normal tensor.
func randn(shape ...int) *tensor.Tensor {
	return tensor.RandNormal(tensor.Float32, 0, 1, shape...)
}

// readModel decodes an exported file.
func readModel(t testing.TB, path string) *onnxpb.ModelProto {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := &onnxpb.ModelProto{}
	if err := proto.Unmarshal(b, m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// exportAndRun exports f on xs, runs the file in ONNX Runtime on runs
// (each a list of inputs; xs when nil) and checks every output against
// spore's (ref on the same inputs).
func exportAndRun(t *testing.T, name string, f any, ref func(xs []*tensor.Tensor) []*tensor.Tensor, xs []*tensor.Tensor, runs [][]*tensor.Tensor, opts ...ExportOption) *onnxpb.ModelProto {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".onnx")
	if exportKeep != "" {
		path = filepath.Join(exportKeep, strings.ReplaceAll(t.Name(), "/", "_")+".onnx")
	}
	if err := Export(f, xs, path, opts...); err != nil {
		t.Fatalf("Export: %v", err)
	}
	m := readModel(t, path)
	if runs == nil {
		runs = [][]*tensor.Tensor{xs}
	}
	for _, in := range runs {
		feeds := map[string]*tensor.Tensor{}
		for i, vi := range m.GetGraph().GetInput() {
			feeds[vi.GetName()] = in[i]
		}
		got := runORT(t, path, feeds)
		want := ref(in)
		// spore's own loader reads the export back, to the same outputs
		// (where it has every op the export uses: ArgMin, which the
		// loader need not have, is written for ops.ArgMin).
		var unsupported *UnsupportedError
		if back, err := LoadFile(path); errors.As(err, &unsupported) {
			t.Logf("not loaded back: %v", err)
		} else if err != nil {
			t.Errorf("loading the export back: %v", err)
		} else if ys, err := back.Run(in...); err != nil {
			t.Errorf("running the export loaded back: %v", err)
		} else {
			for i, y := range ys {
				if err := exportClose(y, want[i]); err != nil {
					t.Errorf("the export loaded back, output %d: %v", i, err)
				}
			}
		}
		for i, vi := range m.GetGraph().GetOutput() {
			y, ok := got[vi.GetName()]
			if !ok {
				t.Fatalf("ONNX Runtime returned no output %q", vi.GetName())
			}
			assertMatch(t, name+"/"+vi.GetName()+"@"+in[0].Shape().String(), y, want[i])
		}
	}
	return m
}

func cellRef(c nn.Module) func(xs []*tensor.Tensor) []*tensor.Tensor {
	return func(xs []*tensor.Tensor) []*tensor.Tensor {
		return []*tensor.Tensor{c.Base().Call(xs...)}
	}
}

func TestExportModels(t *testing.T) {
	spore.SetSeed(1)
	mlp := models.NewNetwork()
	lenet := models.NewLeNet5(10)
	enc := nn.NewTransformerEncoderLayer(16, 4, nn.TransformerLayerConfig{DimFeedforward: 32, Activation: "gelu"})
	bnNet := nn.NewSequentialCell(nn.NewConv2d(3, 4, 3), nn.NewBatchNorm2d(4), nn.NewReLU(), nn.NewAvgPool2d(2, 2, "valid"), nn.NewFlatten(), nn.NewDense(4*4*4, 3))
	for _, c := range []nn.Module{enc, bnNet} {
		c.Base().SetTrain(false)
	}
	mlp.SetTrain(true) // Export traces it in evaluation mode, then restores this
	tests := []struct {
		name  string
		cell  nn.Module
		shape []int
		opts  []ExportOption
	}{
		{"mlp", mlp, []int{4, 1, 28, 28}, nil},
		{"lenet", lenet, []int{3, 1, 28, 28}, nil},
		{"encoder", enc, []int{5, 2, 16}, nil},
		{"conv_bn_pool", bnNet, []int{2, 3, 8, 8}, nil},
		{"encoder_opset20", enc, []int{5, 2, 16}, []ExportOption{Opset(20)}},
		// Recurrent layers are Scans.
		{"lstm", nn.NewLSTM(4, 6), []int{5, 2, 4}, nil},
		{"gru_bidirectional", nn.NewGRU(4, 6, nn.RNNConfig{Bidirectional: true, NumLayers: 2}), []int{5, 2, 4}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := randn(tc.shape...)
			m := exportAndRun(t, tc.name, tc.cell, cellRef(tc.cell), []*tensor.Tensor{x}, nil, tc.opts...)
			if got := m.GetOpsetImport()[0].GetVersion(); got < 17 {
				t.Errorf("opset %d, want 17 or newer", got)
			}
			if op := m.GetOpsetImport()[0].GetVersion(); m.GetIrVersion() != exportIRVersions[op] {
				t.Errorf("IR version %d for opset %d, want %d", m.GetIrVersion(), op, exportIRVersions[op])
			}
			// Every parameter is an initializer under the cell's name.
			inits := map[string]bool{}
			for _, in := range m.GetGraph().GetInitializer() {
				inits[in.GetName()] = true
			}
			for _, p := range tc.cell.Base().NamedParameters() {
				if !inits[p.Name] {
					t.Errorf("parameter %s is not an initializer", p.Name)
				}
			}
		})
	}
	if !mlp.Training() {
		t.Errorf("Export left a training cell in evaluation mode")
	}
	// What Graph mode runs of these models is fused (GEMM epilogues,
	// elementwise loops), which ONNX has no ops for: the exports above
	// are of the graph before fusion.
	for _, c := range []struct {
		cell nn.Module
		x    *tensor.Tensor
	}{{lenet, randn(2, 1, 28, 28)}, {enc, randn(5, 2, 16)}} {
		ir, err := spore.IR(c.cell.(interface {
			Construct(*tensor.Tensor) *tensor.Tensor
		}).Construct, []any{c.x})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(ir, compile.Anchor.Name) && !strings.Contains(ir, "Fused[") {
			t.Errorf("%T's optimised IR has no fused op:\n%s", c.cell, ir)
		}
	}
}

func TestExportControlFlow(t *testing.T) {
	w := tensor.NewParameter("w", randn(3, 3))
	cond := func(x *tensor.Tensor) *tensor.Tensor {
		pred := ops.Greater(ops.Sum(x), ops.ScalarLike(x, 0))
		return spore.Cond(pred,
			func(a ...*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{ops.MatMul(ops.Tanh(a[0]), w)} },
			func(a ...*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{ops.Sub(a[0], x)} },
			ops.MulScalar(x, 2))[0]
	}
	// A recurrence: h ← tanh(h·w + x_t), with the running sum as output.
	rnn := func(rev bool) func(x *tensor.Tensor) []*tensor.Tensor {
		return func(x *tensor.Tensor) []*tensor.Tensor {
			scan := spore.Scan
			if rev {
				scan = spore.ScanReverse
			}
			h0 := ops.Zeros(x.Dim(1), 3)
			c, ys := scan(func(c, xt []*tensor.Tensor) ([]*tensor.Tensor, []*tensor.Tensor) {
				h := ops.Tanh(ops.Add(ops.MatMul(c[0], w), xt[0]))
				return []*tensor.Tensor{h}, []*tensor.Tensor{ops.Sum(h, 1)}
			}, []*tensor.Tensor{h0}, []*tensor.Tensor{x})
			return []*tensor.Tensor{c[0], ys[0]}
		}
	}
	// Doubling until the sum passes a bound read from the input.
	while := func(x, bound *tensor.Tensor) *tensor.Tensor {
		out := spore.While(
			func(c ...*tensor.Tensor) *tensor.Tensor { return ops.Less(ops.Sum(ops.Abs(c[0])), bound) },
			func(c ...*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{ops.MulScalar(c[0], 2), ops.AddScalar(c[1], 1)}
			},
			x, tensor.Scalar(float32(0)))
		return ops.Add(out[0], out[1])
	}
	pos, neg := randn(2, 3), randn(2, 3)
	pos = ops.Abs(pos)
	neg = ops.Neg(ops.Abs(neg))
	seq := randn(4, 2, 3)
	tests := []struct {
		name string
		f    any
		ref  func(xs []*tensor.Tensor) []*tensor.Tensor
		xs   []*tensor.Tensor
		runs [][]*tensor.Tensor
		op   string
	}{
		{"cond", cond, func(xs []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{cond(xs[0])} },
			[]*tensor.Tensor{pos}, [][]*tensor.Tensor{{pos}, {neg}}, "If"},
		{"scan", rnn(false), func(xs []*tensor.Tensor) []*tensor.Tensor { return rnn(false)(xs[0]) },
			[]*tensor.Tensor{seq}, nil, "Scan"},
		{"scan_reverse", rnn(true), func(xs []*tensor.Tensor) []*tensor.Tensor { return rnn(true)(xs[0]) },
			[]*tensor.Tensor{seq}, nil, "Scan"},
		{"while", while, func(xs []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{while(xs[0], xs[1])} },
			[]*tensor.Tensor{pos, tensor.Scalar(float32(10))},
			[][]*tensor.Tensor{{pos, tensor.Scalar(float32(10))}, {pos, tensor.Scalar(float32(1000))}}, "Loop"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := exportAndRun(t, tc.name, tc.f, tc.ref, tc.xs, tc.runs)
			found := false
			for _, n := range m.GetGraph().GetNode() {
				found = found || n.GetOpType() == tc.op
			}
			if !found {
				t.Errorf("no %s node in the exported graph", tc.op)
			}
		})
	}
}

func TestExportDynamicBatch(t *testing.T) {
	spore.SetSeed(2)
	mlp := models.NewNetwork()
	lenet := models.NewLeNet5(10)
	enc := nn.NewTransformerEncoderLayer(16, 4, nn.TransformerLayerConfig{DimFeedforward: 32, Activation: "gelu"})
	tests := []struct {
		name  string
		cell  nn.Module
		shape []int
	}{
		{"mlp", mlp, []int{2, 1, 28, 28}},
		{"lenet", lenet, []int{2, 1, 28, 28}},
		// Sequence-first, as torch's layer: axis 0 is the sequence.
		{"encoder", enc, []int{3, 2, 16}},
		{"lstm_batch_first", nn.NewLSTM(4, 6, nn.RNNConfig{BatchFirst: true}), []int{2, 5, 4}},
		// Traced at batch 1, where an extent of 1 could be any axis's.
		{"mlp_b1", mlp, []int{1, 1, 28, 28}},
		{"lenet_b1", lenet, []int{1, 1, 28, 28}},
		{"encoder_b1", enc, []int{1, 2, 16}},
		{"lstm_b1", nn.NewLSTM(4, 6, nn.RNNConfig{BatchFirst: true}), []int{1, 5, 4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			enc.SetTrain(false)
			x := randn(tc.shape...)
			other := append([]int{7}, tc.shape[1:]...)
			runs := [][]*tensor.Tensor{{x}, {randn(other...)}, {randn(append([]int{1}, tc.shape[1:]...)...)}}
			m := exportAndRun(t, tc.name, tc.cell, cellRef(tc.cell), []*tensor.Tensor{x}, runs, DynamicBatch(), InputNames("images"), OutputNames("logits"))
			g := m.GetGraph()
			if n := g.GetInput()[0].GetName(); n != "images" {
				t.Errorf("input named %q, want images", n)
			}
			if n := g.GetOutput()[0].GetName(); n != "logits" {
				t.Errorf("output named %q, want logits", n)
			}
			for _, vi := range []*onnxpb.ValueInfoProto{g.GetInput()[0], g.GetOutput()[0]} {
				if d := vi.GetType().GetTensorType().GetShape().GetDim()[0]; d.GetDimParam() != "batch" {
					t.Errorf("%s: axis 0 is %v, want the symbolic batch", vi.GetName(), d)
				}
			}
		})
	}
}

// TestExportDynamicFill exports with a dynamic batch a function that
// makes constants sized by the batch it is traced at, filled with one
// value (as RNNs make their zero state), and runs it at other batches.
func TestExportDynamicFill(t *testing.T) {
	f := func(x *tensor.Tensor) *tensor.Tensor {
		n := x.Dim(0)
		ones := ops.Ones(n, 3)                               // [batch, 3]
		twos := ops.AddScalar(ops.Ones(2, n*2), 1)           // [2, 2·batch], folded to a fill
		flat := ops.Reshape(ops.Transpose(twos, 1, 0), n, 4) // back to [batch, 4]
		return ops.Concat(1, ops.Mul(x, ones), flat)
	}
	x := randn(2, 3)
	runs := [][]*tensor.Tensor{{x}, {randn(5, 3)}, {randn(1, 3)}}
	exportAndRun(t, "fill", f, func(xs []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{f(xs[0])} }, []*tensor.Tensor{x}, runs, DynamicBatch())
}

// TestExportDynamicScan exports with a dynamic batch a Scan along the
// batch axis and a reversal of the batch: ONNX's Scan takes its length
// from its input, and Slice runs to the end, whatever the batch.
func TestExportDynamicScan(t *testing.T) {
	f := func(x *tensor.Tensor) []*tensor.Tensor {
		c, ys := spore.Scan(func(c, xt []*tensor.Tensor) ([]*tensor.Tensor, []*tensor.Tensor) {
			h := ops.Tanh(ops.Add(c[0], xt[0]))
			return []*tensor.Tensor{h}, []*tensor.Tensor{ops.Exp(h)}
		}, []*tensor.Tensor{ops.Zeros(3)}, []*tensor.Tensor{x})
		rev := ops.StridedSlice(ys[0], []int{-1}, []int{-x.Dim(0) - 1}, []int{-1})
		return []*tensor.Tensor{c[0], rev}
	}
	x := randn(2, 3)
	runs := [][]*tensor.Tensor{{x}, {randn(6, 3)}, {randn(1, 3)}}
	exportAndRun(t, "scan", f, func(xs []*tensor.Tensor) []*tensor.Tensor { return f(xs[0]) }, []*tensor.Tensor{x}, runs, DynamicBatch())
}

// TestExportRoundTrip loads each PyTorch fixture, exports it again and
// runs the export in ONNX Runtime against spore's outputs, on every input
// the manifest has for the model (both branches of the If model).
func TestExportRoundTrip(t *testing.T) {
	var manifest struct {
		Cases []struct {
			Name, Model string
			Inputs      map[string]string
		}
	}
	b, err := os.ReadFile(filepath.Join("testdata", "torch", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &manifest); err != nil {
		t.Fatal(err)
	}
	if len(manifest.Cases) == 0 {
		t.Fatal("no fixtures in the manifest")
	}
	var order []string
	inputs := map[string][]map[string]string{}
	for _, c := range manifest.Cases {
		if inputs[c.Model] == nil {
			order = append(order, c.Model)
		}
		inputs[c.Model] = append(inputs[c.Model], c.Inputs)
	}
	for _, file := range order {
		t.Run(strings.TrimSuffix(file, ".onnx"), func(t *testing.T) {
			src := filepath.Join("testdata", "torch", file)
			m, err := LoadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			var runs [][]*tensor.Tensor
			for _, names := range inputs[file] {
				var xs []*tensor.Tensor
				for _, vi := range m.Inputs() {
					f, ok := names[vi.Name]
					if !ok {
						t.Fatalf("the manifest has no input %s", vi.Name)
					}
					x, err := npy.ReadFile(filepath.Join("testdata", "torch", f))
					if err != nil {
						t.Fatal(err)
					}
					xs = append(xs, x)
				}
				runs = append(runs, xs)
			}
			var opts []ExportOption
			if in := m.Inputs()[0]; len(in.Shape) > 0 && in.Shape[0] < 0 {
				// A model with a dynamic batch is exported with one, at the
				// first input's batch, and also run at twice it.
				opts = append(opts, DynamicBatch())
				runs = append(runs, []*tensor.Tensor{ops.Concat(0, runs[0][0], runs[0][0])})
			}
			out := exportAndRun(t, strings.TrimSuffix(file, ".onnx"), m, func(xs []*tensor.Tensor) []*tensor.Tensor { return m.Outputs(xs...) }, runs[0], runs, opts...)
			// Control flow stays control flow.
			rep, err := CheckFile(src)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			for _, n := range out.GetGraph().GetNode() {
				got[n.GetOpType()]++
			}
			if rep.OpCounts["If"] > 0 && got["If"] == 0 {
				t.Errorf("the model has %d If nodes, its export none", rep.OpCounts["If"])
			}
		})
	}
}

func TestExportErrors(t *testing.T) {
	dir := t.TempDir()
	x := randn(2, 3)
	printing := func(x *tensor.Tensor) *tensor.Tensor {
		spore.Print("x", x)
		return ops.Exp(x)
	}
	tests := []struct {
		name string
		f    any
		xs   []*tensor.Tensor
		path string
		opts []ExportOption
		want []string
	}{
		{"unsupported primitive", printing, []*tensor.Tensor{x}, filepath.Join(dir, "print.onnx"), nil,
			[]string{"primitive Print", "export_test.go:"}},
		{"unsupported primitive in a body", func(x *tensor.Tensor) *tensor.Tensor {
			return spore.Cond(ops.Greater(ops.Sum(x), ops.ScalarLike(x, 0)),
				func(a ...*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{printing(a[0])} },
				func(a ...*tensor.Tensor) []*tensor.Tensor { return a }, x)[0]
		}, []*tensor.Tensor{x}, filepath.Join(dir, "print_cond.onnx"), nil,
			[]string{"primitive Print", "in a body of Cond applied at export_test.go:"}},
		{"missing directory", ops.Exp, []*tensor.Tensor{x}, filepath.Join(dir, "no", "such", "dir", "m.onnx"), nil,
			[]string{"no such file or directory"}},
		{"empty path", ops.Exp, []*tensor.Tensor{x}, "", nil, []string{"empty output path"}},
		{"not a function", 42, []*tensor.Tensor{x}, filepath.Join(dir, "int.onnx"), nil, []string{"want a function over tensors or an nn cell, got int"}},
		{"wrong arity", ops.Add, []*tensor.Tensor{x}, filepath.Join(dir, "arity.onnx"), nil, []string{"takes 2 tensor arguments, got 1"}},
		{"non-tensor argument", ops.MulScalar, []*tensor.Tensor{x, x}, filepath.Join(dir, "scalar.onnx"), nil, []string{"argument 1 is float64"}},
		{"nil input", ops.Exp, []*tensor.Tensor{nil}, filepath.Join(dir, "nil.onnx"), nil, []string{"example input 0 is nil"}},
		{"old opset", ops.Exp, []*tensor.Tensor{x}, filepath.Join(dir, "old.onnx"), []ExportOption{Opset(12)}, []string{"opset 12 is not supported"}},
		{"names", ops.Exp, []*tensor.Tensor{x}, filepath.Join(dir, "names.onnx"), []ExportOption{InputNames("a", "b")}, []string{"2 input names for 1 inputs"}},
		{"scalar batch", ops.Exp, []*tensor.Tensor{tensor.Scalar(float32(1))}, filepath.Join(dir, "scalar_batch.onnx"), []ExportOption{DynamicBatch()}, []string{"input 0 is a scalar"}},
		{"shape error", func(a *tensor.Tensor) *tensor.Tensor { return ops.MatMul(a, a) }, []*tensor.Tensor{x}, filepath.Join(dir, "shape.onnx"), nil, []string{"MatMul"}},
		{"batch-sized constant", func(a *tensor.Tensor) *tensor.Tensor {
			return ops.Add(a, tensor.RandNormal(tensor.Float32, 0, 1, a.Dim(0), 3))
		}, []*tensor.Tensor{x}, filepath.Join(dir, "const.onnx"),
			[]ExportOption{DynamicBatch()}, []string{"constant read by Add at", "export_test.go:", "is [2 3] at batch 2 and [3 3] at batch 3"}},
		{"attention dropout", func(a *tensor.Tensor) *tensor.Tensor {
			return ops.PackedSelfAttention(a, 1, false, ops.AttentionOptions{DropoutP: 0.1})
		}, []*tensor.Tensor{randn(2, 3, 6)}, filepath.Join(dir, "dropout.onnx"), nil,
			[]string{"attention dropout has no ONNX translation", "export_test.go:"}},
		{"partial batch slice", func(a *tensor.Tensor) *tensor.Tensor { return ops.StridedSlice(a, []int{1}, []int{a.Dim(0)}, []int{1}) },
			[]*tensor.Tensor{x}, filepath.Join(dir, "batchslice.onnx"), []ExportOption{DynamicBatch()},
			[]string{"StridedSlice at export_test.go:", "is [1 3] at batch 2 and [2 3] at batch 3", "only one extent may change with the batch, in proportion to it"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Export(tc.f, tc.xs, tc.path, tc.opts...)
			if err == nil {
				t.Fatal("Export succeeded")
			}
			t.Log(err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if tc.path != "" {
				if _, serr := os.Stat(tc.path); !errors.Is(serr, os.ErrNotExist) {
					t.Errorf("%s exists after a failed export", tc.path)
				}
			}
		})
	}
	// Nothing but what succeeded is left in the directory: no temporary
	// files either.
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("left behind: %s", e.Name())
	}
}

// TestNPMNetworkError checks that npm's messages for an unreachable
// registry (the only reason the ONNX Runtime tests may skip) are told
// apart from other installation failures.
func TestNPMNetworkError(t *testing.T) {
	tests := []struct {
		out     string
		network bool
	}{
		{"npm error code ECONNREFUSED\nnpm error errno ECONNREFUSED\nnpm error network request to http://127.0.0.1:9/onnxruntime-node failed", true},
		{"npm error code ENOTFOUND\nnpm error network request failed, reason: getaddrinfo ENOTFOUND registry.npmjs.org", true},
		{"npm error code EAI_AGAIN", true},
		{"npm error code ETARGET\nnpm error notarget No matching version found for onnxruntime-node@9.9.9.", false},
		{"npm error code EACCES\nnpm error syscall mkdir", false},
	}
	for _, tc := range tests {
		if got := npmNetworkError.MatchString(tc.out); got != tc.network {
			t.Errorf("%q: network error %v, want %v", tc.out, got, tc.network)
		}
	}
}

// TestExportOps exports one function applying every primitive Export
// translates (each result an output named after it) at the lowest and
// highest opsets it writes and at 18, where several reductions changed
// form, and runs it in ONNX Runtime.
func TestExportOps(t *testing.T) {
	c := tensor.FromSlice([]float32{0.7, -1.3, 2.1, 0.4})
	idx := tensor.FromSlice([]int64{2, 0, 1, 2, 3}, 5)
	type out struct {
		name string
		y    *tensor.Tensor
	}
	f32 := func(t *tensor.Tensor) *tensor.Tensor { return ops.Cast(t, tensor.Float32) }
	// One query of the masked attention attends nothing.
	mask := tensor.FromSlice([]bool{
		true, false, true, true, false, false, false, false, false, false, true, true, true, true, true,
		false, false, false, false, true, true, true, false, true, false, true, false, true, false, true,
	}, 2, 3, 5)
	topIdx := func(x *tensor.Tensor) *tensor.Tensor {
		_, i := ops.TopK(x, 2)
		return i
	}
	fmask := ops.Where(mask, tensor.Scalar(float32(0)), tensor.Scalar(float32(math.Inf(-1))))
	outputs := func(x, a, b *tensor.Tensor) []out {
		pos := ops.AddScalar(ops.Abs(x), 0.5)
		gt := ops.Greater(x, ops.ScalarLike(x, 0))
		parts := ops.Split(x, 1, 1, 3)
		return []out{
			{"abs", ops.Abs(x)}, {"sign", ops.Sign(x)}, {"neg", ops.Neg(x)}, {"relu", ops.ReLU(x)},
			{"exp", ops.Exp(x)}, {"log", ops.Log(pos)}, {"log1p", ops.Log1p(pos)}, {"tanh", ops.Tanh(x)},
			{"sqrt", ops.Sqrt(pos)}, {"rsqrt", ops.Rsqrt(pos)}, {"square", ops.Square(x)}, {"reciprocal", ops.Reciprocal(pos)},
			{"sin", ops.Sin(x)}, {"cos", ops.Cos(x)}, {"sigmoid", ops.Sigmoid(x)}, {"erf", ops.Erf(x)},
			{"gelu", ops.GELU(x)}, {"gelu_tanh", ops.GELUTanh(x)}, {"softplus", ops.Softplus(x)},
			{"floor", ops.Floor(ops.MulScalar(x, 3))}, {"ceil", ops.Ceil(ops.MulScalar(x, 3))},
			{"round", ops.Round(ops.MulScalar(x, 3))}, {"trunc", ops.Trunc(ops.MulScalar(x, 3))},
			{"add", ops.Add(x, c)}, {"sub", ops.Sub(c, x)}, {"mul", ops.Mul(x, c)}, {"div", ops.Div(x, c)},
			{"pow", ops.PowScalar(pos, 1.5)}, {"maximum", ops.Maximum(x, c)}, {"minimum", ops.Minimum(x, c)},
			{"floordiv", ops.FloorDiv(x, c)}, {"mod", ops.Mod(ops.MulScalar(x, 3), c)},
			{"greater", f32(gt)}, {"less_equal", f32(ops.LessEqual(x, c))}, {"equal", f32(ops.Equal(ops.Floor(x), ops.ScalarLike(x, 0)))},
			{"not_equal", f32(ops.NotEqual(ops.Floor(x), ops.ScalarLike(x, 0)))},
			{"logic", f32(ops.LogicalOr(ops.LogicalAnd(gt, ops.Less(x, c)), ops.LogicalNot(ops.GreaterEqual(x, c))))},
			{"where", ops.Where(gt, x, c)}, {"clip", ops.Clip(x, -0.5, 0.5)}, {"clip_tensor", ops.ClipTensor(x, ops.Neg(pos), c)},
			{"to_int", ops.Cast(ops.MulScalar(x, 4), tensor.Int32)},
			{"sum", ops.Sum(x, 1)}, {"mean", ops.MeanKeepDims(x, 0)}, {"max", ops.Max(x, 1)}, {"min", ops.MinKeepDims(x, 0)},
			{"prod", ops.Prod(x, 1)}, {"any", f32(ops.Any(gt, 1))}, {"all", f32(ops.All(ops.Greater(x, ops.ScalarLike(x, -2)), 0))},
			{"argmax", ops.ArgMax(x, 1)}, {"argmin", ops.ArgMinKeepDims(x, 0)},
			{"softmax", ops.Softmax(x, 1)}, {"log_softmax", ops.LogSoftmax(x, 0)}, {"logsumexp", ops.LogSumExp(x, []int{1}, false)},
			{"cumsum", ops.CumSum(x, 1, true, true)},
			{"transpose", ops.Transpose(x, 1, 0)}, {"concat", ops.Concat(0, x, ops.Reshape(c, 1, 4))}, {"stack", ops.Stack(1, x, x)},
			{"split", parts[1]}, {"slice", ops.StridedSlice(x, []int{2, 3}, []int{0, 0}, []int{-1, -2})},
			{"pad", ops.Pad(x, [][2]int{{1, 0}, {2, 1}})}, {"tile", ops.Tile(x, 2, 1)}, {"broadcast", ops.BroadcastTo(c, 2, 3, 4)},
			{"squeeze", ops.Squeeze(ops.ExpandDims(x, 1), 1)},
			{"gather", ops.Gather(x, idx, 1)}, {"take", ops.TakeAlongAxis(x, ops.ArgMaxKeepDims(x, 1), 1)},
			{"one_hot", ops.OneHot(idx, 4, tensor.Float32)},
			{"matmul", ops.MatMulT(a, b, false, true)}, {"matmul_ta", ops.MatMulT(ops.Transpose(a, 0, 2, 1), b, true, true)},
			{"gemm", ops.MatMulT(x, x, true, false)},
			{"layer_norm", ops.LayerNorm(x, c, c, 1, 1e-5)},
			{"top_k", f32(topIdx(x))}, {"arg_sort", f32(ops.ArgSort(x, 0, false))}, {"arg_sort_desc", f32(ops.ArgSort(x, 1, true))},
			{"conv_transpose", ops.Conv2DBackpropInput(ops.Reshape(a, 1, 2, 3, 4), ops.Reshape(b, 2, 5, 2, 2),
				ops.ConvGradAttrs{ConvAttrs: ops.ConvAttrs{Stride: [2]int{2, 2}, Pads: [4]int{1, 0, 1, 1}, Dilation: [2]int{1, 1}, Groups: 1}, Shape: tensor.Shape{1, 5, 6, 7}})},
			{"attention", ops.ScaledDotProductAttention(a, b, b, ops.AttentionOptions{Causal: true})},
			{"attention_mask", ops.ScaledDotProductAttention(a, b, b, ops.AttentionOptions{Mask: mask})},
			{"attention_float_mask", ops.ScaledDotProductAttention(a, b, b, ops.AttentionOptions{Mask: fmask})},
		}
	}
	spore.SetSeed(4)
	x, a, b := randn(3, 4), randn(2, 3, 4), randn(2, 5, 4)
	fn := func(x, a, b *tensor.Tensor) []*tensor.Tensor {
		var ys []*tensor.Tensor
		for _, o := range outputs(x, a, b) {
			ys = append(ys, o.y)
		}
		return ys
	}
	var names []string
	for _, o := range outputs(x, a, b) {
		names = append(names, o.name)
	}
	for _, opset := range []int64{17, 18, 21} {
		t.Run(fmt.Sprint("opset", opset), func(t *testing.T) {
			exportAndRun(t, "ops", fn, func(xs []*tensor.Tensor) []*tensor.Tensor { return fn(xs[0], xs[1], xs[2]) },
				[]*tensor.Tensor{x, a, b}, nil, Opset(opset), OutputNames(names...))
		})
	}
}

// TestExportPackedAttention exports packed self-attention (the form
// nn.MultiheadAttention takes for self-attention) in both layouts, with
// and without masks and causality, with fixed and dynamic batches — a
// dynamic sequence axis too, where a causal mask must follow it — and
// layer normalisation in float64 and over several axes, and runs them in
// ONNX Runtime.
func TestExportPackedAttention(t *testing.T) {
	spore.SetSeed(7)
	const heads = 2
	// Row 1 of the mask lets its query attend nothing.
	bm := make([]bool, 25)
	for i := range bm {
		bm[i] = i/5 != 1 && (i%5 <= i/5 || i%3 == 0)
	}
	boolMask := tensor.FromSlice(bm, 5, 5)
	floatMask := ops.MulScalar(randn(1, heads, 5, 5), 0.5)
	packed := func(seqFirst bool, opt ops.AttentionOptions) func(*tensor.Tensor) *tensor.Tensor {
		return func(qkv *tensor.Tensor) *tensor.Tensor { return ops.PackedSelfAttention(qkv, heads, seqFirst, opt) }
	}
	gamma, beta := randn(3, 4), randn(3, 4)
	g64, b64 := ops.Cast(gamma, tensor.Float64), ops.Cast(beta, tensor.Float64)
	tests := []struct {
		name  string
		f     func(*tensor.Tensor) *tensor.Tensor
		x     *tensor.Tensor
		other []int // a second input shape, run with DynamicBatch; nil: fixed shapes
	}{
		{"batch_first", packed(false, ops.AttentionOptions{}), randn(2, 5, 3*heads*4), nil},
		{"seq_first_causal", packed(true, ops.AttentionOptions{Causal: true}), randn(5, 2, 3*heads*4), nil},
		{"bool_mask", packed(false, ops.AttentionOptions{Mask: boolMask}), randn(2, 5, 3*heads*3), nil},
		{"float_mask_scale", packed(true, ops.AttentionOptions{Mask: floatMask, Scale: 0.3}), randn(5, 3, 3*heads*2), nil},
		{"causal_bool_mask", packed(false, ops.AttentionOptions{Mask: boolMask, Causal: true}), randn(2, 5, 3*heads*4), nil},
		// The batch is N.
		{"dynamic_batch_first", packed(false, ops.AttentionOptions{Mask: boolMask, Causal: true}), randn(2, 5, 3*heads*4), []int{6, 5, 3 * heads * 4}},
		// Sequence first, axis 0 (the one DynamicBatch makes symbolic) is
		// the sequence: a causal mask is built at run time.
		{"dynamic_seq_first", packed(true, ops.AttentionOptions{Scale: 0.2}), randn(5, 2, 3*heads*4), []int{8, 2, 3 * heads * 4}},
		{"dynamic_sequence_causal", packed(true, ops.AttentionOptions{Causal: true}), randn(4, 2, 3*heads*4), []int{9, 2, 3 * heads * 4}},
		{"dynamic_unpacked_causal", func(x *tensor.Tensor) *tensor.Tensor {
			return ops.ScaledDotProductAttention(x, ops.MulScalar(x, 0.5), ops.Tanh(x), ops.AttentionOptions{Causal: true})
		}, randn(4, 3), []int{7, 3}},
		{"layer_norm_f64", func(x *tensor.Tensor) *tensor.Tensor { return ops.LayerNorm(x, g64, b64, 1, 1e-6) }, ops.Cast(randn(2, 3, 4), tensor.Float64), nil},
		{"layer_norm_dynamic", func(x *tensor.Tensor) *tensor.Tensor { return ops.LayerNorm(x, gamma, beta, -2, 1e-5) }, randn(2, 3, 4), []int{5, 3, 4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ref := func(xs []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{tc.f(xs[0])} }
			var opts []ExportOption
			var runs [][]*tensor.Tensor
			if tc.other != nil {
				opts = append(opts, DynamicBatch())
				runs = [][]*tensor.Tensor{{tc.x}, {ops.Cast(randn(tc.other...), tc.x.DType())}}
			}
			exportAndRun(t, tc.name, tc.f, ref, []*tensor.Tensor{tc.x}, runs, opts...)
		})
	}
}

// TestExportModes checks that Export writes the same bytes, and fails
// with the same error, whichever mode the program is in: it traces in
// Graph mode either way.
func TestExportModes(t *testing.T) {
	spore.SetSeed(3)
	lenet := models.NewLeNet5(10)
	x := randn(2, 1, 28, 28)
	bad := func(x *tensor.Tensor) *tensor.Tensor {
		spore.Print(x)
		return x
	}
	was := spore.GetContext().Mode
	defer spore.SetContext(spore.WithMode(was))
	dir := t.TempDir()
	var files [][]byte
	var errs []string
	for i, mode := range []spore.Mode{spore.PyNativeMode, spore.GraphMode} {
		spore.SetContext(spore.WithMode(mode))
		path := filepath.Join(dir, fmt.Sprintf("lenet%d.onnx", i))
		if err := Export(lenet, []*tensor.Tensor{x}, path, DynamicBatch()); err != nil {
			t.Fatalf("mode %v: %v", mode, err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, b)
		err = Export(bad, []*tensor.Tensor{x}, filepath.Join(dir, "bad.onnx"))
		if err == nil {
			t.Fatalf("mode %v: exporting Print succeeded", mode)
		}
		errs = append(errs, err.Error())
	}
	if string(files[0]) != string(files[1]) {
		t.Errorf("PyNative and Graph mode exports differ (%d and %d bytes)", len(files[0]), len(files[1]))
	}
	if errs[0] != errs[1] {
		t.Errorf("the modes fail differently:\n%s\n%s", errs[0], errs[1])
	}
}

// TestExportEdges covers graphs whose shape is unusual for ONNX: control
// flow nested in control flow, integer inputs, outputs that are an input,
// a parameter or another output.
func TestExportEdges(t *testing.T) {
	spore.SetSeed(5)
	emb := tensor.NewParameter("embedding", randn(10, 4))
	w := tensor.NewParameter("w", randn(4, 4))
	nested := func(x *tensor.Tensor) *tensor.Tensor {
		_, ys := spore.Scan(func(c, xt []*tensor.Tensor) ([]*tensor.Tensor, []*tensor.Tensor) {
			y := spore.Cond(ops.Greater(ops.Sum(xt[0]), ops.ScalarLike(xt[0], 0)),
				func(a ...*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{ops.MatMul(a[0], w)} },
				func(a ...*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{ops.Add(a[0], c[0])} },
				xt[0])[0]
			return []*tensor.Tensor{ops.Tanh(y)}, []*tensor.Tensor{y}
		}, []*tensor.Tensor{ops.Zeros(2, 4)}, []*tensor.Tensor{x})
		return ys[0]
	}
	lookup := func(idx *tensor.Tensor) *tensor.Tensor { return ops.Mean(ops.Gather(emb, idx, 0), 1) }
	passthrough := func(x *tensor.Tensor) []*tensor.Tensor {
		y := ops.Exp(x)
		return []*tensor.Tensor{x, y, w, y}
	}
	seq := randn(6, 2, 4)
	idx := tensor.FromSlice([]int64{1, 3, 5, 7, 9, 0, 2, 4, 6, 8}, 2, 5)
	x := randn(3, 4)
	tests := []struct {
		name string
		f    any
		ref  func([]*tensor.Tensor) []*tensor.Tensor
		xs   []*tensor.Tensor
	}{
		{"nested", nested, func(xs []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{nested(xs[0])} }, []*tensor.Tensor{seq}},
		{"int_input", lookup, func(xs []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{lookup(xs[0])} }, []*tensor.Tensor{idx}},
		{"passthrough", passthrough, func(xs []*tensor.Tensor) []*tensor.Tensor { return passthrough(xs[0]) }, []*tensor.Tensor{x}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			exportAndRun(t, tc.name, tc.f, tc.ref, tc.xs, nil)
		})
	}
}

// exportClose compares an ONNX Runtime output with spore's: same dtype and
// shape, integers and booleans equal, floats within exportTol norm-wise.
func exportClose(got, want *tensor.Tensor) error {
	if got.DType() != want.DType() || !got.Shape().Equal(want.Shape()) {
		return fmt.Errorf("got %v %v, want %v %v", got.DType(), got.Shape(), want.DType(), want.Shape())
	}
	if !want.DType().IsFloat() {
		g, w := got.Float64s(), want.Float64s()
		for i := range w {
			if g[i] != w[i] {
				return fmt.Errorf("element %d is %v, want %v", i, g[i], w[i])
			}
		}
		return nil
	}
	g, w := got.Float64s(), want.Float64s()
	peak, diff := 0.0, 0.0
	for i := range w {
		if math.IsNaN(g[i]) != math.IsNaN(w[i]) {
			return fmt.Errorf("element %d is %g, want %g", i, g[i], w[i])
		}
		if !math.IsNaN(w[i]) && !math.IsInf(w[i], 0) {
			peak = math.Max(peak, math.Abs(w[i]))
			diff = math.Max(diff, math.Abs(g[i]-w[i]))
		} else if !math.IsNaN(w[i]) && g[i] != w[i] {
			return fmt.Errorf("element %d is %g, want %g", i, g[i], w[i])
		}
	}
	if diff > exportTol*peak {
		return fmt.Errorf("differs by %.3g of the largest magnitude %g (tolerance %g)", diff/math.Max(peak, math.SmallestNonzeroFloat64), peak, exportTol)
	}
	return nil
}

// TestExportOpFixtures exports every single-op fixture the loader takes
// (testdata/ops: one ONNX operator each, at the opsets ONNX Runtime runs)
// and runs the exports in ONNX Runtime, in one process, against spore's
// outputs: whatever spore makes of an imported operator, Export writes
// back.
func TestExportOpFixtures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "ops", "*", "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("found %d op fixtures", len(files))
	}
	dir := t.TempDir()
	type pending struct {
		name  string
		outs  []string
		wants []*tensor.Tensor
	}
	var jobs []ortJob
	var ps []pending
	refused := 0
	for _, f := range files {
		name := filepath.Base(filepath.Dir(f))
		m, err := LoadFile(f)
		if err != nil {
			refused++ // an opset before 13, or an op the loader lacks: the op tests say which
			continue
		}
		in := map[string]*tensor.Tensor{}
		var xs []*tensor.Tensor
		for _, vi := range m.Inputs() {
			x, err := npy.ReadFile(filepath.Join(filepath.Dir(f), vi.Name+".npy"))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			in[vi.Name] = x
			xs = append(xs, x)
		}
		want, err := m.Run(xs...)
		if err != nil {
			t.Errorf("%s: spore: %v", name, err)
			continue
		}
		path := filepath.Join(dir, name+".onnx")
		if err := Export(m, xs, path); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		p := pending{name: name, wants: want}
		for _, vi := range m.OutputInfo() {
			p.outs = append(p.outs, vi.Name)
		}
		jobs = append(jobs, ortJob{Model: path, Inputs: in})
		ps = append(ps, p)
	}
	results := runORTBatch(t, jobs)
	for i, r := range results {
		p := ps[i]
		if r.Err != "" {
			if !ortKernelGap(t, p.name, r.Err) {
				t.Errorf("%s: ONNX Runtime refused the export: %s", p.name, r.Err)
			}
			continue
		}
		for k, o := range p.outs {
			got, ok := r.Outputs[o]
			if !ok {
				t.Errorf("%s: ONNX Runtime gave no output %s", p.name, o)
				continue
			}
			if err := exportClose(got, p.wants[k]); err != nil {
				t.Errorf("%s, output %s: %v", p.name, o, err)
			}
		}
	}
	t.Logf("%d op fixtures exported and run in ONNX Runtime; %d the loader does not take", len(jobs), refused)
}

// TestExportOpFixturesDynamicBatch exports the single-op fixtures again
// with DynamicBatch wherever spore runs them at twice their batch, and
// runs the exports at both batches. An export may be refused (an op whose
// batch axis Export cannot follow); one that is written must be right at
// the other batch too.
func TestExportOpFixturesDynamicBatch(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "ops", "*", "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	type pending struct {
		name  string
		outs  []string
		wants []*tensor.Tensor
	}
	var jobs []ortJob
	var ps []pending
	refused := 0
	for _, f := range files {
		name := filepath.Base(filepath.Dir(f))
		// The fixtures declare fixed input shapes: axis 0 is made symbolic
		// so that spore runs the model at twice the batch too.
		mp := readModel(t, f)
		for _, vi := range mp.GetGraph().GetInput() {
			if dims := vi.GetType().GetTensorType().GetShape().GetDim(); len(dims) > 0 {
				dims[0].Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: "N"}
			}
		}
		for _, vi := range mp.GetGraph().GetOutput() {
			if dims := vi.GetType().GetTensorType().GetShape().GetDim(); len(dims) > 0 {
				dims[0].Value = nil
			}
		}
		mp.GetGraph().ValueInfo = nil
		b, err := proto.Marshal(mp)
		if err != nil {
			t.Fatal(err)
		}
		m, err := Load(bytes.NewReader(b))
		if err != nil {
			continue
		}
		var xs, xs2 []*tensor.Tensor
		in, in2 := map[string]*tensor.Tensor{}, map[string]*tensor.Tensor{}
		for _, vi := range m.Inputs() {
			x, err := npy.ReadFile(filepath.Join(filepath.Dir(f), vi.Name+".npy"))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if x.Rank() == 0 {
				xs = nil
				break
			}
			// The second half differs from the first without cancelling it.
			x2 := ops.Concat(0, x, x)
			if x.DType().IsFloat() {
				x2 = ops.Concat(0, x, ops.AddScalar(ops.MulScalar(x, 0.5), 0.25))
			}
			xs, xs2 = append(xs, x), append(xs2, x2)
			in[vi.Name], in2[vi.Name] = x, x2
		}
		if len(xs) == 0 || len(xs) != len(m.Inputs()) {
			continue
		}
		want, err1 := m.Run(xs...)
		want2, err2 := m.Run(xs2...)
		if err1 != nil || err2 != nil {
			continue // the model's shapes do not follow the batch
		}
		path := filepath.Join(dir, name+".onnx")
		if err := Export(m, xs, path, DynamicBatch()); err != nil {
			refused++
			t.Logf("%s: %v", name, err)
			continue
		}
		var outs []string
		for _, vi := range m.OutputInfo() {
			outs = append(outs, vi.Name)
		}
		jobs = append(jobs, ortJob{Model: path, Inputs: in}, ortJob{Model: path, Inputs: in2})
		ps = append(ps, pending{name, outs, want}, pending{name + "@2x", outs, want2})
	}
	results := runORTBatch(t, jobs)
	for i, r := range results {
		p := ps[i]
		if r.Err != "" {
			if !ortKernelGap(t, p.name, r.Err) {
				t.Errorf("%s: ONNX Runtime refused the export: %s", p.name, r.Err)
			}
			continue
		}
		for k, o := range p.outs {
			got, ok := r.Outputs[o]
			if !ok {
				t.Errorf("%s: ONNX Runtime gave no output %s", p.name, o)
				continue
			}
			if err := exportClose(got, p.wants[k]); err != nil {
				t.Errorf("%s, output %s: %v", p.name, o, err)
			}
		}
	}
	t.Logf("%d op fixtures exported with a dynamic batch and run at two batches; %d refused with an error", len(jobs)/2, refused)
}

// ortKernelGap reports (and logs) whether ONNX Runtime refused a model
// only because it has no kernel for a valid node (Conv on float64, say):
// its gap, not a fault of the export.
func ortKernelGap(t *testing.T, name, msg string) bool {
	if !strings.Contains(msg, "Could not find an implementation") {
		return false
	}
	t.Logf("%s: ONNX Runtime has no kernel: %s", name, msg)
	return true
}

// onnxCheckScript runs ONNX's reference checker, with shape inference, on
// every model named on its command line, and prints one line per model:
// "ok NAME" or "FAIL NAME: why".
const onnxCheckScript = `
import sys
import onnx
from onnx import checker
for path in sys.argv[1:]:
    try:
        checker.check_model(onnx.load(path), full_check=True)
        print("ok", path)
    except Exception as e:
        print("FAIL", path + ":", str(e).replace("\n", " ")[:400])
`

// TestExportONNXChecker runs the onnx package's checker (Python's, the
// specification's reference) over exports of models with every kind of
// node Export writes: control flow, a dynamic batch, recurrent layers,
// attention. It skips where Python's onnx package is not installed
// (apt-get install -y python3-onnx).
func TestExportONNXChecker(t *testing.T) {
	// Debian's python3-onnx is for the system's Python, which may not be
	// the python3 first on PATH.
	python := ""
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(p, "-c", "import onnx").Run() == nil {
			python = p
			break
		}
	}
	if python == "" {
		t.Skip("no python3 with the onnx package (apt-get install -y python3-onnx)")
	}
	spore.SetSeed(6)
	dir := t.TempDir()
	enc := nn.NewTransformerEncoderLayer(8, 2, nn.TransformerLayerConfig{DimFeedforward: 16, Activation: "gelu"})
	cond := func(x *tensor.Tensor) *tensor.Tensor {
		return spore.Cond(ops.Greater(ops.Sum(x), ops.ScalarLike(x, 0)),
			func(a ...*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{ops.Exp(a[0])} },
			func(a ...*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{ops.Neg(a[0])} }, x)[0]
	}
	while := func(x *tensor.Tensor) *tensor.Tensor {
		return spore.While(func(c ...*tensor.Tensor) *tensor.Tensor { return ops.Less(ops.Sum(c[0]), ops.ScalarLike(c[0], 100)) },
			func(c ...*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{ops.AddScalar(ops.MulScalar(c[0], 2), 1)}
			}, x)[0]
	}
	models := []struct {
		name string
		f    any
		x    *tensor.Tensor
		opts []ExportOption
	}{
		{"lenet", models.NewLeNet5(10), randn(2, 1, 28, 28), []ExportOption{DynamicBatch()}},
		{"encoder", enc, randn(3, 2, 8), []ExportOption{DynamicBatch()}},
		{"lstm", nn.NewLSTM(4, 5, nn.RNNConfig{BatchFirst: true}), randn(1, 3, 4), []ExportOption{DynamicBatch()}},
		{"cond", cond, randn(2, 3), nil},
		{"while", while, randn(2, 3), nil},
	}
	args := []string{"-c", onnxCheckScript}
	for _, m := range models {
		p := filepath.Join(dir, m.name+".onnx")
		if err := Export(m.f, []*tensor.Tensor{m.x}, p, m.opts...); err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		args = append(args, p)
	}
	out, err := exec.Command(python, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("the checker failed to run: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(models) {
		t.Fatalf("the checker reported on %d of %d models:\n%s", len(lines), len(models), out)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "ok ") {
			t.Error(l)
		}
	}
}
