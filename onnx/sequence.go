package onnx

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"weak"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/jit"
	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/tensor"
)

// Sequences and optionals.
//
// ONNX has two kinds of value besides tensors that spore runs: a sequence
// (a list of tensors of one dtype, each of its own shape) and an optional
// (a value or nothing). Everywhere in this package's API, and inside the
// graph walker, such a value travels as a *tensor.Tensor handle: a small
// concrete tensor that stands for the list, made by NewSequence or
// NewOptional and read back by SequenceElements or OptionalElement. Model.Run
// and Model.Outputs take handles where the graph declares a sequence or
// optional input (ValueInfo.Kind says which) and return handles for such
// outputs.
//
// A sequence's length is known when the graph runs, also while Graph mode
// traces it; its elements may be symbolic there. So the sequence ops are
// list operations done at trace time, and a traced plan holds only the
// elements' tensor ops. Graph mode compiles one plan per structure of the
// boundary values (each sequence's length and its elements' shapes).
//
// A handle's own value is a serial number, unique to it, so that code which
// reads it as an ordinary tensor never mistakes two different sequences for
// equal ones.

// Kind says what an ONNX value is: a tensor, a sequence or an optional.
type Kind int

const (
	// KindTensor is a plain tensor (also the kind of a value whose type
	// the file does not declare).
	KindTensor Kind = iota
	// KindSequence is an ONNX sequence: a handle from NewSequence.
	KindSequence
	// KindOptional is an ONNX optional: a handle from NewOptional.
	KindOptional
	// KindOther is a type spore cannot hold (a map, a sparse tensor).
	KindOther
)

// String names the kind as ONNX's type protos do.
func (k Kind) String() string {
	switch k {
	case KindTensor:
		return "tensor"
	case KindSequence:
		return "sequence"
	case KindOptional:
		return "optional"
	}
	return "unsupported type"
}

// withArticle is the kind with its indefinite article, for messages.
func (k Kind) withArticle() string {
	if k == KindOptional {
		return "an optional"
	}
	return "a " + k.String()
}

// boxed is what a handle stands for.
type boxed struct {
	kind Kind
	// elems are the sequence's elements, or the optional's one element
	// (none when it is empty). An element may itself be a handle (an
	// optional sequence).
	elems []*tensor.Tensor
	// dtype is the element type when elems cannot tell it (an empty
	// sequence from SequenceEmpty); Invalid when unknown.
	dtype tensor.DType
}

// boxes maps handles to their contents. It holds the handles weakly: an
// entry goes when its handle is collected, so sequences made by a long
// run of calls do not pile up here.
var (
	boxMu     sync.Mutex
	boxes     = map[weak.Pointer[tensor.Tensor]]*boxed{}
	boxSerial int64
)

func newBox(b *boxed) *tensor.Tensor {
	boxMu.Lock()
	boxSerial++
	h := tensor.FromSlice([]int64{boxSerial}, 1)
	wp := weak.Make(h)
	boxes[wp] = b
	boxMu.Unlock()
	runtime.AddCleanup(h, func(wp weak.Pointer[tensor.Tensor]) {
		boxMu.Lock()
		delete(boxes, wp)
		boxMu.Unlock()
	}, wp)
	return h
}

// boxOf returns what handle t stands for, or nil when t is a plain tensor.
func boxOf(t *tensor.Tensor) *boxed {
	if t == nil {
		return nil
	}
	boxMu.Lock()
	defer boxMu.Unlock()
	return boxes[weak.Make(t)]
}

// NewSequence returns a handle for the ONNX sequence of elems, to pass to
// Model.Run or Model.Outputs for a sequence input. The elements must share
// one dtype; they may differ in shape. An empty sequence has no dtype: use
// NewEmptySequence to give it one.
func NewSequence(elems ...*tensor.Tensor) (*tensor.Tensor, error) {
	for i, e := range elems {
		if e == nil {
			return nil, fmt.Errorf("onnx: sequence element %d is nil", i)
		}
		if boxOf(e) != nil {
			return nil, fmt.Errorf("onnx: sequence element %d is a sequence or optional; spore's sequences hold tensors", i)
		}
		if e.DType() != elems[0].DType() {
			return nil, fmt.Errorf("onnx: sequence element %d has dtype %v, element 0 %v: a sequence has one dtype", i, e.DType(), elems[0].DType())
		}
	}
	return newBox(&boxed{kind: KindSequence, elems: append([]*tensor.Tensor(nil), elems...)}), nil
}

// NewEmptySequence returns a handle for an empty sequence of dtype dt.
func NewEmptySequence(dt tensor.DType) *tensor.Tensor {
	return newBox(&boxed{kind: KindSequence, dtype: dt})
}

// NewOptional returns a handle for an ONNX optional holding elem (a tensor
// or a sequence handle), or an empty optional when elem is nil.
func NewOptional(elem *tensor.Tensor) *tensor.Tensor {
	b := &boxed{kind: KindOptional}
	if elem != nil {
		b.elems = []*tensor.Tensor{elem}
	}
	return newBox(b)
}

// KindOf says whether t is a plain tensor, a sequence handle or an
// optional handle.
func KindOf(t *tensor.Tensor) Kind {
	if b := boxOf(t); b != nil {
		return b.kind
	}
	return KindTensor
}

// SequenceElements returns the elements of sequence handle t (a fresh
// slice), and false when t is not a sequence.
func SequenceElements(t *tensor.Tensor) ([]*tensor.Tensor, bool) {
	b := boxOf(t)
	if b == nil || b.kind != KindSequence {
		return nil, false
	}
	return append([]*tensor.Tensor{}, b.elems...), true
}

// OptionalElement returns the value of optional handle t, nil when the
// optional is empty; ok is false when t is not an optional.
func OptionalElement(t *tensor.Tensor) (elem *tensor.Tensor, ok bool) {
	b := boxOf(t)
	if b == nil || b.kind != KindOptional {
		return nil, false
	}
	if len(b.elems) == 0 {
		return nil, true
	}
	return b.elems[0], true
}

// kindOfType reads a value's kind from its type proto; a value without a
// type is taken for a tensor.
func kindOfType(tp *onnxpb.TypeProto) Kind {
	switch {
	case tp == nil || tp.GetValue() == nil || tp.GetTensorType() != nil:
		return KindTensor
	case tp.GetSequenceType() != nil:
		if k := kindOfType(tp.GetSequenceType().GetElemType()); k != KindTensor {
			return KindOther
		}
		return KindSequence
	case tp.GetOptionalType() != nil:
		if k := kindOfType(tp.GetOptionalType().GetElemType()); k != KindTensor && k != KindSequence {
			return KindOther
		}
		return KindOptional
	}
	return KindOther
}

// seqDType is the dtype of a sequence's elements, Invalid when unknown.
func (b *boxed) seqDType() tensor.DType {
	if len(b.elems) > 0 {
		return b.elems[0].DType()
	}
	return b.dtype
}

// Boundary values in Graph mode. The plan compiled for Outputs takes and
// returns tensors, so the handles at the graph's boundary are opened into
// a tree of tensors (bval), which the jit flattens and keys its plans by
// (the lengths are part of the key), and the outputs are boxed again.

// bval is one boundary value as the jit sees it: a tensor (T holds it), or
// a sequence or optional (Kind, and Elems its elements).
type bval struct {
	T     []*tensor.Tensor
	Kind  Kind
	DType int
	Elems []bval
}

// open turns a value into its tree.
func open(t *tensor.Tensor) bval {
	b := boxOf(t)
	if b == nil {
		return bval{T: []*tensor.Tensor{t}}
	}
	v := bval{Kind: b.kind, DType: int(b.dtype), Elems: make([]bval, len(b.elems))}
	for i, e := range b.elems {
		v.Elems[i] = open(e)
	}
	return v
}

// close turns a tree back into a value.
func (v bval) close() *tensor.Tensor {
	if v.Kind == KindTensor {
		return v.T[0]
	}
	elems := make([]*tensor.Tensor, len(v.Elems))
	for i, e := range v.Elems {
		elems[i] = e.close()
	}
	return newBox(&boxed{kind: v.Kind, elems: elems, dtype: tensor.DType(v.DType)})
}

// boxedBoundary reports whether the graph declares a sequence or optional
// input or output.
func (m *Model) boxedBoundary() bool {
	for _, vs := range [][]ValueInfo{m.inputs, m.outputs} {
		for _, v := range vs {
			if v.Kind == KindSequence || v.Kind == KindOptional {
				return true
			}
		}
	}
	return false
}

// boxedJit wraps plain, the compiled Outputs of a model without handles
// at its boundary, for a model with some: calls go through a second jit
// whose arguments are the opened trees, so that each structure of
// sequences gets its own plan. run is what that jit traces: the plan's
// run of the graph, with its value inputs as constants.
func (m *Model) boxedJit(plain func(...*tensor.Tensor) []*tensor.Tensor, cfg jit.Config, run func([]*tensor.Tensor) []*tensor.Tensor) func(...*tensor.Tensor) []*tensor.Tensor {
	if !m.boxedBoundary() {
		return plain
	}
	inner := jit.New(func(in []bval) []bval {
		xs := make([]*tensor.Tensor, len(in))
		for i, v := range in {
			xs[i] = v.close()
		}
		outs := run(xs)
		res := make([]bval, len(outs))
		for i, o := range outs {
			res[i] = open(o)
		}
		return res
	}, cfg)
	return func(xs ...*tensor.Tensor) []*tensor.Tensor {
		in := make([]bval, len(xs))
		for i, x := range xs {
			if x == nil {
				panic(&tensor.Error{Op: "onnx.Model", Msg: fmt.Sprintf("input %d is nil", i)})
			}
			in[i] = open(x)
		}
		res := inner.Fn(in)
		outs := make([]*tensor.Tensor, len(res))
		for i, r := range res {
			outs[i] = r.close()
		}
		return outs
	}
}

// plainForward runs the model for a caller that traces it as a function of
// tensors (Construct under nn.Jit or Graph mode, the plain Outputs plan):
// a sequence or optional among the outputs would be traced as a constant,
// so it is refused there, naming the output.
func (m *Model) plainForward(xs []*tensor.Tensor) []*tensor.Tensor {
	outs := m.forward(xs)
	if core.CurrentTracer() == nil {
		return outs
	}
	for i, o := range outs {
		if k := KindOf(o); k != KindTensor {
			name := fmt.Sprintf("output %d", i)
			if i < len(m.outputs) {
				name = fmt.Sprintf("output %q", m.outputs[i].Name)
			}
			panic(&tensor.Error{Op: "onnx.Model", Msg: fmt.Sprintf("%s is %s, which a compiled function of tensors cannot return: declare it in the graph's outputs, and call Outputs or Run", name, k.withArticle())})
		}
	}
	return outs
}

// checkKind compares a boundary value's kind with what the graph declares
// for it.
func checkKind(vi ValueInfo, x *tensor.Tensor) error {
	got, want := KindOf(x), vi.Kind
	switch {
	case want == KindOther:
		return fmt.Errorf("input %q has a type spore cannot hold (a map or a sparse tensor)", vi.Name)
	case want != KindTensor && got != want:
		return fmt.Errorf("input %q is %s, the model wants %s (see NewSequence, NewOptional)", vi.Name, got.withArticle(), want.withArticle())
	case want == KindTensor && got != KindTensor && vi.DType != tensor.Invalid:
		// A value whose type the file leaves out may be anything.
		return fmt.Errorf("input %q is %s, the model wants a tensor", vi.Name, got.withArticle())
	}
	return nil
}

// describeBoxed formats a handle for messages: "sequence of 3 float32".
func describeBoxed(t *tensor.Tensor) string {
	b := boxOf(t)
	if b == nil {
		return fmt.Sprintf("tensor %v %v", t.Shape(), t.DType())
	}
	var parts []string
	for _, e := range b.elems {
		parts = append(parts, describeBoxed(e))
	}
	return fmt.Sprintf("%v[%s]", b.kind, strings.Join(parts, ", "))
}
