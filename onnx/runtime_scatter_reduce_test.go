package onnx

import (
	"math"
	"slices"
	"testing"

	"github.com/sporeml/spore/tensor"
)

// TestScatterReductionsAtRuntimeIndices checks ScatterND's mul, min and
// max at indices given as graph inputs, with a row written twice (every
// update takes part) and Int64 extremes (which no float64 identity value
// would carry), against hand-computed results in both modes.
func TestScatterReductionsAtRuntimeIndices(t *testing.T) {
	data := tensor.FromSlice([]int64{1, 2, 3, 4, 5, 6, 7, 8}, 4, 2)
	idx := tensor.FromSlice([]int64{1, 1, -1}, 3, 1) // rows 1, 1 and 3
	upd := tensor.FromSlice([]int64{2, 3, -1, 10, 0, 9}, 3, 2)
	ext := tensor.FromSlice([]int64{math.MinInt64, math.MaxInt64, 5, 5}, 2, 2)
	extIdx := tensor.FromSlice([]int64{0}, 1, 1)
	extUpd := tensor.FromSlice([]int64{math.MinInt64 + 1, math.MaxInt64 - 1}, 1, 2)
	cases := []struct {
		reduction string
		opset     int64
		in        []*tensor.Tensor
		want      []int64
	}{
		{"mul", 16, []*tensor.Tensor{data, idx, upd}, []int64{1, 2, -6, 120, 5, 6, 0, 72}},
		{"min", 18, []*tensor.Tensor{data, idx, upd}, []int64{1, 2, -1, 3, 5, 6, 0, 8}},
		{"max", 18, []*tensor.Tensor{data, idx, upd}, []int64{1, 2, 3, 10, 5, 6, 7, 9}},
		{"min", 18, []*tensor.Tensor{ext, extIdx, extUpd}, []int64{math.MinInt64, math.MaxInt64 - 1, 5, 5}},
		{"max", 18, []*tensor.Tensor{ext, extIdx, extUpd}, []int64{math.MinInt64 + 1, math.MaxInt64, 5, 5}},
		{"mul", 16, []*tensor.Tensor{ext, extIdx, tensor.FromSlice([]int64{1, -1}, 1, 2)}, []int64{math.MinInt64, -math.MaxInt64, 5, 5}},
	}
	for _, tc := range cases {
		t.Run(tc.reduction, func(t *testing.T) {
			n := textNode("ScatterND", []string{"x", "i", "u"}, strAttr("reduction", tc.reduction))
			e, g, eerr, gerr := runOneNode(tc.opset, n, tc.in...)
			if eerr != nil || gerr != nil {
				t.Fatalf("PyNative: %v; Graph: %v", eerr, gerr)
			}
			for mode, out := range map[string][]*tensor.Tensor{"PyNative": e, "Graph": g} {
				if got := out[0].Int64s(); !slices.Equal(got, tc.want) {
					t.Errorf("%s: %v, want %v", mode, got, tc.want)
				}
			}
		})
	}
}
