package onnx

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/tensor"
)

// A shape-like input computed from a parameter is concrete in PyNative
// mode but symbolic when traced. The model refuses it in both modes with
// the same error, and takes one computed from shapes, or from graph
// inputs alone, which it reads as values (see runtime_values.go).
func TestDataDependentShapesRefusedInBothModes(t *testing.T) {
	f32, i64 := onnxpb.TensorProto_FLOAT, onnxpb.TensorProto_INT64
	cases := []struct {
		name  string
		nodes []*onnxpb.NodeProto
		inits []*onnxpb.TensorProto
		ins   []*onnxpb.ValueInfoProto
		feed  []*tensor.Tensor
		want  string // "" for success
	}{
		{
			name: "reshape to a shape read from the data",
			nodes: []*onnxpb.NodeProto{
				node("Reshape", "r", []string{"x", "s"}, []string{"y"}),
			},
			ins:  []*onnxpb.ValueInfoProto{valueInfoProto("x", f32, 2, 3), valueInfoProto("s", i64, 2)},
			feed: []*tensor.Tensor{tensor.Ones(tensor.Float32, 2, 3), tensor.FromSlice([]int64{3, 2}, 2)},
		},
		{
			name: "reshape to a shape read from the data plus a parameter",
			nodes: []*onnxpb.NodeProto{
				node("Cast", "c", []string{"w"}, []string{"wi"}, attrInt("to", int64(i64))),
				node("Add", "a", []string{"s", "wi"}, []string{"s1"}),
				node("Reshape", "r", []string{"x", "s1"}, []string{"y"}),
			},
			inits: []*onnxpb.TensorProto{floatTensor("w", []int64{2}, []float32{1, 0})},
			ins:   []*onnxpb.ValueInfoProto{valueInfoProto("x", f32, 2, 3), valueInfoProto("s", i64, 2)},
			feed:  []*tensor.Tensor{tensor.Ones(tensor.Float32, 2, 3), tensor.FromSlice([]int64{2, 2}, 2)},
			want:  "input shape depends on the model's input values",
		},
		{
			name: "reshape to a shape cast from a parameter",
			nodes: []*onnxpb.NodeProto{
				node("Cast", "c", []string{"w"}, []string{"s"}, attrInt("to", int64(i64))),
				node("Reshape", "r", []string{"x", "s"}, []string{"y"}),
			},
			inits: []*onnxpb.TensorProto{floatTensor("w", []int64{2}, []float32{3, 2})},
			ins:   []*onnxpb.ValueInfoProto{valueInfoProto("x", f32, 2, 3)},
			feed:  []*tensor.Tensor{tensor.Ones(tensor.Float32, 2, 3)},
			want:  "input shape depends on the model's input values",
		},
		{
			name: "reshape to a shape computed from the input's shape",
			nodes: []*onnxpb.NodeProto{
				node("Shape", "sh", []string{"x"}, []string{"s0"}),
				node("Concat", "cat", []string{"s0", "s0"}, []string{"s1"}, attrInt("axis", 0)),
				node("Slice", "sl", []string{"s1", "b", "e"}, []string{"s"}),
				node("Reshape", "r", []string{"x", "s"}, []string{"y"}),
			},
			inits: []*onnxpb.TensorProto{int64Tensor("b", []int64{1}, []int64{1}), int64Tensor("e", []int64{1}, []int64{3})},
			ins:   []*onnxpb.ValueInfoProto{valueInfoProto("x", f32, 2, 3)},
			feed:  []*tensor.Tensor{tensor.Ones(tensor.Float32, 2, 3)},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := graphProto("g", tc.nodes, tc.inits, tc.ins, []*onnxpb.ValueInfoProto{valueInfoProto("y", f32)})
			m, err := Load(bytes.NewReader(marshal(t, modelProto(17, g))))
			if err != nil {
				t.Fatal(err)
			}
			eerr, gerr := modeErrors(m, tc.feed)
			if tc.want == "" {
				if eerr != nil || gerr != nil {
					t.Fatalf("PyNative: %v; Graph: %v; want success", eerr, gerr)
				}
				return
			}
			if eerr == nil || !strings.Contains(eerr.Error(), tc.want) {
				t.Errorf("PyNative: got %v, want an error containing %q", eerr, tc.want)
			}
			if gerr == nil || !strings.Contains(gerr.Error(), tc.want) {
				t.Errorf("Graph: got %v, want an error containing %q", gerr, tc.want)
			}
		})
	}
}

// modeErrors runs m on feed in PyNative mode (Run) and compiled (nn.Jit's
// Call), returning each mode's error, for tests that the two agree.
func modeErrors(m *Model, feed []*tensor.Tensor) (eager, graph error) {
	_, eager = m.Run(feed...)
	func() {
		defer func() {
			if r := recover(); r != nil {
				graph = r.(error)
			}
		}()
		nn.Jit(m, spore.JitConfig{}).Call(feed...)
	}()
	return eager, graph
}
