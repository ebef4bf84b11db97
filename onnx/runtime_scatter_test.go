package onnx

import (
	"testing"

	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/tensor"
)

// TestRuntimeScatterExport imports ScatterElements and ScatterND nodes
// whose indices are graph inputs, exports the imported model (its
// scatter-add written as ScatterND with reduction add), and runs the
// export in ONNX Runtime and in spore at indices other than those it was
// traced with, negative ones too, against the imported model.
func TestRuntimeScatterExport(t *testing.T) {
	f32, i64 := onnxpb.TensorProto_FLOAT, onnxpb.TensorProto_INT64
	data := tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, 3, 4)
	cases := []struct {
		name string
		node *onnxpb.NodeProto
		idx  []int64
		upd  []int
		runs [][]int64
	}{
		{
			name: "ScatterElements",
			node: node("ScatterElements", "s", []string{"x", "i", "u"}, []string{"y"}, attrInt("axis", 1)),
			idx:  []int64{2, 1}, upd: []int{2, 1},
			runs: [][]int64{{0, 3}, {-1, -4}},
		},
		{
			name: "ScatterND",
			node: node("ScatterND", "s", []string{"x", "i", "u"}, []string{"y"}),
			idx:  []int64{2, 1}, upd: []int{2, 4},
			runs: [][]int64{{0, 2}, {-3, -1}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ud := []int64{int64(tc.upd[0]), int64(tc.upd[1])}
			g := graphProto("g", []*onnxpb.NodeProto{tc.node}, nil,
				[]*onnxpb.ValueInfoProto{valueInfoProto("x", f32, 3, 4), valueInfoProto("i", i64, 2, 1), valueInfoProto("u", f32, ud...)},
				[]*onnxpb.ValueInfoProto{valueInfoProto("y", f32)})
			m := mustLoad(t, marshal(t, modelProto(17, g)))
			n := tc.upd[0] * tc.upd[1]
			u := make([]float32, n)
			for i := range u {
				u[i] = float32(100 + i)
			}
			feed := func(idx []int64) []*tensor.Tensor {
				return []*tensor.Tensor{data, tensor.FromSlice(append([]int64(nil), idx...), 2, 1), tensor.FromSlice(append([]float32(nil), u...), tc.upd...)}
			}
			var runs [][]*tensor.Tensor
			for _, r := range tc.runs {
				runs = append(runs, feed(r))
			}
			f := func(x, i, u *tensor.Tensor) *tensor.Tensor { return m.Outputs(x, i, u)[0] }
			exportAndRun(t, tc.name, f, func(xs []*tensor.Tensor) []*tensor.Tensor { return m.Outputs(xs...) }, feed(tc.idx), runs)
		})
	}
}
