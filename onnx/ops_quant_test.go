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
	"github.com/sporeml/spore/ops"
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

// nodeErrorCase is one node that must fail alike in both modes, with an
// error naming the node and containing want.
type nodeErrorCase struct {
	name   string
	op     string
	opset  int64
	attrs  []*onnxpb.AttributeProto
	inputs []*tensor.Tensor // nil entries are absent optional inputs
	outs   int              // outputs the node declares (default 1)
	want   string
}

// checkNodeErrors runs each case's node alone, its present inputs as
// graph inputs (traced in Graph mode), and checks both modes' errors.
func checkNodeErrors(t *testing.T, cases []nodeErrorCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			names := make([]string, len(tc.inputs))
			var data []string
			var feed []*tensor.Tensor
			for i, x := range tc.inputs {
				if x == nil {
					continue
				}
				names[i] = fmt.Sprintf("in%d", i)
				data = append(data, names[i])
				feed = append(feed, x)
			}
			outs := []string{"y"}
			for i := 1; i < tc.outs; i++ {
				outs = append(outs, fmt.Sprintf("y%d", i))
			}
			n := &onnxpb.NodeProto{Name: proto.String("n1"), OpType: proto.String(tc.op), Input: names, Output: outs, Attribute: tc.attrs}
			m := oneNodeModel(tc.opset, n, data, nil)
			_, _, eerr, gerr := runBothModes(m, feed)
			for mode, err := range map[string]error{"PyNative": eerr, "Graph": gerr} {
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `"n1"`) {
					t.Errorf("%s: got %v, want an error naming the node and containing %q", mode, err, tc.want)
				}
			}
		})
	}
}

func TestQuantErrors(t *testing.T) {
	u8 := func(v ...uint8) *tensor.Tensor { return tensor.FromSlice(v, len(v)) }
	f32 := func(v ...float32) *tensor.Tensor { return tensor.FromSlice(v, len(v)) }
	checkNodeErrors(t, []nodeErrorCase{
		{name: "per-axis at opset 10", op: "QuantizeLinear", opset: 10, inputs: []*tensor.Tensor{tensor.Ones(tensor.Float32, 2, 3), f32(1, 2, 3), u8(0, 0, 0)}, want: "quantizes per tensor only"},
		{name: "scale of the wrong extent", op: "DequantizeLinear", opset: 13, inputs: []*tensor.Tensor{tensor.Ones(tensor.Uint8, 2, 3), f32(1, 2), u8(0, 0)}, want: "want a scalar or a vector of 3"},
		{name: "int64 data", op: "DequantizeLinear", opset: 13, inputs: []*tensor.Tensor{int64s([]int64{1}), f32(1)}, want: "spore dequantizes uint8, int8 and int32"},
		{name: "float zero point", op: "QuantizeLinear", opset: 13, inputs: []*tensor.Tensor{f32(1), f32(1), f32(0)}, want: "take uint8"},
		{name: "blocked quantization", op: "QuantizeLinear", opset: 21, attrs: []*onnxpb.AttributeProto{intAttr("block_size", 2)}, inputs: []*tensor.Tensor{f32(1, 2), f32(1)}, want: "blocked quantization"},
		{name: "float matrices", op: "MatMulInteger", opset: 13, inputs: []*tensor.Tensor{tensor.Ones(tensor.Float32, 2, 2), tensor.Ones(tensor.Float32, 2, 2)}, want: "take uint8"},
		{name: "row zero point of the wrong extent", op: "MatMulInteger", opset: 13, inputs: []*tensor.Tensor{tensor.Ones(tensor.Uint8, 2, 3), tensor.Ones(tensor.Uint8, 3, 2), u8(1, 2, 3)}, want: "one value per row"},
		{name: "vector y_scale", op: "QLinearMatMul", opset: 13, inputs: []*tensor.Tensor{tensor.Ones(tensor.Uint8, 2, 2), f32(1), u8(0), tensor.Ones(tensor.Uint8, 2, 2), f32(1), u8(0), f32(1, 2), u8(0)}, want: "y_scale has shape [2]"},
		{name: "per-channel x zero point", op: "ConvInteger", opset: 13, inputs: []*tensor.Tensor{tensor.Ones(tensor.Uint8, 1, 2, 3, 3), tensor.Ones(tensor.Uint8, 1, 2, 2, 2), u8(1, 2)}, want: "x_zero_point has shape [2]"},
		{name: "bias of the wrong type", op: "QLinearConv", opset: 13, inputs: []*tensor.Tensor{tensor.Ones(tensor.Uint8, 1, 1, 3, 3), f32(1), u8(0), tensor.Ones(tensor.Uint8, 2, 1, 2, 2), f32(1), u8(0), f32(1), u8(0), f32(1, 2)}, want: "want int32 of [2]"},
		{name: "empty dynamic range", op: "DynamicQuantizeLinear", opset: 13, inputs: []*tensor.Tensor{tensor.Zeros(tensor.Float32, 0)}, outs: 3, want: "x is empty"},
	})
}

// TestMatMulIntegerRowZeroPoints checks per-row and per-column zero
// points (which ONNX Runtime does not implement, so no fixture has them)
// against a product worked by hand.
func TestMatMulIntegerRowZeroPoints(t *testing.T) {
	a := tensor.FromSlice([]uint8{3, 5, 10, 20}, 2, 2)
	b := tensor.FromSlice([]uint8{1, 2, 3, 4}, 2, 2)
	n := &onnxpb.NodeProto{OpType: proto.String("MatMulInteger"), Input: []string{"a", "b", "az", "bz"}, Output: []string{"y"}}
	m := oneNodeModel(13, n, []string{"a", "b", "az", "bz"}, nil)
	eager, graph, eerr, gerr := runBothModes(m, []*tensor.Tensor{a, b, tensor.FromSlice([]uint8{1, 10}, 2), tensor.FromSlice([]uint8{0, 2}, 2)})
	if eerr != nil || gerr != nil {
		t.Fatalf("PyNative: %v; Graph: %v", eerr, gerr)
	}
	// A less its row zero points: [[2, 4], [0, 10]]; B less its column
	// zero points: [[1, 0], [3, 2]]. The product: [[14, 8], [30, 20]].
	want := tensor.FromSlice([]int32{14, 8, 30, 20}, 2, 2)
	for _, got := range []*tensor.Tensor{eager[0], graph[0]} {
		if err := testkit.CheckClose(got, want, 0); err != nil {
			t.Error(err)
		}
	}
}

// TestQuantInt8 checks the int8 forms against values worked by hand: the
// zero point's type is the output's, and int8 saturates at −128 and 127.
func TestQuantInt8(t *testing.T) {
	i8 := func(v ...int8) *tensor.Tensor { return tensor.FromSlice(v, len(v)) }
	f32 := func(v ...float32) *tensor.Tensor { return tensor.FromSlice(v, len(v)) }
	scalar := func(x *tensor.Tensor) *tensor.Tensor { return ops.Reshape(x) }
	cases := []struct {
		name   string
		op     string
		inputs []*tensor.Tensor
		want   *tensor.Tensor
	}{
		// round(x/2) + (−10): 1.5→2 (ties to even)→−8; −3→−2 (−1.5 to
		// even)→−12; 300→150→140→127; −300→−160→−128.
		{"quantize", "QuantizeLinear", []*tensor.Tensor{f32(3, -3, 300, -300, 0), scalar(f32(2)), scalar(i8(-10))}, i8(-8, -12, 127, -128, -10)},
		// (x − (−2))·0.5
		{"dequantize", "DequantizeLinear", []*tensor.Tensor{i8(-128, -2, 0, 127), scalar(f32(0.5)), scalar(i8(-2))}, f32(-63, 0, 1, 64.5)},
		// (A − (−1))·(B − 3) = [[5, −2]]·[[−2], [−1]] = −10 + 2 = −8.
		{"matmul integer", "MatMulInteger", []*tensor.Tensor{tensor.FromSlice([]int8{4, -3}, 1, 2), tensor.FromSlice([]int8{1, 2}, 2, 1), scalar(i8(-1)), scalar(i8(3))}, tensor.FromSlice([]int32{-8}, 1, 1)},
		// acc = (10 − 0)·(20 − 0) + (−5)·(4) = 180; ·(0.1·0.1/0.5 = 0.02)
		// = 3.6 → 4, + (−100) = −96.
		{"qlinear matmul", "QLinearMatMul", []*tensor.Tensor{
			tensor.FromSlice([]int8{10, -5}, 1, 2), scalar(f32(0.1)), scalar(i8(0)),
			tensor.FromSlice([]int8{20, 4}, 2, 1), scalar(f32(0.1)), scalar(i8(0)),
			scalar(f32(0.5)), scalar(i8(-100)),
		}, tensor.FromSlice([]int8{-96}, 1, 1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			names := make([]string, len(tc.inputs))
			for i := range names {
				names[i] = fmt.Sprintf("in%d", i)
			}
			n := &onnxpb.NodeProto{OpType: proto.String(tc.op), Input: names, Output: []string{"y"}}
			eager, graph, eerr, gerr := runBothModes(oneNodeModel(13, n, names, nil), tc.inputs)
			if eerr != nil || gerr != nil {
				t.Fatalf("PyNative: %v; Graph: %v", eerr, gerr)
			}
			for _, got := range []*tensor.Tensor{eager[0], graph[0]} {
				if err := testkit.CheckClose(got, tc.want, 0); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// TestConvIntegerExact checks ConvInteger against sums computed in
// integers, for kernels of each size class exactConv distinguishes (one
// float32 convolution, x split in two, float64), with values at the ends
// of uint8's range so that the sums are as large as they get.
func TestConvIntegerExact(t *testing.T) {
	for _, ch := range []int{2, 40, 600} { // k = 9·ch: 18, 360, 5400
		t.Run(fmt.Sprint(ch), func(t *testing.T) {
			const m = 2
			xs, ws := make([]uint8, ch*9), make([]uint8, m*ch*9)
			for i := range xs {
				xs[i] = []uint8{255, 255, 254, 0, 7}[i%5]
			}
			for i := range ws {
				ws[i] = []uint8{0, 1, 0, 255, 3, 0}[i%6]
			}
			const xz, wz = 0, 255
			want := make([]int32, m)
			for o := range want {
				for i := range xs {
					want[o] += (int32(xs[i]) - xz) * (int32(ws[o*ch*9+i]) - wz)
				}
			}
			x, w := tensor.FromSlice(xs, 1, ch, 3, 3), tensor.FromSlice(ws, m, ch, 3, 3)
			n := &onnxpb.NodeProto{OpType: proto.String("ConvInteger"), Input: []string{"x", "w", "xz", "wz"}, Output: []string{"y"}}
			zs := []*tensor.Tensor{ops.Reshape(tensor.FromSlice([]uint8{xz})), ops.Reshape(tensor.FromSlice([]uint8{wz}))}
			eager, graph, eerr, gerr := runBothModes(oneNodeModel(13, n, []string{"x", "w", "xz", "wz"}, nil), append([]*tensor.Tensor{x, w}, zs...))
			if eerr != nil || gerr != nil {
				t.Fatalf("PyNative: %v; Graph: %v", eerr, gerr)
			}
			for _, got := range []*tensor.Tensor{eager[0], graph[0]} {
				if err := testkit.CheckClose(got, tensor.FromSlice(want, 1, m, 1, 1), 0); err != nil {
					t.Error(err)
				}
			}
		})
	}
}
