package onnx

import (
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

func TestSignalSuiteCases(t *testing.T) {
	cases := []struct {
		name  string
		fixed []string // inputs read as values: sizes, steps, lengths
	}{
		{"test_dft", nil},
		{"test_dft_axis", nil},
		{"test_dft_inverse", nil},
		{"test_stft", []string{"frame_step", "frame_length"}},
		{"test_stft_with_window", []string{"frame_step"}},
		{"test_hannwindow", []string{"x"}},
		{"test_hannwindow_symmetric", []string{"x"}},
		{"test_hammingwindow", []string{"x"}},
		{"test_hammingwindow_symmetric", []string{"x"}},
		{"test_blackmanwindow", []string{"x"}},
		{"test_blackmanwindow_symmetric", []string{"x"}},
		{"test_melweightmatrix", []string{"num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { suiteOpCase(t, tc.name, tc.fixed...) })
	}
}

// The transforms' and samplers' gradients are checked by TestOpGradients
// (central differences, and Graph mode against PyNative) on their
// fixtures.
func init() {
	gradCases = append(gradCases,
		"dft_complex_padded", "dft_inverse_truncated", "stft_window",
		"gridsample_bilinear_border_1", "gridsample_bicubic_zeros_1", "gridsample_bilinear_reflection_0",
		"roialign_max", "roialign_adaptive")
}

func TestSignalErrors(t *testing.T) {
	sig := tensor.RandNormal(tensor.Float32, 0, 1, 1, 16, 1)
	cplx := tensor.RandNormal(tensor.Float32, 0, 1, 1, 16, 2)
	checkNodeErrors(t, []nodeErrorCase{
		{name: "three components", op: "DFT", opset: 17, inputs: []*tensor.Tensor{tensor.Ones(tensor.Float32, 1, 4, 3)}, want: "must be 1 (real) or 2 (complex)"},
		{name: "integer signal", op: "DFT", opset: 17, inputs: []*tensor.Tensor{tensor.Ones(tensor.Int64, 1, 4, 1)}, want: "want float32 or float64"},
		{name: "the component axis", op: "DFT", opset: 17, attrs: []*onnxpb.AttributeProto{intAttr("axis", 2)}, inputs: []*tensor.Tensor{sig}, want: "axis 2 is out of range"},
		{name: "onesided of a complex signal", op: "DFT", opset: 17, attrs: []*onnxpb.AttributeProto{intAttr("onesided", 1)}, inputs: []*tensor.Tensor{cplx}, want: "onesided output"},
		{name: "signal of rank 2", op: "STFT", opset: 17, inputs: []*tensor.Tensor{tensor.Ones(tensor.Float32, 16, 1)}, want: "want [batch, signal_length, 1 or 2]"},
	})
	// Operands read as values, as constants: bad values are refused.
	i64 := func(v int64) *tensor.Tensor { return tensor.FromSlice([]int64{v}) }
	cases := []struct {
		name   string
		op     string
		inputs []string
		consts map[string]*tensor.Tensor
		attrs  []*onnxpb.AttributeProto
		want   string
	}{
		{"window size of two values", "HannWindow", []string{"n"}, map[string]*tensor.Tensor{"n": int64s([]int64{2, 3})}, nil, "must hold one value"},
		{"window of bool", "HannWindow", []string{"n"}, map[string]*tensor.Tensor{"n": i64(4)}, []*onnxpb.AttributeProto{intAttr("output_datatype", int64(onnxpb.TensorProto_BOOL))}, "bool is not a numeric type"},
		{"frame step missing", "STFT", []string{"x", "", "w"}, map[string]*tensor.Tensor{"x": tensor.Ones(tensor.Float32, 1, 8, 1), "w": tensor.Ones(tensor.Float32, 3)}, nil, "input frame_step is missing"},
		{"frame longer than the signal", "STFT", []string{"x", "s", "w"}, map[string]*tensor.Tensor{"x": tensor.Ones(tensor.Float32, 1, 8, 1), "s": i64(1), "w": tensor.Ones(tensor.Float32, 9)}, nil, "no longer than the signal (8)"},
		{"window of the wrong rank", "STFT", []string{"x", "s", "w"}, map[string]*tensor.Tensor{"x": tensor.Ones(tensor.Float32, 1, 8, 1), "s": i64(1), "w": tensor.Ones(tensor.Float32, 2, 2)}, nil, "want a vector"},
		{"frame step of zero", "STFT", []string{"x", "s", "", "l"}, map[string]*tensor.Tensor{"x": tensor.Ones(tensor.Float32, 1, 8, 1), "s": i64(0), "l": i64(4)}, nil, "must be positive"},
		{"frame length against the window", "STFT", []string{"x", "s", "w", "l"}, map[string]*tensor.Tensor{"x": tensor.Ones(tensor.Float32, 1, 8, 1), "s": i64(1), "w": tensor.Ones(tensor.Float32, 3), "l": i64(4)}, nil, "differs from the window's length"},
		{"mel filters beyond the bins", "MelWeightMatrix", []string{"b", "n", "r", "lo", "hi"}, map[string]*tensor.Tensor{
			"b": i64(4), "n": i64(16), "r": i64(100), "lo": tensor.FromSlice([]float32{0}), "hi": tensor.FromSlice([]float32{400}),
		}, nil, "beyond the DFT's bins"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := &onnxpb.NodeProto{Name: proto.String("n1"), OpType: proto.String(tc.op), Input: tc.inputs, Output: []string{"y"}, Attribute: tc.attrs}
			m := oneNodeModel(17, n, nil, tc.consts)
			_, _, eerr, gerr := runBothModes(m, nil)
			for mode, err := range map[string]error{"PyNative": eerr, "Graph": gerr} {
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `"n1"`) {
					t.Errorf("%s: got %v, want an error naming the node and containing %q", mode, err, tc.want)
				}
			}
		})
	}
}

// TestDFTRoundTrip checks that the inverse DFT undoes the forward one,
// and that a onesided transform is the first half of the full one, in
// both modes: properties of the transform, independent of any referee.
func TestDFTRoundTrip(t *testing.T) {
	x := tensor.RandNormal(tensor.Float64, 0, 1, 2, 7, 3, 2)
	fwd := &onnxpb.NodeProto{OpType: proto.String("DFT"), Input: []string{"x"}, Output: []string{"f"}, Attribute: []*onnxpb.AttributeProto{intAttr("axis", 1)}}
	inv := &onnxpb.NodeProto{OpType: proto.String("DFT"), Input: []string{"f"}, Output: []string{"y"}, Attribute: []*onnxpb.AttributeProto{intAttr("axis", 1), intAttr("inverse", 1)}}
	m := oneNodeModel(17, fwd, []string{"x"}, nil)
	m.Graph.Node = append(m.Graph.Node, inv)
	m.Graph.Output = []*onnxpb.ValueInfoProto{{Name: proto.String("y")}}
	eager, graph, eerr, gerr := runBothModes(m, []*tensor.Tensor{x})
	if eerr != nil || gerr != nil {
		t.Fatalf("PyNative: %v; Graph: %v", eerr, gerr)
	}
	for _, got := range []*tensor.Tensor{eager[0], graph[0]} {
		if err := testkit.CheckClose(got, x, 1e-12); err != nil {
			t.Error(err)
		}
	}

	real := tensor.RandNormal(tensor.Float64, 0, 1, 3, 10, 1)
	full := &onnxpb.NodeProto{OpType: proto.String("DFT"), Input: []string{"x"}, Output: []string{"y"}}
	half := &onnxpb.NodeProto{OpType: proto.String("DFT"), Input: []string{"x"}, Output: []string{"y"}, Attribute: []*onnxpb.AttributeProto{intAttr("onesided", 1)}}
	ef, _, err1, _ := runBothModes(oneNodeModel(17, full, []string{"x"}, nil), []*tensor.Tensor{real})
	eh, gh, err2, err3 := runBothModes(oneNodeModel(17, half, []string{"x"}, nil), []*tensor.Tensor{real})
	if err1 != nil || err2 != nil || err3 != nil {
		t.Fatal(err1, err2, err3)
	}
	first := ops.Slice(ef[0], []int{0, 0, 0}, []int{3, 6, 2})
	for _, got := range []*tensor.Tensor{eh[0], gh[0]} {
		if err := testkit.CheckClose(got, first, 1e-12); err != nil {
			t.Error(err)
		}
	}
}

// TestWindowsByFormula checks the windows against their textbook
// definitions (NumPy's hanning, hamming and blackman are the symmetric
// ones), including a symmetric window's zero ends.
func TestWindowsByFormula(t *testing.T) {
	const n = 9
	defs := map[string]func(k, d float64) float64{
		"HannWindow":     func(k, d float64) float64 { return math.Pow(math.Sin(math.Pi*k/d), 2) },
		"HammingWindow":  func(k, d float64) float64 { return 25.0/46 - 21.0/46*math.Cos(2*math.Pi*k/d) },
		"BlackmanWindow": func(k, d float64) float64 { return 0.42 - 0.5*math.Cos(2*math.Pi*k/d) + 0.08*math.Cos(4*math.Pi*k/d) },
	}
	for op, f := range defs {
		for _, periodic := range []int64{0, 1} {
			node := &onnxpb.NodeProto{OpType: proto.String(op), Input: []string{"n"}, Output: []string{"y"},
				Attribute: []*onnxpb.AttributeProto{intAttr("periodic", periodic), intAttr("output_datatype", int64(onnxpb.TensorProto_DOUBLE))}}
			eager, graph, eerr, gerr := runBothModes(oneNodeModel(17, node, nil, map[string]*tensor.Tensor{"n": tensor.FromSlice([]int64{n})}), nil)
			if eerr != nil || gerr != nil {
				t.Fatalf("%s: PyNative: %v; Graph: %v", op, eerr, gerr)
			}
			d := float64(n - 1 + int(periodic))
			want := make([]float64, n)
			for k := range want {
				want[k] = f(float64(k), d)
			}
			w := tensor.FromSlice(want, n)
			for _, got := range []*tensor.Tensor{eager[0], graph[0]} {
				if err := testkit.CheckClose(got, w, 1e-12); err != nil {
					t.Errorf("%s periodic=%d: %v", op, periodic, err)
				}
			}
		}
	}
}
