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

	mu sync.Mutex
	// compiled holds Outputs' compiled plans, by training state, level
	// and the values of the value inputs (see runtime_values.go).
	compiled valuePlans
	// values is the set of graph inputs the model reads as values, found
	// by running it; it only grows.
	values valueSet
	// callCompiles is set once Call, outside Graph mode, was seen to
	// compile (nn.Jit): a model with value inputs then runs Outputs'
	// plans, which can take them.
	callCompiles bool
	// misses counts the runs that failed because an input read as a value
	// was symbolic (the model traced with symbolic inputs), which Call
	// tells from other failures by.
	misses int
	// names are the inputs' names, made once (see inputNames).
	namesOnce sync.Once
	names     []string
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
//
// A graph input that the model reads as a value (a Reshape's shape, a
// Slice's starts, a TopK's k given as a graph input) is read when the
// model is called: in Graph mode the plan is specialised on its value,
// compiled once per value (and input shapes) and kept in a bounded cache
// of the most recently used values (32 per training state and level). A
// model traced inline, inside another function, cannot read its inputs'
// values and refuses such a model with an error naming the input.
func (m *Model) Outputs(xs ...*tensor.Tensor) []*tensor.Tensor {
	if jit.GetContext().Mode != jit.GraphMode || anySymbolic(xs) {
		return m.forward(xs)
	}
	return m.compiledOutputs().Fn(xs...)
}

// Call runs the model on xs and returns its first output, as nn.Cell.Call
// does; a model with value inputs (see Outputs), when it runs compiled (in
// Graph mode, or after nn.Jit), runs Outputs' plans specialised on their
// values, since a plan that Cell.Call compiles for shapes alone cannot
// take them. Such a model under nn.Jit runs at the context's level, not
// at a level given to nn.Jit.
func (m *Model) Call(xs ...*tensor.Tensor) *tensor.Tensor {
	symbolic := anySymbolic(xs)
	graph := jit.GetContext().Mode == jit.GraphMode
	set, forced := m.valueState()
	// The specialised paths take a copy of xs, so that xs stays on the
	// caller's stack on the common path, as with Cell.Call.
	if !symbolic && set != 0 && (graph || forced) {
		return m.compiledOutputs().Fn(append([]*tensor.Tensor(nil), xs...)...)[0]
	}
	before := m.missCount()
	y, perr := m.tryCall(xs)
	if perr == nil {
		return y
	}
	// Called eagerly, the model reads value inputs itself; a failure for
	// want of one is Cell.Call's trace, whose inputs are symbolic.
	if !symbolic && m.missCount() != before {
		if !graph {
			m.mu.Lock()
			m.callCompiles = true
			m.mu.Unlock()
		}
		return m.compiledOutputs().Fn(append([]*tensor.Tensor(nil), xs...)...)[0]
	}
	panic(nodeKernelError(perr))
}

// tryCall runs Cell.Call, returning its panic value.
func (m *Model) tryCall(xs []*tensor.Tensor) (y *tensor.Tensor, perr any) {
	defer func() { perr = recover() }()
	return m.Base().Call(xs...), nil
}

// JitStats returns the compile-cache statistics of the model's compiled
// plans, summed: Call's (nn.Cell.JitStats) and Outputs', whose plans are
// specialised on the values of value inputs too. Compiles counts every
// plan compiled, also those later evicted, whose number is in Evictions.
func (m *Model) JitStats() jit.Stats {
	st := m.Cell.JitStats()
	m.mu.Lock()
	defer m.mu.Unlock()
	return st.Add(m.compiled.stats())
}

// valueState returns the value inputs found so far and whether Call was
// seen compiling.
func (m *Model) valueState() (valueSet, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.values, m.callCompiles
}

// missCount returns the number of runs that failed for want of a
// symbolic input's value.
func (m *Model) missCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.misses
}

// inputNames returns the inputs' names, in order; callers do not modify
// it.
func (m *Model) inputNames() []string {
	m.namesOnce.Do(func() {
		m.names = make([]string, len(m.inputs))
		for i, in := range m.inputs {
			m.names[i] = in.Name
		}
	})
	return m.names
}

// addValues records more graph inputs read as values.
func (m *Model) addValues(set valueSet) {
	m.mu.Lock()
	m.values |= set
	m.mu.Unlock()
}

// Run is Outputs returning an error rather than panicking when the inputs
// do not fit the model or a node rejects them: the entry point for input
// from outside the program (files, the command line).
func (m *Model) Run(xs ...*tensor.Tensor) (outs []*tensor.Tensor, err error) {
	defer core.Catch(&err, "onnx: ")
	return m.Outputs(xs...), nil
}

// outputsFunc is the compiled all-outputs function of one training state
// and level: it picks the plan for the values of the value inputs.
type outputsFunc struct {
	// Fn runs the compiled plan for xs.
	Fn func(xs ...*tensor.Tensor) []*tensor.Tensor
}

// compiledOutputs returns the compiled all-outputs function for the
// current training state and the context's level.
func (m *Model) compiledOutputs() outputsFunc {
	k := outputsKey{training: m.Training(), level: jit.GetContext().JitLevel}
	return outputsFunc{Fn: func(xs ...*tensor.Tensor) []*tensor.Tensor { return m.runCompiled(k, xs) }}
}

// runCompiled runs the plan of k specialised on the values of xs' value
// inputs, compiling it on first use. A trace that finds more value inputs
// fails; the plan is dropped and the call tried again with them, which
// ends, since the set only grows.
func (m *Model) runCompiled(k outputsKey, xs []*tensor.Tensor) []*tensor.Tensor {
	for {
		set, _ := m.valueState()
		p := m.planFor(k, set, xs)
		outs, perr := runPlan(p, xs)
		if perr == nil {
			return outs
		}
		if now, _ := m.valueState(); now == set {
			panic(nodeKernelError(perr))
		}
		m.mu.Lock()
		m.compiled.drop(p)
		m.mu.Unlock()
	}
}

// runPlan runs p on xs, returning its panic value.
func runPlan(p *valuePlan, xs []*tensor.Tensor) (outs []*tensor.Tensor, perr any) {
	defer func() { perr = recover() }()
	return p.fn.Fn(xs...), nil
}

// planFor returns the plan of k for the value inputs set and their values
// in xs, making it (compiled on its first call) when there is none. The
// plan's function captures copies of those inputs, so that its trace
// reads them as constants.
func (m *Model) planFor(k outputsKey, set valueSet, xs []*tensor.Tensor) *valuePlan {
	key := valuePlanKey{outputsKey: k, set: set, values: valueKey(set, xs)}
	m.mu.Lock()
	defer m.mu.Unlock()
	if p := m.compiled.get(key); p != nil {
		return p
	}
	var subst []*tensor.Tensor
	if set != 0 {
		subst = make([]*tensor.Tensor, len(xs))
		for i, x := range xs {
			if i < maxTrackedInputs && set&(1<<i) != 0 && x != nil && !x.IsSymbolic() {
				subst[i] = x.Clone()
			}
		}
	}
	cfg := jit.Config{Name: "onnx.Model.Outputs", Level: k.level}
	fn := jit.New(func(sym ...*tensor.Tensor) []*tensor.Tensor { return m.run(sym, set, subst) }, cfg)
	// Sequences at the boundary: see sequence.go.
	fn.Fn = m.boxedJit(fn.Fn, cfg, func(sym []*tensor.Tensor) []*tensor.Tensor { return m.run(sym, set, subst) })
	p := &valuePlan{key: key, fn: fn}
	m.compiled.add(p, m.inputNames())
	return p
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
func (l *layer) Construct(x *tensor.Tensor) *tensor.Tensor { return l.M.Call(x) }

// forward checks the inputs against the graph's and runs the main graph,
// reading the value inputs from xs (PyNative mode, or traced inline). A
// run that finds more value inputs, concrete in xs, runs again with them.
func (m *Model) forward(xs []*tensor.Tensor) []*tensor.Tensor {
	for {
		set, _ := m.valueState()
		outs, need, perr := m.tryRun(xs, set, nil, symbolicSet(xs))
		if perr == nil {
			return outs
		}
		if need&symbolicSet(xs) != 0 {
			m.mu.Lock()
			m.values |= need
			m.misses++
			m.mu.Unlock()
			panic(nodeKernelError(perr))
		}
		more := need &^ set
		if more == 0 {
			panic(nodeKernelError(perr))
		}
		m.addValues(more)
	}
}

// symbolicSet is the set of the tracked inputs in xs that are symbolic.
func symbolicSet(xs []*tensor.Tensor) valueSet {
	var s valueSet
	for i, x := range xs {
		if i < maxTrackedInputs && x != nil && x.IsSymbolic() {
			s |= 1 << i
		}
	}
	return s
}

// tryRun is run returning its panic value and the value inputs the call
// found, rather than panicking.
func (m *Model) tryRun(xs []*tensor.Tensor, set valueSet, subst []*tensor.Tensor, outer valueSet) (outs []*tensor.Tensor, need valueSet, perr any) {
	cs := &callState{outer: outer}
	defer func() {
		if perr = recover(); perr != nil {
			need = cs.need
		}
	}()
	return m.runCall(xs, set, subst, cs), 0, nil
}

// run is the traced function of a compiled plan: the main graph on xs,
// the value inputs of set taken from subst. A trace that finds more value
// inputs records them, for runCompiled to try again, and fails.
func (m *Model) run(xs []*tensor.Tensor, set valueSet, subst []*tensor.Tensor) []*tensor.Tensor {
	outs, need, perr := m.tryRun(xs, set, subst, 0)
	if perr != nil {
		if more := need &^ set; more != 0 {
			m.addValues(more)
		}
		panic(perr)
	}
	return outs
}

// runCall checks the inputs against the graph's and runs the main graph.
// The inputs of set are values: taken from subst where it has them (a
// compiled plan's constants), else from xs when concrete, and not marked
// as data, so that ops may read them; the others are data, marked with
// their origin.
func (m *Model) runCall(xs []*tensor.Tensor, set valueSet, subst []*tensor.Tensor, cs *callState) []*tensor.Tensor {
	if len(xs) != len(m.inputs) {
		names := make([]string, len(m.inputs))
		for i, in := range m.inputs {
			names[i] = in.Name
		}
		panic(&tensor.Error{Op: "onnx.Model", Msg: fmt.Sprintf("the model takes %d input(s) (%s), called with %d", len(m.inputs), strings.Join(names, ", "), len(xs))})
	}
	cs.names = m.inputNames()
	for i, in := range m.inputs {
		if in.Kind != KindTensor && i < maxTrackedInputs {
			cs.boxed |= 1 << i
		}
	}
	root := &scope{vals: make(map[string]*tensor.Tensor, len(m.consts)+len(m.params)+len(xs)), fromData: map[*tensor.Tensor]origin{}, call: cs}
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
		if i < maxTrackedInputs && set&(1<<i) != 0 {
			v := x
			if i < len(subst) && subst[i] != nil {
				v = subst[i]
			}
			if !v.IsSymbolic() {
				root.vals[m.inputs[i].Name] = v
				if cs.valued == nil {
					cs.valued = map[*tensor.Tensor]bool{}
				}
				cs.valued[v] = true
				continue
			}
		}
		root.vals[m.inputs[i].Name] = x
		o := origin{other: i >= maxTrackedInputs}
		if !o.other {
			o.inputs = 1 << i
		}
		root.fromData[x] = root.fromData[x].union(o)
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
	c := &nodeCtx{Node: n, Opset: m.opset, Training: training, fromData: s.fromData, call: s.call, where: s.where}
	c.runGraph = func(g *onnxpb.GraphProto, gins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		where := fmt.Sprintf("%snode %s (%s): ", s.where, nodeLabel(n), n.GetOpType())
		return m.runSubGraph(g, s, gins, training, true, where)
	}
	c.runUnrolled = func(g *onnxpb.GraphProto, gins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		where := fmt.Sprintf("%snode %s (%s): ", s.where, nodeLabel(n), n.GetOpType())
		return m.runSubGraph(g, s, gins, training, false, where)
	}
	c.lookup = s.get
	outs := callOp(n, fn, c, ins)
	if v := s.call.valued; v != nil {
		for _, t := range ins {
			if t != nil && v[t] {
				for _, o := range outs {
					if o != nil {
						v[o] = true
					}
				}
				break
			}
		}
	}
	// An op on an input value, or on a parameter (which Graph mode traces),
	// gives values that are symbolic in Graph mode; Shape and Size read
	// only shapes, which are static.
	// SequenceLength too: a sequence's length is part of the plan's key.
	if op := n.GetOpType(); op != "Shape" && op != "Size" && op != "SequenceLength" {
		dep, from := false, origin{}
		for _, t := range ins {
			if t == nil {
				continue
			}
			if o, ok := s.fromData[t]; ok {
				dep, from = true, from.union(o)
			}
			if t.IsParameter() {
				dep, from.other = true, true
			}
		}
		if dep {
			for _, t := range outs {
				if t != nil {
					s.markData(t, from)
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
// s, so that its nodes see the enclosing graphs' values; where names the
// enclosing nodes, the node holding g last (see scope.where). With mark,
// the sub-graph's inputs are marked as data (a body run as a loop, whose
// inputs are symbolic in Graph mode); without, they keep their marks (a
// body unrolled at trace time).
func (m *Model) runSubGraph(g *onnxpb.GraphProto, s *scope, ins []*tensor.Tensor, training, mark bool, where string) (outs []*tensor.Tensor, err error) {
	if m.plans[g] == nil {
		return nil, fmt.Errorf("sub-graph %q was not validated at load time", g.GetName())
	}
	if len(ins) != len(g.GetInput()) {
		return nil, fmt.Errorf("sub-graph %q takes %d inputs, given %d", g.GetName(), len(g.GetInput()), len(ins))
	}
	var added []*tensor.Tensor
	child := &scope{vals: make(map[string]*tensor.Tensor, len(ins)), parent: s, fromData: s.fromData, call: s.call, where: where, added: &added}
	for i, vi := range g.GetInput() {
		t := ins[i]
		// A body's inputs (Loop's iteration number and carried values,
		// Scan's slices) are symbolic in Graph mode, and no plan is
		// specialised on them. A concrete one may be a value of the
		// enclosing graph (a Loop's first carried values are its initial
		// ones): a copy takes the mark, so that the enclosing graph's
		// value keeps its own, as in Graph mode, where the body gets new
		// symbolic values. Unrolled bodies keep their inputs' marks.
		if t != nil && mark {
			if o, ok := s.fromData[t]; (!ok || !o.other) && !t.IsSymbolic() {
				t = core.Apply(core.IdentityPrim(), nil, t)
			}
			child.markData(t, origin{other: true})
		}
		child.vals[vi.GetName()] = t
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
		if _, ok := s.fromData[t]; ok {
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
		if strings.HasPrefix(te.Op, kernelOpPrefix) {
			// A kernel check's (see kernelOp): it names the node and the
			// enclosing ones already, as a compiled plan's failure does,
			// and the Model's boundary makes it an "onnx" error.
			return te
		}
		if te.Op == "onnx" {
			// A node of a sub-graph failed: the chain of node names
			// says where, outermost first.
			msg = te.Msg
		}
	}
	return &tensor.Error{Op: "onnx", Msg: fmt.Sprintf("node %s (%s): %s", nodeLabel(n), n.GetOpType(), msg), Loc: loc}
}
