package onnx

import (
	"math"

	"github.com/sporeml/spore/tensor"
)

// Helpers shared by the operator files: reading required inputs, turning
// ONNX's int64 attributes into Go ints with range checks, and normalising
// axes. Each returns an error that names the node, so that an opFunc can
// return it as is.

// need returns input i, or an error naming it when it is absent.
func (c *nodeCtx) need(ins []*tensor.Tensor, i int, what string) (*tensor.Tensor, error) {
	if t := c.In(ins, i); t != nil {
		return t, nil
	}
	return nil, c.Errorf("required input %d (%s) is missing", i, what)
}

// needs returns the node's first len(what) inputs, each required, what
// naming them in order; the error names the first one missing.
func (c *nodeCtx) needs(ins []*tensor.Tensor, what ...string) ([]*tensor.Tensor, error) {
	out := make([]*tensor.Tensor, len(what))
	for i, w := range what {
		t, err := c.need(ins, i, w)
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

// wantOutput reports whether the node asks for output i (a non-empty
// name), so that optional outputs cost nothing when unused.
func (c *nodeCtx) wantOutput(i int) bool {
	outs := c.Node.GetOutput()
	return i < len(outs) && outs[i] != ""
}

// maxIndex bounds any extent, index or count read from a model: large
// enough for every real tensor, small enough that sums of a few of them
// cannot overflow an int.
const maxIndex = 1 << 40

// maxMade bounds the elements of a tensor that an op makes from numbers
// in the model (ConstantOfShape, Expand, Tile, Range, Pad): 2^28, a GiB
// of float32. Without it a few bytes of a hostile file could ask for
// terabytes. It is a variable only so that the fuzz targets can lower it:
// at a GiB, some fuzzed models are legal but take seconds and gigabytes
// each, which only slows the search for crashes.
var maxMade = 1 << 28

// checkMade fails when a tensor of shape would exceed maxMade elements.
func (c *nodeCtx) checkMade(shape []int, what string) error {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return c.Errorf("%s shape %v has a negative extent", what, shape)
		}
		if d != 0 && n > maxMade/d {
			return c.Errorf("%s shape %v holds more than %d elements, the most an op may make", what, shape, maxMade)
		}
		n *= d
	}
	return nil
}

// toInts converts int64 values to ints, failing on values beyond
// ±maxIndex (a hostile or corrupt model), what naming them.
func (c *nodeCtx) toInts(v []int64, what string) ([]int, error) {
	out := make([]int, len(v))
	for i, x := range v {
		if x > maxIndex || x < -maxIndex {
			return nil, c.Errorf("%s %v: value %d is out of range", what, v, x)
		}
		out[i] = int(x)
	}
	return out, nil
}

// clampInts converts int64 values to ints, clamping them to ±maxIndex:
// Slice's starts and ends use INT64_MAX and INT64_MIN for "to the end",
// and clamping keeps their meaning.
func clampInts(v []int64) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(max(min(x, maxIndex), -maxIndex))
	}
	return out
}

// intsInput reads a concrete shape-like input as ints.
func (c *nodeCtx) intsInput(t *tensor.Tensor, what string) ([]int, error) {
	v, err := c.Ints(t, what)
	if err != nil {
		return nil, err
	}
	return c.toInts(v, what)
}

// intsAttr reads an integer-list attribute as ints.
func (c *nodeCtx) intsAttr(name string, def []int) ([]int, error) {
	if !c.Has(name) {
		return def, nil
	}
	return c.toInts(c.IntsAttr(name, nil), "attribute "+name)
}

// axis normalises axis (negative counts from the end) for a tensor of the
// given rank, or fails naming the attribute or input it came from.
func (c *nodeCtx) axis(a int64, rank int, what string) (int, error) {
	if a < -int64(rank) || a >= int64(rank) {
		return 0, c.Errorf("%s %d is out of range for rank %d", what, a, rank)
	}
	if a < 0 {
		a += int64(rank)
	}
	return int(a), nil
}

// axes normalises a list of axes and rejects repeats.
func (c *nodeCtx) axes(as []int64, rank int, what string) ([]int, error) {
	out := make([]int, len(as))
	seen := make(map[int]bool, len(as))
	for i, a := range as {
		n, err := c.axis(a, rank, what)
		if err != nil {
			return nil, err
		}
		if seen[n] {
			return nil, c.Errorf("%s %v repeats axis %d", what, as, n)
		}
		seen[n] = true
		out[i] = n
	}
	return out, nil
}

// scalarValue reads a one-element input that must not depend on the
// model's input values (Dropout's ratio, Pad's constant_value, Range's
// operands). It reads the buffer directly rather than through an op: a
// float initializer is a Parameter, and an op on a Parameter is traced in
// Graph mode, which would make the value unreadable. The value is taken
// as it is when the node runs (for a compiled plan, when it is traced).
func (c *nodeCtx) scalarValue(t *tensor.Tensor, what string) (float64, error) {
	if _, err := c.Concrete(t, what); err != nil {
		return 0, err
	}
	if t.Size() != 1 {
		return 0, c.Errorf("input %s must hold one value, got shape %v", what, t.Shape())
	}
	if t.DType() == tensor.Bool {
		if t.Bools()[0] {
			return 1, nil
		}
		return 0, nil
	}
	return t.Float64s()[0], nil
}

// axesIn reads a list of axes that is input i from opset inputsAt and
// attribute axes before (Squeeze, Unsqueeze). It returns nil when there
// is none, or an error when required.
func (c *nodeCtx) axesIn(ins []*tensor.Tensor, i int, inputsAt int64, required bool) ([]int64, error) {
	if c.Opset < inputsAt {
		if !c.Has("axes") {
			if required {
				return nil, c.Errorf("attribute axes is missing")
			}
			return nil, nil
		}
		return c.IntsAttr("axes", nil), nil
	}
	t := c.In(ins, i)
	if t == nil {
		if required {
			return nil, c.Errorf("required input %d (axes) is missing", i)
		}
		return nil, nil
	}
	return c.Ints(t, "axes")
}

// one wraps a single result.
func one(t *tensor.Tensor) ([]*tensor.Tensor, error) { return []*tensor.Tensor{t}, nil }

// isFloat reports whether dt is a floating-point dtype.
func isFloat(dt tensor.DType) bool { return dt == tensor.Float32 || dt == tensor.Float64 }

// scalarOf returns a rank-0 tensor of dtype dt holding v.
func scalarOf(dt tensor.DType, v float64) *tensor.Tensor { return tensor.Full(dt, v) }

// int64s returns a concrete 1-D int64 tensor holding v.
func int64s(v []int64) *tensor.Tensor {
	return tensor.FromSlice(append([]int64(nil), v...), len(v))
}

// shapeInts returns t's shape as int64s.
func shapeInts(t *tensor.Tensor) []int64 {
	s := t.Shape()
	out := make([]int64, len(s))
	for i, d := range s {
		out[i] = int64(d)
	}
	return out
}

// lowest is the least value of dt, the bound of a Clip without min.
func lowest(dt tensor.DType) float64 {
	switch dt {
	case tensor.Int8:
		return math.MinInt8
	case tensor.Int16:
		return math.MinInt16
	case tensor.Int32:
		return math.MinInt32
	case tensor.Int64:
		return math.MinInt64
	case tensor.Uint8, tensor.Uint16, tensor.Uint32, tensor.Uint64:
		return 0
	}
	return math.Inf(-1)
}

// highest is the greatest value of dt, the bound of a Clip without max
// (for Uint64 the float64 nearest its maximum, 2^64, which converts to
// the maximum).
func highest(dt tensor.DType) float64 {
	switch dt {
	case tensor.Int8:
		return math.MaxInt8
	case tensor.Int16:
		return math.MaxInt16
	case tensor.Int32:
		return math.MaxInt32
	case tensor.Int64:
		return math.MaxInt64
	case tensor.Uint8:
		return math.MaxUint8
	case tensor.Uint16:
		return math.MaxUint16
	case tensor.Uint32:
		return math.MaxUint32
	case tensor.Uint64:
		return math.MaxUint64
	}
	return math.Inf(1)
}
