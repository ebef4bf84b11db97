package onnx

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/tensor"
)

// oneOpModel is a model of one node, name (empty for an unnamed node)
// applying op to the graph input x and, when b is not nil, to the
// initializer b.
func oneOpModel(op, name string, et onnxpb.TensorProto_DataType, b *onnxpb.TensorProto, attrs ...*onnxpb.AttributeProto) *onnxpb.ModelProto {
	ins := []string{"x"}
	var inits []*onnxpb.TensorProto
	if b != nil {
		ins = append(ins, b.GetName())
		inits = append(inits, b)
	}
	g := graphProto("g", []*onnxpb.NodeProto{node(op, name, ins, []string{"y"}, attrs...)}, inits,
		[]*onnxpb.ValueInfoProto{{Name: proto.String("x")}},
		[]*onnxpb.ValueInfoProto{valueInfoProto("y", et)})
	return modelProto(17, g)
}

// TestNodeErrorsNameTheNodeOnce checks the errors a model's run reports
// for a failing node: the node (and, in a sub-graph, each enclosing node)
// is named once, not once by the op and again by the walker, and an
// integer division by zero is the ONNX node's error, not that of the
// primitive spore divides with (FloorDiv, FloorMod).
func TestNodeErrorsNameTheNodeOnce(t *testing.T) {
	f32 := tensor.Zeros(tensor.Float32, 2, 3)
	i64 := tensor.FromSlice([]int64{7, -7}, 2)
	zero := int64Tensor("b", []int64{2}, []int64{3, 0})
	ifBad := ifModel()
	ifBad.Graph.Input[0] = &onnxpb.ValueInfoProto{Name: proto.String("x")}
	divData := graphProto("g", []*onnxpb.NodeProto{node("Div", "div", []string{"x", "b"}, []string{"y"})}, nil,
		[]*onnxpb.ValueInfoProto{{Name: proto.String("x")}, {Name: proto.String("b")}},
		[]*onnxpb.ValueInfoProto{valueInfoProto("y", onnxpb.TensorProto_INT64)})
	cases := []struct {
		name  string
		model *onnxpb.ModelProto
		in    []*tensor.Tensor
		modes []spore.Mode
		want  string   // the message, from the node's label on
		once  []string // each must occur exactly once
	}{
		{
			name:  "unnamed reshape",
			model: oneOpModel("Reshape", "", onnxpb.TensorProto_FLOAT, int64Tensor("s", []int64{2}, []int64{5, 5})),
			in:    []*tensor.Tensor{f32},
			want:  `node (unnamed, output "y") (Reshape): shape [5 5] holds 25 elements, data [2 3] holds 6`,
			once:  []string{`node (unnamed, output "y")`},
		},
		{
			name:  "named reshape",
			model: oneOpModel("Reshape", "r", onnxpb.TensorProto_FLOAT, int64Tensor("s", []int64{2}, []int64{5, 5})),
			in:    []*tensor.Tensor{f32},
			want:  `node "r" (Reshape): shape [5 5] holds 25 elements`,
			once:  []string{`node "r"`},
		},
		{
			name:  "op panic",
			model: oneOpModel("Add", "add", onnxpb.TensorProto_FLOAT, floatTensor("b", []int64{4}, make([]float32, 4))),
			in:    []*tensor.Tensor{f32},
			want:  `node "add" (Add): Add: shapes [2 3] and [4] cannot be broadcast`,
			once:  []string{`node "add"`},
		},
		{
			name:  "sub-graph",
			model: ifBad,
			in:    []*tensor.Tensor{tensor.Ones(tensor.Float32, 2, 4)},
			want:  `node "branch" (If): node "then/mul" (Mul): `,
			once:  []string{`node "branch"`, `node "then/mul"`},
		},
		{
			name:  "int64 div by a constant zero",
			model: oneOpModel("Div", "", onnxpb.TensorProto_INT64, zero),
			in:    []*tensor.Tensor{i64},
			want:  `node (unnamed, output "y") (Div): integer division by zero`,
			once:  []string{"node (unnamed"},
		},
		{
			name:  "int64 mod by a constant zero",
			model: oneOpModel("Mod", "m", onnxpb.TensorProto_INT64, zero),
			in:    []*tensor.Tensor{i64},
			want:  `node "m" (Mod): integer division by zero`,
			once:  []string{`node "m"`},
		},
		{
			name:  "int64 fmod by a constant zero",
			model: oneOpModel("Mod", "m", onnxpb.TensorProto_INT64, zero, attrInt("fmod", 1)),
			in:    []*tensor.Tensor{i64},
			want:  `node "m" (Mod): integer division by zero`,
			once:  []string{`node "m"`},
		},
		{
			// A divisor from the model's inputs is only known when the
			// node runs in PyNative mode; Graph mode stages the division,
			// whose kernel refuses it at run time.
			name:  "int64 div by an input zero",
			model: modelProto(17, divData),
			in:    []*tensor.Tensor{i64, tensor.FromSlice([]int64{0, 1}, 2)},
			modes: []spore.Mode{spore.PyNativeMode},
			want:  `node "div" (Div): integer division by zero`,
			once:  []string{`node "div"`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := mustLoad(t, marshal(t, tc.model))
			modes := tc.modes
			if modes == nil {
				modes = []spore.Mode{spore.PyNativeMode, spore.GraphMode}
			}
			for _, mode := range modes {
				var err error
				inMode(mode, func() { _, err = m.Run(tc.in...) })
				if err == nil {
					t.Fatalf("mode %v: no error, want %q", mode, tc.want)
				}
				msg := err.Error()
				if !strings.Contains(msg, "onnx: "+tc.want) {
					t.Errorf("mode %v: error %q, want it to contain %q", mode, msg, "onnx: "+tc.want)
				}
				for _, s := range tc.once {
					if n := strings.Count(msg, s); n != 1 {
						t.Errorf("mode %v: error %q names %s %d times, want once", mode, msg, s, n)
					}
				}
				for _, prim := range []string{"FloorDiv", "FloorMod"} {
					if strings.Contains(msg, prim) {
						t.Errorf("mode %v: error %q names spore's %s, not the ONNX op", mode, msg, prim)
					}
				}
			}
		})
	}
}
