package onnx

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/tensor"
)

func TestDetectSuiteCases(t *testing.T) {
	nms := []string{"boxes", "scores", "max_output_boxes_per_class", "iou_threshold", "score_threshold"}
	cases := []struct {
		name  string
		fixed []string // inputs read as values
	}{
		{"test_gridsample", nil},
		{"test_gridsample_aligncorners_true", nil},
		{"test_gridsample_bicubic", nil},
		{"test_gridsample_bilinear", nil},
		{"test_gridsample_border_padding", nil},
		{"test_gridsample_nearest", nil},
		{"test_gridsample_reflection_padding", nil},
		{"test_gridsample_zeros_padding", nil},
		{"test_roialign_aligned_false", nil},
		{"test_roialign_aligned_true", nil},
		{"test_nonmaxsuppression_center_point_box_format", nms},
		{"test_nonmaxsuppression_flipped_coordinates", nms},
		{"test_nonmaxsuppression_identical_boxes", nms},
		{"test_nonmaxsuppression_limit_output_size", nms},
		{"test_nonmaxsuppression_single_box", nms},
		{"test_nonmaxsuppression_suppress_by_IOU", nms},
		{"test_nonmaxsuppression_suppress_by_IOU_and_scores", nms},
		{"test_nonmaxsuppression_two_batches", nms},
		{"test_nonmaxsuppression_two_classes", nms},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { suiteOpCase(t, tc.name, tc.fixed...) })
	}
}

func TestDetectErrors(t *testing.T) {
	img := tensor.RandNormal(tensor.Float32, 0, 1, 1, 2, 4, 4)
	grid := tensor.RandUniform(tensor.Float32, -1, 1, 1, 3, 3, 2)
	rois := tensor.FromSlice([]float32{0, 0, 2, 2}, 1, 4)
	bidx := int64s([]int64{0})
	boxes := tensor.FromSlice([]float32{0, 0, 1, 1}, 1, 1, 4)
	scores := tensor.FromSlice([]float32{0.5}, 1, 1, 1)
	checkNodeErrors(t, []nodeErrorCase{
		{name: "5-D grid sample", op: "GridSample", opset: 20, inputs: []*tensor.Tensor{tensor.Ones(tensor.Float32, 1, 1, 2, 2, 2), tensor.Ones(tensor.Float32, 1, 2, 2, 2, 3)}, want: "4-D input"},
		{name: "grid of the wrong batch", op: "GridSample", opset: 16, inputs: []*tensor.Tensor{img, tensor.Ones(tensor.Float32, 2, 3, 3, 2)}, want: "want [1, H_out, W_out, 2]"},
		{name: "grid sample mode", op: "GridSample", opset: 16, attrs: []*onnxpb.AttributeProto{strAttr("mode", "area")}, inputs: []*tensor.Tensor{img, grid}, want: `mode "area"`},
		{name: "grid sample padding", op: "GridSample", opset: 16, attrs: []*onnxpb.AttributeProto{strAttr("padding_mode", "wrap")}, inputs: []*tensor.Tensor{img, grid}, want: `padding_mode "wrap"`},
		{name: "regions of the wrong shape", op: "RoiAlign", opset: 16, inputs: []*tensor.Tensor{img, tensor.Ones(tensor.Float32, 1, 5), bidx}, want: "want [num_rois, 4]"},
		{name: "batch indices of the wrong length", op: "RoiAlign", opset: 16, inputs: []*tensor.Tensor{img, rois, int64s([]int64{0, 0})}, want: "batch_indices"},
		{name: "pooling mode", op: "RoiAlign", opset: 16, attrs: []*onnxpb.AttributeProto{strAttr("mode", "median")}, inputs: []*tensor.Tensor{img, rois, bidx}, want: `mode "median"`},
		{name: "zero output size", op: "RoiAlign", opset: 16, attrs: []*onnxpb.AttributeProto{intAttr("output_height", 0), intAttr("sampling_ratio", 1)}, inputs: []*tensor.Tensor{img, rois, bidx}, want: "must be positive"},
	})
	// NonMaxSuppression's operands as constants: bad shapes are refused.
	cases := []struct {
		name          string
		boxes, scores *tensor.Tensor
		attrs         []*onnxpb.AttributeProto
		want          string
	}{
		{"boxes of rank 2", tensor.Ones(tensor.Float32, 2, 4), scores, nil, "want [batch, boxes, 4]"},
		{"scores for other boxes", boxes, tensor.Ones(tensor.Float32, 1, 1, 3), nil, "want [1, classes, 1]"},
		{"box format", boxes, scores, []*onnxpb.AttributeProto{intAttr("center_point_box", 2)}, "center_point_box 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := &onnxpb.NodeProto{Name: proto.String("n1"), OpType: proto.String("NonMaxSuppression"), Input: []string{"b", "s"}, Output: []string{"y"}, Attribute: tc.attrs}
			m := oneNodeModel(11, n, nil, map[string]*tensor.Tensor{"b": tc.boxes, "s": tc.scores})
			_, _, eerr, gerr := runBothModes(m, nil)
			for mode, err := range map[string]error{"PyNative": eerr, "Graph": gerr} {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: got %v, want an error containing %q", mode, err, tc.want)
				}
			}
		})
	}
}

// TestNonMaxSuppressionOrder checks, against selections worked by hand,
// the greedy order (by score, ties to the lower index), the strict
// thresholds and the limit per class.
func TestNonMaxSuppressionOrder(t *testing.T) {
	// Boxes as [y1, x1, y2, x2]: 0 and 1 overlap by IoU 0.6 (1 covers
	// 0 and half as much again); 2 is apart; 3 equals 2.
	boxes := tensor.FromSlice([]float32{
		0, 0, 1, 1,
		0, 0, 1, 1.5,
		5, 5, 6, 6,
		5, 5, 6, 6,
	}, 1, 4, 4)
	cases := []struct {
		name   string
		scores []float32
		limit  int64
		iou    float32
		min    float32
		want   []int64 // box indices selected, in order
	}{
		{"suppressed by overlap", []float32{0.9, 0.8, 0.7, 0.1}, 10, 0.5, 0, []int64{0, 2}},
		{"overlap at the threshold is kept", []float32{0.9, 0.8, 0.7, 0.1}, 10, 0.6666667, 0, []int64{0, 1, 2}},
		{"tied scores take the lower index", []float32{0.5, 0.5, 0.7, 0.7}, 10, 0.5, 0, []int64{2, 0}},
		{"score at the threshold is dropped", []float32{0.3, 0.8, 0.3, 0.2}, 10, 0.5, 0.3, []int64{1}},
		{"limit", []float32{0.9, 0.1, 0.8, 0.7}, 1, 0.5, 0, []int64{0}},
		{"zero limit", []float32{0.9, 0.1, 0.8, 0.7}, 0, 0.5, 0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := &onnxpb.NodeProto{OpType: proto.String("NonMaxSuppression"), Input: []string{"b", "s", "m", "i", "t"}, Output: []string{"y"}}
			m := oneNodeModel(11, n, nil, map[string]*tensor.Tensor{
				"b": boxes, "s": tensor.FromSlice(tc.scores, 1, 1, 4), "m": int64s([]int64{tc.limit}),
				"i": tensor.FromSlice([]float32{tc.iou}, 1), "t": tensor.FromSlice([]float32{tc.min}, 1),
			})
			eager, graph, eerr, gerr := runBothModes(m, nil)
			if eerr != nil || gerr != nil {
				t.Fatalf("PyNative: %v; Graph: %v", eerr, gerr)
			}
			var want []int64
			for _, i := range tc.want {
				want = append(want, 0, 0, i)
			}
			w := tensor.FromSlice(want, len(tc.want), 3)
			for _, got := range []*tensor.Tensor{eager[0], graph[0]} {
				if err := testkit.CheckClose(got, w, 0); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// TestValueOperandsRefusedInBothModes checks, through a Model, that the
// operands these ops read as values are refused alike in both modes when
// computed from a parameter (whose value training changes, so that no
// plan can be specialised on it), with an error that names them.
func TestValueOperandsRefusedInBothModes(t *testing.T) {
	f32, i64 := onnxpb.TensorProto_FLOAT, onnxpb.TensorProto_INT64
	cases := []struct {
		name  string
		nodes []*onnxpb.NodeProto
		inits []*onnxpb.TensorProto
		ins   []*onnxpb.ValueInfoProto
		feed  []*tensor.Tensor
		out   onnxpb.TensorProto_DataType
		want  string
	}{
		{
			name: "NonMaxSuppression's boxes",
			nodes: []*onnxpb.NodeProto{
				node("Identity", "id", []string{"w"}, []string{"b"}),
				node("NonMaxSuppression", "nms", []string{"b", "s"}, []string{"y"}),
			},
			inits: []*onnxpb.TensorProto{floatTensor("w", []int64{1, 1, 4}, []float32{0, 0, 1, 1})},
			ins:   []*onnxpb.ValueInfoProto{valueInfoProto("s", f32, 1, 1, 1)},
			feed:  []*tensor.Tensor{tensor.FromSlice([]float32{0.5}, 1, 1, 1)},
			out:   i64,
			want:  "input boxes depends on the model's input values",
		},
		{
			name: "RoiAlign's regions, sampled adaptively",
			nodes: []*onnxpb.NodeProto{
				node("Identity", "id", []string{"w"}, []string{"r"}),
				node("RoiAlign", "roi", []string{"x", "r", "i"}, []string{"y"}),
			},
			inits: []*onnxpb.TensorProto{floatTensor("w", []int64{1, 4}, []float32{0, 0, 2, 2}), int64Tensor("i", []int64{1}, []int64{0})},
			ins:   []*onnxpb.ValueInfoProto{valueInfoProto("x", f32, 1, 1, 4, 4)},
			feed:  []*tensor.Tensor{tensor.Ones(tensor.Float32, 1, 1, 4, 4)},
			out:   f32,
			want:  "input rois (sampling_ratio 0",
		},
		{
			name: "a window's size",
			nodes: []*onnxpb.NodeProto{
				node("Cast", "c", []string{"w"}, []string{"n"}, attrInt("to", int64(i64))),
				node("HannWindow", "hann", []string{"n"}, []string{"y0"}),
				node("Add", "add", []string{"x", "y0"}, []string{"y"}),
			},
			inits: []*onnxpb.TensorProto{floatTensor("w", nil, []float32{4})},
			ins:   []*onnxpb.ValueInfoProto{valueInfoProto("x", f32, 4)},
			feed:  []*tensor.Tensor{tensor.Ones(tensor.Float32, 4)},
			out:   f32,
			want:  "input size depends on the model's input values",
		},
		{
			name: "STFT's frame step",
			nodes: []*onnxpb.NodeProto{
				node("Cast", "c", []string{"w"}, []string{"step"}, attrInt("to", int64(i64))),
				node("STFT", "stft", []string{"x", "step", "", "len"}, []string{"y"}),
			},
			inits: []*onnxpb.TensorProto{floatTensor("w", nil, []float32{2}), int64Tensor("len", nil, []int64{4})},
			ins:   []*onnxpb.ValueInfoProto{valueInfoProto("x", f32, 1, 8, 1)},
			feed:  []*tensor.Tensor{tensor.Ones(tensor.Float32, 1, 8, 1)},
			out:   f32,
			want:  "input frame_step depends on the model's input values",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := graphProto("g", tc.nodes, tc.inits, tc.ins, []*onnxpb.ValueInfoProto{valueInfoProto("y", tc.out)})
			m, err := Load(bytes.NewReader(marshal(t, modelProto(17, g))))
			if err != nil {
				t.Fatal(err)
			}
			eerr, gerr := modeErrors(m, tc.feed)
			if eerr == nil || gerr == nil || eerr.Error() != gerr.Error() || !strings.Contains(eerr.Error(), tc.want) {
				t.Errorf("PyNative: %v; Graph: %v; want one error containing %q", eerr, gerr, tc.want)
			}
		})
	}
}

// TestExtremeAttributesFailCleanly sets each integer attribute and each
// int64 initializer of the detection, quantization and signal fixtures to
// extreme values in turn: each op must answer or refuse with an error,
// never fail with a Go runtime error (an index out of range, an
// allocation of a negative size).
func TestExtremeAttributesFailCleanly(t *testing.T) {
	defer func(m int) { maxMade = m }(maxMade)
	maxMade = 1 << 22
	prefixes := []string{"quantizelinear", "dequantizelinear", "dynamicquantizelinear", "matmulinteger", "convinteger", "qlinear",
		"dft", "stft", "hannwindow", "hammingwindow", "blackmanwindow", "melweightmatrix", "gridsample", "roialign", "nonmaxsuppression"}
	extremes := []int64{math.MaxInt64, math.MinInt64, 1 << 40, -(1 << 40), 1 << 31, 0, -1, 2, -3, 1 << 20}
	dirs, _ := filepath.Glob(filepath.Join("testdata", "ops", "*", "model.onnx"))
	for _, f := range dirs {
		name := filepath.Base(filepath.Dir(f))
		ours := false
		for _, p := range prefixes {
			ours = ours || strings.HasPrefix(name, p)
		}
		if !ours {
			continue
		}
		c := loadOpCase(t, filepath.Dir(f))
		try := func(what string, m *onnxpb.ModelProto) {
			_, err := runNodes(m, c.inputs, false)
			var re runtime.Error
			if errors.As(err, &re) || (err != nil && strings.Contains(err.Error(), "runtime error")) {
				t.Errorf("%s, %s: %v", name, what, err)
			}
		}
		for ai, a := range c.model.GetGraph().GetNode()[0].GetAttribute() {
			if a.GetType() != onnxpb.AttributeProto_INT {
				continue
			}
			for _, v := range extremes {
				m := proto.Clone(c.model).(*onnxpb.ModelProto)
				m.GetGraph().GetNode()[0].GetAttribute()[ai].I = proto.Int64(v)
				try(fmt.Sprintf("attribute %s = %d", a.GetName(), v), m)
			}
		}
		for ii, in := range c.model.GetGraph().GetInitializer() {
			if in.GetDataType() != int32(onnxpb.TensorProto_INT64) {
				continue
			}
			for _, v := range extremes {
				m := proto.Clone(c.model).(*onnxpb.ModelProto)
				init := m.GetGraph().GetInitializer()[ii]
				if len(init.GetRawData()) > 0 {
					raw := make([]byte, len(init.GetRawData()))
					for i := 0; i+8 <= len(raw); i += 8 {
						for j := range 8 {
							raw[i+j] = byte(uint64(v) >> (8 * j))
						}
					}
					init.RawData = raw
				} else {
					for i := range init.Int64Data {
						init.Int64Data[i] = v
					}
				}
				try(fmt.Sprintf("initializer %s = %d", in.GetName(), v), m)
			}
		}
	}
}

// TestOpsetSpellings checks that the spellings of other opsets mean the
// same: RoiAlign at opset 10 (no coordinate_transformation_mode, always
// output_half_pixel) and GridSample's opset-20 mode names.
func TestOpsetSpellings(t *testing.T) {
	img := tensor.RandNormal(tensor.Float32, 0, 1, 2, 3, 6, 5)
	rois := tensor.FromSlice([]float32{0, 0, 4, 3, 1, 1.5, 3.5, 5}, 2, 4)
	grid := tensor.RandUniform(tensor.Float32, -1.2, 1.2, 2, 3, 4, 2)
	type spelling struct {
		opset int64
		attrs []*onnxpb.AttributeProto
	}
	cases := []struct {
		op     string
		inputs []*tensor.Tensor
		a, b   spelling
	}{
		{"RoiAlign", []*tensor.Tensor{img, rois, int64s([]int64{1, 0})},
			spelling{10, []*onnxpb.AttributeProto{intAttr("sampling_ratio", 2)}},
			spelling{16, []*onnxpb.AttributeProto{intAttr("sampling_ratio", 2), strAttr("coordinate_transformation_mode", "output_half_pixel")}}},
		{"GridSample", []*tensor.Tensor{img, grid},
			spelling{16, []*onnxpb.AttributeProto{strAttr("mode", "bilinear")}},
			spelling{20, []*onnxpb.AttributeProto{strAttr("mode", "linear")}}},
		{"GridSample", []*tensor.Tensor{img, grid},
			spelling{16, []*onnxpb.AttributeProto{strAttr("mode", "bicubic")}},
			spelling{20, []*onnxpb.AttributeProto{strAttr("mode", "cubic")}}},
	}
	for _, tc := range cases {
		var got [2][]*tensor.Tensor
		for i, sp := range []spelling{tc.a, tc.b} {
			names := []string{"x", "r", "i"}[:len(tc.inputs)]
			n := &onnxpb.NodeProto{OpType: proto.String(tc.op), Input: names, Output: []string{"y"}, Attribute: sp.attrs}
			eager, graph, eerr, gerr := runBothModes(oneNodeModel(sp.opset, n, names, nil), tc.inputs)
			if eerr != nil || gerr != nil {
				t.Fatalf("%s at opset %d: PyNative: %v; Graph: %v", tc.op, sp.opset, eerr, gerr)
			}
			got[i] = []*tensor.Tensor{eager[0], graph[0]}
		}
		for m := range 2 {
			if err := testkit.CheckClose(got[1][m], got[0][m], 0); err != nil {
				t.Errorf("%s: opset %d against %d: %v", tc.op, tc.b.opset, tc.a.opset, err)
			}
		}
	}
}
