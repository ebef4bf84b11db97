package onnx

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/npy"
	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// The operator tests run the single-op models of testdata/ops (written by
// testdata/ops/gen.py, with ONNX Runtime's outputs as the expected
// values) through the operator table, in PyNative mode and in Graph mode.
// They call the opFuncs directly, without the loader, so that an
// operator's bugs show here and not as a model's.

// opCase is one fixture: a model and its inputs and expected outputs.
type opCase struct {
	name   string
	model  *onnxpb.ModelProto
	inputs []*tensor.Tensor // graph inputs, in order
	want   []*tensor.Tensor // graph outputs, in order
}

// loadOpCase reads the fixture in dir.
func loadOpCase(t *testing.T, dir string) opCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	m := &onnxpb.ModelProto{}
	if err := proto.Unmarshal(b, m); err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	c := opCase{name: filepath.Base(dir), model: m}
	inits := map[string]bool{}
	for _, in := range m.GetGraph().GetInitializer() {
		inits[in.GetName()] = true
	}
	for _, in := range m.GetGraph().GetInput() {
		if inits[in.GetName()] {
			continue
		}
		x, err := npy.ReadFile(filepath.Join(dir, in.GetName()+".npy"))
		if err != nil {
			t.Fatal(err)
		}
		c.inputs = append(c.inputs, x)
	}
	for _, out := range m.GetGraph().GetOutput() {
		y, err := npy.ReadFile(filepath.Join(dir, "out", out.GetName()+".npy"))
		if err != nil {
			t.Fatal(err)
		}
		c.want = append(c.want, y)
	}
	return c
}

// modelOpset returns the model's ai.onnx opset.
func modelOpset(m *onnxpb.ModelProto) int64 {
	for _, o := range m.GetOpsetImport() {
		if o.GetDomain() == "" || o.GetDomain() == "ai.onnx" {
			return o.GetVersion()
		}
	}
	return 0
}

// runNodes applies the graph's nodes, which gen.py writes in topological
// order, to the inputs; initializers are concrete tensors, as the loader
// makes them. A panic from an op (a shape error) becomes an error.
func runNodes(m *onnxpb.ModelProto, inputs []*tensor.Tensor, training bool) (outs []*tensor.Tensor, err error) {
	return runNodesAs(m, inputs, training, false)
}

// runNodesAs is runNodes; promote casts float32 initializers to float64,
// for gradient checks in double precision.
func runNodesAs(m *onnxpb.ModelProto, inputs []*tensor.Tensor, training, promote bool) (outs []*tensor.Tensor, err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(runtime.Error); ok {
				// A Go runtime panic is a bug in an op, not bad input.
				err = fmt.Errorf("runtime panic: %w\n%s", e, debug.Stack())
				return
			}
			if e, ok := r.(error); ok {
				err = e
				return
			}
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	g := m.GetGraph()
	env := map[string]*tensor.Tensor{}
	for _, in := range g.GetInitializer() {
		t, err := tensorFromProto(in, "")
		if err != nil {
			return nil, err
		}
		if promote && t.DType() == tensor.Float32 {
			t = ops.Cast(t, tensor.Float64)
		}
		if dt := t.DType(); dt == tensor.Float32 || dt == tensor.Float64 {
			// As the loader does: float initializers are trainable
			// parameters, which Graph mode captures rather than bakes.
			t = tensor.NewParameter(in.GetName(), t)
		}
		env[in.GetName()] = t
	}
	i := 0
	for _, in := range g.GetInput() {
		if _, ok := env[in.GetName()]; ok {
			continue
		}
		env[in.GetName()] = inputs[i]
		i++
	}
	opset := modelOpset(m)
	for _, n := range g.GetNode() {
		fn := lookupOp(n.GetOpType(), opset)
		if fn == nil {
			return nil, fmt.Errorf("no %s at opset %d", n.GetOpType(), opset)
		}
		ins := make([]*tensor.Tensor, len(n.GetInput()))
		for j, name := range n.GetInput() {
			if name != "" {
				ins[j] = env[name]
			}
		}
		ys, err := fn(&nodeCtx{Node: n, Opset: opset, Training: training}, ins)
		if err != nil {
			return nil, err
		}
		for j, name := range n.GetOutput() {
			if name != "" && j < len(ys) {
				env[name] = ys[j]
			}
		}
	}
	for _, o := range g.GetOutput() {
		outs = append(outs, env[o.GetName()])
	}
	return outs, nil
}

// runBothModes runs the model eagerly and compiled (spore.Jit over the
// graph inputs) and returns both results.
func runBothModes(m *onnxpb.ModelProto, inputs []*tensor.Tensor) (eager, graph []*tensor.Tensor, eagerErr, graphErr error) {
	eager, eagerErr = runNodes(m, inputs, false)
	jitted := spore.Jit(func(xs []*tensor.Tensor) []*tensor.Tensor {
		ys, err := runNodes(m, xs, false)
		if err != nil {
			panic(err)
		}
		return ys
	})
	func() {
		defer func() {
			if r := recover(); r != nil {
				if e, ok := r.(error); ok {
					graphErr = e
				} else {
					graphErr = fmt.Errorf("panic: %v", r)
				}
			}
		}()
		graph = jitted(inputs)
	}()
	return
}

// opTol is the tolerance of the op tests' comparisons (testkit.CheckClose:
// integers and booleans equal, floats within opTol relative to 1+|want|).
// The floor of 1 is there because the inputs are of order 1: an output
// that is a sum of such terms cancelling to near zero (a convolution's,
// fmod's) carries float32 rounding at the terms' scale, not its own, and
// a purely relative test fails there on rounding alone (by 2e-5 of a 0.02
// convolution output, 4e-7 absolute, in the conv3d fixture).
const opTol = 1e-5

func TestOpsMatchONNXRuntime(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "ops", "*", "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 100 {
		t.Fatalf("found %d op fixtures; run testdata/ops/gen.py", len(dirs))
	}
	for _, f := range dirs {
		dir := filepath.Dir(f)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			c := loadOpCase(t, dir)
			eager, graph, eerr, gerr := runBothModes(c.model, c.inputs)
			if eerr != nil || gerr != nil {
				t.Fatalf("PyNative: %v\nGraph: %v", eerr, gerr)
			}
			for i, w := range c.want {
				name := c.model.GetGraph().GetOutput()[i].GetName()
				if err := testkit.CheckClose(eager[i], w, opTol); err != nil {
					t.Errorf("PyNative, output %s: %v", name, err)
				}
				if err := testkit.CheckClose(graph[i], w, opTol); err != nil {
					t.Errorf("Graph, output %s: %v", name, err)
				}
			}
		})
	}
}

// listedOps are the ai.onnx operators the package promises for opsets 13
// to 21, with the first opset it supports each from: 11, or the opset
// that brought the op into ai.onnx.
var listedOps = map[string]int64{
	"Gemm": 11, "MatMul": 11, "Conv": 11, "ConvTranspose": 11, "BatchNormalization": 11,
	"Relu": 11, "LeakyRelu": 11, "Gelu": 20, "Erf": 11, "Sigmoid": 11, "Tanh": 11,
	"Softmax": 11, "LogSoftmax": 11, "LayerNormalization": 17,
	"Add": 11, "Sub": 11, "Mul": 11, "Div": 11, "Pow": 11, "Sqrt": 11, "Exp": 11, "Log": 11,
	"Neg": 11, "Abs": 11, "Reciprocal": 11, "Clip": 11, "Min": 11, "Max": 11,
	"Where": 11, "Equal": 11, "Less": 11, "Greater": 11, "Not": 11, "Cast": 11,
	"And": 11, "Or": 11, "LessOrEqual": 12, "GreaterOrEqual": 12,
	"Reshape": 11, "Transpose": 11, "Flatten": 11, "Concat": 11, "Split": 11, "Slice": 11,
	"Gather": 11, "Squeeze": 11, "Unsqueeze": 11, "Expand": 11, "Tile": 11, "Pad": 11,
	"Shape": 11, "Size": 11, "Constant": 11, "ConstantOfShape": 11, "Range": 11,
	"Identity": 11, "Dropout": 11,
	"MaxPool": 11, "AveragePool": 11, "GlobalAveragePool": 11, "GlobalMaxPool": 11,
	"ReduceMean": 11, "ReduceSum": 11, "ReduceMax": 11, "ArgMax": 11,
}

func TestListedOpsRegisteredForOpsets11To21(t *testing.T) {
	for op, first := range listedOps {
		for v := int64(11); v <= 21; v++ {
			got := lookupOp(op, v) != nil
			if want := v >= first; got != want {
				t.Errorf("%s at opset %d: registered %v, want %v", op, v, got, want)
			}
		}
	}
}

func TestOpsetRangesDoNotOverlap(t *testing.T) {
	for op, defs := range opTable {
		for v := int64(1); v <= 25; v++ {
			n := 0
			for _, d := range defs {
				if v >= d.minOpset && (d.maxOpset == 0 || v <= d.maxOpset) {
					n++
				}
			}
			if n > 1 {
				t.Errorf("%s has %d definitions at opset %d", op, n, v)
			}
		}
	}
}

// TestOpsFixturesCoverRegisteredOps checks that every registered op has
// at least one fixture, so that an op cannot be added untested. If, Loop,
// Scan and SequenceMap run sub-graphs and are tested with the loader.
func TestOpsFixturesCoverRegisteredOps(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("testdata", "ops", "*", "model.onnx"))
	rnn, _ := filepath.Glob(filepath.Join("testdata", "rnn", "ort", "*", "model.onnx")) // ops_rnn_test.go's
	dirs = append(dirs, rnn...)
	seen := map[string]bool{}
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m := &onnxpb.ModelProto{}
		if err := proto.Unmarshal(b, m); err != nil {
			t.Fatal(err)
		}
		for _, n := range m.GetGraph().GetNode() {
			seen[n.GetOpType()] = true
		}
	}
	var missing []string
	for _, op := range supportedOps() {
		// Ops of other domains (domain/op: the preview training domain,
		// which ONNX Runtime does not run) are tested by their own tests.
		if !seen[op] && op != "If" && op != "Loop" && op != "Scan" && op != "SequenceMap" && !strings.Contains(op, "/") {
			missing = append(missing, op)
		}
	}
	if len(missing) > 0 {
		t.Errorf("no fixture uses %v", missing)
	}
}

// The error cases build one node by hand; each must fail with a message
// naming the node and what was wrong, the same in both modes.

// attr builders for hand-made nodes.
func intAttr(name string, v int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(v)}
}

func intsAttr(name string, v ...int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v}
}

func strAttr(name, v string) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_STRING.Enum(), S: []byte(v)}
}

// oneNodeModel wraps a node in a model whose graph inputs are the node's
// data inputs (traced in Graph mode) and whose initializers are consts.
func oneNodeModel(opset int64, n *onnxpb.NodeProto, data []string, consts map[string]*tensor.Tensor) *onnxpb.ModelProto {
	g := &onnxpb.GraphProto{Node: []*onnxpb.NodeProto{n}}
	names := make([]string, 0, len(consts))
	for k := range consts {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		g.Initializer = append(g.Initializer, tensorProtoOf(k, consts[k]))
	}
	for _, k := range data {
		g.Input = append(g.Input, &onnxpb.ValueInfoProto{Name: proto.String(k)})
	}
	for _, o := range n.GetOutput() {
		g.Output = append(g.Output, &onnxpb.ValueInfoProto{Name: proto.String(o)})
	}
	return &onnxpb.ModelProto{Graph: g, OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: proto.Int64(opset)}}}
}

// tensorProtoOf encodes an int64 or float32 tensor for a test initializer.
func tensorProtoOf(name string, t *tensor.Tensor) *onnxpb.TensorProto {
	tp := &onnxpb.TensorProto{Name: proto.String(name), Dims: shapeInts(t)}
	switch t.DType() {
	case tensor.Int64:
		tp.DataType = proto.Int32(int32(onnxpb.TensorProto_INT64))
		tp.Int64Data = t.Int64s()
	default:
		tp.DataType = proto.Int32(int32(onnxpb.TensorProto_FLOAT))
		tp.FloatData = t.Float32s()
	}
	return tp
}

func TestOpErrors(t *testing.T) {
	x := tensor.RandNormal(tensor.Float32, 0, 1, 2, 3, 4)
	img := tensor.RandNormal(tensor.Float32, 0, 1, 1, 2, 5, 5)
	i64 := func(v ...int64) *tensor.Tensor { return int64s(v) }
	node := func(op string, ins []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
		return &onnxpb.NodeProto{Name: proto.String("n1"), OpType: proto.String(op), Input: ins, Output: []string{"y"}, Attribute: attrs}
	}
	cases := []struct {
		name   string
		opset  int64
		node   *onnxpb.NodeProto
		consts map[string]*tensor.Tensor
		inputs []*tensor.Tensor
		want   string
	}{
		{"reshape two -1", 17, node("Reshape", []string{"x", "s"}), map[string]*tensor.Tensor{"s": i64(-1, -1)}, []*tensor.Tensor{x}, "more than one -1"},
		{"reshape wrong size", 17, node("Reshape", []string{"x", "s"}), map[string]*tensor.Tensor{"s": i64(5, 5)}, []*tensor.Tensor{x}, "holds 25 elements"},
		{"transpose bad perm", 17, node("Transpose", []string{"x"}, intsAttr("perm", 0, 1)), nil, []*tensor.Tensor{x}, "perm [0 1]"},
		{"concat no axis", 17, node("Concat", []string{"x", "x"}), nil, []*tensor.Tensor{x}, "attribute axis is missing"},
		{"split uneven", 13, &onnxpb.NodeProto{Name: proto.String("n1"), OpType: proto.String("Split"), Input: []string{"x"}, Output: []string{"y0", "y1", "y2"}, Attribute: []*onnxpb.AttributeProto{intAttr("axis", 2)}}, nil, []*tensor.Tensor{x}, "equal pieces"},
		{"slice zero step", 17, node("Slice", []string{"x", "s", "e", "a", "t"}), map[string]*tensor.Tensor{"s": i64(0), "e": i64(2), "a": i64(0), "t": i64(0)}, []*tensor.Tensor{x}, "zero step"},
		{"slice bad axis", 17, node("Slice", []string{"x", "s", "e", "a"}), map[string]*tensor.Tensor{"s": i64(0), "e": i64(2), "a": i64(3)}, []*tensor.Tensor{x}, "axes 3 is out of range"},
		{"gather out of range", 17, node("Gather", []string{"x", "i"}), map[string]*tensor.Tensor{"i": i64(2)}, []*tensor.Tensor{x}, "index 2 out of range for axis 0"},
		{"gather data index out of range", 17, node("Gather", []string{"x", "i"}), nil, []*tensor.Tensor{x, i64(0, -3)}, "index -3 out of range for axis 0"},
		{"squeeze non-unit", 17, node("Squeeze", []string{"x", "a"}), map[string]*tensor.Tensor{"a": i64(1)}, []*tensor.Tensor{x}, "not 1"},
		{"expand incompatible", 17, node("Expand", []string{"x", "s"}), map[string]*tensor.Tensor{"s": i64(3, 3)}, []*tensor.Tensor{x}, "does not broadcast"},
		{"expand negative", 17, node("Expand", []string{"x", "s"}), map[string]*tensor.Tensor{"s": i64(-1, 1, 1, 1)}, []*tensor.Tensor{x}, "shape [-1 1 1 1] has a negative extent"},
		{"tile wrong length", 17, node("Tile", []string{"x", "r"}), map[string]*tensor.Tensor{"r": i64(2)}, []*tensor.Tensor{x}, "one entry per axis"},
		{"pad unknown mode", 17, node("Pad", []string{"x", "p"}, strAttr("mode", "mirror")), map[string]*tensor.Tensor{"p": i64(0, 0, 1, 0, 0, 1)}, []*tensor.Tensor{x}, `mode "mirror"`},
		{"pad reflect too far", 17, node("Pad", []string{"x", "p"}, strAttr("mode", "reflect")), map[string]*tensor.Tensor{"p": i64(0, 0, 4, 0, 0, 0)}, []*tensor.Tensor{x}, "too large"},
		{"maxpool 3-D indices", 17, &onnxpb.NodeProto{Name: proto.String("n1"), OpType: proto.String("MaxPool"), Input: []string{"x"}, Output: []string{"y", "idx"}, Attribute: []*onnxpb.AttributeProto{intsAttr("kernel_shape", 2, 2, 2)}}, nil, []*tensor.Tensor{tensor.Ones(tensor.Float32, 1, 1, 3, 3, 3)}, "Indices output of 3-D MaxPool"},
		{"averagepool dilations", 19, node("AveragePool", []string{"x"}, intsAttr("kernel_shape", 2, 2), intsAttr("dilations", 2, 2)), nil, []*tensor.Tensor{img}, "dilations [2 2] are not supported"},
		{"maxpool no kernel", 17, node("MaxPool", []string{"x"}), nil, []*tensor.Tensor{img}, "kernel_shape is missing"},
		{"conv 4-D spatial", 17, node("Conv", []string{"x", "w"}), map[string]*tensor.Tensor{"w": tensor.Ones(tensor.Float32, 1, 1, 1, 1, 1, 1)}, []*tensor.Tensor{tensor.Ones(tensor.Float32, 1, 1, 2, 2, 2, 2)}, "2-D (N×C×H×W) and, for Conv and pooling, 3-D"},
		{"maxpool 3-D ceil", 17, node("MaxPool", []string{"x"}, intsAttr("kernel_shape", 2, 2, 2), intAttr("ceil_mode", 1)), nil, []*tensor.Tensor{tensor.Ones(tensor.Float32, 1, 1, 3, 3, 3)}, "ceil_mode=1 is not supported for 3-D"},
		{"conv 3-D window too large", 17, node("Conv", []string{"x", "w"}), map[string]*tensor.Tensor{"w": tensor.Ones(tensor.Float32, 1, 1, 4, 1, 1)}, []*tensor.Tensor{tensor.Ones(tensor.Float32, 1, 1, 3, 3, 3)}, "larger than the padded input"},
		{"conv bad auto_pad", 17, node("Conv", []string{"x", "w"}, strAttr("auto_pad", "SAME")), map[string]*tensor.Tensor{"w": tensor.Ones(tensor.Float32, 1, 2, 1, 1)}, []*tensor.Tensor{img}, `auto_pad is "SAME"`},
		{"conv kernel disagrees", 17, node("Conv", []string{"x", "w"}, intsAttr("kernel_shape", 3, 3)), map[string]*tensor.Tensor{"w": tensor.Ones(tensor.Float32, 1, 2, 1, 1)}, []*tensor.Tensor{img}, "disagrees"},
		{"batchnorm training before opset 14", 13, node("BatchNormalization", []string{"x", "s", "b", "m", "v"}, intAttr("training_mode", 1)), map[string]*tensor.Tensor{"s": tensor.Ones(tensor.Float32, 2), "b": tensor.Ones(tensor.Float32, 2), "m": tensor.Ones(tensor.Float32, 2), "v": tensor.Ones(tensor.Float32, 2)}, []*tensor.Tensor{img}, "training_mode exists from opset 14"},
		{"gelu bad approximate", 20, node("Gelu", []string{"x"}, strAttr("approximate", "fast")), nil, []*tensor.Tensor{x}, `approximate is "fast"`},
		{"add dtype mismatch", 17, node("Add", []string{"x", "i"}), map[string]*tensor.Tensor{"i": i64(1)}, []*tensor.Tensor{x}, "dtypes"},
		{"softmax axis", 17, node("Softmax", []string{"x"}, intAttr("axis", 3)), nil, []*tensor.Tensor{x}, "axis 3 is out of range"},
		{"cast unsupported", 17, node("Cast", []string{"x"}, intAttr("to", int64(onnxpb.TensorProto_STRING))), nil, []*tensor.Tensor{x}, "not supported"},
		{"constantofshape huge", 17, node("ConstantOfShape", []string{"s"}), map[string]*tensor.Tensor{"s": i64(1<<20, 1<<20)}, nil, "the most an op may make"},
		{"expand huge", 17, node("Expand", []string{"x", "s"}), map[string]*tensor.Tensor{"s": i64(1<<30, 1, 1, 1)}, []*tensor.Tensor{x}, "the most an op may make"},
		{"tile huge", 17, node("Tile", []string{"x", "r"}), map[string]*tensor.Tensor{"r": i64(1<<20, 1<<20, 1)}, []*tensor.Tensor{x}, "the most an op may make"},
		{"tile overflowing", 17, node("Tile", []string{"x", "r"}), map[string]*tensor.Tensor{"r": i64(1<<40, 1<<40, 1)}, []*tensor.Tensor{x}, "one above"},
		{"reshape overflowing", 17, node("Reshape", []string{"x", "s"}), map[string]*tensor.Tensor{"s": i64(1<<40, 1<<40, 1<<40)}, []*tensor.Tensor{x}, "too many elements"},
		{"pad huge", 17, node("Pad", []string{"x", "p"}), map[string]*tensor.Tensor{"p": i64(0, 0, 1<<35, 0, 0, 0)}, []*tensor.Tensor{x}, "the most an op may make"},
		{"maxpool huge pads", 17, node("MaxPool", []string{"x"}, intsAttr("kernel_shape", 2, 2), intsAttr("pads", 1<<20, 1<<20, 1<<20, 1<<20)), nil, []*tensor.Tensor{img}, "the most an op may make"},
		{"maxpool overflowing window", 17, node("MaxPool", []string{"x"}, intsAttr("kernel_shape", 1<<40, 2), intsAttr("dilations", 1<<40, 1)), nil, []*tensor.Tensor{img}, "exceed 16777216"},
		{"conv huge pads", 17, node("Conv", []string{"x", "w"}, intsAttr("pads", 1<<20, 1<<20, 1<<20, 1<<20)), map[string]*tensor.Tensor{"w": tensor.Ones(tensor.Float32, 1, 2, 1, 1)}, []*tensor.Tensor{img}, "the most an op may make"},
		{"convtranspose huge stride", 17, node("ConvTranspose", []string{"x", "w"}, intsAttr("strides", 1<<24, 1<<24)), map[string]*tensor.Tensor{"w": tensor.Ones(tensor.Float32, 2, 1, 1, 1)}, []*tensor.Tensor{img}, "the most an op may make"},
		{"unsqueeze rank", 17, node("Unsqueeze", []string{"x", "a"}), map[string]*tensor.Tensor{"a": i64(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30)}, []*tensor.Tensor{x}, "more than 32"},
		{"einsum diagonal extents", 17, node("Einsum", []string{"x"}, strAttr("equation", "iij->j")), nil, []*tensor.Tensor{x}, "over axes of extents 2 and 3"},
		{"einsum bad letter", 17, node("Einsum", []string{"x"}, strAttr("equation", "i1j->j")), nil, []*tensor.Tensor{x}, "not an index letter"},
		{"einsum operand count", 17, node("Einsum", []string{"x"}, strAttr("equation", "ij,jk->ik")), nil, []*tensor.Tensor{x}, "has 2 operands"},
		{"einsum unknown output", 17, node("Einsum", []string{"x"}, strAttr("equation", "ijk->z")), nil, []*tensor.Tensor{x}, "in no operand"},
		{"scatter reduction", 15, node("ScatterElements", []string{"x", "i", "u"}, strAttr("reduction", "add")), map[string]*tensor.Tensor{"i": i64(0)}, []*tensor.Tensor{x, tensor.Ones(tensor.Float32, 1)}, `reduction "add"`},
		{"gathernd component out of range", 17, node("GatherND", []string{"x", "i"}), nil, []*tensor.Tensor{x, tensor.FromSlice([]int64{0, 5}, 1, 2)}, "index 5 out of range for axis 1"},
		{"missing input", 17, node("MatMul", []string{"x"}), nil, []*tensor.Tensor{x}, "required input 1 (B) is missing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The node's inputs that are not constants are the graph
			// inputs, bound to tc.inputs in order.
			var data []string
			for _, in := range tc.node.GetInput() {
				if _, ok := tc.consts[in]; !ok && in != "" && len(data) < len(tc.inputs) && !contains(data, in) {
					data = append(data, in)
				}
			}
			m := oneNodeModel(tc.opset, tc.node, data, tc.consts)
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

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// TestDropoutTraining checks the training branch, which ONNX Runtime's
// inference fixtures cannot: about ratio of the values are zero, the rest
// are scaled by 1/(1−ratio), and the mask output is refused.
func TestDropoutTraining(t *testing.T) {
	x := tensor.Ones(tensor.Float32, 100, 100)
	n := &onnxpb.NodeProto{Name: proto.String("d"), OpType: proto.String("Dropout"), Input: []string{"x", "r"}, Output: []string{"y"}}
	ratio := tensor.Scalar(float32(0.25))
	c := &nodeCtx{Node: n, Opset: 17, Training: true}
	ys, err := lookupOp("Dropout", 17)(c, []*tensor.Tensor{x, ratio})
	if err != nil {
		t.Fatal(err)
	}
	zeros := 0
	for _, v := range ys[0].Float32s() {
		switch {
		case v == 0:
			zeros++
		case math.Abs(float64(v)-1/0.75) > 1e-6:
			t.Fatalf("kept value %g, want %g", v, 1/0.75)
		}
	}
	if frac := float64(zeros) / 1e4; math.Abs(frac-0.25) > 0.03 {
		t.Errorf("dropped %.3f of the values, want about 0.25", frac)
	}
	n.Output = []string{"y", "mask"}
	if _, err := lookupOp("Dropout", 17)(c, []*tensor.Tensor{x, ratio}); err == nil || !strings.Contains(err.Error(), "mask") {
		t.Errorf("mask output in training: got %v, want an error naming the mask", err)
	}
}

// TestShapeOfTracedInputIsConcrete checks the property shape sub-graphs
// rely on: inside a trace, Shape of a traced tensor is a concrete int64
// tensor, and integer arithmetic on it stays concrete.
func TestShapeOfTracedInputIsConcrete(t *testing.T) {
	f := spore.Jit(func(x *tensor.Tensor) *tensor.Tensor {
		c := &nodeCtx{Node: &onnxpb.NodeProto{OpType: proto.String("Shape"), Output: []string{"s"}}, Opset: 17}
		s, err := shapeOp(c, []*tensor.Tensor{x})
		if err != nil {
			panic(err)
		}
		if s[0].IsSymbolic() {
			panic("Shape of a traced tensor is symbolic")
		}
		q := divOp(s[0], int64s([]int64{2, 2}))
		if q.IsSymbolic() {
			panic("integer Div of concrete shapes is symbolic")
		}
		return ops.Reshape(x, int(q.Int64s()[0])*2, -1)
	})
	y := f(tensor.Ones(tensor.Float32, 4, 3))
	if !y.Shape().Equal(tensor.Shape{4, 3}) {
		t.Errorf("got shape %v, want [4 3]", y.Shape())
	}
}

// gradCases are the fixtures whose gradients are checked: the ops an
// imported model is fine-tuned through. Each is differentiated with
// respect to its float inputs, in float64 so that finite differences are
// precise.
var gradCases = []string{
	"gemm_trans", "matmul_batched", "matmul_1d_left", "conv_groups", "conv_dilations", "conv_same_lower", "conv_1d",
	"convtranspose_strided", "convtranspose_groups_dil", "batchnorm", "batchnorm_3d", "layernorm", "layernorm_axis1_nobias",
	"softmax_axis1", "logsoftmax_axis-1", "gelu", "gelu_tanh", "erf", "sigmoid", "tanh", "leakyrelu", "clip", "where",
	"div_bcast", "pow", "sqrt", "min3", "maxpool_pads", "maxpool_ceil", "avgpool_pads_exclude", "avgpool_pads_include",
	"avgpool_ceil", "globalavgpool", "reducemean_op18", "reducemax_op18", "reducesum_neg_nokeep",
	"slice_neg_step", "gather_axis1_2d", "concat", "split_num_outputs", "pad_reflect", "pad_edge", "pad_constant_value",
	"pad_wrap_op19", "expand", "tile", "transpose", "shape_subgraph", "flatten_axis2", "unsqueeze", "squeeze",
	"elu", "selu", "prelu", "instancenorm", "reducel2_op18", "reducelogsumexp", "cumsum_excl_rev", "topk", "trilu_lower_k",
	"softmax_op11", "mod_fmod_float", "avgpool_ceil_include", "reduceprod", "reducelogsum",
	"einsum_2", "einsum_8", "einsum_11", "gatherelements_short", "depthtospace_crd", "spacetodepth", "celu", "mish", "maxpool_dilated", "lrn", "lpnorm_l2", "mvn", "shrink", "resize_0", "resize_4", "resize_5", "resize_axes_op18",
	"conv3d", "conv3d_groups_dil", "maxpool3d", "avgpool3d_exclude", "avgpool3d_include",
	"scatternd", "scatterelements", "gathernd_batch", "gathernd_traced_indices",
}

// TestOpGradients checks, for each of gradCases, that the gradient of
// Σ r·output (r fixed random weights) with respect to the float inputs
// is the same in PyNative mode and in Graph mode, and agrees with
// central finite differences.
func TestOpGradients(t *testing.T) {
	for _, name := range gradCases {
		t.Run(name, func(t *testing.T) {
			c := loadOpCase(t, filepath.Join("testdata", "ops", name))
			xs := make([]*tensor.Tensor, len(c.inputs))
			var pos []int // the float inputs, differentiated
			for i, x := range c.inputs {
				xs[i] = x
				if isFloat(x.DType()) {
					xs[i] = ops.Cast(x, tensor.Float64)
					pos = append(pos, i)
				}
			}
			tensor.SetSeed(int64(len(name)))
			weights := make([]*tensor.Tensor, len(c.want))
			for i, w := range c.want {
				weights[i] = tensor.RandNormal(tensor.Float64, 0, 1, w.Shape()...)
			}
			loss := func(xs ...*tensor.Tensor) *tensor.Tensor {
				ys, err := runNodesAs(c.model, xs, false, true)
				if err != nil {
					panic(err)
				}
				var l *tensor.Tensor
				for i, y := range ys {
					if !isFloat(y.DType()) {
						continue // TopK's indices
					}
					term := ops.Sum(ops.Mul(y, weights[i]))
					if l == nil {
						l = term
					} else {
						l = ops.Add(l, term)
					}
				}
				return l
			}
			eager := spore.Grad(loss, spore.GradPosition(pos...))(xs...)
			graph := spore.Jit(func(xs []*tensor.Tensor) []*tensor.Tensor {
				return spore.Grad(loss, spore.GradPosition(pos...))(xs...)
			})(xs)
			for gi, i := range pos {
				if err := testkit.CheckClose(graph[gi], eager[gi], opTol); err != nil {
					t.Errorf("input %d: Graph against PyNative: %v", i, err)
				}
				// Central differences at a few elements.
				x := xs[i].Float64s()
				g := eager[gi].Float64s()
				for _, k := range []int{0, len(x) / 3, len(x) / 2, len(x) - 1} {
					const h = 1e-6
					at := func(d float64) float64 {
						v := append([]float64(nil), x...)
						v[k] += d
						args := append([]*tensor.Tensor(nil), xs...)
						args[i] = tensor.FromSlice(v, xs[i].Shape()...)
						return loss(args...).Item()
					}
					fd := (at(h) - at(-h)) / (2 * h)
					if math.Abs(fd-g[k]) > 1e-5*math.Max(math.Abs(fd), 1) {
						t.Errorf("input %d element %d: gradient %g, finite difference %g", i, k, g[k], fd)
					}
				}
			}
		})
	}
}

// fuzzCases are the op fixtures, loaded once for FuzzOpAttributes.
var fuzzCases = sync.OnceValue(func() []opCase {
	dirs, _ := filepath.Glob(filepath.Join("testdata", "ops", "*", "model.onnx"))
	var cs []opCase
	for _, f := range dirs {
		cs = append(cs, loadOpCase(&testing.T{}, filepath.Dir(f)))
	}
	return cs
})

// FuzzOpAttributes runs the op fixtures with their integer attributes and
// int64 initializers (axes, pads, shapes, indices) replaced by values
// drawn from the fuzz input: every op must return a result or an error,
// and never hit a Go runtime panic (an index out of range, a nil
// dereference) however wrong the numbers are.
func FuzzOpAttributes(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3})
	f.Add([]byte{17, 0xff, 0x80, 5, 9})
	f.Add([]byte{90, 3, 3, 3, 3, 3, 3, 3, 3})
	f.Add([]byte{140, 0x7f, 1, 0xf0, 2})
	// A smaller bound on what ops make keeps each input fast and small
	// (Resize to sizes of 2^20 is legal at the real bound, and takes
	// seconds and gigabytes): the search is for crashes and unclean
	// errors, which the bound's size does not change.
	defer func(m int) { maxMade = m }(maxMade)
	maxMade = 1 << 22
	f.Fuzz(func(t *testing.T, data []byte) {
		cs := fuzzCases()
		if len(data) == 0 || len(cs) == 0 {
			return
		}
		c := cs[int(data[0])%len(cs)]
		data = data[1:]
		next := func() int64 {
			if len(data) == 0 {
				return 1
			}
			b := data[0]
			data = data[1:]
			switch {
			case b >= 0xf0: // now and then an extreme value
				return []int64{math.MaxInt64, math.MinInt64, 1 << 40, -(1 << 40), 1 << 31, 0, -1, 1 << 20,
					math.MaxInt32, math.MinInt32, 3, 2, 7, 1 << 62, -(1 << 62), 9}[b&15]
			default:
				return int64(int8(b)) % 9 // mostly small, negative too
			}
		}
		m := proto.Clone(c.model).(*onnxpb.ModelProto)
		for _, n := range m.GetGraph().GetNode() {
			for _, a := range n.GetAttribute() {
				switch a.GetType() {
				case onnxpb.AttributeProto_INT:
					a.I = proto.Int64(next())
				case onnxpb.AttributeProto_INTS:
					for i := range a.Ints {
						a.Ints[i] = next()
					}
				}
			}
		}
		for _, in := range m.GetGraph().GetInitializer() {
			if in.GetDataType() == int32(onnxpb.TensorProto_INT64) {
				for i := range in.Int64Data {
					in.Int64Data[i] = next()
				}
				if raw := in.GetRawData(); raw != nil {
					for i := 0; i+8 <= len(raw); i += 8 {
						v := uint64(next())
						for j := range 8 {
							raw[i+j] = byte(v >> (8 * j))
						}
					}
				}
			}
		}
		_, err := runNodes(m, c.inputs, false)
		var re runtime.Error
		if errors.As(err, &re) {
			t.Fatalf("%s: %v", c.name, err)
		}
	})
}

// TestOpFixturesThroughLoad runs every op fixture through the loader, as
// a user would: LoadFile, then Run in PyNative mode and in Graph mode
// (the model's compiled plan), against ONNX Runtime's outputs.
func TestOpFixturesThroughLoad(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "ops", "*", "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range dirs {
		dir := filepath.Dir(f)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			c := loadOpCase(t, dir)
			m, err := LoadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, mode := range []spore.Mode{spore.PyNativeMode, spore.GraphMode} {
				var got []*tensor.Tensor
				func() {
					defer spore.SetContext(spore.WithMode(spore.GetContext().Mode))
					spore.SetContext(spore.WithMode(mode))
					got, err = m.Run(c.inputs...)
				}()
				if err != nil {
					t.Fatalf("%v: %v", mode, err)
				}
				for i, w := range c.want {
					if err := testkit.CheckClose(got[i], w, opTol); err != nil {
						t.Errorf("%v, output %d: %v", mode, i, err)
					}
				}
			}
		})
	}
}

// TestTracedShapeInputsRefused checks the Graph-mode side of inputs that
// must be known at trace time: computed from the model's input values
// they are traced, and the op says so. (In PyNative mode the same values
// are concrete and the ops run; refusing them there too needs the
// loader's view of which values depend on the model's inputs.)
func TestTracedShapeInputsRefused(t *testing.T) {
	x := tensor.RandNormal(tensor.Float32, 0, 1, 2, 3, 4)
	cases := []struct {
		op     string
		attrs  []*onnxpb.AttributeProto
		inputs []*tensor.Tensor
		want   string
	}{
		{"Reshape", nil, []*tensor.Tensor{x, int64s([]int64{4, 6})}, "input shape depends on the model's input values"},
		{"Range", nil, []*tensor.Tensor{tensor.Scalar(int64(0)), tensor.Scalar(int64(5)), tensor.Scalar(int64(1))}, "input start depends on the model's input values"},
		{"Tile", nil, []*tensor.Tensor{x, int64s([]int64{1, 1, 2})}, "input repeats depends on the model's input values"},
		{"Slice", nil, []*tensor.Tensor{x, int64s([]int64{0}), int64s([]int64{1})}, "input starts depends on the model's input values"},
	}
	for _, tc := range cases {
		t.Run(tc.op, func(t *testing.T) {
			names := make([]string, len(tc.inputs))
			for i := range names {
				names[i] = fmt.Sprintf("in%d", i)
			}
			n := &onnxpb.NodeProto{Name: proto.String("n1"), OpType: proto.String(tc.op), Input: names, Output: []string{"y"}, Attribute: tc.attrs}
			m := oneNodeModel(17, n, names, nil)
			_, _, _, gerr := runBothModes(m, tc.inputs)
			if gerr == nil || !strings.Contains(gerr.Error(), tc.want) {
				t.Errorf("Graph: got %v, want an error containing %q", gerr, tc.want)
			}
		})
	}
}
