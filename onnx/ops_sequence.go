package onnx

import (
	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Sequence and optional ops. A sequence is a handle (see sequence.go) whose
// elements the ops rearrange when the node runs, in both modes: the list
// is known at trace time, only its elements may be symbolic. So positions
// and split sizes, which decide the list, must be concrete (c.Ints), while
// the elements go through spore's ops (Concat, Split) and are traced.

func init() {
	register("SequenceEmpty", 11, 0, opSequenceEmpty)
	register("SequenceConstruct", 11, 0, opSequenceConstruct)
	register("SequenceAt", 11, 0, opSequenceAt)
	register("SequenceInsert", 11, 0, opSequenceInsert)
	register("SequenceErase", 11, 0, opSequenceErase)
	register("SequenceLength", 11, 0, opSequenceLength)
	register("SplitToSequence", 11, 0, opSplitToSequence)
	register("ConcatFromSequence", 11, 0, opConcatFromSequence)
	register("SequenceMap", 17, 0, opSequenceMap)
	register("Optional", 15, 0, opOptional)
	register("OptionalHasElement", 15, 0, opOptionalHasElement)
	register("OptionalGetElement", 15, 0, opOptionalGetElement)
}

// maxUnrolled bounds the length of a sequence an op builds (SplitToSequence
// into pieces of one, a Loop carrying a sequence): each element is a
// separate tensor, and in Graph mode separate nodes of the plan.
const maxUnrolled = 1 << 12

// seqIn returns input i, which must be a sequence.
func (c *nodeCtx) seqIn(ins []*tensor.Tensor, i int, what string) (*boxed, error) {
	t, err := c.need(ins, i, what)
	if err != nil {
		return nil, err
	}
	b := boxOf(t)
	if b == nil || b.kind != KindSequence {
		return nil, c.Errorf("input %s is not a sequence (%s)", what, describeBoxed(t))
	}
	return b, nil
}

// position reads a sequence position (a one-element integer tensor, which
// may be negative) and checks it against a sequence of length n; an
// insertion may also be at n.
func (c *nodeCtx) position(t *tensor.Tensor, n int, insert bool) (int, error) {
	v, err := c.Ints(t, "position")
	if err != nil {
		return 0, err
	}
	if len(v) != 1 {
		return 0, c.Errorf("position must hold one value, got %d", len(v))
	}
	p, hi := v[0], int64(n)
	if insert {
		hi++
	}
	if p < -int64(n) || p >= hi {
		return 0, c.Errorf("position %d is out of range for a sequence of length %d", p, n)
	}
	if p < 0 {
		p += int64(n)
	}
	return int(p), nil
}

// seqOut returns a new sequence of elems, keeping dtype for an empty one.
func seqOut(elems []*tensor.Tensor, dt tensor.DType) ([]*tensor.Tensor, error) {
	return one(newBox(&boxed{kind: KindSequence, elems: elems, dtype: dt}))
}

// opSequenceEmpty makes an empty sequence of attribute dtype (float by
// default).
func opSequenceEmpty(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	dt, err := dtypeOf(int32(c.Int("dtype", int64(onnxpb.TensorProto_FLOAT))))
	if err != nil {
		return nil, c.Errorf("attribute dtype: %v", err)
	}
	return seqOut(nil, dt)
}

func opSequenceConstruct(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	if len(ins) == 0 {
		return nil, c.Errorf("SequenceConstruct needs at least one input")
	}
	for i, t := range ins {
		if t == nil || boxOf(t) != nil {
			return nil, c.Errorf("input %d must be a tensor", i)
		}
		if t.DType() != ins[0].DType() {
			return nil, c.Errorf("input %d has dtype %v, input 0 %v: a sequence has one dtype", i, t.DType(), ins[0].DType())
		}
	}
	return seqOut(append([]*tensor.Tensor(nil), ins...), ins[0].DType())
}

func opSequenceAt(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	s, err := c.seqIn(ins, 0, "input_sequence")
	if err != nil {
		return nil, err
	}
	p, err := c.position(c.In(ins, 1), len(s.elems), false)
	if err != nil {
		return nil, err
	}
	return one(s.elems[p])
}

func opSequenceInsert(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	s, err := c.seqIn(ins, 0, "input_sequence")
	if err != nil {
		return nil, err
	}
	t, err := c.need(ins, 1, "tensor")
	if err != nil {
		return nil, err
	}
	if boxOf(t) != nil {
		return nil, c.Errorf("input tensor is not a tensor (%s)", describeBoxed(t))
	}
	if dt := s.seqDType(); dt != tensor.Invalid && t.DType() != dt {
		return nil, c.Errorf("the tensor has dtype %v, the sequence holds %v", t.DType(), dt)
	}
	if len(s.elems) >= maxUnrolled {
		return nil, c.Errorf("the sequence would hold more than %d elements", maxUnrolled)
	}
	p := len(s.elems)
	if pos := c.In(ins, 2); pos != nil {
		if p, err = c.position(pos, len(s.elems), true); err != nil {
			return nil, err
		}
	}
	elems := make([]*tensor.Tensor, 0, len(s.elems)+1)
	elems = append(elems, s.elems[:p]...)
	elems = append(elems, t)
	elems = append(elems, s.elems[p:]...)
	return seqOut(elems, t.DType())
}

func opSequenceErase(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	s, err := c.seqIn(ins, 0, "input_sequence")
	if err != nil {
		return nil, err
	}
	if len(s.elems) == 0 {
		return nil, c.Errorf("the sequence is empty: there is nothing to erase")
	}
	p := len(s.elems) - 1
	if pos := c.In(ins, 1); pos != nil {
		if p, err = c.position(pos, len(s.elems), false); err != nil {
			return nil, err
		}
	}
	elems := append(append([]*tensor.Tensor(nil), s.elems[:p]...), s.elems[p+1:]...)
	return seqOut(elems, s.seqDType())
}

// opSequenceLength gives the length as a concrete int64 scalar: it is known
// at trace time.
func opSequenceLength(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	s, err := c.seqIn(ins, 0, "input_sequence")
	if err != nil {
		return nil, err
	}
	return one(tensor.Scalar(int64(len(s.elems))))
}

// opSplitToSequence cuts input along axis: into pieces of one (squeezed
// unless keepdims is 1) without split, into pieces of split's size (the
// last one shorter) for a scalar split, or into split's sizes.
func opSplitToSequence(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "input")
	if err != nil {
		return nil, err
	}
	if boxOf(x) != nil {
		return nil, c.Errorf("input is not a tensor (%s)", describeBoxed(x))
	}
	ax, err := normAxis(c.Int("axis", 0), x.Rank())
	if err != nil {
		return nil, c.Errorf("attribute axis: %v", err)
	}
	n := x.Dim(ax)
	var sizes []int
	squeeze := false
	split := c.In(ins, 1)
	switch {
	case split == nil:
		if n > maxUnrolled {
			return nil, c.Errorf("splitting an axis of %d into pieces of one would make more than %d elements", n, maxUnrolled)
		}
		for range n {
			sizes = append(sizes, 1)
		}
		squeeze = c.Int("keepdims", 1) == 0
	default:
		v, err := c.Ints(split, "split")
		if err != nil {
			return nil, err
		}
		if split.Rank() == 0 {
			k := v[0]
			if k <= 0 {
				return nil, c.Errorf("split %d must be positive", k)
			}
			if (int64(n)+k-1)/k > maxUnrolled {
				return nil, c.Errorf("split %d would make more than %d elements", k, maxUnrolled)
			}
			for off := int64(0); off < int64(n); off += k {
				sizes = append(sizes, int(min(k, int64(n)-off)))
			}
		} else {
			total := int64(0)
			for _, s := range v {
				if s < 0 {
					return nil, c.Errorf("split %v has a negative size", v)
				}
				total += s
				sizes = append(sizes, int(s))
			}
			if total != int64(n) {
				return nil, c.Errorf("split %v adds up to %d, axis %d has %d", v, total, ax, n)
			}
		}
	}
	if len(sizes) == 0 {
		return seqOut(nil, x.DType())
	}
	parts := ops.Split(x, ax, sizes...)
	if squeeze {
		for i, p := range parts {
			parts[i] = ops.Squeeze(p, ax)
		}
	}
	return seqOut(parts, x.DType())
}

// opConcatFromSequence joins the elements along axis, or stacks them along
// a new axis when new_axis is 1.
func opConcatFromSequence(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	s, err := c.seqIn(ins, 0, "input_sequence")
	if err != nil {
		return nil, err
	}
	if !c.Has("axis") {
		return nil, c.Errorf("attribute axis is required")
	}
	if len(s.elems) == 0 {
		return nil, c.Errorf("the sequence is empty: ONNX gives no shape to the concatenation of nothing")
	}
	axis := c.Int("axis", 0)
	rank := s.elems[0].Rank()
	newAxis := c.Int("new_axis", 0) == 1
	if newAxis {
		rank++
	}
	ax, err := normAxis(axis, rank)
	if err != nil {
		return nil, c.Errorf("attribute axis: %v", err)
	}
	if newAxis {
		return one(ops.Stack(ax, s.elems...))
	}
	return one(ops.Concat(ax, s.elems...))
}

// opSequenceMap runs the body once per position of the sequence inputs
// (which must have one length), unrolled: the tensor inputs go to every
// run whole. Each body output becomes a sequence.
func opSequenceMap(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	g := c.GraphAttr("body")
	if g == nil {
		return nil, c.Errorf("attribute body is required")
	}
	if c.runGraph == nil {
		return nil, c.Errorf("SequenceMap runs a sub-graph, which needs a Model")
	}
	s, err := c.seqIn(ins, 0, "input_sequence")
	if err != nil {
		return nil, err
	}
	if len(g.GetInput()) != len(ins) {
		return nil, c.Errorf("the body takes %d inputs, the node has %d", len(g.GetInput()), len(ins))
	}
	n := len(s.elems)
	seqs := make([]*boxed, len(ins))
	for i, t := range ins {
		if t == nil {
			return nil, c.Errorf("input %d is absent", i)
		}
		if b := boxOf(t); b != nil {
			if b.kind != KindSequence || len(b.elems) != n {
				return nil, c.Errorf("input %d (%s) does not fit: the sequences must all have %d elements", i, describeBoxed(t), n)
			}
			seqs[i] = b
		}
	}
	outs := make([][]*tensor.Tensor, len(g.GetOutput()))
	for k := range n {
		args := make([]*tensor.Tensor, len(ins))
		for i, t := range ins {
			args[i] = t
			if seqs[i] != nil {
				args[i] = seqs[i].elems[k]
			}
		}
		ys, err := c.runGraph(g, args)
		if err != nil {
			return nil, c.Errorf("%v", err)
		}
		for j, y := range ys {
			if boxOf(y) != nil {
				return nil, c.Errorf("body output %d is not a tensor (%s); SequenceMap's body returns tensors", j, describeBoxed(y))
			}
			outs[j] = append(outs[j], y)
		}
	}
	res := make([]*tensor.Tensor, len(outs))
	for j, o := range outs {
		dt := tensor.Invalid
		if len(o) > 0 {
			dt = o[0].DType()
		} else if tt := g.GetOutput()[j].GetType().GetTensorType(); tt != nil {
			dt, _ = dtypeOf(tt.GetElemType())
		}
		res[j] = newBox(&boxed{kind: KindSequence, elems: o, dtype: dt})
	}
	return res, nil
}

// opOptional wraps its input, or makes an empty optional without one.
func opOptional(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := c.In(ins, 0)
	if x == nil && !c.Has("type") {
		return nil, c.Errorf("an Optional without input needs attribute type")
	}
	if b := boxOf(x); b != nil && b.kind == KindOptional {
		return nil, c.Errorf("the input is already an optional")
	}
	return one(NewOptional(x))
}

// opOptionalHasElement says whether an optional holds a value; a tensor or
// sequence (opset 18 accepts those) holds one, an absent input none.
func opOptionalHasElement(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := c.In(ins, 0)
	has := x != nil
	if e, ok := OptionalElement(x); ok {
		has = e != nil
	}
	return one(tensor.Scalar(has))
}

// opOptionalGetElement unwraps an optional, which must not be empty; a
// tensor or sequence passes through.
func opOptionalGetElement(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "input")
	if err != nil {
		return nil, err
	}
	e, ok := OptionalElement(x)
	switch {
	case !ok:
		return one(x)
	case e == nil:
		return nil, c.Errorf("the optional is empty")
	}
	return one(e)
}
