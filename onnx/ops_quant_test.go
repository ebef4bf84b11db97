package onnx

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/tensor"
)

// suiteOpCase runs one case of ONNX's backend test suite (the node suite
// of libonnx-testdata, ONNX's own expected outputs) straight through the
// operator table, in both modes, as the fixtures are run. Unlike
// TestConformance it does not go through the loader, so it also reaches
// models of opset 10, and the graph inputs named by fixed are made
// initializers first: the operands an op reads as values (a window's
// size, NonMaxSuppression's boxes), which a Model can know only once it
// specialises its plans on them. The other inputs stay graph inputs,
// traced in Graph mode. It skips when the suite is not installed.
func suiteOpCase(t *testing.T, name string, fixed ...string) {
	t.Helper()
	dir := conformanceDir()
	if dir == "" {
		t.Skip("ONNX's backend test data is not installed (apt-get install libonnx-testdata)")
	}
	dir = filepath.Join(dir, "node", name)
	b, err := os.ReadFile(filepath.Join(dir, "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	m := &onnxpb.ModelProto{}
	if err := proto.Unmarshal(b, m); err != nil {
		t.Fatal(err)
	}
	set := filepath.Join(dir, "test_data_set_0")
	ins, err := readProtos(set, "input_")
	if err != nil {
		t.Fatal(err)
	}
	want, err := readProtos(set, "output_")
	if err != nil {
		t.Fatal(err)
	}
	isFixed := map[string]bool{}
	for _, f := range fixed {
		isFixed[f] = true
	}
	g := m.GetGraph()
	var data []*tensor.Tensor
	var inputs []*onnxpb.ValueInfoProto
	for i, in := range g.GetInput() {
		if !isFixed[in.GetName()] {
			inputs = append(inputs, in)
			data = append(data, ins[i])
			continue
		}
		pb, err := os.ReadFile(filepath.Join(set, fmt.Sprintf("input_%d.pb", i)))
		if err != nil {
			t.Fatal(err)
		}
		tp := &onnxpb.TensorProto{}
		if err := proto.Unmarshal(pb, tp); err != nil {
			t.Fatal(err)
		}
		tp.Name = proto.String(in.GetName())
		g.Initializer = append(g.Initializer, tp)
	}
	g.Input = inputs
	eager, graph, eerr, gerr := runBothModes(m, data)
	if eerr != nil || gerr != nil {
		t.Fatalf("PyNative: %v; Graph: %v", eerr, gerr)
	}
	for mode, outs := range map[string][]*tensor.Tensor{"PyNative": eager, "Graph": graph} {
		for i, w := range want {
			if msg := compareOutput(outs[i], w); msg != "" {
				t.Errorf("%s, output %d: %s", mode, i, msg)
			}
		}
	}
}

func TestQuantSuiteCases(t *testing.T) {
	for _, name := range []string{
		"test_quantizelinear", "test_quantizelinear_axis",
		"test_dequantizelinear", "test_dequantizelinear_axis",
		"test_dynamicquantizelinear", "test_dynamicquantizelinear_max_adjusted", "test_dynamicquantizelinear_min_adjusted",
		"test_matmulinteger", "test_basic_convinteger", "test_convinteger_with_padding", "test_convinteger_without_padding",
		"test_qlinearmatmul_2D", "test_qlinearmatmul_3D", "test_qlinearconv",
	} {
		t.Run(name, func(t *testing.T) { suiteOpCase(t, name) })
	}
}

// TestQuantRounding checks the rounding and saturation of QuantizeLinear
// against values worked by hand: x/scale halfway between integers rounds
// to the even one, and results beyond [0, 255] saturate.
func TestQuantRounding(t *testing.T) {
	x := tensor.FromSlice([]float32{0.5, 1.5, 2.5, -0.5, -1.5, 300, -300, 5}, 8)
	n := &onnxpb.NodeProto{OpType: proto.String("QuantizeLinear"), Input: []string{"x", "s", "z"}, Output: []string{"y"}}
	m := oneNodeModel(13, n, []string{"x"}, nil)
	m.Graph.Initializer = append(m.Graph.Initializer,
		&onnxpb.TensorProto{Name: proto.String("s"), DataType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)), FloatData: []float32{1}},
		&onnxpb.TensorProto{Name: proto.String("z"), DataType: proto.Int32(int32(onnxpb.TensorProto_UINT8)), Int32Data: []int32{10}})
	eager, graph, eerr, gerr := runBothModes(m, []*tensor.Tensor{x})
	if eerr != nil || gerr != nil {
		t.Fatalf("PyNative: %v; Graph: %v", eerr, gerr)
	}
	// round(0.5)=0, round(1.5)=2, round(2.5)=2, round(-0.5)=0,
	// round(-1.5)=-2; each plus 10; 310 and -290 saturate.
	want := tensor.FromSlice([]uint8{10, 12, 12, 10, 8, 255, 0, 15}, 8)
	for _, got := range []*tensor.Tensor{eager[0], graph[0]} {
		if err := testkit.CheckClose(got, want, 0); err != nil {
			t.Error(err)
		}
	}
}

func TestQuantErrors(t *testing.T) {
	u8 := func(v ...uint8) *tensor.Tensor { return tensor.FromSlice(v, len(v)) }
	f32 := func(v ...float32) *tensor.Tensor { return tensor.FromSlice(v, len(v)) }
	cases := []struct {
		name   string
		op     string
		opset  int64
		inputs []*tensor.Tensor
		want   string
	}{
		{"per-axis at opset 10", "QuantizeLinear", 10, []*tensor.Tensor{tensor.Ones(tensor.Float32, 2, 3), f32(1, 2, 3), u8(0, 0, 0)}, "quantizes per tensor only"},
		{"scale of the wrong extent", "DequantizeLinear", 13, []*tensor.Tensor{tensor.Ones(tensor.Uint8, 2, 3), f32(1, 2), u8(0, 0)}, "want a scalar or a vector of 3"},
		{"int64 data", "DequantizeLinear", 13, []*tensor.Tensor{int64s([]int64{1}), f32(1)}, "spore dequantizes uint8 and int32"},
		{"float zero point", "QuantizeLinear", 13, []*tensor.Tensor{f32(1), f32(1), f32(0)}, "take uint8"},
		{"float matrices", "MatMulInteger", 13, []*tensor.Tensor{tensor.Ones(tensor.Float32, 2, 2), tensor.Ones(tensor.Float32, 2, 2)}, "take uint8"},
		{"row zero point of the wrong extent", "MatMulInteger", 13, []*tensor.Tensor{tensor.Ones(tensor.Uint8, 2, 3), tensor.Ones(tensor.Uint8, 3, 2), u8(1, 2, 3)}, "one value per row"},
		{"vector y_scale", "QLinearMatMul", 13, []*tensor.Tensor{tensor.Ones(tensor.Uint8, 2, 2), f32(1), u8(0), tensor.Ones(tensor.Uint8, 2, 2), f32(1), u8(0), f32(1, 2), u8(0)}, "y_scale has shape [2]"},
		{"empty dynamic range", "DynamicQuantizeLinear", 13, []*tensor.Tensor{tensor.Zeros(tensor.Float32, 0)}, "x is empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			names := make([]string, len(tc.inputs))
			for i := range names {
				names[i] = string(rune('a' + i))
			}
			outs := []string{"y"}
			if tc.op == "DynamicQuantizeLinear" {
				outs = []string{"y", "s", "z"}
			}
			n := &onnxpb.NodeProto{Name: proto.String("q1"), OpType: proto.String(tc.op), Input: names, Output: outs}
			m := oneNodeModel(tc.opset, n, names, nil)
			_, _, eerr, gerr := runBothModes(m, tc.inputs)
			for mode, err := range map[string]error{"PyNative": eerr, "Graph": gerr} {
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `"q1"`) {
					t.Errorf("%s: got %v, want an error naming the node and containing %q", mode, err, tc.want)
				}
			}
		})
	}
}
