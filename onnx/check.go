package onnx

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sporeml/spore/onnx/internal/onnxpb"
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
	// Unsupported lists the op types spore cannot run at this opset.
	Unsupported []Unsupported
	// Problem is why the model cannot be loaded for another reason than
	// unsupported ops (an opset out of range, a cycle, an undefined
	// value); "" when there is none.
	Problem string
}

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
	if _, err := importedOpset(mp); err != nil {
		rep.Problem = strings.TrimPrefix(err.Error(), "onnx: ")
	}
	// The structure and the op table are checked at the model's opset even
	// when it is out of range, so that the report still lists what is
	// missing. Tensor attributes are decoded, initializers are not.
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
	rep.Unsupported = an.unsup
	return rep, nil
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
		fmt.Fprintf(&b, "input   %s\n", in)
	}
	for _, out := range r.Outputs {
		fmt.Fprintf(&b, "output  %s\n", out)
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
	if len(r.Unsupported) == 0 {
		b.WriteString("unsupported ops: none\n")
	} else {
		fmt.Fprintf(&b, "unsupported ops: %d type(s)\n", len(r.Unsupported))
		for _, u := range r.Unsupported {
			fmt.Fprintf(&b, "  %s (domain %s): %d node(s), first %s\n", u.OpType, u.Domain, u.Count, u.FirstNode)
		}
	}
	if r.Problem != "" {
		fmt.Fprintf(&b, "problem: %s\n", r.Problem)
	}
	if r.OK() {
		b.WriteString("spore can load this model\n")
	} else {
		b.WriteString("spore cannot load this model\n")
	}
	return b.String()
}
