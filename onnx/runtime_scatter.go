package onnx

import (
	"fmt"
	"strings"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Scatters at indices known only when the model runs: indices computed
// from the model's inputs are data, not values a plan is specialised on.
// The indices are range-checked by spore's index check (a kernel, so the
// same error in both modes, naming the op, the index and the extent),
// negative ones wrap, and they become flat row numbers of the data viewed
// as [rows, inner]. The scatter itself is GatherGrad, spore's scatter-add
// (Gather's gradient): adding the updates onto zeros at those rows, and
// ones to count the rows written, the result takes the sum where a row
// was written and the data elsewhere. With distinct indices, which ONNX
// requires for reduction "none", that is the update itself. Gradients
// flow to the data and the updates through the ops used.

// oneOrErr returns a single result, or the error.
func oneOrErr(t *tensor.Tensor, err error) ([]*tensor.Tensor, error) {
	if err != nil {
		return nil, err
	}
	return one(t)
}

// checkIndices passes run-time indices (Int32 or Int64) through spore's
// index check for the node's axis of extent n. The check is a kernel,
// run when the values are known, in both modes; its error names the node
// (see kernelOp), so that a compiled plan's failure reads as PyNative
// mode's.
func (c *nodeCtx) checkIndices(idx *tensor.Tensor, axis, n int) *tensor.Tensor {
	return core.Apply(ops.CheckIndicesPrim, ops.IndexCheckAttrs{Op: c.kernelOp(), Axis: axis, Extent: n}, idx)
}

// kernelOpPrefix starts the op name of a kernel error that names its
// ONNX node (see kernelOp and nodeError).
const kernelOpPrefix = "onnx: node "

// kernelOp is the op name for checks that the node's kernels make: the
// node as nodeError names it, after the nodes enclosing it, `onnx: node
// "loop" (Loop): node "n" (Gather)`. A compiled plan knows no nodes, so
// the name is carried by the check itself.
func (c *nodeCtx) kernelOp() string {
	return fmt.Sprintf("onnx: %snode %s (%s)", c.where, nodeLabel(c.Node), c.Node.GetOpType())
}

// nodeKernelError turns a kernel's error that names its node (see
// kernelOp) into the error PyNative mode gives for it: op "onnx", the
// message starting with the node. Other values are returned as they are.
func nodeKernelError(v any) any {
	te, ok := v.(*tensor.Error)
	if !ok || !strings.HasPrefix(te.Op, kernelOpPrefix) {
		return v
	}
	return &tensor.Error{Op: "onnx", Msg: strings.TrimPrefix(te.Op, "onnx: ") + ": " + te.Msg, Loc: te.Loc}
}

// runtimeIndex range-checks a component of run-time indices (any shape,
// Int32 or Int64) for the node's axis of extent n, and wraps negative
// ones: the result is Int64 in [0, n).
func (c *nodeCtx) runtimeIndex(idx *tensor.Tensor, axis, n int) *tensor.Tensor {
	if idx.DType() != tensor.Int64 {
		idx = ops.Cast(idx, tensor.Int64)
	}
	idx = c.checkIndices(idx, axis, n)
	return ops.Select(ops.Less(idx, ops.ScalarLike(idx, 0)), ops.AddScalar(idx, float64(n)), idx)
}

// scatterRows writes the m rows of updates ([m, inner]) into data viewed
// as [rows, inner] at the Int64 row numbers pos ([m], each in [0, rows)),
// replacing them (reduction "none"), adding to them ("add") or combining
// them by product, minimum or maximum (scatterReduceRows), and
// returns the result in data's shape.
func (c *nodeCtx) scatterRows(data, updates, pos *tensor.Tensor, rows, inner int, reduction string) (*tensor.Tensor, error) {
	dt := data.DType()
	work := dt
	switch dt {
	case tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Uint8:
	case tensor.Bool:
		if reduction != "none" {
			return nil, c.Errorf("reduction %q does not apply to bool data", reduction)
		}
		work = tensor.Uint8
	default:
		return nil, c.Errorf("data of dtype %v cannot be scattered at indices computed from the model's inputs", dt)
	}
	m := pos.Size()
	d := ops.Reshape(data, rows, inner)
	u := ops.Reshape(updates, m, inner)
	if work != dt {
		d, u = ops.Cast(d, work), ops.Cast(u, work)
	}
	at := ops.ScatterAttrs{Axis: 0, Extent: rows}
	sum := core.Apply(ops.GatherGradPrim, at, u, pos)
	var out *tensor.Tensor
	switch reduction {
	case "none":
		hits := core.Apply(ops.GatherGradPrim, at, tensor.Ones(tensor.Int32, m), pos)
		written := ops.Reshape(ops.Greater(hits, tensor.Full(tensor.Int32, 0)), rows, 1)
		out = ops.Select(written, sum, d)
	case "add":
		out = ops.Add(d, sum)
	case "mul", "min", "max":
		r, err := c.scatterReduceRows(d, u, pos, rows, inner, reduction)
		if err != nil {
			return nil, err
		}
		out = r
	default:
		return nil, c.Errorf("reduction %q is not supported at indices computed from the model's inputs (none, add, mul, min and max are)", reduction)
	}
	if work != dt {
		out = ops.Cast(out, dt)
	}
	return ops.Reshape(out, data.Shape()...), nil
}

// scatterReduceRows combines the m rows of u ([m, inner]) into d ([rows,
// inner]) at the row numbers pos by product, minimum or maximum. GatherGrad
// only adds, so each row of the result reduces over all m updates, those
// aimed elsewhere replaced by 1 for the product and by the data row for
// min and max: a [rows, m, inner] intermediate, refused past
// the size an op may make. Duplicate indices all take part, in any order,
// as the reductions commute.
func (c *nodeCtx) scatterReduceRows(d, u, pos *tensor.Tensor, rows, inner int, reduction string) (*tensor.Tensor, error) {
	m := pos.Size()
	if m == 0 {
		return d, nil
	}
	if err := c.checkMade([]int{rows, m, inner}, "the scatter's "+reduction+" intermediate"); err != nil {
		return nil, err
	}
	dt := d.DType()
	rowIDs := make([]int64, rows)
	for i := range rowIDs {
		rowIDs[i] = int64(i)
	}
	// hit[r, j, 0]: update j is aimed at row r.
	hit := ops.Reshape(ops.Equal(tensor.FromSlice(rowIDs, rows, 1), ops.Reshape(pos, 1, m)), rows, m, 1)
	u3 := ops.Reshape(u, 1, m, inner)
	// For min and max, the data row itself stands in for the updates
	// aimed elsewhere: it is the one value that changes nothing (a
	// dtype's extreme as a float64 would not convert exactly to Int64).
	d3 := ops.Reshape(d, rows, 1, inner)
	switch reduction {
	case "mul":
		return ops.Mul(d, ops.Prod(ops.Select(hit, u3, tensor.Full(dt, 1)), 1)), nil
	case "min":
		return ops.Minimum(d, ops.Min(ops.Select(hit, u3, d3), 1)), nil
	default:
		return ops.Maximum(d, ops.Max(ops.Select(hit, u3, d3), 1)), nil
	}
}

// scatterElementsRuntime is ScatterElements at run-time indices: the flat
// position of each update is its own position in data's layout, with the
// axis coordinate replaced by its index.
func (c *nodeCtx) scatterElementsRuntime(data, idx, updates *tensor.Tensor, ax int, reduction string) (*tensor.Tensor, error) {
	ds, is := data.Shape(), idx.Shape()
	stride := 1
	for _, d := range ds[ax+1:] {
		stride *= d
	}
	// base: each index position's flat offset in data, less its own axis
	// coordinate: a constant of the shapes.
	m := idx.Size()
	base := make([]int64, m)
	coord := make([]int, len(is))
	for j := range base {
		off := 0
		for i := range is {
			x := coord[i]
			if i == ax {
				x = 0
			}
			off = off*ds[i] + x
		}
		base[j] = int64(off)
		for i := len(is) - 1; i >= 0; i-- {
			if coord[i]++; coord[i] < is[i] {
				break
			}
			coord[i] = 0
		}
	}
	k := c.runtimeIndex(idx, ax, ds[ax])
	pos := ops.Add(tensor.FromSlice(base, is...), ops.MulScalar(k, float64(stride)))
	return c.scatterRows(data, updates, ops.Reshape(pos, m), data.Size(), 1, reduction)
}

// scatterNDRuntime is ScatterND at run-time indices: each index tuple
// (the last axis of indices, of length k) is a row number of data viewed
// as [rows, inner], rows the product of data's first k extents.
func (c *nodeCtx) scatterNDRuntime(data, idx, updates *tensor.Tensor, reduction string) (*tensor.Tensor, error) {
	ds, is := data.Shape(), idx.Shape()
	k := is[len(is)-1]
	lead := is[:len(is)-1]
	t := tensor.Shape(lead).Size()
	rows, inner := 1, 1
	for _, d := range ds[:k] {
		rows *= d
	}
	for _, d := range ds[k:] {
		inner *= d
	}
	var pos *tensor.Tensor
	stride := rows
	for j := range k {
		stride /= ds[j]
		comp := ops.Reshape(ops.StridedSlice(idx, zerosInts(len(is), j), endInts(is, j+1), onesInts(len(is))), t)
		term := ops.MulScalar(c.runtimeIndex(comp, j, ds[j]), float64(stride))
		if pos == nil {
			pos = term
		} else {
			pos = ops.Add(pos, term)
		}
	}
	return c.scatterRows(data, updates, pos, rows, inner, reduction)
}
