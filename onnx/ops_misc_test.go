package onnx

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/tensor"
)

// The losses, Det and MaxUnpool are differentiable: their fixtures join
// TestOpGradients' cases.
func init() {
	gradCases = append(gradCases, "nllloss_weight_ii", "nllloss_sum_negative_ii", "sce_sum_log_prob",
		"sce_mean_weight", "det", "det_4x4", "maxunpool", "resize_cubic_up", "resize_crop_linear", "scatternd_add", "scatternd_mul", "scatterelements_max", "batchnorm_training", "einsum_diag_product", "convtranspose3d_strided")
}

// TestMiscOpErrors checks that the losses and the smaller ops refuse bad
// input with an error naming the node and what is wrong, alike in both
// modes.
func TestMiscOpErrors(t *testing.T) {
	x := tensor.RandNormal(tensor.Float32, 0, 1, 2, 3, 4)
	u8 := func(v ...uint8) *tensor.Tensor { return tensor.FromSlice(v, len(v)) }
	node := func(op string, ins []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
		return &onnxpb.NodeProto{Name: proto.String("n1"), OpType: proto.String(op), Input: ins, Output: []string{"y"}, Attribute: attrs}
	}
	target := tensor.FromSlice([]int64{0, 1, 2, 0, 1, 2, 0, 1}, 2, 4)
	cases := []struct {
		name   string
		node   *onnxpb.NodeProto
		consts map[string]*tensor.Tensor
		inputs []*tensor.Tensor
		want   string
	}{
		{"nll bad reduction", node("NegativeLogLikelihoodLoss", []string{"x", "t"}, strAttr("reduction", "max")), nil, []*tensor.Tensor{x, target}, `reduction "max"`},
		{"nll target shape", node("NegativeLogLikelihoodLoss", []string{"x", "t"}), nil, []*tensor.Tensor{x, tensor.FromSlice([]int64{0, 1}, 2)}, "does not match input"},
		{"nll float target", node("NegativeLogLikelihoodLoss", []string{"x", "t"}), nil, []*tensor.Tensor{x, tensor.Ones(tensor.Float32, 2, 4)}, "target has dtype"},
		{"nll weight length", node("NegativeLogLikelihoodLoss", []string{"x", "t", "w"}), map[string]*tensor.Tensor{"w": tensor.Ones(tensor.Float32, 4)}, []*tensor.Tensor{x, target}, "weight must be [3]"},
		{"sce rank 1", node("SoftmaxCrossEntropyLoss", []string{"x", "t"}), nil, []*tensor.Tensor{tensor.Ones(tensor.Float32, 3), tensor.FromSlice([]int64{0}, 1)}, "[N, C, d1, ...]"},
		{"argmin axis", node("ArgMin", []string{"x"}, intAttr("axis", 3)), nil, []*tensor.Tensor{x}, "axis 3 is out of range"},
		{"det not square", node("Det", []string{"x"}), nil, []*tensor.Tensor{x}, "[..., M, M]"},
		{"det too large", node("Det", []string{"x"}), nil, []*tensor.Tensor{tensor.Ones(tensor.Float32, 6, 6)}, "6×6 matrices are not supported"},
		{"bitshift direction", node("BitShift", []string{"x", "s"}, strAttr("direction", "UP")), nil, []*tensor.Tensor{u8(1), u8(1)}, `direction "UP"`},
		{"bitshift signed", node("BitShift", []string{"x", "s"}, strAttr("direction", "LEFT")), nil, []*tensor.Tensor{tensor.FromSlice([]int64{1}, 1), tensor.FromSlice([]int64{1}, 1)}, "takes unsigned integers"},
		{"bitshift too far", node("BitShift", []string{"x", "s"}, strAttr("direction", "LEFT")), nil, []*tensor.Tensor{u8(1), u8(8)}, "out of range"},
		{"compress traced condition", node("Compress", []string{"x", "c"}), nil, []*tensor.Tensor{x, tensor.FromSlice([]bool{true}, 1)}, "condition depends on the model's input values"},
		{"unique traced", node("Unique", []string{"x"}), nil, []*tensor.Tensor{x}, "X depends on the model's input values"},
		{"nonzero traced", node("NonZero", []string{"x"}), nil, []*tensor.Tensor{x}, "X depends on the model's input values"},
		{"maxunpool no kernel", node("MaxUnpool", []string{"x", "i"}), nil, []*tensor.Tensor{tensor.Ones(tensor.Float32, 1, 1, 2, 2), tensor.Zeros(tensor.Int64, 1, 1, 2, 2)}, "kernel_shape [] must have 2 entries"},
		{"maxunpool shapes", node("MaxUnpool", []string{"x", "i"}, intsAttr("kernel_shape", 2, 2)), nil, []*tensor.Tensor{tensor.Ones(tensor.Float32, 1, 1, 2, 2), tensor.Zeros(tensor.Int64, 1, 1, 2)}, "I of its shape"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var data []string
			for _, in := range tc.node.GetInput() {
				if _, ok := tc.consts[in]; !ok && in != "" && len(data) < len(tc.inputs) && !contains(data, in) {
					data = append(data, in)
				}
			}
			m := oneNodeModel(17, tc.node, data, tc.consts)
			// In PyNative mode the graph inputs are marked as computed
			// from the model's inputs, as a Model marks them.
			eerr := runMarked(m, tc.inputs)
			_, _, _, gerr := runBothModes(m, tc.inputs)
			for mode, err := range map[string]error{"PyNative": eerr, "Graph": gerr} {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: got %v, want an error containing %q", mode, err, tc.want)
				}
			}
		})
	}
}

// runMarked runs a one-node model eagerly with its graph inputs marked as
// the model's input values, as the Model's scope marks them, so that an
// op that must read an operand as values refuses as it does in Graph
// mode. It returns the error.
func runMarked(m *onnxpb.ModelProto, inputs []*tensor.Tensor) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				err = e
			} else {
				panic(r)
			}
		}
	}()
	g := m.GetGraph()
	n := g.GetNode()[0]
	env := map[string]*tensor.Tensor{}
	for _, in := range g.GetInitializer() {
		t, err := tensorFromProto(in, "")
		if err != nil {
			return err
		}
		env[in.GetName()] = t
	}
	marked := map[*tensor.Tensor]bool{}
	for i, in := range g.GetInput() {
		env[in.GetName()] = inputs[i]
		marked[inputs[i]] = true
	}
	ins := make([]*tensor.Tensor, len(n.GetInput()))
	for j, name := range n.GetInput() {
		ins[j] = env[name]
	}
	_, err = lookupOp(n.GetOpType(), modelOpset(m))(&nodeCtx{Node: n, Opset: modelOpset(m), fromData: marked}, ins)
	return err
}

// TestMaxUnpoolOutputShape checks MaxUnpool with an output_shape larger
// than the unpooled one against the example of ONNX's operator document:
// the values keep their coordinates, the extra rows and columns are zero.
func TestMaxUnpoolOutputShape(t *testing.T) {
	n := &onnxpb.NodeProto{Name: proto.String("n1"), OpType: proto.String("MaxUnpool"), Input: []string{"x", "i", "s"}, Output: []string{"y"},
		Attribute: []*onnxpb.AttributeProto{intsAttr("kernel_shape", 2, 2), intsAttr("strides", 2, 2)}}
	m := oneNodeModel(17, n, []string{"x", "i"}, map[string]*tensor.Tensor{"s": int64s([]int64{1, 1, 5, 5})})
	x := tensor.FromSlice([]float32{5, 6, 7, 8}, 1, 1, 2, 2)
	idx := tensor.FromSlice([]int64{5, 7, 13, 15}, 1, 1, 2, 2)
	want := tensor.FromSlice([]float32{
		0, 0, 0, 0, 0,
		0, 5, 0, 6, 0,
		0, 0, 0, 0, 0,
		0, 7, 0, 8, 0,
		0, 0, 0, 0, 0,
	}, 1, 1, 5, 5)
	eager, graph, eerr, gerr := runBothModes(m, []*tensor.Tensor{x, idx})
	if eerr != nil || gerr != nil {
		t.Fatalf("PyNative: %v\nGraph: %v", eerr, gerr)
	}
	for mode, got := range map[string][]*tensor.Tensor{"PyNative": eager, "Graph": graph} {
		if err := testkit.CheckClose(got[0], want, 0); err != nil {
			t.Errorf("%s: %v", mode, err)
		}
	}
}
