package onnx

import (
	"fmt"
	"sort"
	"strings"

	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/tensor"
)

// An opFunc applies one ONNX node to its inputs with spore's ops, so that
// the same code runs eagerly in PyNative mode and is traced in Graph mode.
//
// ins holds one tensor per node input, in order; an absent optional input
// (ONNX's empty name) is nil, and trailing absent inputs may be missing
// from the slice altogether (use c.In(ins, i)). It returns one tensor per
// node output that the graph uses (trailing unused optional outputs may
// be left off).
//
// Inputs that ONNX computes from shapes (Reshape's shape, Slice's starts,
// Squeeze's axes, ...) are concrete tensors whenever the model's shapes
// are known, also while tracing: Shape of a symbolic tensor is a concrete
// int64 tensor, because traced shapes are static, and ops on concrete
// tensors run eagerly. That is how shape sub-graphs fold to constants.
// Read them with c.Ints, which fails clearly when they are not concrete.
//
// Spore's ops panic with a typed error on bad shapes; the caller recovers
// and names the node, so an opFunc need not check what the op checks.
type opFunc func(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error)

// opDef is one entry of the operator table.
type opDef struct {
	// minOpset and maxOpset bound the ai.onnx opset versions whose
	// semantics fn implements (maxOpset 0: no upper bound).
	minOpset, maxOpset int64
	fn                 opFunc
}

// opTable maps an ai.onnx op type to its definitions. Filled by register
// from the init functions of the op files; read-only afterwards.
var opTable = map[string][]opDef{}

// register adds fn as the implementation of opType for ai.onnx opsets
// minOpset..maxOpset (maxOpset 0: no upper bound). An op whose semantics
// changed between opsets (Split's sizes, Squeeze's axes, ReduceSum's axes)
// registers one function per range, or one function that asks c.Opset.
func register(opType string, minOpset, maxOpset int64, fn opFunc) {
	opTable[opType] = append(opTable[opType], opDef{minOpset: minOpset, maxOpset: maxOpset, fn: fn})
}

// lookupOp finds the implementation of opType for the model's opset, or
// nil when there is none. Ranges of one op type should not overlap (a
// test checks that they do not); if they did, the one that begins last
// would win, so that the result never depends on the order in which the
// op files' init functions ran.
func lookupOp(opType string, opset int64) opFunc {
	var best *opDef
	for i, d := range opTable[opType] {
		if opset >= d.minOpset && (d.maxOpset == 0 || opset <= d.maxOpset) {
			if best == nil || d.minOpset > best.minOpset {
				best = &opTable[opType][i]
			}
		}
	}
	if best == nil {
		return nil
	}
	return best.fn
}

// opsetRanges describes the ai.onnx opsets at which the table implements
// opType, merged and sorted ("1 to 21", "7 to 9, 11 to 21"), or "" when
// it implements it at none: what an unsupported-op message says beside
// the model's opset. The open upper bound is written as MaxOpset.
func opsetRanges(opType string) string {
	defs := append([]opDef(nil), opTable[opType]...)
	if len(defs) == 0 {
		return ""
	}
	sort.Slice(defs, func(i, j int) bool { return defs[i].minOpset < defs[j].minOpset })
	type span struct{ lo, hi int64 }
	var spans []span
	for _, d := range defs {
		hi := d.maxOpset
		if hi == 0 || hi > MaxOpset {
			hi = MaxOpset
		}
		if n := len(spans); n > 0 && d.minOpset <= spans[n-1].hi+1 {
			spans[n-1].hi = max(spans[n-1].hi, hi)
			continue
		}
		spans = append(spans, span{d.minOpset, hi})
	}
	parts := make([]string, len(spans))
	for i, s := range spans {
		if s.lo == s.hi {
			parts[i] = fmt.Sprint(s.lo)
		} else {
			parts[i] = fmt.Sprintf("%d to %d", s.lo, s.hi)
		}
	}
	return strings.Join(parts, ", ")
}

// supportedOps lists the op types the table knows, sorted.
func supportedOps() []string {
	names := make([]string, 0, len(opTable))
	for k := range opTable {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// nodeCtx is what an opFunc sees of its node and of the model.
type nodeCtx struct {
	// Node is the ONNX node being applied.
	Node *onnxpb.NodeProto
	// Opset is the model's ai.onnx opset version.
	Opset int64
	// Training is true when the cell runs in training mode (Dropout,
	// BatchNormalization's training_mode are decided by it, not by the
	// model, as for any spore cell).
	Training bool
	// runGraph runs a sub-graph (If's branches, Loop's and Scan's bodies)
	// on the given inputs, with names of the enclosing scopes visible. Set
	// by the graph walker.
	runGraph func(g *onnxpb.GraphProto, ins []*tensor.Tensor) ([]*tensor.Tensor, error)
	// runUnrolled is runGraph for a body run once per step at trace time
	// (a Loop carrying a sequence): its inputs are not marked as data, so
	// that a concrete iteration number stays concrete in both modes.
	runUnrolled func(g *onnxpb.GraphProto, ins []*tensor.Tensor) ([]*tensor.Tensor, error)
	// lookup finds a value of the enclosing scopes by name (what a
	// sub-graph would read from them); nil outside a Model.
	lookup func(name string) (*tensor.Tensor, bool)
	// fromData marks the tensors of this call computed from the model's
	// inputs or parameters, with what they were computed from (see
	// scope.fromData); nil outside a Model.
	fromData map[*tensor.Tensor]origin
	// call is the state of the model's call the node runs in (see
	// callState); nil outside a Model.
	call *callState
	// where names the nodes whose sub-graphs enclose this node (see
	// scope.where).
	where string
}

// dynamic reports whether t's value depends on the model's input values or
// parameters: symbolic while tracing, and marked so in PyNative mode, so
// that an op reading it as a shape fails alike in both modes. A graph
// input the Model takes as a value (see runtime_values.go) is not
// dynamic, nor is anything computed from such inputs and constants alone.
func (c *nodeCtx) dynamic(t *tensor.Tensor) bool {
	if t.IsSymbolic() {
		return true
	}
	_, ok := c.fromData[t]
	return ok
}

// Errorf returns an error that names the node and its op type.
func (c *nodeCtx) Errorf(format string, args ...any) error {
	return fmt.Errorf("onnx: node %q (%s): %s", c.Node.GetName(), c.Node.GetOpType(), fmt.Sprintf(format, args...))
}

// In returns input i, or nil when the node has no such input or it is absent.
func (c *nodeCtx) In(ins []*tensor.Tensor, i int) *tensor.Tensor {
	if i < len(ins) {
		return ins[i]
	}
	return nil
}

// attr returns the attribute called name, or nil.
func (c *nodeCtx) attr(name string) *onnxpb.AttributeProto {
	for _, a := range c.Node.GetAttribute() {
		if a.GetName() == name {
			return a
		}
	}
	return nil
}

// Has reports whether the node sets attribute name.
func (c *nodeCtx) Has(name string) bool { return c.attr(name) != nil }

// Int returns integer attribute name, or def when it is absent.
func (c *nodeCtx) Int(name string, def int64) int64 {
	if a := c.attr(name); a != nil {
		return a.GetI()
	}
	return def
}

// Float returns float attribute name, or def when it is absent.
func (c *nodeCtx) Float(name string, def float32) float32 {
	if a := c.attr(name); a != nil {
		return a.GetF()
	}
	return def
}

// String returns string attribute name, or def when it is absent.
func (c *nodeCtx) String(name, def string) string {
	if a := c.attr(name); a != nil {
		return string(a.GetS())
	}
	return def
}

// IntsAttr returns integer-list attribute name, or def when it is absent.
func (c *nodeCtx) IntsAttr(name string, def []int64) []int64 {
	if a := c.attr(name); a != nil {
		return a.GetInts()
	}
	return def
}

// FloatsAttr returns float-list attribute name, or def when it is absent.
func (c *nodeCtx) FloatsAttr(name string, def []float32) []float32 {
	if a := c.attr(name); a != nil {
		return a.GetFloats()
	}
	return def
}

// GraphAttr returns graph attribute name (If's branches, Loop's body), or
// nil when it is absent.
func (c *nodeCtx) GraphAttr(name string) *onnxpb.GraphProto {
	if a := c.attr(name); a != nil {
		return a.GetG()
	}
	return nil
}

// TensorAttr returns tensor attribute name (Constant's value,
// ConstantOfShape's value) as a concrete tensor, or nil when it is absent.
func (c *nodeCtx) TensorAttr(name string) (*tensor.Tensor, error) {
	a := c.attr(name)
	if a == nil || a.GetT() == nil {
		return nil, nil
	}
	t, err := tensorFromProto(a.GetT(), "")
	if err != nil {
		return nil, c.Errorf("attribute %s: %v", name, err)
	}
	return t, nil
}

// Concrete returns t when its value is known when the node runs in both
// modes (computed from constants, shapes, or graph inputs the Model
// specialises its plans on), or an error naming what when it depends on
// the model's input values. It is the one gate for every operand an op
// reads as values rather than as data: a shape, axes, pads, k, depth, or
// the data of an op whose output shape depends on it (NonZero, Unique,
// Compress). c.Ints and c.scalarValue go through it.
func (c *nodeCtx) Concrete(t *tensor.Tensor, what string) (*tensor.Tensor, error) {
	if t == nil {
		return nil, c.Errorf("input %s is missing", what)
	}
	if c.dynamic(t) {
		// A value computed from graph inputs alone: the Model runs again
		// with those inputs as values (see valueError).
		if o, ok := c.fromData[t]; ok && !o.other && o.inputs != 0 {
			return nil, c.valueError(o, what)
		}
		return nil, c.Errorf("input %s depends on the model's input values, not only on shapes; spore needs it at trace time", what)
	}
	return t, nil
}

// Ints reads input t, which must be concrete (computed from constants,
// shapes and value inputs: see Concrete), as int64 values; what names the
// input in the error, e.g. "shape" or "starts".
func (c *nodeCtx) Ints(t *tensor.Tensor, what string) ([]int64, error) {
	if _, err := c.Concrete(t, what); err != nil {
		return nil, err
	}
	switch t.DType() {
	case tensor.Int64, tensor.Int32:
		return t.Int64s(), nil
	}
	return nil, c.Errorf("input %s has dtype %v, want int64 or int32", what, t.DType())
}
