package onnx

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/tensor"
)

// resizeModel is one Resize node over input "x" of the given shape, to
// sizes (or, when scales is set, by scales), with the given attributes.
func resizeModel(shape []int, sizes []int64, scales []float32, mode, ctm, nearest string) *onnxpb.ModelProto {
	attrs := []*onnxpb.AttributeProto{strAttr("mode", mode), strAttr("coordinate_transformation_mode", ctm)}
	if nearest != "" {
		attrs = append(attrs, strAttr("nearest_mode", nearest))
	}
	ins := []string{"x", "", "scales"}
	consts := map[string]*tensor.Tensor{}
	if scales != nil {
		consts["scales"] = tensor.FromSlice(scales, len(scales))
	} else {
		ins = append(ins, "sizes")
		ins[2] = ""
		consts["sizes"] = tensor.FromSlice(sizes, len(sizes))
	}
	n := node("Resize", "resize", ins, []string{"y"}, attrs...)
	return oneNodeModel(13, n, []string{"x"}, consts)
}

// TestResizeKernelMatchesGathers runs nearest and linear Resize through
// the ops.Resize kernel and through the per-axis Gathers it replaced, in
// both modes, over odd shapes, up- and downsampling, one axis or several
// (the batch and channel axes included), every coordinate transform and
// nearest mode, sizes and scales: bit for bit, since the kernel makes the
// same roundings in the same order — but where an axis that shrinks comes
// after one that grows, which the kernel resizes first (resizeChain), and
// a linear result then differs in rounding: there within 1e-6·(1+|want|).
// The two modes agree bit for bit everywhere.
func TestResizeKernelMatchesGathers(t *testing.T) {
	type shapeCase struct {
		in     []int
		sizes  []int64
		scales []float32
	}
	shapes := []shapeCase{
		{in: []int{1, 1, 3, 5}, sizes: []int64{1, 1, 7, 17}},
		{in: []int{2, 3, 7, 4}, sizes: []int64{2, 3, 3, 9}},
		{in: []int{1, 2, 4, 4}, scales: []float32{1, 1, 2, 2}},
		{in: []int{1, 2, 5, 3}, scales: []float32{1, 1, 0.6, 2.5}},
		{in: []int{2, 1, 3, 4}, sizes: []int64{3, 1, 1, 17}},
		{in: []int{3, 17}, sizes: []int64{2, 16}},
		{in: []int{3, 5, 1}, sizes: []int64{3, 7, 1}},
		{in: []int{16}, sizes: []int64{33}},
		{in: []int{1, 1, 1, 1}, sizes: []int64{1, 1, 3, 3}},
		{in: []int{2, 3, 4, 5, 6}, sizes: []int64{2, 5, 2, 7, 3}},
	}
	type modeCase struct{ mode, ctm, nearest string }
	var modes []modeCase
	for _, ctm := range []string{"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn"} {
		modes = append(modes, modeCase{"linear", ctm, ""})
		for _, nm := range []string{"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"} {
			modes = append(modes, modeCase{"nearest", ctm, nm})
		}
	}
	defer func() { resizeByGather = false }()
	for _, sc := range shapes {
		for _, mc := range modes {
			name := fmt.Sprintf("%v→%v%v/%s/%s/%s", sc.in, sc.sizes, sc.scales, mc.mode, mc.ctm, mc.nearest)
			t.Run(name, func(t *testing.T) {
				m := resizeModel(sc.in, sc.sizes, sc.scales, mc.mode, mc.ctm, mc.nearest)
				tensor.SetSeed(int64(len(name)))
				x := tensor.RandNormal(tensor.Float32, 0, 1, sc.in...)
				resizeByGather = true
				refE, refG, err1, err2 := runBothModes(m, []*tensor.Tensor{x})
				resizeByGather = false
				gotE, gotG, err3, err4 := runBothModes(m, []*tensor.Tensor{x})
				if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
					t.Fatalf("errors: gathers %v / %v, kernel %v / %v", err1, err2, err3, err4)
				}
				tol := 0.0
				grown := false
				for a, n := range gotE[0].Shape() {
					if n > sc.in[a] {
						grown = true
					} else if n < sc.in[a] && grown && mc.mode == "linear" {
						tol = 1e-6
					}
				}
				for _, c := range []struct {
					what      string
					got, want *tensor.Tensor
					tol       float64
				}{{"PyNative", gotE[0], refE[0], tol}, {"Graph", gotG[0], refG[0], tol}, {"Graph vs PyNative", gotG[0], gotE[0], 0}} {
					if !c.got.Shape().Equal(c.want.Shape()) {
						t.Fatalf("%s: shape %v, want %v", c.what, c.got.Shape(), c.want.Shape())
					}
					a, b := c.got.Float32s(), c.want.Float32s()
					for i := range b {
						if math.Float32bits(a[i]) != math.Float32bits(b[i]) && !(math.Abs(float64(a[i]-b[i])) <= c.tol*(1+math.Abs(float64(b[i])))) {
							t.Fatalf("%s: element %d is %v, want %v", c.what, i, a[i], b[i])
						}
					}
				}
			})
		}
	}
}

// BenchmarkResize compares the kernel with the per-axis Gathers in Graph
// mode: a 2× upsampling of a [1 64 56 56] feature map (nearest and
// linear, as a detector's neck does) and the fuzz finding that took 12 s
// (linear, [2 1 3 4] to [3 2^20 1 1]).
func BenchmarkResize(b *testing.B) {
	cases := []struct {
		name  string
		in    []int
		sizes []int64
		mode  string
	}{
		{"nearest-1x64x56x56-x2", []int{1, 64, 56, 56}, []int64{1, 64, 112, 112}, "nearest"},
		{"linear-1x64x56x56-x2", []int{1, 64, 56, 56}, []int64{1, 64, 112, 112}, "linear"},
		{"linear-fuzz-3x2^20", []int{2, 1, 3, 4}, []int64{3, 1 << 20, 1, 1}, "linear"},
	}
	defer func() { resizeByGather = false }()
	for _, c := range cases {
		m := resizeModel(c.in, c.sizes, nil, c.mode, "half_pixel", "")
		x := tensor.RandNormal(tensor.Float32, 0, 1, c.in...)
		for _, gather := range []bool{true, false} {
			name := c.name + "/kernel"
			if gather {
				name = c.name + "/gathers"
			}
			b.Run(name, func(b *testing.B) {
				resizeByGather = gather
				model, err := Load(bytes.NewReader(marshal(b, m)))
				if err != nil {
					b.Fatal(err)
				}
				inMode(spore.GraphMode, func() {
					if _, err := model.Run(x); err != nil {
						b.Fatal(err)
					}
					for b.Loop() {
						model.Run(x)
					}
				})
			})
		}
	}
}
