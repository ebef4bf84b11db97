package onnx

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/jit"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/tensor"
)

// Model is an imported ONNX model: an nn cell whose Construct runs the
// graph with spore's ops, so it runs eagerly in PyNative mode, compiles
// under Graph mode and nn.Jit (once per input shapes, which is how dynamic
// dimensions such as the batch work), and trains through
// nn.TrainOneStepCell and train.Model (see Layer).
//
// The float initializers are its parameters, named by their ONNX names
// ("fc1.weight", "onnx::MatMul_123"), trainable, and saved and loaded by
// the checkpoint package under those names; BatchNormalization's running
// mean and variance are parameters that do not require gradients. Integer
// and boolean initializers (shapes, indices) are constants.
//
// Like every cell, a Model panics with a *tensor.Error on bad input (a
// wrong shape, dtype or number of inputs), naming the ONNX node or input;
// Run returns that as an error instead.
type Model struct {
	nn.Cell
	// Params holds the parameters under their ONNX names, in initializer
	// order. Inline, so that the names carry no prefix.
	Params nn.ParamList `nn:",inline"`

	opset    int64
	producer string
	graph    *onnxpb.GraphProto
	plans    map[*onnxpb.GraphProto]*plan
	consts   map[string]*tensor.Tensor
	params   map[string]*tensor.Tensor
	inputs   []ValueInfo
	outputs  []ValueInfo

	mu   sync.Mutex
	jits map[outputsKey]*jit.Func[func(...*tensor.Tensor) []*tensor.Tensor]
}

// outputsKey tells apart Outputs' compiled versions: the training flag and
// the level are baked into a plan.
type outputsKey struct {
	training bool
	level    jit.Level
}

// Opset returns the model's ai.onnx opset version.
func (m *Model) Opset() int64 { return m.opset }

// Inputs describes the values the model must be called with, in order:
// the graph inputs that are not initializers.
func (m *Model) Inputs() []ValueInfo { return append([]ValueInfo(nil), m.inputs...) }

// OutputInfo describes the model's outputs, in order.
func (m *Model) OutputInfo() []ValueInfo { return append([]ValueInfo(nil), m.outputs...) }

// Construct runs the model on its inputs (one tensor per entry of Inputs,
// in order) and returns its first output. It is what Call, nn.Jit and
// Graph mode run.
func (m *Model) Construct(xs ...*tensor.Tensor) *tensor.Tensor {
	return m.plainForward(xs)[0]
}

// Outputs runs the model and returns all its outputs, in the order of
// OutputInfo. In Graph mode (spore.GraphMode in the context) it runs a
// plan compiled once per input shapes, as Call does for the first output;
// inside a traced function it is traced inline. nn.Jit, which compiles
// Call, does not reach Outputs: outside Graph mode, compile it with
// spore.Jit(m.Outputs).
func (m *Model) Outputs(xs ...*tensor.Tensor) []*tensor.Tensor {
	if jit.GetContext().Mode != jit.GraphMode || anySymbolic(xs) {
		return m.forward(xs)
	}
	return m.compiledOutputs().Fn(xs...)
}

// Run is Outputs returning an error rather than panicking when the inputs
// do not fit the model or a node rejects them: the entry point for input
// from outside the program (files, the command line).
func (m *Model) Run(xs ...*tensor.Tensor) (outs []*tensor.Tensor, err error) {
	defer core.Catch(&err, "onnx: ")
	return m.Outputs(xs...), nil
}

// compiledOutputs returns the compiled all-outputs function for the
// current training state and the context's level.
func (m *Model) compiledOutputs() *jit.Func[func(...*tensor.Tensor) []*tensor.Tensor] {
	k := outputsKey{training: m.Training(), level: jit.GetContext().JitLevel}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.jits == nil {
		m.jits = map[outputsKey]*jit.Func[func(...*tensor.Tensor) []*tensor.Tensor]{}
	}
	j := m.jits[k]
	if j == nil {
		cfg := jit.Config{Name: "onnx.Model.Outputs", Level: k.level}
		j = jit.New(func(xs ...*tensor.Tensor) []*tensor.Tensor { return m.plainForward(xs) }, cfg)
		j.Fn = m.boxedJit(j.Fn, cfg) // sequences at the boundary: see sequence.go
		m.jits[k] = j
	}
	return j
}

func anySymbolic(xs []*tensor.Tensor) bool {
	for _, x := range xs {
		if x != nil && x.IsSymbolic() {
			return true
		}
	}
	return false
}

// Layer returns the model as an nn.Layer, a cell of one input and one
// output, for the APIs that take one: nn.NewWithLossCell, train.NewModel.
// The layer holds the model inline, so its parameters keep their ONNX
// names, and switching it to training (SetTrain) switches the model.
func (m *Model) Layer() nn.Layer {
	return nn.Init(&layer{M: m})
}

// layer adapts a one-input Model to nn.Layer.
type layer struct {
	nn.Cell
	// M is the model.
	M *Model `nn:",inline"`
}

// Construct runs the model on x and returns its first output.
func (l *layer) Construct(x *tensor.Tensor) *tensor.Tensor { return l.M.Base().Call(x) }

// forward checks the inputs against the graph's and runs the main graph.
func (m *Model) forward(xs []*tensor.Tensor) []*tensor.Tensor {
	if len(xs) != len(m.inputs) {
		names := make([]string, len(m.inputs))
		for i, in := range m.inputs {
			names[i] = in.Name
		}
		panic(&tensor.Error{Op: "onnx.Model", Msg: fmt.Sprintf("the model takes %d input(s) (%s), called with %d", len(m.inputs), strings.Join(names, ", "), len(xs))})
	}
	root := &scope{vals: make(map[string]*tensor.Tensor, len(m.consts)+len(m.params)+len(xs)), fromData: map[*tensor.Tensor]bool{}}
	for k, v := range m.consts {
		root.vals[k] = v
	}
	for k, v := range m.params {
		root.vals[k] = v
	}
	for i, x := range xs {
		if err := checkInput(m.inputs[i], x); err != nil {
			panic(&tensor.Error{Op: "onnx.Model", Msg: err.Error()})
		}
		root.vals[m.inputs[i].Name] = x
		root.fromData[x] = true
	}
	return m.runGraph(m.graph, root, m.Training())
}

// checkInput compares x with what the graph declares for it: dtype, rank
// and the fixed dimensions.
func checkInput(vi ValueInfo, x *tensor.Tensor) error {
	if x == nil {
		return fmt.Errorf("input %q is nil", vi.Name)
	}
	if err := checkKind(vi, x); err != nil || vi.Kind != KindTensor || KindOf(x) != KindTensor {
		return err
	}
	if vi.DType != tensor.Invalid && x.DType() != vi.DType {
		return fmt.Errorf("input %q has dtype %v, the model wants %v", vi.Name, x.DType(), vi.DType)
	}
	if vi.Shape == nil {
		return nil
	}
	ok := x.Rank() == len(vi.Shape)
	for i := 0; ok && i < len(vi.Shape); i++ {
		ok = vi.Shape[i] < 0 || int64(x.Dim(i)) == vi.Shape[i]
	}
	if !ok {
		return fmt.Errorf("input %q has shape %v, the model wants %s", vi.Name, x.Shape(), vi)
	}
	return nil
}

// runGraph runs graph g (the main graph or a sub-graph) in scope s, whose
// values include g's inputs, and returns g's outputs. A panic or error
// from a node's op is re-raised as a *tensor.Error that names the node.
func (m *Model) runGraph(g *onnxpb.GraphProto, s *scope, training bool) []*tensor.Tensor {
	p := m.plans[g]
	for k, v := range p.consts {
		s.vals[k] = v
	}
	for i, n := range p.nodes {
		m.runNode(n, p.fns[i], s, training)
		for _, name := range p.release[i] {
			delete(s.vals, name)
		}
	}
	outs := make([]*tensor.Tensor, len(g.GetOutput()))
	for i, o := range g.GetOutput() {
		t, ok := s.get(o.GetName())
		if !ok || t == nil {
			panic(&tensor.Error{Op: "onnx", Msg: fmt.Sprintf("graph %q: output %q was not computed (a node left an optional output out)", g.GetName(), o.GetName())})
		}
		outs[i] = t
	}
	return outs
}

// runNode applies one node, reading its inputs from s and writing its
// outputs into s.
func (m *Model) runNode(n *onnxpb.NodeProto, fn opFunc, s *scope, training bool) {
	ins := make([]*tensor.Tensor, len(n.GetInput()))
	for i, name := range n.GetInput() {
		if name == "" {
			continue
		}
		t, ok := s.get(name)
		if !ok {
			// Validation makes this unreachable; keep the message clear anyway.
			panic(nodeError(n, fmt.Errorf("input %q is not defined", name)))
		}
		ins[i] = t
	}
	c := &nodeCtx{Node: n, Opset: m.opset, Training: training, fromData: s.fromData}
	c.runGraph = func(g *onnxpb.GraphProto, gins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		return m.runSubGraph(g, s, gins, training, true)
	}
	c.runUnrolled = func(g *onnxpb.GraphProto, gins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		return m.runSubGraph(g, s, gins, training, false)
	}
	c.lookup = s.get
	outs := callOp(n, fn, c, ins)
	// An op on an input value, or on a parameter (which Graph mode traces),
	// gives values that are symbolic in Graph mode; Shape and Size read
	// only shapes, which are static.
	// SequenceLength too: a sequence's length is part of the plan's key.
	if op := n.GetOpType(); op != "Shape" && op != "Size" && op != "SequenceLength" {
		dep := false
		for _, t := range ins {
			if t != nil && (s.fromData[t] || t.IsParameter()) {
				dep = true
				break
			}
		}
		if dep {
			for _, t := range outs {
				if t != nil {
					s.markData(t)
				}
			}
		}
	}
	for i, name := range n.GetOutput() {
		if name == "" {
			continue
		}
		if i >= len(outs) || outs[i] == nil {
			// A trailing optional output the op did not compute: fine as
			// long as nothing reads it, which runGraph and the next nodes
			// check when they look it up.
			continue
		}
		s.vals[name] = outs[i]
	}
}

// runSubGraph runs sub-graph g with the given inputs in a scope nested in
// s, so that its nodes see the enclosing graphs' values.
func (m *Model) runSubGraph(g *onnxpb.GraphProto, s *scope, ins []*tensor.Tensor, training, mark bool) (outs []*tensor.Tensor, err error) {
	if m.plans[g] == nil {
		return nil, fmt.Errorf("sub-graph %q was not validated at load time", g.GetName())
	}
	if len(ins) != len(g.GetInput()) {
		return nil, fmt.Errorf("sub-graph %q takes %d inputs, given %d", g.GetName(), len(g.GetInput()), len(ins))
	}
	var added []*tensor.Tensor
	child := &scope{vals: make(map[string]*tensor.Tensor, len(ins)), parent: s, fromData: s.fromData, added: &added}
	for i, vi := range g.GetInput() {
		child.vals[vi.GetName()] = ins[i]
		// A body's inputs (Loop's iteration number and carried values,
		// Scan's slices) are symbolic in Graph mode.
		if ins[i] != nil && mark {
			child.markData(ins[i])
		}
	}
	outs = m.runGraph(g, child, training)
	// The run's own values are gone with its scope: unmark them, keeping
	// the marks of its outputs (in the enclosing run's list).
	for _, t := range added {
		if !slices.Contains(outs, t) {
			delete(s.fromData, t)
		}
	}
	for _, t := range added {
		if s.fromData[t] {
			s.keepMark(t)
		}
	}
	return outs, nil
}

// callOp runs fn, turning an error it returns, or a panic from the ops it
// calls, into a *tensor.Error panic that names the node, so that a failure
// deep in a model says where in the ONNX graph it happened.
func callOp(n *onnxpb.NodeProto, fn opFunc, c *nodeCtx, ins []*tensor.Tensor) []*tensor.Tensor {
	if fn == nil {
		panic(nodeError(n, fmt.Errorf("op %s has no implementation at opset %d", n.GetOpType(), c.Opset)))
	}
	outs, err := tryOp(fn, c, ins)
	if err != nil {
		// Panicking here, outside tryOp's recover, wraps the error once:
		// a panic raised under that recover would be caught and named
		// again ("node "r" (Reshape): node "r" (Reshape): ...").
		panic(nodeError(n, err))
	}
	return outs
}

// tryOp runs fn, returning a panic from the ops it calls as its error.
func tryOp(fn opFunc, c *nodeCtx, ins []*tensor.Tensor) (outs []*tensor.Tensor, err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				err = e
				return
			}
			err = fmt.Errorf("%v", r)
		}
	}()
	return fn(c, ins)
}

// nodeError is the panic value for a failure in node n.
func nodeError(n *onnxpb.NodeProto, err error) *tensor.Error {
	msg := err.Error()
	// Errors from nodeCtx.Errorf already name the node.
	prefix := fmt.Sprintf("onnx: node %q (%s): ", n.GetName(), n.GetOpType())
	msg = strings.TrimPrefix(msg, prefix)
	var te *tensor.Error
	loc := ""
	if errors.As(err, &te) {
		loc = te.Loc
		msg = fmt.Sprintf("%s: %s", te.Op, te.Msg)
		if te.Op == "onnx" {
			// A node of a sub-graph failed: the chain of node names
			// says where, outermost first.
			msg = te.Msg
		}
	}
	return &tensor.Error{Op: "onnx", Msg: fmt.Sprintf("node %s (%s): %s", nodeLabel(n), n.GetOpType(), msg), Loc: loc}
}
