package ops_test

import (
	"math"
	"testing"

	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

func TestSortArgSort(t *testing.T) {
	nan := math.NaN()
	x := f64([]float64{3, 1, 2, 1}, 4)
	m := f64([]float64{3, 1, 2, 0, 5, 2}, 2, 3)
	withNaN := f64([]float64{1, nan, 0, nan, -1}, 5)
	v, idx := ops.Sort(m, 0, false)
	vd, idxd := ops.Sort(m, -1, true)
	runValueCases(t, []valueCase{
		{"asc stable", ops.ArgSort(x, 0, false), []int{4}, []float64{1, 3, 2, 0}},
		{"desc stable", ops.ArgSort(x, -1, true), []int{4}, []float64{0, 2, 1, 3}},
		{"nan last asc", ops.ArgSort(withNaN, 0, false), []int{5}, []float64{4, 2, 0, 1, 3}},
		{"nan first desc", ops.ArgSort(withNaN, 0, true), []int{5}, []float64{1, 3, 0, 2, 4}},
		{"sort axis 0", v, []int{2, 3}, []float64{0, 1, 2, 3, 5, 2}},
		{"sort axis 0 idx", idx, []int{2, 3}, []float64{1, 0, 0, 0, 1, 1}},
		{"sort desc", vd, []int{2, 3}, []float64{3, 2, 1, 5, 2, 0}},
		{"sort desc idx", idxd, []int{2, 3}, []float64{0, 2, 1, 1, 2, 0}},
		{"int32", ops.ArgSort(tensor.FromSlice([]int32{5, -5, 0}, 3), 0, false), []int{3}, []float64{1, 2, 0}},
		{"uint8", ops.ArgSort(tensor.FromSlice([]uint8{200, 7, 255}, 3), 0, true), []int{3}, []float64{2, 0, 1}},
		{"empty axis", ops.ArgSort(tensor.Zeros(tensor.Float32, 2, 0), -1, false), []int{2, 0}, nil},
		{"empty other", ops.ArgSort(tensor.Zeros(tensor.Float32, 0, 3), -1, false), []int{0, 3}, nil},
	})
	if idx.DType() != tensor.Int64 || v.DType() != tensor.Float64 {
		t.Fatalf("Sort gives %v values and %v indices", v.DType(), idx.DType())
	}
	sorted, _ := ops.Sort(withNaN, 0, false)
	assertClose(t, "sort nan", sorted, []int{5}, []float64{-1, 0, 1, nan, nan}, 0)
	testkit.MustPanic(t, func() { ops.ArgSort(tensor.Ones(tensor.Bool, 2), 0, false) }, "ArgSort", "Bool")
	testkit.MustPanic(t, func() { ops.ArgSort(tensor.Scalar(1.0), 0, false) }, "ArgSort", "scalar")
	testkit.MustPanic(t, func() { ops.Sort(m, 2, false) }, "ArgSort", "axis 2")
	sortVals := func(ax int, desc bool) func(v ...*tensor.Tensor) *tensor.Tensor {
		return func(v ...*tensor.Tensor) *tensor.Tensor { s, _ := ops.Sort(v[0], ax, desc); return s }
	}
	checkGrad(t, "sort", sortVals(-1, false), randT(12, -1, 1, 3, 5))
	checkGrad(t, "sort desc axis 0", sortVals(0, true), randT(13, -1, 1, 4, 2, 3))
}

func TestTopK(t *testing.T) {
	nan := math.NaN()
	x := f64([]float64{1, 3, 3, 2, 5, 0, -1, 7, 7, 7}, 2, 5)
	v, idx := ops.TopK(x, 3)
	v0, idx0 := ops.TopK(x, 0)
	vn, _ := ops.TopK(f64([]float64{1, nan, 2}, 3), 2)
	// Many equal values take the heap path (k ≪ n): ties by position.
	flat := make([]float64, 40)
	flat[30] = 1
	_, tieIdx := ops.TopK(f64(flat, 40), 3)
	runValueCases(t, []valueCase{
		{"values", v, []int{2, 3}, []float64{5, 3, 3, 7, 7, 7}},
		{"indices", idx, []int{2, 3}, []float64{4, 1, 2, 2, 3, 4}},
		{"k=0", v0, []int{2, 0}, nil},
		{"k=0 idx", idx0, []int{2, 0}, nil},
		{"k=n", func() *tensor.Tensor { _, i := ops.TopK(x, 5); return i }(), []int{2, 5}, []float64{4, 1, 2, 3, 0, 2, 3, 4, 0, 1}},
		{"nan largest", vn, []int{2}, []float64{nan, 2}},
		{"heap ties", tieIdx, []int{3}, []float64{30, 0, 1}},
		{"int32", func() *tensor.Tensor { v, _ := ops.TopK(tensor.FromSlice([]int32{4, 9, -1}, 3), 2); return v }(), []int{2}, []float64{9, 4}},
		{"empty rows", func() *tensor.Tensor { v, _ := ops.TopK(tensor.Zeros(tensor.Float32, 0, 4), 2); return v }(), []int{0, 2}, nil},
	})
	// The heap path agrees with a full descending sort.
	big := randT(14, -1, 1, 3, 100)
	_, got := ops.TopK(big, 7)
	full := ops.ArgSort(big, -1, true)
	assertClose(t, "heap vs sort", got, []int{3, 7}, ops.Slice(full, []int{0, 0}, []int{3, 7}).Float64s(), 0)
	testkit.MustPanic(t, func() { ops.TopK(x, 6) }, "TopK", "k=6", "[2 5]")
	testkit.MustPanic(t, func() { ops.TopK(x, -1) }, "TopK", "k=-1")
	testkit.MustPanic(t, func() { ops.TopK(tensor.Scalar(1.0), 1) }, "TopK", "[]")
	testkit.MustPanic(t, func() { ops.TopK(tensor.Ones(tensor.Bool, 3), 1) }, "TopK", "Bool")
	// The gradient scatters back to the chosen positions; of two equal
	// values the first chosen is the one that gets it.
	g := weightedGrad(func(v *tensor.Tensor) *tensor.Tensor { r, _ := ops.TopK(v, 1); return r }, f64([]float64{1, 2, 2, 0}, 4), tensor.Ones(tensor.Float64, 1))
	assertClose(t, "tie grad", g, []int{4}, []float64{0, 1, 0, 0}, 0)
	topVals := func(k int) func(v ...*tensor.Tensor) *tensor.Tensor {
		return func(v ...*tensor.Tensor) *tensor.Tensor { r, _ := ops.TopK(v[0], k); return r }
	}
	checkGrad(t, "topk", topVals(3), randT(15, -1, 1, 2, 3, 6))
	checkGrad(t, "topk heap", topVals(2), randT(16, -1, 1, 2, 20))
}
