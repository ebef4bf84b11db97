package ops_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// refTranspose is the obvious, slow transpose the kernel is checked against.
func refTranspose(x *tensor.Tensor, perm []int) []float64 {
	xs := x.Shape()
	os := make([]int, len(perm))
	for i, p := range perm {
		os[i] = xs[p]
	}
	out := make([]float64, x.Size())
	idx := make([]int, len(os))
	in := make([]int, len(os))
	for o := range out {
		for i, p := range perm {
			in[p] = idx[i]
		}
		out[o] = x.At(in...)
		for ax := len(os) - 1; ax >= 0; ax-- {
			idx[ax]++
			if idx[ax] < os[ax] {
				break
			}
			idx[ax] = 0
		}
	}
	return out
}

// perms returns every permutation of 0..n-1.
func perms(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range perms(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := append(append(append([]int{}, p[:i]...), n-1), p[i:]...)
			out = append(out, q)
		}
	}
	return out
}

func TestTransposeValues(t *testing.T) {
	a := f64([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	assertClose(t, "2d", ops.Transpose(a), []int{3, 2}, []float64{1, 4, 2, 5, 3, 6}, 0)
	assertClose(t, "T", ops.T(a), []int{3, 2}, []float64{1, 4, 2, 5, 3, 6}, 0)
	assertClose(t, "neg perm", ops.Transpose(a, -1, -2), []int{3, 2}, []float64{1, 4, 2, 5, 3, 6}, 0)
	assertClose(t, "identity", ops.Transpose(a, 0, 1), []int{2, 3}, []float64{1, 2, 3, 4, 5, 6}, 0)
	assertClose(t, "empty", ops.Transpose(tensor.Zeros(tensor.Float64, 0, 3)), []int{3, 0}, nil, 0)
	assertClose(t, "scalar", ops.Transpose(tensor.Scalar(2.0)), []int{}, []float64{2}, 0)
	// Every permutation of rank-4 shapes with and without extent-1 axes,
	// exercising each path of the kernel (copy, row copy, batched 2-D
	// tiles, general) against the reference.
	for _, shape := range [][]int{{2, 3, 4, 5}, {3, 1, 4, 2}, {1, 5, 1, 3}, {2, 1, 1, 1}, {37, 2, 1, 41}} {
		x := randT(21, -1, 1, shape...)
		for _, p := range perms(4) {
			got := ops.Transpose(x, p...)
			os := make([]int, 4)
			for i, ax := range p {
				os[i] = shape[ax]
			}
			assertClose(t, "rank 4", got, os, refTranspose(x, p), 0)
		}
	}
	// Sizes that are not multiples of the tile, batched.
	big := randT(22, -1, 1, 3, 67, 45)
	assertClose(t, "batched T", ops.T(big), []int{3, 45, 67}, refTranspose(big, []int{0, 2, 1}), 0)
	// Other dtypes move bits unchanged.
	i32 := tensor.FromSlice([]int32{1, 2, 3, 4, 5, 6}, 3, 2)
	assertClose(t, "int32", ops.Transpose(i32), []int{2, 3}, []float64{1, 3, 5, 2, 4, 6}, 0)
	bl := tensor.FromSlice([]bool{true, false, false, true, true, false}, 1, 2, 3)
	if got := ops.Transpose(bl, 2, 0, 1); got.DType() != tensor.Bool || !got.Shape().Equal(tensor.Shape{3, 1, 2}) {
		t.Fatalf("bool transpose: %v %v", got.Shape(), got.DType())
	} else {
		assertClose(t, "bool", got, []int{3, 1, 2}, []float64{1, 1, 0, 1, 0, 0}, 0)
	}
	u8 := tensor.FromSlice([]uint8{1, 2, 3, 4}, 2, 2)
	assertClose(t, "uint8", ops.T(u8), []int{2, 2}, []float64{1, 3, 2, 4}, 0)
	f := f32([]float32{1, 2, 3, 4, 5, 6}, 1, 2, 3)
	assertClose(t, "f32", ops.Transpose(f, 2, 1, 0), []int{3, 2, 1}, []float64{1, 4, 2, 5, 3, 6}, 0)
}

func TestShapeValues(t *testing.T) {
	a := f64([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	b := f64([]float64{7, 8, 9}, 1, 3)
	c := f64([]float64{10, 20}, 2, 1)
	r := tensor.Arange(tensor.Float64, 0, 10, 1)
	cases := []struct {
		name  string
		got   *tensor.Tensor
		shape []int
		want  []float64
	}{
		{"expand 0", ops.ExpandDims(a, 0), []int{1, 2, 3}, []float64{1, 2, 3, 4, 5, 6}},
		{"expand -1", ops.ExpandDims(a, -1), []int{2, 3, 1}, []float64{1, 2, 3, 4, 5, 6}},
		{"expand mid", ops.ExpandDims(a, 1), []int{2, 1, 3}, []float64{1, 2, 3, 4, 5, 6}},
		{"squeeze all", ops.Squeeze(tensor.Ones(tensor.Float64, 1, 2, 1, 1)), []int{2}, []float64{1, 1}},
		{"squeeze -1", ops.Squeeze(tensor.Ones(tensor.Float64, 1, 2, 1), -1), []int{1, 2}, []float64{1, 1}},
		{"squeeze none", ops.Squeeze(a), []int{2, 3}, []float64{1, 2, 3, 4, 5, 6}},
		{"concat 0", ops.Concat(0, a, b), []int{3, 3}, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{"concat -1", ops.Concat(-1, a, c, a), []int{2, 7}, []float64{1, 2, 3, 10, 1, 2, 3, 4, 5, 6, 20, 4, 5, 6}},
		{"concat empty part", ops.Concat(0, tensor.Zeros(tensor.Float64, 0, 3), b), []int{1, 3}, []float64{7, 8, 9}},
		{"concat one", ops.Concat(1, a), []int{2, 3}, []float64{1, 2, 3, 4, 5, 6}},
		{"stack 0", ops.Stack(0, b, b), []int{2, 1, 3}, []float64{7, 8, 9, 7, 8, 9}},
		{"stack -1", ops.Stack(-1, c, ops.Neg(c)), []int{2, 1, 2}, []float64{10, -10, 20, -20}},
		{"slice", ops.Slice(a, []int{0, 1}, []int{2, 2}), []int{2, 2}, []float64{2, 3, 5, 6}},
		{"slice -1 size", ops.Slice(a, []int{-1, 1}, []int{1, -1}), []int{1, 2}, []float64{5, 6}},
		{"slice empty", ops.Slice(a, []int{1, 3}, []int{1, 0}), []int{1, 0}, nil},
		{"ss step 2", ops.StridedSlice(r, []int{2}, []int{8}, []int{2}), []int{3}, []float64{2, 4, 6}},
		{"ss reverse", ops.StridedSlice(r, []int{math.MaxInt}, []int{math.MinInt}, []int{-1}), []int{10}, []float64{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}},
		{"ss neg begin", ops.StridedSlice(r, []int{-3}, []int{math.MaxInt}, []int{1}), []int{3}, []float64{7, 8, 9}},
		{"ss neg step", ops.StridedSlice(r, []int{8}, []int{2}, []int{-3}), []int{2}, []float64{8, 5}},
		{"ss neg end", ops.StridedSlice(r, []int{-1}, []int{-4}, []int{-1}), []int{3}, []float64{9, 8, 7}},
		{"ss clamp", ops.StridedSlice(r, []int{-100}, []int{100}, []int{4}), []int{3}, []float64{0, 4, 8}},
		{"ss clamp neg", ops.StridedSlice(r, []int{100}, []int{-100}, []int{-4}), []int{3}, []float64{9, 5, 1}},
		{"ss empty", ops.StridedSlice(r, []int{5}, []int{2}, []int{1}), []int{0}, nil},
		{"ss 2d", ops.StridedSlice(a, []int{1, math.MaxInt}, []int{2, math.MinInt}, []int{1, -2}), []int{1, 2}, []float64{6, 4}},
		{"ss partial axes", ops.StridedSlice(a, []int{-1}, []int{math.MinInt}, []int{-1}), []int{2, 3}, []float64{4, 5, 6, 1, 2, 3}},
		{"ss empty tensor", ops.StridedSlice(tensor.Zeros(tensor.Float64, 0, 2), []int{0, 1}, []int{1, 2}, []int{1, 1}), []int{0, 1}, nil},
		{"pad", ops.Pad(f64([]float64{1, 2}, 1, 2), [][2]int{{1, 0}, {0, 2}}), []int{2, 4}, []float64{0, 0, 0, 0, 1, 2, 0, 0}},
		{"pad empty", ops.Pad(tensor.Zeros(tensor.Float64, 0, 1), [][2]int{{1, 1}, {0, 0}}), []int{2, 1}, []float64{0, 0}},
		{"pad none", ops.Pad(a, [][2]int{{0, 0}, {0, 0}}), []int{2, 3}, []float64{1, 2, 3, 4, 5, 6}},
		{"tile", ops.Tile(f64([]float64{1, 2}, 2), 2, 2), []int{2, 4}, []float64{1, 2, 1, 2, 1, 2, 1, 2}},
		{"tile short reps", ops.Tile(c, 3), []int{2, 3}, []float64{10, 10, 10, 20, 20, 20}},
		{"tile zero", ops.Tile(c, 0, 1), []int{0, 1}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { assertClose(t, c.name, c.got, c.shape, c.want, 0) })
	}
	parts := ops.Split(a, 1, 1, 0, 2)
	assertClose(t, "split 0", parts[0], []int{2, 1}, []float64{1, 4}, 0)
	assertClose(t, "split 1", parts[1], []int{2, 0}, nil, 0)
	assertClose(t, "split 2", parts[2], []int{2, 2}, []float64{2, 3, 5, 6}, 0)
	halves := ops.SplitN(r, -1, 2)
	assertClose(t, "splitN", halves[1], []int{5}, []float64{5, 6, 7, 8, 9}, 0)
	// Layout ops carry every dtype.
	bl := tensor.FromSlice([]bool{true, false}, 2)
	assertClose(t, "bool concat", ops.Concat(0, bl, bl), []int{4}, []float64{1, 0, 1, 0}, 0)
	assertClose(t, "int64 pad", ops.Pad(tensor.FromSlice([]int64{5}, 1), [][2]int{{1, 1}}), []int{3}, []float64{0, 5, 0}, 0)
	u8 := tensor.FromSlice([]uint8{1, 2, 3}, 3)
	assertClose(t, "uint8 ss", ops.StridedSlice(u8, []int{-1}, []int{math.MinInt}, []int{-2}), []int{2}, []float64{3, 1}, 0)
}

func TestIndexValues(t *testing.T) {
	x := f64([]float64{1, 2, 3, 4, 5, 6, 7, 8, 9}, 3, 3)
	i32 := func(v []int32, s ...int) *tensor.Tensor { return tensor.FromSlice(v, s...) }
	i64 := func(v []int64, s ...int) *tensor.Tensor { return tensor.FromSlice(v, s...) }
	cases := []struct {
		name  string
		got   *tensor.Tensor
		shape []int
		want  []float64
	}{
		{"gather rows", ops.Gather(x, i32([]int32{2, 0}), 0), []int{2, 3}, []float64{7, 8, 9, 1, 2, 3}},
		{"gather cols 2d idx", ops.Gather(x, i64([]int64{0, 0, 2, 1}, 2, 2), 1), []int{3, 2, 2}, []float64{1, 1, 3, 2, 4, 4, 6, 5, 7, 7, 9, 8}},
		{"gather neg", ops.Gather(x, i32([]int32{-1}), -1), []int{3, 1}, []float64{3, 6, 9}},
		{"gather scalar idx", ops.Gather(x, tensor.Scalar(int64(1)), 0), []int{3}, []float64{4, 5, 6}},
		{"gather empty idx", ops.Gather(x, i32([]int32{}, 0), 0), []int{0, 3}, nil},
		{"gather bool", ops.Gather(tensor.FromSlice([]bool{true, false}), i32([]int32{1, 1, 0}), 0), []int{3}, []float64{0, 0, 1}},
		{"take 1", ops.TakeAlongAxis(x, i32([]int32{2, 0, 1}, 3, 1), 1), []int{3, 1}, []float64{3, 4, 8}},
		{"take 0", ops.TakeAlongAxis(x, i64([]int64{2, 0, -1, 0, 0, 0}, 2, 3), 0), []int{2, 3}, []float64{7, 2, 9, 1, 2, 3}},
		{"take empty", ops.TakeAlongAxis(x, i32([]int32{}, 3, 0), 1), []int{3, 0}, nil},
		{"onehot", ops.OneHot(i32([]int32{0, 2, -1, 3}), 3, tensor.Float32), []int{4, 3}, []float64{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0}},
		{"onehot 2d", ops.OneHot(i64([]int64{1, 0}, 2, 1), 2, tensor.Int32), []int{2, 1, 2}, []float64{0, 1, 1, 0}},
		{"onehot bool", ops.OneHot(i64([]int64{1}), 2, tensor.Bool), []int{1, 2}, []float64{0, 1}},
		{"onehot depth 0", ops.OneHot(i64([]int64{0, 1}), 0, tensor.Float64), []int{2, 0}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { assertClose(t, c.name, c.got, c.shape, c.want, 0) })
	}
	// Repeated indices accumulate in the gradient.
	g := spore.Grad(func(v ...*tensor.Tensor) *tensor.Tensor {
		return ops.Sum(ops.Gather(v[0], i32([]int32{1, 1, 0, 1}), 0))
	})(f64([]float64{5, 6, 7}, 3))[0]
	assertClose(t, "gather grad", g, []int{3}, []float64{1, 3, 0}, 0)
}

func TestShapeErrors(t *testing.T) {
	a := tensor.Ones(tensor.Float32, 2, 3)
	idx := tensor.FromSlice([]int32{0, 3}, 2)
	cases := []struct {
		name  string
		f     func()
		wants []string
	}{
		{"transpose short", func() { ops.Transpose(a, 0) }, []string{"Transpose", "[2 3]"}},
		{"transpose repeat", func() { ops.Transpose(a, 1, -1) }, []string{"Transpose", "not a permutation"}},
		{"transpose range", func() { ops.Transpose(a, 0, 2) }, []string{"Transpose", "axis 2"}},
		{"T rank 1", func() { ops.T(tensor.Ones(tensor.Float32, 3)) }, []string{"T", "rank 1"}},
		{"expand range", func() { ops.ExpandDims(a, 3) }, []string{"ExpandDims", "axis 3"}},
		{"squeeze non-1", func() { ops.Squeeze(a, 1) }, []string{"Squeeze", "axis 1", "extent 3"}},
		{"concat none", func() { ops.Concat(0) }, []string{"Concat", "no inputs"}},
		{"concat shapes", func() { ops.Concat(0, a, tensor.Ones(tensor.Float32, 2, 2)) }, []string{"Concat", "[2 3]", "[2 2]"}},
		{"concat dtypes", func() { ops.Concat(0, a, tensor.Ones(tensor.Float64, 2, 3)) }, []string{"Concat", "Float64"}},
		{"concat ranks", func() { ops.Concat(0, a, tensor.Ones(tensor.Float32, 3)) }, []string{"Concat"}},
		{"stack shapes", func() { ops.Stack(0, a, tensor.Ones(tensor.Float32, 3, 2)) }, []string{"Stack", "[3 2]"}},
		{"split sum", func() { ops.Split(a, 1, 1, 1) }, []string{"Split", "[1 1]", "3"}},
		{"splitN", func() { ops.SplitN(a, 1, 2) }, []string{"Split", "2 equal"}},
		{"slice range", func() { ops.Slice(a, []int{1, 1}, []int{2, 1}) }, []string{"Slice", "axis 0"}},
		{"slice rank", func() { ops.Slice(a, []int{0}, []int{1}) }, []string{"Slice"}},
		{"ss stride 0", func() { ops.StridedSlice(a, []int{0}, []int{1}, []int{0}) }, []string{"StridedSlice", "stride 0"}},
		{"ss lengths", func() { ops.StridedSlice(a, []int{0, 0}, []int{1}, []int{1}) }, []string{"StridedSlice"}},
		{"pad negative", func() { ops.Pad(a, [][2]int{{0, 0}, {-1, 0}}) }, []string{"Pad", "negative"}},
		{"pad rank", func() { ops.Pad(a, [][2]int{{1, 1}}) }, []string{"Pad", "rank 2"}},
		{"tile negative", func() { ops.Tile(a, -1) }, []string{"Tile"}},
		{"gather float idx", func() { ops.Gather(a, tensor.Ones(tensor.Float32, 2), 0) }, []string{"Gather", "Int32 or Int64", "Float32"}},
		{"gather out of range", func() { ops.Gather(a, idx, 1) }, []string{"Gather", "index 3", "extent 3"}},
		{"gather too negative", func() { ops.Gather(a, tensor.FromSlice([]int64{-3}), 0) }, []string{"Gather", "index -3"}},
		{"gather scalar x", func() { ops.Gather(tensor.Scalar(1.0), idx, 0) }, []string{"Gather", "axis 0"}},
		{"take shape", func() { ops.TakeAlongAxis(a, tensor.Zeros(tensor.Int32, 3, 1), 1) }, []string{"TakeAlongAxis", "[3 1]", "[2 3]"}},
		{"take out of range", func() { ops.TakeAlongAxis(a, tensor.FromSlice([]int32{0, 7}, 2, 1), 1) }, []string{"TakeAlongAxis", "index 7"}},
		{"onehot float", func() { ops.OneHot(a, 3, tensor.Float32) }, []string{"OneHot", "Float32"}},
		{"onehot depth", func() { ops.OneHot(idx, -1, tensor.Float32) }, []string{"OneHot", "depth -1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { testkit.MustPanic(t, c.f, c.wants...) })
	}
}

// TestReshapeErrors checks that each way a Reshape target can be wrong
// is refused with a message saying which extent is at fault and why.
func TestReshapeErrors(t *testing.T) {
	x := tensor.Ones(tensor.Float32, 2, 3)
	empty := tensor.Ones(tensor.Float32, 0, 3)
	cases := []struct {
		name  string
		x     *tensor.Tensor
		shape []int
		want  string
	}{
		{"two -1", x, []int{-1, -1}, "target shape [-1 -1] has more than one -1 (axes 0 and 1): only one extent can be inferred"},
		{"two -1 apart", x, []int{-1, 2, -1}, "more than one -1 (axes 0 and 2)"},
		{"negative", x, []int{-2, 3}, "target shape [-2 3] has extent -2 at axis 0: an extent must be non-negative, or -1 to be inferred"},
		{"negative with -1", x, []int{-1, -3}, "has extent -3 at axis 1"},
		{"counts differ", x, []int{4, 2}, "cannot reshape [2 3] to [4 2]: element counts differ: 6 vs 8"},
		{"counts differ to zero", x, []int{0, 3}, "element counts differ: 6 vs 0"},
		{"not a multiple", x, []int{-1, 4}, "cannot infer the -1 at axis 0 of target shape [-1 4]: input [2 3]'s 6 elements are not a multiple of 4, the product of the other extents"},
		{"-1 beside 0", x, []int{0, -1}, "cannot infer the -1 at axis 1 of target shape [0 -1]: the other extents multiply to 0, so no extent gives input [2 3]'s 6 elements"},
		{"-1 beside 0, empty input", empty, []int{-1, 0}, "cannot infer the -1 at axis 0 of target shape [-1 0]: the other extents multiply to 0, so any extent would fit input [0 3] (0 elements)"},
		{"overflow", x, []int{1 << 62, 4}, "target shape [4611686018427387904 4] has too many elements: its size overflows"},
		{"overflow wrapping to the size", tensor.Ones(tensor.Float32, 4), []int{1<<62 + 1, 4}, "its size overflows"},
		{"overflow with -1", x, []int{1 << 40, -1, 1 << 40}, "its size overflows"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { testkit.MustPanic(t, func() { ops.Reshape(c.x, c.shape...) }, "Reshape", c.want) })
	}
	// The targets these errors border on are accepted.
	for _, c := range []struct {
		x     *tensor.Tensor
		shape []int
		want  tensor.Shape
	}{
		{x, []int{-1}, tensor.Shape{6}},
		{x, []int{3, -1}, tensor.Shape{3, 2}},
		{empty, []int{-1, 3}, tensor.Shape{0, 3}},
		{empty, []int{0, 1 << 62, 1 << 62}, tensor.Shape{0, 1 << 62, 1 << 62}},
	} {
		if got := ops.Reshape(c.x, c.shape...).Shape(); !got.Equal(c.want) {
			t.Errorf("Reshape(%v, %v) has shape %v, want %v", c.x.Shape(), c.shape, got, c.want)
		}
	}
}

func TestShapeGradients(t *testing.T) {
	x := randT(31, -2, 2, 3, 4)
	y := randT(32, -2, 2, 4, 3)
	z := randT(33, -2, 2, 2, 4)
	x4 := randT(34, -1, 1, 2, 3, 1, 4)
	idx := tensor.FromSlice([]int32{2, 0, 2, -1}, 2, 2)
	lab := tensor.FromSlice([]int64{1, 0, 3}, 3, 1)
	neg := func(v *tensor.Tensor) *tensor.Tensor {
		return ops.StridedSlice(v, []int{math.MaxInt, 1}, []int{math.MinInt, 4}, []int{-2, 2})
	}
	cases := []struct {
		name string
		f    func(...*tensor.Tensor) *tensor.Tensor
		xs   []*tensor.Tensor
		ord2 bool
	}{
		{"transpose mul", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Mul(ops.Transpose(v[0]), v[1]) }, []*tensor.Tensor{x, y}, true},
		{"transpose rank4", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Transpose(v[0], 3, 0, -2, 1) }, []*tensor.Tensor{x4}, false},
		{"T", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Mul(ops.T(v[0]), ops.T(v[0])) }, []*tensor.Tensor{x4}, true},
		{"expand squeeze", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Squeeze(ops.ExpandDims(v[0], 1)) }, []*tensor.Tensor{x4}, false},
		{"concat", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Concat(0, v[0], v[1], v[0]) }, []*tensor.Tensor{x, z}, false},
		{"concat mul", func(v ...*tensor.Tensor) *tensor.Tensor {
			c := ops.Concat(-1, ops.T(v[0]), v[1])
			return ops.Mul(c, c)
		}, []*tensor.Tensor{x, y}, true},
		{"stack", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Stack(1, v[0], ops.Neg(v[0])) }, []*tensor.Tensor{x}, false},
		{"split", func(v ...*tensor.Tensor) *tensor.Tensor {
			p := ops.Split(v[0], 1, 1, 2, 1)
			return ops.Concat(1, p[2], p[0])
		}, []*tensor.Tensor{x}, false},
		{"slice", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Slice(v[0], []int{1, -3}, []int{-1, 2}) }, []*tensor.Tensor{x}, false},
		{"strided neg", func(v ...*tensor.Tensor) *tensor.Tensor { return neg(v[0]) }, []*tensor.Tensor{x}, false},
		{"strided mul", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Mul(neg(v[0]), neg(v[0])) }, []*tensor.Tensor{x}, true},
		{"pad", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Pad(v[0], [][2]int{{0, 2}, {1, 1}}) }, []*tensor.Tensor{x}, false},
		{"pad mul", func(v ...*tensor.Tensor) *tensor.Tensor {
			p := ops.Pad(v[0], [][2]int{{1, 0}, {0, 1}})
			return ops.Mul(p, p)
		}, []*tensor.Tensor{x}, true},
		{"tile", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Tile(v[0], 2, 1, 3) }, []*tensor.Tensor{z}, false},
		{"gather", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Gather(v[0], idx, 0) }, []*tensor.Tensor{x}, false},
		{"gather mul", func(v ...*tensor.Tensor) *tensor.Tensor {
			g := ops.Gather(v[0], idx, -1)
			return ops.Mul(g, g)
		}, []*tensor.Tensor{x}, true},
		{"take", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.TakeAlongAxis(v[0], lab, 1) }, []*tensor.Tensor{x}, false},
		{"take mul", func(v ...*tensor.Tensor) *tensor.Tensor {
			g := ops.TakeAlongAxis(v[0], lab, 1)
			return ops.Mul(g, g)
		}, []*tensor.Tensor{x}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkGrad(t, c.name, c.f, c.xs...)
			if c.ord2 {
				checkGrad2(t, c.name, c.f, c.xs...)
			}
		})
	}
}

func BenchmarkTranspose2D(b *testing.B) {
	x := tensor.Ones(tensor.Float32, 1024, 1024)
	b.SetBytes(4 * 1024 * 1024)
	for b.Loop() {
		ops.Transpose(x)
	}
}

func BenchmarkMaxLastAxis(b *testing.B) {
	x := tensor.Ones(tensor.Float32, 1024, 1024)
	b.SetBytes(4 * 1024 * 1024)
	for b.Loop() {
		ops.Max(x, -1)
	}
}

// TestFloat32Gradients runs the gradient rules in float32 (the networks'
// type) and compares them with the float64 ones.
func TestFloat32Gradients(t *testing.T) {
	x := randT(41, -2, 2, 3, 4)
	idx := tensor.FromSlice([]int64{3, 3, 0}, 3)
	lab := tensor.FromSlice([]int32{1, 0, 3}, 3, 1)
	g := func(v ...*tensor.Tensor) *tensor.Tensor {
		a := ops.Gather(v[0], idx, 1)
		b := ops.TakeAlongAxis(v[0], lab, -1)
		m := ops.MaxKeepDims(v[0], 1)
		p := ops.ProdKeepDims(v[0], 1)
		s := ops.StridedSlice(ops.Pad(v[0], [][2]int{{0, 0}, {1, 1}}), []int{0, math.MaxInt}, []int{3, math.MinInt}, []int{1, -2})
		c := ops.Concat(1, a, b, m, p, ops.Transpose(ops.Transpose(s)), ops.MeanKeepDims(v[0], -1))
		return ops.Sum(ops.Mul(c, c))
	}
	g64 := spore.Grad(g)(x)[0]
	g32 := spore.Grad(g)(ops.Cast(x, tensor.Float32))[0]
	if g32.DType() != tensor.Float32 {
		t.Fatalf("float32 gradient has dtype %v", g32.DType())
	}
	assertClose(t, "float32 vs float64", g32, []int{3, 4}, g64.Float64s(), 1e-4)
}

func TestAttrStrings(t *testing.T) {
	cases := []struct {
		attrs fmt.Stringer
		want  string
	}{
		{ops.PermAttr{Perm: []int{1, 0}}, "perm=[1 0]"},
		{ops.AxisAttr{Axis: 2}, "axis=2"},
		{ops.SliceAttrs{Begin: []int{1}, Strides: []int{-1}, Size: []int{2}, Shape: tensor.Shape{3}}, "begin=[1] strides=[-1] size=[2] shape=[3]"},
		{ops.ScatterAttrs{Axis: 1, Extent: 5}, "axis=1 extent=5"},
		{ops.OneHotAttrs{Depth: 4, DType: tensor.Float32}, "depth=4 dtype=Float32"},
		{ops.ArgAttrs{Axis: 0, KeepDims: true}, "axis=0 keep=true"},
	}
	for _, c := range cases {
		if got := fmt.Sprint(c.attrs); got != c.want {
			t.Errorf("%T prints %q, want %q", c.attrs, got, c.want)
		}
	}
}
