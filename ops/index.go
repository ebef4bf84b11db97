package ops

import (
	"fmt"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// Indexing ops: Gather and TakeAlongAxis with their scatter-add gradients,
// and OneHot. Index tensors are Int32 or Int64; a negative index counts
// from the end of its axis, as in NumPy.
//
// Index values (and class labels) are only known when kernels run, so
// every check of them is a kernel: a check primitive (CheckIndices,
// CheckLabels) that copies its operand through and panics with a
// *tensor.Error naming the op and the bad value. A check written in the Go
// code around the ops would only see concrete tensors and silently vanish
// in Graph mode. The check is a primitive of its own, ahead of the op it
// guards, and Impure, so that the compiler neither removes it when the
// guarded result goes unused (the forward Gather is dead in a gradient-only
// graph) nor folds or merges it: PyNative mode runs it at exactly that
// point, and so does every compiled plan, with the same error. The index
// kernels check again before touching memory.

// ScatterAttrs are the attributes of the scatter-add primitives that carry
// the gradients of Gather and TakeAlongAxis: the axis indexed and its
// extent in the gathered-from tensor, which the gradient must restore.
type ScatterAttrs struct {
	Axis   int
	Extent int
}

// String prints every attribute, for IR dumps and CSE keys.
func (a ScatterAttrs) String() string { return fmt.Sprintf("axis=%d extent=%d", a.Axis, a.Extent) }

var GatherPrim, GatherGradPrim, TakeAlongAxisPrim, TakeAlongAxisGradPrim, OneHotPrim, CheckLabelsPrim, CheckIndicesPrim *core.Prim

func checkIndexDType(op string, idx *tensor.Tensor) {
	if d := idx.DType(); d != tensor.Int32 && d != tensor.Int64 {
		core.Panicf(op, "indices must be Int32 or Int64, got %v %v", idx.Shape(), d)
	}
}

// badIndex reports an index outside [-n, n). It is kept out of the
// kernels' loops so that they stay small.
//
//go:noinline
func badIndex(op string, v int64, ax, n int) {
	core.Panicf(op, "index %d out of range for axis %d of extent %d", v, ax, n)
}

// checkIndices verifies every index once, before the copy loops run, so
// that those need no checks and no output is written half.
func checkIndices[I int32 | int64](op string, idx []I, ax, n int) {
	for _, v := range idx {
		if int64(v) < -int64(n) || int64(v) >= int64(n) {
			badIndex(op, int64(v), ax, n)
		}
	}
}

func wrapIndex[I int32 | int64](v I, n int) int {
	k := int(v)
	if k < 0 {
		k += n
	}
	return k
}

// registerIndex registers, for an index primitive keyed by its index
// operand, the Int32 and Int64 instantiations of one generic kernel.
func registerIndex(p *core.Prim, i32, i64 core.KernelFunc) {
	register[int32](p, i32)
	register[int64](p, i64)
}

// checkIndicesKernel is CheckIndices' kernel for index type I.
func checkIndicesKernel[I int32 | int64](attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
	a := attrs.(IndexCheckAttrs)
	idx := in[0].Data().([]I)
	checkIndices(a.Op, idx, a.Axis, a.Extent)
	copy(out.Data().([]I), idx)
}

// IndexCheckAttrs are the attributes of the index check: the op guarded
// (named in its error), and the axis indexed with its extent.
type IndexCheckAttrs struct {
	Op           string
	Axis, Extent int
}

// String prints every attribute, for IR dumps and CSE keys.
func (a IndexCheckAttrs) String() string {
	return fmt.Sprintf("op=%s axis=%d extent=%d", a.Op, a.Axis, a.Extent)
}

// checkedIndices passes idx through the index check for op's axis ax of
// extent n.
func checkedIndices(op string, idx *tensor.Tensor, ax, n int) *tensor.Tensor {
	return core.Apply(CheckIndicesPrim, IndexCheckAttrs{Op: op, Axis: ax, Extent: n}, idx)
}

func init() {
	CheckIndicesPrim = core.Define(&core.Prim{
		Name:   "CheckIndices",
		Batch:  batchBroadcasting(&CheckIndicesPrim),
		Traits: core.Traits{Impure: true},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			a := attrs.(IndexCheckAttrs)
			checkIndexDType(a.Op, in[0])
			return tensor.Meta{Shape: in[0].Shape().Clone(), DType: in[0].DType()}
		},
	})
	GatherPrim = core.Define(&core.Prim{
		Name:       "Gather",
		IndexInput: 2,
		Batch:      batchGather,
		Traits:     core.Traits{Cost: 0},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			ax := attrs.(AxisAttr).Axis
			x, idx := in[0], in[1]
			checkIndexDType("Gather", idx)
			xs := x.Shape()
			if ax < 0 || ax >= len(xs) {
				core.Panicf("Gather", "axis %d out of range for input %v", ax, xs)
			}
			s := make(tensor.Shape, 0, len(xs)-1+idx.Rank())
			s = append(append(append(s, xs[:ax]...), idx.Shape()...), xs[ax+1:]...)
			return tensor.Meta{Shape: s, DType: x.DType()}
		},
		JVP: linearJVP(&GatherPrim, 0),
		VJP: linearVJP(&GatherGradPrim, 0, scatterAttrsOf),
	})
	// GatherGradPrim adds the rows of g back at the positions the indices
	// name (a scatter-add: repeated indices accumulate). Its gradient with
	// respect to g is Gather itself.
	GatherGradPrim = core.Define(&core.Prim{
		Name:       "GatherGrad",
		IndexInput: 2,
		Batch:      batchGatherGrad,
		Traits:     core.Traits{Cost: 1},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			a := attrs.(ScatterAttrs)
			g, idx := in[0], in[1]
			checkIndexDType("GatherGrad", idx)
			gs, is := g.Shape(), idx.Shape()
			if !numericDType(g.DType()) || a.Axis < 0 || a.Extent < 0 || len(gs) < a.Axis+len(is) || !gs[a.Axis:a.Axis+len(is)].Equal(is) {
				core.Panicf("GatherGrad", "gradient %v %v does not fit indices %v at axis %d", gs, g.DType(), is, a.Axis)
			}
			s := make(tensor.Shape, 0, len(gs)-len(is)+1)
			s = append(append(append(s, gs[:a.Axis]...), a.Extent), gs[a.Axis+len(is):]...)
			return tensor.Meta{Shape: s, DType: g.DType()}
		},
		JVP: linearJVP(&GatherGradPrim, 0),
		VJP: linearVJP(&GatherPrim, 0, gatherAttrsOf),
	})
	registerIndex(CheckIndicesPrim, checkIndicesKernel[int32], checkIndicesKernel[int64])
	registerIndexedMoves(GatherPrim)
	registerScatterAdds(GatherGradPrim)
}

// scatterAttrsOf gives the attributes of a gather's transpose, the
// scatter-add onto the gathered-from tensor in[0]: the axis and its extent.
func scatterAttrsOf(attrs any, in []*tensor.Tensor) any {
	ax := attrs.(AxisAttr).Axis
	return ScatterAttrs{Axis: ax, Extent: in[0].Shape()[ax]}
}

// gatherAttrsOf gives the attributes of a scatter-add's transpose, the
// gather reading the same positions back.
func gatherAttrsOf(attrs any, _ []*tensor.Tensor) any {
	return AxisAttr{attrs.(ScatterAttrs).Axis}
}

func numericDType(d tensor.DType) bool {
	return d.IsFloat() || d.IsInt()
}

// The kernels below are keyed by the gathered (or scattered) values'
// dtype T and the indices' dtype I, Int32 or Int64 (IndexInput), so that
// none of them switches on a type when it runs.

// registerIndexedMoves installs an index op's element-moving kernels
// (moveKernel) for every dtype of elemTypes and both index dtypes.
func registerIndexedMoves(p *core.Prim) {
	for _, t := range elemTypes {
		for _, ix := range []tensor.DType{tensor.Int32, tensor.Int64} {
			p.RegisterKey(core.Key{DType: t.dtype(), Index: ix}, core.CPU, t.move(p, ix))
		}
	}
}

// registerScatterAdds installs a scatter-add's kernels (numberType's
// scatterAdd) for every number dtype and both index dtypes.
func registerScatterAdds(p *core.Prim) {
	for _, t := range numberTypes {
		for _, ix := range []tensor.DType{tensor.Int32, tensor.Int64} {
			p.RegisterKey(core.Key{DType: t.dtype(), Index: ix}, core.CPU, t.scatterAdd(p, ix))
		}
	}
}

// scatterAddKernel returns the kernel of scatter-add p (GatherGrad or
// TakeAlongAxisGrad) for values T and indices of dtype ix.
func scatterAddKernel[T tensor.Number](p *core.Prim, ix tensor.DType) core.KernelFunc {
	switch {
	case p == GatherGradPrim && ix == tensor.Int32:
		return gatherGradKernel[T, int32]
	case p == GatherGradPrim:
		return gatherGradKernel[T, int64]
	case ix == tensor.Int32:
		return takeAlongAxisGradKernel[T, int32]
	}
	return takeAlongAxisGradKernel[T, int64]
}

// rowsFunc moves elements between dst and src at the indices idx, for
// outer blocks of an axis of extent n with inner elements per position
// (gatherRows, takeAlong and their scatter-adds). The kernels of the four
// index ops differ only in which one they run.
type rowsFunc[T any, I int32 | int64] func(dst, src []T, idx []I, outer, n, inner int)

// readAlong is the kernel of a gather: rows reads x (in[0]) along the
// AxisAttr's axis at the indices in[1], checked first, into out.
func readAlong[T any, I int32 | int64](op string, rows rowsFunc[T, I], attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
	ax := attrs.(AxisAttr).Axis
	xs := in[0].Shape()
	ix := in[1].Data().([]I)
	checkIndices(op, ix, ax, xs[ax])
	rows(out.Data().([]T), in[0].Data().([]T), ix, xs[:ax].Size(), xs[ax], xs[ax+1:].Size())
}

// addAlong is the kernel of a scatter-add, a gather's transpose: rows adds
// g (in[0]) into a zeroed out along the ScatterAttrs' axis at the indices
// in[1], checked first.
func addAlong[T tensor.Number, I int32 | int64](op string, rows rowsFunc[T, I], attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
	a := attrs.(ScatterAttrs)
	os := out.Shape()
	ix := in[1].Data().([]I)
	checkIndices(op, ix, a.Axis, a.Extent)
	rows(out.Data().([]T), in[0].Data().([]T), ix, os[:a.Axis].Size(), a.Extent, os[a.Axis+1:].Size())
}

func gatherKernel[T any, I int32 | int64](attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
	readAlong("Gather", gatherRows[T, I], attrs, in, out)
}

// gatherRows copies, for each outer position, the inner-sized row named by
// each index: rows are contiguous in both tensors.
func gatherRows[T any, I int32 | int64](dst, src []T, idx []I, outer, n, inner int) {
	m := len(idx)
	for o := range outer {
		s := src[o*n*inner : (o+1)*n*inner]
		d := dst[o*m*inner : (o+1)*m*inner]
		for j, v := range idx {
			k := wrapIndex(v, n)
			copy(d[j*inner:(j+1)*inner], s[k*inner:(k+1)*inner])
		}
	}
}

func gatherGradKernel[T tensor.Number, I int32 | int64](attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
	addAlong("GatherGrad", scatterAddRows[T, I], attrs, in, out)
}

func scatterAddRows[T tensor.Number, I int32 | int64](dst, src []T, idx []I, outer, n, inner int) {
	clear(dst)
	m := len(idx)
	for o := range outer {
		d := dst[o*n*inner : (o+1)*n*inner]
		s := src[o*m*inner : (o+1)*m*inner]
		for j, v := range idx {
			k := wrapIndex(v, n)
			row := d[k*inner : (k+1)*inner]
			for i, g := range s[j*inner : (j+1)*inner] {
				row[i] += g
			}
		}
	}
}

// Gather selects slices of x along axis by an index tensor of any shape
// (MindSpore's ops.gather): the result's shape is x's with axis replaced by
// the indices' shape. Indices are Int32 or Int64, negative ones count from
// the end, and one outside [-n, n) makes the kernel panic. The gradient
// adds back into the selected slices (repeated indices accumulate).
func Gather(x, indices *tensor.Tensor, axis int) *tensor.Tensor {
	ax := core.NormAxis("Gather", axis, x.Rank())
	return core.Apply(GatherPrim, AxisAttr{ax}, x, checkedIndices("Gather", indices, ax, x.Shape()[ax]))
}

func init() {
	TakeAlongAxisPrim = core.Define(&core.Prim{
		Name:       "TakeAlongAxis",
		IndexInput: 2,
		Batch:      batchAlong(&TakeAlongAxisPrim, shiftAxisAttr),
		Traits:     core.Traits{Cost: 0},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			ax := attrs.(AxisAttr).Axis
			x, idx := in[0], in[1]
			checkIndexDType("TakeAlongAxis", idx)
			if !offAxisEqual(x.Shape(), idx.Shape(), ax) {
				core.Panicf("TakeAlongAxis", "indices %v must match input %v on every axis but %d", idx.Shape(), x.Shape(), ax)
			}
			return tensor.Meta{Shape: idx.Shape().Clone(), DType: x.DType()}
		},
		JVP: linearJVP(&TakeAlongAxisPrim, 0),
		VJP: linearVJP(&TakeAlongAxisGradPrim, 0, scatterAttrsOf),
	})
	// TakeAlongAxisGradPrim adds each element of g back at the position
	// along the axis that its index names; its gradient is TakeAlongAxis.
	TakeAlongAxisGradPrim = core.Define(&core.Prim{
		Name:       "TakeAlongAxisGrad",
		IndexInput: 2,
		Batch:      batchAlong(&TakeAlongAxisGradPrim, shiftScatterAttrs),
		Traits:     core.Traits{Cost: 1},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			a := attrs.(ScatterAttrs)
			g, idx := in[0], in[1]
			checkIndexDType("TakeAlongAxisGrad", idx)
			gs := g.Shape()
			if !numericDType(g.DType()) || !gs.Equal(idx.Shape()) || a.Axis < 0 || a.Axis >= len(gs) || a.Extent < 0 {
				core.Panicf("TakeAlongAxisGrad", "gradient %v %v does not fit indices %v at axis %d", gs, g.DType(), idx.Shape(), a.Axis)
			}
			s := gs.Clone()
			s[a.Axis] = a.Extent
			return tensor.Meta{Shape: s, DType: g.DType()}
		},
		JVP: linearJVP(&TakeAlongAxisGradPrim, 0),
		VJP: linearVJP(&TakeAlongAxisPrim, 0, gatherAttrsOf),
	})
	registerIndexedMoves(TakeAlongAxisPrim)
	registerScatterAdds(TakeAlongAxisGradPrim)
}

func offAxisEqual(a, b tensor.Shape, ax int) bool {
	if len(a) != len(b) || ax < 0 || ax >= len(a) {
		return false
	}
	for i := range a {
		if i != ax && a[i] != b[i] {
			return false
		}
	}
	return true
}

func takeAlongAxisKernel[T any, I int32 | int64](attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
	readAlong("TakeAlongAxis", takeAlong[T, I], attrs, in, out)
}

// takeAlong reads dst[o, j, i] = src[o, idx[o, j, i], i]; the index tensor
// and dst share the shape [outer, m, inner].
func takeAlong[T any, I int32 | int64](dst, src []T, idx []I, outer, n, inner int) {
	if inner == 0 || outer == 0 {
		return
	}
	m := len(idx) / (outer * inner)
	for o := range outer {
		s := src[o*n*inner : (o+1)*n*inner]
		for j := range m {
			p := (o*m + j) * inner
			for i, v := range idx[p : p+inner] {
				dst[p+i] = s[wrapIndex(v, n)*inner+i]
			}
		}
	}
}

func takeAlongAxisGradKernel[T tensor.Number, I int32 | int64](attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
	addAlong("TakeAlongAxisGrad", putAlong[T, I], attrs, in, out)
}

// putAlong is takeAlong's adjoint: dst[o, idx[o, j, i], i] += src[o, j, i].
func putAlong[T tensor.Number, I int32 | int64](dst, src []T, idx []I, outer, n, inner int) {
	clear(dst)
	if inner == 0 || outer == 0 {
		return
	}
	m := len(idx) / (outer * inner)
	for o := range outer {
		d := dst[o*n*inner : (o+1)*n*inner]
		for j := range m {
			p := (o*m + j) * inner
			for i, v := range idx[p : p+inner] {
				d[wrapIndex(v, n)*inner+i] += src[p+i]
			}
		}
	}
}

// TakeAlongAxis picks one element of x along axis for every entry of
// indices (NumPy's take_along_axis): indices has x's rank and x's extents
// on every other axis, and the result has indices' shape. It is how
// cross-entropy reads the logit of each integer label. Index rules are
// Gather's; the gradient adds back at the picked positions.
func TakeAlongAxis(x, indices *tensor.Tensor, axis int) *tensor.Tensor {
	ax := core.NormAxis("TakeAlongAxis", axis, x.Rank())
	return core.Apply(TakeAlongAxisPrim, AxisAttr{ax}, x, checkedIndices("TakeAlongAxis", indices, ax, x.Shape()[ax]))
}

// OneHotAttrs are OneHot's attributes: the number of classes and the
// result's dtype.
type OneHotAttrs struct {
	Depth int
	DType tensor.DType
}

// String prints every attribute, for IR dumps and CSE keys.
func (a OneHotAttrs) String() string { return fmt.Sprintf("depth=%d dtype=%v", a.Depth, a.DType) }

func init() {
	OneHotPrim = core.Define(&core.Prim{
		Name:   "OneHot",
		Batch:  batchBroadcasting(&OneHotPrim),
		Traits: core.Traits{Cost: 1},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			a := attrs.(OneHotAttrs)
			idx := in[0]
			checkIndexDType("OneHot", idx)
			if a.Depth < 0 || a.DType == tensor.Invalid || a.DType > tensor.Uint8 {
				core.Panicf("OneHot", "bad depth %d or dtype %v (indices %v)", a.Depth, a.DType, idx.Shape())
			}
			return tensor.Meta{Shape: append(idx.Shape().Clone(), a.Depth), DType: a.DType}
		},
	})
	registerIndex(OneHotPrim, oneHotKernel[int32](), oneHotKernel[int64]())
}

// oneHotKernel returns OneHot's kernel for index type I. OneHot is keyed
// by its indices; the result's dtype comes from the attributes, so the
// kernel picks its fill loop from a table indexed by that dtype, built
// here once.
func oneHotKernel[I int32 | int64]() core.KernelFunc {
	var fill [tensor.Uint8 + 1]func(dst any, idx []I, depth int)
	fill[tensor.Float32] = func(dst any, idx []I, d int) { oneHotInto(dst.([]float32), idx, d, 1) }
	fill[tensor.Float64] = func(dst any, idx []I, d int) { oneHotInto(dst.([]float64), idx, d, 1) }
	fill[tensor.Int32] = func(dst any, idx []I, d int) { oneHotInto(dst.([]int32), idx, d, 1) }
	fill[tensor.Int64] = func(dst any, idx []I, d int) { oneHotInto(dst.([]int64), idx, d, 1) }
	fill[tensor.Uint8] = func(dst any, idx []I, d int) { oneHotInto(dst.([]uint8), idx, d, 1) }
	fill[tensor.Bool] = func(dst any, idx []I, d int) { oneHotInto(dst.([]bool), idx, d, true) }
	return func(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
		fill[out.DType()](out.Data(), in[0].Data().([]I), attrs.(OneHotAttrs).Depth)
	}
}

func oneHotInto[T any, I int32 | int64](dst []T, idx []I, depth int, one T) {
	clear(dst)
	for i, v := range idx {
		if v >= 0 && int64(v) < int64(depth) {
			dst[i*depth+int(v)] = one
		}
	}
}

// OneHot returns, for Int32 or Int64 indices of shape S, a tensor of shape
// S+[depth] and dtype dt holding 1 at each index's position and 0
// elsewhere. An index outside [0, depth) gives a row of zeros, as in
// MindSpore and TensorFlow. It is not differentiable.
func OneHot(indices *tensor.Tensor, depth int, dt tensor.DType) *tensor.Tensor {
	return core.Apply(OneHotPrim, OneHotAttrs{Depth: depth, DType: dt}, indices)
}

// LabelAttrs are the attributes of the label check: the op that checks
// (named in its error), the number of classes, and the shape of the
// predictions the labels go with (for the message).
type LabelAttrs struct {
	Op      string
	Classes int
	Logits  tensor.Shape
}

// String prints every attribute, for IR dumps and CSE keys.
func (a LabelAttrs) String() string {
	return fmt.Sprintf("op=%s classes=%d logits=%v", a.Op, a.Classes, a.Logits)
}

func init() {
	// CheckLabelsPrim copies class labels through, refusing any outside
	// [0, classes); see the note at the top of the file for why it is a
	// primitive, and Impure.
	CheckLabelsPrim = core.Define(&core.Prim{
		Name:   "CheckLabels",
		Batch:  batchBroadcasting(&CheckLabelsPrim),
		Traits: core.Traits{Impure: true},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			a := attrs.(LabelAttrs)
			y := in[0]
			if d := y.DType(); d != tensor.Int32 && d != tensor.Int64 {
				core.Panicf(a.Op, "labels must be Int32 or Int64, got %v %v", y.Shape(), d)
			}
			if a.Classes < 0 {
				core.Panicf(a.Op, "negative class count %d", a.Classes)
			}
			return tensor.Meta{Shape: y.Shape().Clone(), DType: y.DType()}
		},
	})
	registerIndex(CheckLabelsPrim, checkLabelsKernel[int32], checkLabelsKernel[int64])
}

func checkLabelsKernel[I int32 | int64](attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
	checkLabels(attrs.(LabelAttrs), out.Data().([]I), in[0].Data().([]I))
}

func checkLabels[I int32 | int64](a LabelAttrs, dst, src []I) {
	for i, v := range src {
		if v < 0 || int64(v) >= int64(a.Classes) {
			badLabel(a, int64(v), i)
		}
	}
	copy(dst, src)
}

// badLabel reports a label outside [0, classes), kept out of the loop.
//
//go:noinline
func badLabel(a LabelAttrs, v int64, i int) {
	core.Panicf(a.Op, "label %d at position %d is out of range for %d classes (logits %v)", v, i, a.Classes, a.Logits)
}

// CheckLabels returns integer class labels (Int32 or Int64) unchanged
// after checking that each lies in [0, classes), where classes is the last
// extent of logits, the predictions they go with. A label outside makes it
// panic with a *tensor.Error naming op, the label and its position. The
// check runs when the values are known: at once in PyNative mode, and on
// every call of the compiled plan in Graph mode, with the same error.
// Losses over class indices pass their labels through it.
func CheckLabels(op string, logits, labels *tensor.Tensor) *tensor.Tensor {
	ls := logits.Shape()
	if len(ls) == 0 {
		core.Panicf(op, "want logits with a class axis, got a scalar")
	}
	return core.Apply(CheckLabelsPrim, LabelAttrs{Op: op, Classes: ls[len(ls)-1], Logits: ls.Clone()}, labels)
}
