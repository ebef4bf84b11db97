package ops

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/freelist"
	"github.com/sporeml/spore/tensor"
)

// Sorting: ArgSort and the top-k selection are primitives that produce
// Int64 indices; Sort and TopK pick the values with TakeAlongAxis, whose
// gradient scatters the cotangent back to the picked positions. The order
// is total and stable: equal elements keep their index order, and NaN
// counts as larger than every number (last ascending, as NumPy sorts;
// first descending, as PyTorch does; ArgMax agrees).

// SortAttrs are ArgSort's attributes: the (normalised) axis and the
// direction.
type SortAttrs struct {
	Axis       int
	Descending bool
}

// String prints every attribute, for IR dumps and CSE keys.
func (a SortAttrs) String() string { return fmt.Sprintf("axis=%d descending=%v", a.Axis, a.Descending) }

// TopKAttrs are the attribute of the top-k selection along the last axis:
// how many elements it keeps.
type TopKAttrs struct{ K int }

// String prints every attribute, for IR dumps and CSE keys.
func (a TopKAttrs) String() string { return fmt.Sprintf("k=%d", a.K) }

var ArgSortPrim, ArgTopKPrim *core.Prim

type sortable interface {
	tensor.Number
}

// keyed is an element with its position along the sorted axis.
type keyed[T sortable] struct {
	v T
	i int
}

// ascending orders NaN after every number and equal values by position,
// so that an unstable sort of keyed elements is a stable sort of values.
func ascending[T sortable](a, b keyed[T]) int {
	an, bn := a.v != a.v, b.v != b.v
	switch {
	case an != bn:
		if an {
			return 1
		}
		return -1
	case !an && a.v < b.v:
		return -1
	case !an && a.v > b.v:
		return 1
	}
	return cmp.Compare(a.i, b.i)
}

// descending orders NaN before every number and equal values by position.
func descending[T sortable](a, b keyed[T]) int {
	an, bn := a.v != a.v, b.v != b.v
	switch {
	case an != bn:
		if an {
			return -1
		}
		return 1
	case !an && a.v > b.v:
		return -1
	case !an && a.v < b.v:
		return 1
	}
	return cmp.Compare(a.i, b.i)
}

// getKeyed returns a scratch row of n elements from pool, which holds
// the rows of one sort kernel (one element type).
func getKeyed[T sortable](pool *freelist.List[[]keyed[T]], n int) *[]keyed[T] {
	p := pool.Get()
	if cap(*p) < n {
		*p = make([]keyed[T], n)
	}
	*p = (*p)[:n]
	return p
}

// argSortInto writes, for each line along the middle axis of
// [outer, n, inner], the positions of its elements in sorted order.
func argSortInto[T sortable](pool *freelist.List[[]keyed[T]], out []int64, x []T, outer, n, inner int, desc bool) {
	if n == 0 {
		return
	}
	order := ascending[T]
	if desc {
		order = descending[T]
	}
	sp := getKeyed[T](pool, n)
	row := *sp
	for o := range outer {
		base := o * n * inner
		for i := range inner {
			for j := range row {
				row[j] = keyed[T]{x[base+j*inner+i], j}
			}
			slices.SortFunc(row, order)
			for j, e := range row {
				out[base+j*inner+i] = int64(e.i)
			}
		}
	}
	pool.Put(sp)
}

// topKInto writes, for each row of n elements (the last axis), the
// positions of its k largest in descending order. For small k it keeps a
// heap of the best k seen, whose root is the worst of them (n log k work);
// otherwise it sorts the row.
func topKInto[T sortable](pool *freelist.List[[]keyed[T]], out []int64, x []T, rows, n, k int) {
	if k == 0 {
		return
	}
	sp := getKeyed[T](pool, n)
	row := *sp
	for r := range rows {
		src := x[r*n : (r+1)*n]
		for j, v := range src {
			row[j] = keyed[T]{v, j}
		}
		best := row
		if k*4 < n {
			best = row[:k]
			// Heap order: parent after child in descending order, so
			// best[0] is the element the next better one replaces.
			for i := k/2 - 1; i >= 0; i-- {
				siftDown(best, i)
			}
			for _, e := range row[k:] {
				if descending(e, best[0]) < 0 {
					best[0] = e
					siftDown(best, 0)
				}
			}
		}
		slices.SortFunc(best, descending[T])
		dst := out[r*k : (r+1)*k]
		for j := range dst {
			dst[j] = int64(best[j].i)
		}
	}
	pool.Put(sp)
}

// siftDown restores the heap property below h[i] for a heap whose root is
// its last element in descending order (its worst).
func siftDown[T sortable](h []keyed[T], i int) {
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && descending(h[c+1], h[c]) > 0 {
			c++
		}
		if descending(h[c], h[i]) <= 0 {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

func checkSortable(op string, x *tensor.Tensor) {
	if d := x.DType(); !numericDType(d) {
		core.Panicf(op, "unsupported dtype %v (shape %v)", d, x.Shape())
	}
}

func init() {
	ArgSortPrim = core.Define(&core.Prim{
		Name:   "ArgSort",
		Batch:  batchOne(&ArgSortPrim, shiftSortAttrs),
		Traits: core.Traits{Cost: 8},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			a, x := attrs.(SortAttrs), in[0]
			checkSortable("ArgSort", x)
			if a.Axis < 0 || a.Axis >= x.Rank() {
				core.Panicf("ArgSort", "axis %d out of range for input %v", a.Axis, x.Shape())
			}
			return tensor.Meta{Shape: x.Shape(), DType: tensor.Int64}
		},
	})
	ArgTopKPrim = core.Define(&core.Prim{
		Name:   "ArgTopK",
		Batch:  batchLastAxis(&ArgTopKPrim),
		Traits: core.Traits{Cost: 4},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			k, x := attrs.(TopKAttrs).K, in[0]
			checkSortable("TopK", x)
			xs := x.Shape()
			if len(xs) == 0 || k < 0 || k > xs[len(xs)-1] {
				core.Panicf("TopK", "k=%d out of range for input %v (want 0 <= k <= the last axis's extent)", k, xs)
			}
			s := xs.Clone()
			s[len(s)-1] = k
			return tensor.Meta{Shape: s, DType: tensor.Int64}
		},
	})
	registerNumbers(ArgSortPrim, numberType.argSort)
	registerNumbers(ArgTopKPrim, numberType.topK)
}

// argSortKernel returns ArgSort's kernel for T, with its own pool of
// sort buffers: a compiled plan running a sort allocates nothing once warm.
func argSortKernel[T sortable]() core.KernelFunc {
	pool := new(freelist.List[[]keyed[T]])
	return func(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
		a := attrs.(SortAttrs)
		outer, n, inner := axisSplit(in[0].Shape(), a.Axis)
		argSortInto(pool, out.Data().([]int64), in[0].Data().([]T), outer, n, inner, a.Descending)
	}
}

// topKKernel returns ArgTopK's kernel for T, with its own pool of buffers.
func topKKernel[T sortable]() core.KernelFunc {
	pool := new(freelist.List[[]keyed[T]])
	return func(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
		k := attrs.(TopKAttrs).K
		xs := in[0].Shape()
		n := xs[len(xs)-1]
		rows := xs[:len(xs)-1].Size()
		topKInto(pool, out.Data().([]int64), in[0].Data().([]T), rows, n, k)
	}
}

// ArgSort returns, as Int64, the positions that sort x along axis
// (negative counts from the end): MindSpore's ops.argsort. The sort is
// stable — equal elements keep their order, in both directions — and NaN
// counts as the largest value, so it comes last ascending (as in NumPy)
// and first descending (as in PyTorch). It is not differentiable.
func ArgSort(x *tensor.Tensor, axis int, descending bool) *tensor.Tensor {
	checkSortable("ArgSort", x)
	if x.Rank() == 0 {
		core.Panicf("ArgSort", "input is a scalar: it has no axis %d", axis)
	}
	a := SortAttrs{Axis: core.NormAxis("ArgSort", axis, x.Rank()), Descending: descending}
	return core.Apply(ArgSortPrim, a, x)
}

// Sort returns x sorted along axis (negative counts from the end) and the
// Int64 positions the values came from: MindSpore's ops.sort. The order is
// ArgSort's (stable, NaN largest). The gradient of the values flows back
// to the positions they came from.
func Sort(x *tensor.Tensor, axis int, descending bool) (values, indices *tensor.Tensor) {
	idx := ArgSort(x, axis, descending)
	return TakeAlongAxis(x, idx, axis), idx
}

// TopK returns the k largest elements of x along its last axis, largest
// first, and their Int64 positions: MindSpore's ops.topk with its defaults
// (largest, sorted). Ties go to the lower position first and NaN counts as
// the largest value. k must lie in [0, n] for a last axis of extent n. The
// gradient of the values flows back to the positions they came from.
func TopK(x *tensor.Tensor, k int) (values, indices *tensor.Tensor) {
	idx := core.Apply(ArgTopKPrim, TopKAttrs{K: k}, x)
	return TakeAlongAxis(x, idx, -1), idx
}
