package onnx

import (
	"fmt"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/ops"
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

// TestRuntimeScatterGradient differentiates a ScatterElements at run-time
// indices: the data's gradient is the cotangent where no update lands and
// zero where one does, the updates' is the cotangent at the positions
// they land on.
func TestRuntimeScatterGradient(t *testing.T) {
	f32, i64 := onnxpb.TensorProto_FLOAT, onnxpb.TensorProto_INT64
	g := graphProto("g", []*onnxpb.NodeProto{node("ScatterElements", "s", []string{"x", "i", "u"}, []string{"y"}, attrInt("axis", 1))}, nil,
		[]*onnxpb.ValueInfoProto{valueInfoProto("x", f32, 2, 3), valueInfoProto("i", i64, 2, 1), valueInfoProto("u", f32, 2, 1)},
		[]*onnxpb.ValueInfoProto{valueInfoProto("y", f32)})
	m := mustLoad(t, marshal(t, modelProto(17, g)))
	idx := []int64{2, -3} // row 0, column 2; row 1, column 0
	w := []float32{1, 2, 3, 4, 5, 6}
	loss := func(x, u *tensor.Tensor) *tensor.Tensor {
		y := m.Outputs(x, tensor.FromSlice(append([]int64(nil), idx...), 2, 1), u)[0]
		return ops.Sum(ops.Mul(y, tensor.FromSlice(append([]float32(nil), w...), 2, 3)))
	}
	x := tensor.FromSlice([]float32{1, 1, 1, 1, 1, 1}, 2, 3)
	u := tensor.FromSlice([]float32{7, 8}, 2, 1)
	grads := spore.Grad(loss, spore.GradPosition(0, 1))(x, u)
	wantX := append([]float32(nil), w...)
	wantU := make([]float32, 2)
	for r, c := range idx {
		if c < 0 {
			c += 3
		}
		wantX[r*3+int(c)] = 0
		wantU[r] = w[r*3+int(c)]
	}
	for k, want := range [][]float32{wantX, wantU} {
		if got := grads[k].Float32s(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("gradient %d: %v, want %v", k, got, want)
		}
	}
}
