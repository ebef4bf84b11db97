package onnx

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/tensor"
)

// Report describes a model without running it: what `spore onnx check`
// prints.
type Report struct {
	// IRVersion is the ONNX IR version of the file.
	IRVersion int64
	// Opset is the ai.onnx opset version (0 when the model imports none).
	Opset int64
	// Producer is the producing tool and its version, e.g. "pytorch 1.13.1".
	Producer string
	// Graph is the main graph's name.
	Graph string
	// Nodes counts the nodes, those of sub-graphs included.
	Nodes int
	// OpCounts counts the nodes by op type; ops of other domains than
	// ai.onnx are keyed "domain.OpType".
	OpCounts map[string]int
	// Initializers counts the main graph's initializers; Values sums their
	// elements (the parameter count of most models).
	Initializers int
	Values       int64
	// Inputs and Outputs describe the graph's inputs (initializers
	// excluded) and outputs.
	Inputs, Outputs []ValueInfo
	// Unsupported lists the op types spore cannot run at this opset
	// (none when the opset itself is out of range: Problem says so).
	Unsupported []Unsupported
	// Problem is why the model cannot be loaded for another reason than
	// unsupported ops (an opset out of range, a cycle, an undefined
	// value); "" when there is none.
	Problem string
	// Shapes says whether the shapes were checked (by CheckShapes, which
	// Check does not do) and with what result; ShapeNote says why they do
	// not fit, or why they could not be checked. OutputShapes holds the
	// outputs as traced when they fit.
	Shapes       ShapeCheck
	ShapeNote    string
	OutputShapes []ValueInfo
	// opsetOutOfRange: the op table was not consulted, as the opset is
	// not one spore reads (Problem says so).
	opsetOutOfRange bool
}

// ShapeCheck is the outcome of Report.CheckShapes.
type ShapeCheck int

const (
	// ShapesNotChecked: only the structure and the ops were checked (a
	// report of Check or CheckFile).
	ShapesNotChecked ShapeCheck = iota
	// ShapesFit: the model traced at its declared input shapes; every
	// node accepted its inputs' shapes and dtypes.
	ShapesFit
	// ShapesDoNotFit: a node refused its inputs at the declared input
	// shapes, as Run would: ShapeNote names it.
	ShapesDoNotFit
	// ShapesUncheckable: the shapes could not be traced without values
	// (an input without a declared shape or element type, or shapes that
	// depend on the input values): ShapeNote says why.
	ShapesUncheckable
)

// OK reports whether Load would accept the model as far as the structure
// and the op table go (external data is not read by Check).
func (r *Report) OK() bool { return r.Problem == "" && len(r.Unsupported) == 0 }

// Check reads a model from r and reports on it without running it or
// decoding its initializers (their sizes are checked against the data
// present; external data, which needs a directory, only by CheckFile). It
// returns an error only when r does not hold an ONNX model at all; a model
// spore cannot load is described by the report's Unsupported and Problem.
func Check(r io.Reader) (*Report, error) { return check(r, "") }

func check(r io.Reader, dir string) (*Report, error) {
	mp, err := parseModel(r)
	if err != nil {
		return nil, err
	}
	rep := &Report{
		IRVersion: mp.GetIrVersion(),
		Producer:  strings.TrimSpace(mp.GetProducerName() + " " + mp.GetProducerVersion()),
		Graph:     mp.GetGraph().GetName(),
		OpCounts:  map[string]int{},
	}
	g := mp.GetGraph()
	for _, o := range mp.GetOpsetImport() {
		if isDefaultDomain(o.GetDomain()) {
			rep.Opset = o.GetVersion()
		}
	}
	isInit := map[string]bool{}
	for _, t := range g.GetInitializer() {
		isInit[t.GetName()] = true
		rep.Initializers++
		if n, err := elemCount(t.GetDims()); err == nil {
			rep.Values += int64(n)
		}
	}
	for _, vi := range g.GetInput() {
		if !isInit[vi.GetName()] {
			info, _ := valueInfo(vi)
			rep.Inputs = append(rep.Inputs, info)
		}
	}
	for _, vi := range g.GetOutput() {
		info, _ := valueInfo(vi)
		rep.Outputs = append(rep.Outputs, info)
	}
	_, opsetErr := importedOpset(mp)
	if opsetErr != nil {
		rep.Problem = strings.TrimPrefix(opsetErr.Error(), "onnx: ")
		rep.opsetOutOfRange = true
	}
	// The structure is checked even when the opset is out of range; the
	// op table is not then (every op would be listed as unsupported, which
	// says nothing the opset's one line does not). Tensor attributes are
	// decoded, initializers are not.
	an := analyzer{opset: rep.Opset, dir: dir, plans: map[*onnxpb.GraphProto]*plan{}, unsupported: map[string]int{}, checkOnly: true}
	if _, err := an.graph(g, nil, 0); err != nil && rep.Problem == "" {
		rep.Problem = strings.TrimPrefix(err.Error(), "onnx: ")
	}
	for _, init := range g.GetInitializer() {
		if rep.Problem != "" {
			break
		}
		if err := checkTensorProto(init, dir); err != nil {
			rep.Problem = "initializer: " + err.Error()
		}
	}
	an.survey(g, 0)
	rep.Nodes = an.nodes
	rep.OpCounts = an.opCounts
	if rep.OpCounts == nil {
		rep.OpCounts = map[string]int{}
	}
	if opsetErr == nil {
		rep.Unsupported = an.unsup
	}
	return rep, nil
}

// dynamicDim is the size CheckShapes gives a dynamic input dimension.
// One, as a batch of one is valid wherever a batch is; it can hide a
// mismatch that only a larger size shows (broadcasting), never invent one
// that is not in the model.
const dynamicDim = 1

// CheckShapes checks the shapes of m, the model the report describes (as
// loaded by Load or LoadFile): it traces m's graph on symbolic inputs of
// the declared shapes and element types, dynamic dimensions taken as 1,
// without computing anything on them, so that every node checks its
// inputs' shapes as Run would. The result is in r.Shapes, r.ShapeNote
// and r.OutputShapes.
func (r *Report) CheckShapes(m *Model) {
	r.Shapes, r.ShapeNote, r.OutputShapes = ShapesUncheckable, "", nil
	metas := make([]tensor.Meta, len(m.inputs))
	dynamic := false
	for i, in := range m.inputs {
		switch {
		case in.Shape == nil:
			r.ShapeNote = fmt.Sprintf("input %q declares no shape", in.Name)
			return
		case in.DType == tensor.Invalid:
			r.ShapeNote = fmt.Sprintf("input %q has no element type spore can hold", in.Name)
			return
		}
		shape := make(tensor.Shape, len(in.Shape))
		for j, d := range in.Shape {
			shape[j] = int(d)
			if d < 0 {
				shape[j] = dynamicDim
				dynamic = true
			}
		}
		metas[i] = tensor.Meta{Shape: shape, DType: in.DType}
	}
	outs, err := traceShapes(m, metas)
	if err != nil {
		// The message without the source line, which is this function's.
		msg := strings.TrimPrefix(err.Error(), "onnx: ")
		var te *tensor.Error
		if errors.As(err, &te) {
			msg = te.Op + ": " + te.Msg
			if te.Op == "onnx" {
				msg = te.Msg
			}
		}
		if strings.Contains(msg, "called on a symbolic tensor while tracing") {
			r.ShapeNote = "its shapes depend on the input values"
			return
		}
		if dynamic {
			msg += " (with the dynamic input dimensions taken as 1)"
		}
		r.Shapes, r.ShapeNote = ShapesDoNotFit, msg
		return
	}
	r.Shapes = ShapesFit
	for i, o := range outs {
		v := ValueInfo{Name: fmt.Sprintf("output%d", i), DType: o.DType()}
		if i < len(m.outputs) {
			v.Name = m.outputs[i].Name
		}
		for _, d := range o.Shape() {
			v.Shape = append(v.Shape, int64(d))
		}
		if v.Shape == nil {
			v.Shape = []int64{}
		}
		r.OutputShapes = append(r.OutputShapes, v)
	}
}

// traceShapes traces m's graph on symbolic inputs of the given metas and
// returns its outputs, turning a node's panic into the error Run returns.
func traceShapes(m *Model, metas []tensor.Meta) (outs []*tensor.Tensor, err error) {
	defer core.Catch(&err, "")
	_, err = graph.Trace("onnx.CheckShapes", metas, func(args []*tensor.Tensor) []*tensor.Tensor {
		outs = m.forward(args)
		return outs
	})
	return outs, err
}

// CheckFile is Check on the file at path.
func CheckFile(path string) (*Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	defer f.Close()
	rep, err := check(f, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return rep, nil
}

// String formats the report for people: the file's versions, the graph's
// size, inputs and outputs, the op histogram (most used first) and what
// stands in the way of loading it.
func (r *Report) String() string {
	var b strings.Builder
	producer := r.Producer
	if producer == "" {
		producer = "unknown"
	}
	fmt.Fprintf(&b, "ONNX IR version %d, ai.onnx opset %d, producer %s\n", r.IRVersion, r.Opset, producer)
	fmt.Fprintf(&b, "graph %q: %d nodes, %d initializers (%d values)\n", r.Graph, r.Nodes, r.Initializers, r.Values)
	for _, in := range r.Inputs {
		fmt.Fprintf(&b, "input   %s\n", declared(in))
	}
	for _, out := range r.Outputs {
		fmt.Fprintf(&b, "output  %s\n", declared(out))
	}
	ops := sortedKeys(r.OpCounts)
	sort.SliceStable(ops, func(i, j int) bool { return r.OpCounts[ops[i]] > r.OpCounts[ops[j]] })
	b.WriteString("ops:")
	for _, op := range ops {
		fmt.Fprintf(&b, " %s %d,", op, r.OpCounts[op])
	}
	s := strings.TrimSuffix(b.String(), ",")
	b.Reset()
	b.WriteString(s)
	b.WriteString("\n")
	switch {
	case r.opsetOutOfRange:
		// The problem line says why; no op is listed.
	case len(r.Unsupported) == 0:
		b.WriteString("unsupported ops: none\n")
	default:
		fmt.Fprintf(&b, "unsupported ops: %d type(s)\n", len(r.Unsupported))
		for _, u := range r.Unsupported {
			fmt.Fprintf(&b, "  %s (domain %s): %d node(s), first %s%s\n", u.OpType, u.Domain, u.Count, u.FirstNode, u.otherOpsets("; "))
		}
	}
	if r.Problem != "" {
		fmt.Fprintf(&b, "problem: %s\n", r.Problem)
	}
	switch r.Shapes {
	case ShapesFit:
		var outs []string
		for _, o := range r.OutputShapes {
			outs = append(outs, o.String())
		}
		fmt.Fprintf(&b, "shapes: fit at the declared input shapes (dynamic dimensions as 1); outputs %s\n", strings.Join(outs, ", "))
	case ShapesDoNotFit:
		fmt.Fprintf(&b, "shapes: do not fit: %s\n", r.ShapeNote)
	case ShapesUncheckable:
		fmt.Fprintf(&b, "shapes: not checked: %s\n", r.ShapeNote)
	}
	switch {
	case !r.OK():
		b.WriteString("spore cannot load this model\n")
	case r.Shapes == ShapesFit:
		b.WriteString("spore can load this model, and its shapes fit\n")
	case r.Shapes == ShapesDoNotFit:
		b.WriteString("spore can load this model but not run it: its shapes do not fit\n")
	case r.Shapes == ShapesUncheckable:
		b.WriteString("spore can load this model (ops supported; shapes not checked)\n")
	default:
		b.WriteString("spore can load this model\n")
	}
	return b.String()
}

// declared formats a graph input or output as the file declares it, as
// ValueInfo.String does, but telling a value whose shape is not declared
// ("y (shape not declared) Float32") from a scalar ("y [] Float32").
func declared(v ValueInfo) string {
	if v.Shape != nil {
		return v.String()
	}
	dtype := "?"
	if v.DType != tensor.Invalid {
		dtype = v.DType.String()
	}
	return v.Name + " (shape not declared) " + dtype
}
