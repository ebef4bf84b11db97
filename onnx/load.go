package onnx

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/tensor"
)

// The ai.onnx opset versions the loader accepts: every released one up to
// 21. Within them, the op table says which op types it implements at the
// model's opset: an op registers one form per range of opsets with the
// same semantics (Slice's starts as an attribute before 10 and inputs
// from it, Softmax over the flattened trailing axes before 13, ...), and
// an op version it has no form for is reported as unsupported at that
// opset.
const (
	MinOpset = 1
	MaxOpset = 21
)

// maxModelBytes bounds what Load reads: protobuf cannot encode a message
// over 2 GiB, so a longer stream is not an ONNX model (large models keep
// their weights in external data files, which are read tensor by tensor).
const maxModelBytes = 2 << 30

// maxGraphDepth bounds the nesting of sub-graphs (an If inside a Loop
// inside ...), so that a hostile file cannot make validation recurse
// without end.
const maxGraphDepth = 64

// LoadOption configures Load and LoadFile.
type LoadOption func(*loadConfig)

type loadConfig struct {
	dir string
}

// ExternalDataDir sets the directory that external data files (the
// initializers that large models keep beside the .onnx file) are resolved
// against. LoadFile uses the model file's directory unless this is given;
// Load, which has no path, refuses external data without it.
func ExternalDataDir(dir string) LoadOption {
	return func(c *loadConfig) { c.dir = dir }
}

// Unsupported is one op type the loader cannot run, with the name of the
// first node that uses it and how many nodes do.
type Unsupported struct {
	// OpType is the node's op_type, e.g. "NonMaxSuppression".
	OpType string
	// Domain is the node's domain; "ai.onnx" for the default one.
	Domain string
	// FirstNode names the first node of this type, in graph order
	// (sub-graphs after their enclosing node).
	FirstNode string
	// Count is the number of nodes of this type.
	Count int
}

// otherOpsets says, after sep, at which opsets spore implements the op
// when it does at some but not at the model's (an op version spore has no
// form for), or returns "" when it implements the op at none.
func (u Unsupported) otherOpsets(sep string) string {
	if u.Domain != "ai.onnx" {
		return ""
	}
	if r := opsetRanges(u.OpType); r != "" {
		return sep + "spore implements it at opsets " + r
	}
	return ""
}

// UnsupportedError is what Load returns when a model uses op types that
// spore does not implement for the model's opset. It lists every one of
// them, so that one attempt shows all that is missing.
type UnsupportedError struct {
	// Opset is the model's ai.onnx opset version.
	Opset int64
	// Ops are the unsupported op types, in order of first use.
	Ops []Unsupported
}

// Error lists the unsupported op types with their first nodes.
func (e *UnsupportedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "onnx: the model uses %d op type(s) that spore does not support at opset %d:", len(e.Ops), e.Opset)
	for i, u := range e.Ops {
		if i > 0 {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " %s (domain %s, %d node(s), first %s%s)", u.OpType, u.Domain, u.Count, u.FirstNode, u.otherOpsets(", "))
	}
	return b.String()
}

// Load reads an ONNX model from r and returns it as a spore cell. The
// whole model is checked before Load returns: its opset, that every node's
// inputs are defined and the graph has no cycle, sub-graphs included, that
// every initializer decodes, and that every op is supported (if not, the
// error is an *UnsupportedError listing them all). External data needs
// the ExternalDataDir option; LoadFile sets it from the path.
func Load(r io.Reader, opts ...LoadOption) (*Model, error) {
	var cfg loadConfig
	for _, o := range opts {
		o(&cfg)
	}
	mp, err := parseModel(r)
	if err != nil {
		return nil, err
	}
	return build(mp, cfg)
}

// LoadFile reads the ONNX model at path (see Load). External data files
// are resolved against the model file's directory.
func LoadFile(path string, opts ...LoadOption) (*Model, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	defer f.Close()
	cfg := loadConfig{dir: filepath.Dir(path)}
	for _, o := range opts {
		o(&cfg)
	}
	mp, err := parseModel(f)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	m, err := build(mp, cfg)
	if err != nil {
		var ue *UnsupportedError
		if errors.As(err, &ue) {
			return nil, err
		}
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return m, nil
}

// parseModel reads and unmarshals a ModelProto. The bytes are read as they
// come (never preallocated from a declared size), and protobuf allocates in
// proportion to them.
func parseModel(r io.Reader) (*onnxpb.ModelProto, error) {
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(r, maxModelBytes+1))
	if err != nil {
		return nil, fmt.Errorf("onnx: reading the model: %w", err)
	}
	if n > maxModelBytes {
		return nil, fmt.Errorf("onnx: the model is over %d bytes, more than protobuf can encode; keep large weights in external data", int64(maxModelBytes))
	}
	if n == 0 {
		return nil, fmt.Errorf("onnx: the model is empty (0 bytes)")
	}
	mp := &onnxpb.ModelProto{}
	if err := proto.Unmarshal(buf.Bytes(), mp); err != nil {
		return nil, fmt.Errorf("onnx: not a valid ONNX model (%d bytes; truncated or not a protobuf ModelProto): %v", n, err)
	}
	if mp.GetGraph() == nil {
		return nil, fmt.Errorf("onnx: the file decodes but holds no graph: not an ONNX model")
	}
	return mp, nil
}

// importedOpset returns the model's ai.onnx opset version, or an error when
// it is missing or outside MinOpset..MaxOpset.
func importedOpset(mp *onnxpb.ModelProto) (int64, error) {
	v, found := int64(0), false
	for _, o := range mp.GetOpsetImport() {
		if d := o.GetDomain(); d == "" || d == "ai.onnx" {
			v, found = o.GetVersion(), true
		}
	}
	if !found && importsTraining(mp) {
		// Only ai.onnx.preview.training's ops (optimizer updates): no
		// ai.onnx op to look up, so any supported opset will do.
		return MaxOpset, nil
	}
	if !found {
		return 0, fmt.Errorf("onnx: the model imports no ai.onnx opset; spore supports opsets %d to %d", MinOpset, MaxOpset)
	}
	if v < MinOpset || v > MaxOpset {
		return v, fmt.Errorf("onnx: the model uses ai.onnx opset %d; spore supports opsets %d to %d (re-export it, e.g. torch.onnx.export(..., opset_version=17))", v, MinOpset, MaxOpset)
	}
	return v, nil
}

// build turns a parsed model into a Model: validate, decode initializers,
// make parameters.
func build(mp *onnxpb.ModelProto, cfg loadConfig) (*Model, error) {
	opset, err := importedOpset(mp)
	if err != nil {
		return nil, err
	}
	g := mp.GetGraph()
	m := &Model{
		opset:    opset,
		graph:    g,
		consts:   map[string]*tensor.Tensor{},
		params:   map[string]*tensor.Tensor{},
		plans:    map[*onnxpb.GraphProto]*plan{},
		producer: strings.TrimSpace(mp.GetProducerName() + " " + mp.GetProducerVersion()),
	}
	if err := prepareGradients(g); err != nil {
		return nil, err
	}
	an := analyzer{opset: opset, dir: cfg.dir, plans: m.plans, unsupported: map[string]int{}}
	if _, err := an.graph(g, nil, 0); err != nil {
		return nil, err
	}
	an.survey(g, 0)
	if len(an.unsup) > 0 {
		return nil, &UnsupportedError{Opset: opset, Ops: an.unsup}
	}
	// Initializers of the main graph: float ones become parameters, the
	// rest (shapes, indices, masks) stay constants.
	frozen := runningStats(g)
	for _, init := range g.GetInitializer() {
		t, err := tensorFromProto(init, cfg.dir)
		if err != nil {
			return nil, fmt.Errorf("onnx: initializer: %w", err)
		}
		name := init.GetName()
		if dt := t.DType(); dt == tensor.Float32 || dt == tensor.Float64 {
			p := tensor.NewParameter(name, t)
			if frozen[name] {
				p.SetRequiresGrad(false)
			}
			m.Params = append(m.Params, nn.Param{Name: name, Tensor: p})
			m.params[name] = p
		} else {
			m.consts[name] = t
		}
	}
	isInit := map[string]bool{}
	for _, init := range g.GetInitializer() {
		isInit[init.GetName()] = true
	}
	for _, vi := range g.GetInput() {
		if isInit[vi.GetName()] {
			continue // an old-style default value, not something to feed
		}
		info, err := valueInfo(vi)
		if err != nil {
			return nil, fmt.Errorf("onnx: graph input %q: %w", vi.GetName(), err)
		}
		if et := vi.GetType().GetTensorType().GetElemType(); et != 0 {
			if _, err := dtypeOf(et); err != nil {
				return nil, fmt.Errorf("onnx: graph input %q: %w", vi.GetName(), err)
			}
		}
		m.inputs = append(m.inputs, info)
	}
	for _, vi := range g.GetOutput() {
		info, err := valueInfo(vi)
		if err != nil {
			return nil, fmt.Errorf("onnx: graph output %q: %w", vi.GetName(), err)
		}
		m.outputs = append(m.outputs, info)
	}
	if len(m.outputs) == 0 {
		return nil, fmt.Errorf("onnx: the graph has no outputs")
	}
	// The decoded tensors are all that is needed of the initializers:
	// dropping their bytes from the kept graph halves a model's memory.
	g.Initializer = nil
	for sub := range m.plans {
		if sub != g {
			sub.Initializer = nil
		}
	}
	nn.Init(m)
	return m, nil
}

// runningStats returns the names of initializers that BatchNormalization
// nodes read as running mean and variance (inputs 3 and 4), anywhere in the
// model: they are saved with the parameters but not trained by gradients.
func runningStats(g *onnxpb.GraphProto) map[string]bool {
	out := map[string]bool{}
	var visit func(g *onnxpb.GraphProto)
	visit = func(g *onnxpb.GraphProto) {
		for _, n := range g.GetNode() {
			if n.GetOpType() == "BatchNormalization" && isDefaultDomain(n.GetDomain()) {
				for i := 3; i < 5 && i < len(n.GetInput()); i++ {
					out[n.GetInput()[i]] = true
				}
			}
			for _, sub := range subGraphs(n) {
				visit(sub)
			}
		}
	}
	visit(g)
	return out
}

func isDefaultDomain(d string) bool { return d == "" || d == "ai.onnx" }

// subGraphs returns the graphs held by n's attributes (If's branches,
// Loop's and Scan's bodies), in attribute order.
func subGraphs(n *onnxpb.NodeProto) []*onnxpb.GraphProto {
	var out []*onnxpb.GraphProto
	for _, a := range n.GetAttribute() {
		if a.GetG() != nil {
			out = append(out, a.GetG())
		}
		out = append(out, a.GetGraphs()...)
	}
	return out
}

// nodeLabel names a node in messages: its name, or its first output when
// it has none (names are optional in ONNX).
func nodeLabel(n *onnxpb.NodeProto) string {
	if n.GetName() != "" {
		return fmt.Sprintf("%q", n.GetName())
	}
	if len(n.GetOutput()) > 0 {
		return fmt.Sprintf("(unnamed, output %q)", n.GetOutput()[0])
	}
	return "(unnamed)"
}

// ValueInfo describes a graph input or output.
type ValueInfo struct {
	// Name is the value's ONNX name.
	Name string
	// DType is the element type (Invalid when the file does not say or
	// the type is not a tensor spore can hold).
	DType tensor.DType
	// Shape holds the dimensions; -1 marks a dynamic one (such as the
	// batch). Nil when the file declares no shape.
	Shape []int64
	// DimNames holds the names of dynamic dimensions ("batch"), "" for
	// fixed or anonymous ones; nil when there are none.
	DimNames []string
	// Kind says whether the value is a tensor, a sequence or an optional
	// (passed as handles: see NewSequence); DType and Shape then describe
	// nothing.
	Kind Kind
}

// String formats the value as name[dims] dtype, with dynamic dimensions
// by name.
func (v ValueInfo) String() string {
	if v.Kind != KindTensor {
		return v.Name + " " + v.Kind.String()
	}
	var b strings.Builder
	b.WriteString(v.Name)
	b.WriteString(" [")
	for i, d := range v.Shape {
		if i > 0 {
			b.WriteString(" ")
		}
		switch {
		case d >= 0:
			fmt.Fprint(&b, d)
		case i < len(v.DimNames) && v.DimNames[i] != "":
			b.WriteString(v.DimNames[i])
		default:
			b.WriteString("?")
		}
	}
	b.WriteString("] ")
	if v.DType == tensor.Invalid {
		b.WriteString("?")
	} else {
		b.WriteString(v.DType.String())
	}
	return b.String()
}

// valueInfo reads a ValueInfoProto. Unknown element types are kept as
// Invalid rather than refused: an input spore cannot feed fails when it is
// called, with the name, and Check can still describe the model.
func valueInfo(vi *onnxpb.ValueInfoProto) (ValueInfo, error) {
	info := ValueInfo{Name: vi.GetName(), Kind: kindOfType(vi.GetType())}
	tt := vi.GetType().GetTensorType()
	if tt == nil {
		return info, nil
	}
	if dt, err := dtypeOf(tt.GetElemType()); err == nil {
		info.DType = dt
	}
	if tt.GetShape() == nil {
		return info, nil
	}
	dims := tt.GetShape().GetDim()
	if len(dims) > maxDims {
		return info, fmt.Errorf("rank %d exceeds %d", len(dims), maxDims)
	}
	info.Shape = make([]int64, len(dims))
	named := false
	names := make([]string, len(dims))
	for i, d := range dims {
		switch {
		case d.GetDimParam() != "":
			info.Shape[i] = -1
			names[i] = d.GetDimParam()
			named = true
		case d.Value == nil:
			info.Shape[i] = -1
		default:
			if d.GetDimValue() < 0 {
				return info, fmt.Errorf("negative dimension %d", d.GetDimValue())
			}
			info.Shape[i] = d.GetDimValue()
		}
	}
	if named {
		info.DimNames = names
	}
	return info, nil
}

// sortedKeys returns m's keys in order, for deterministic messages.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
