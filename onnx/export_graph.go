package onnx

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/tensor"
)

// exporter translates one traced graph, and the regions nested in it, to
// ONNX. Every name it makes is unique in the whole model, so that a
// sub-graph may read any value of the graphs around it by name (ONNX's
// outer-scope rule) without shadowing one.
type exporter struct {
	cfg exportConfig
	// pnames are the parameters' names as the exported cell names them.
	pnames map[*tensor.Tensor]string
	// inits are the top-level graph's initializers: every parameter and
	// constant, also those read only inside a sub-graph (sub-graphs see
	// the outer scope's initializers).
	inits  []*onnxpb.TensorProto
	initOf map[*tensor.Tensor]string
	used   map[string]bool
	// nodes is the node list being filled: the top-level graph's, or a
	// sub-graph's while one is being built.
	nodes *[]*onnxpb.NodeProto
	// name and bax are per value: its ONNX name, and with DynamicBatch the
	// axis whose extent is a multiple of the batch (absent: none), found
	// by tracing at two batch sizes (deriveBatch).
	name map[*graph.Value]string
	bax  map[*graph.Value]int
	// batch is the example inputs' batch size (DynamicBatch only).
	batch int
	// fills are the constants filled with one value whose extent on one
	// axis is a multiple of the batch (DynamicBatch only). batchDim names
	// the input's batch size as a 1-D int64 value, computed at the top of
	// the graph when a fill or a broadcast needs it.
	fills    map[*graph.Value]exFill
	batchDim string
	topInput string
}

// exFill is a constant to write as its value expanded to its shape, whose
// extent on axis follows the batch.
type exFill struct{ axis int }

func newExporter(cfg exportConfig, pnames map[*tensor.Tensor]string) *exporter {
	return &exporter{
		cfg:    cfg,
		pnames: pnames,
		initOf: map[*tensor.Tensor]string{},
		used:   map[string]bool{},
		name:   map[*graph.Value]string{},
		bax:    map[*graph.Value]int{},
	}
}

// unique returns base, or base with a numeric suffix, not yet used.
func (x *exporter) unique(base string) string {
	if base == "" {
		base = "v"
	}
	n := base
	for i := 1; x.used[n]; i++ {
		n = fmt.Sprintf("%s_%d", base, i)
	}
	x.used[n] = true
	return n
}

// tmp returns a fresh name for a value the translation of one op needs.
func (x *exporter) tmp() string { return x.unique(fmt.Sprintf("t%d", len(x.used))) }

// node appends a node.
func (x *exporter) node(op string, ins, outs []string, attrs ...*onnxpb.AttributeProto) {
	*x.nodes = append(*x.nodes, &onnxpb.NodeProto{
		OpType: proto.String(op), Input: ins, Output: outs, Attribute: attrs,
		Name: proto.String(x.unique(op + "_" + exFirstOr(outs, ""))),
	})
}

func exFirstOr(s []string, def string) string {
	if len(s) > 0 {
		return s[0]
	}
	return def
}

// op1 appends a node with one output, a fresh name, which it returns.
func (x *exporter) op1(op string, ins []string, attrs ...*onnxpb.AttributeProto) string {
	o := x.tmp()
	x.node(op, ins, []string{o}, attrs...)
	return o
}

// initializer adds t as an initializer (once per tensor) and returns its
// name.
func (x *exporter) initializer(t *tensor.Tensor, base string) (string, error) {
	if n, ok := x.initOf[t]; ok {
		return n, nil
	}
	n := x.unique(base)
	tp, err := exportTensor(t, n)
	if err != nil {
		return "", err
	}
	x.inits = append(x.inits, tp)
	x.initOf[t] = n
	return n, nil
}

// constInts adds a 1-D int64 initializer (a shape, axes, starts).
func (x *exporter) constInts(vals ...int64) string {
	n := x.unique("c")
	x.inits = append(x.inits, &onnxpb.TensorProto{Name: proto.String(n), DataType: proto.Int32(int32(onnxpb.TensorProto_INT64)), Dims: []int64{int64(len(vals))}, Int64Data: append([]int64(nil), vals...)})
	return n
}

// constScalar adds a scalar initializer of dtype dt holding v.
func (x *exporter) constScalar(dt tensor.DType, v float64) (string, error) {
	if _, ok := onnxDTypeOf(dt); !ok || dt == tensor.Bool {
		return "", fmt.Errorf("no %v scalar constant", dt)
	}
	return x.initializer(tensor.Full(dt, v), "c")
}

func exAInt(name string, v int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(v)}
}

func exAInts(name string, v ...int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v}
}

func exAFloat(name string, v float32) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_FLOAT.Enum(), F: proto.Float32(v)}
}

func exAGraph(name string, g *onnxpb.GraphProto) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_GRAPH.Enum(), G: g}
}

func exInts64(s []int) []int64 {
	out := make([]int64, len(s))
	for i, v := range s {
		out[i] = int64(v)
	}
	return out
}

// valueInfo describes a graph input or output: its element type and
// shape, with the batch axis symbolic under DynamicBatch.
func (x *exporter) valueInfo(name string, m tensor.Meta, bax int) (*onnxpb.ValueInfoProto, error) {
	dt, err := exportDType(m.DType)
	if err != nil {
		return nil, fmt.Errorf("onnx: Export: value %s: %v", name, err)
	}
	dims := make([]*onnxpb.TensorShapeProto_Dimension, len(m.Shape))
	for i, d := range m.Shape {
		switch {
		case i == bax && d == x.batch:
			dims[i] = &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: "batch"}}
		case i == bax:
			dims[i] = &onnxpb.TensorShapeProto_Dimension{} // scales with the batch: unknown
		default:
			dims[i] = &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: int64(d)}}
		}
	}
	return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
		TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(dt)), Shape: &onnxpb.TensorShapeProto{Dim: dims}},
	}}}, nil
}

// topGraph translates the traced function's graph.
func (x *exporter) topGraph(g *graph.Graph, name string) (*onnxpb.GraphProto, error) {
	var nodes []*onnxpb.NodeProto
	x.nodes = &nodes
	gp := &onnxpb.GraphProto{Name: proto.String(name)}
	if x.cfg.dynBatch {
		x.batch = g.Inputs[0].Meta.Shape[0]
	}
	// Reserve the user's names first, so that no value takes one.
	for _, n := range append(append([]string(nil), x.cfg.inNames...), x.cfg.outNames...) {
		x.used[n] = true
	}
	for i, in := range g.Inputs {
		n := exDefaultName("input", i, len(g.Inputs))
		if x.cfg.inNames != nil {
			n = x.cfg.inNames[i]
		} else {
			n = x.unique(n)
		}
		x.name[in] = n
		x.bax[in] = -1
		if x.cfg.dynBatch {
			x.bax[in] = 0
		}
		vi, err := x.valueInfo(n, in.Meta, x.bax[in])
		if err != nil {
			return nil, err
		}
		gp.Input = append(gp.Input, vi)
	}
	if len(g.Inputs) > 0 {
		x.topInput = x.name[g.Inputs[0]]
	}
	if err := x.values(g); err != nil {
		return nil, err
	}
	for i, o := range g.Outputs {
		n := exDefaultName("output", i, len(g.Outputs))
		if x.cfg.outNames != nil {
			n = x.cfg.outNames[i]
		} else {
			n = x.unique(n)
		}
		// An Identity per output: an output may be an input, a parameter
		// or another output, none of which may carry the output's name.
		x.node("Identity", []string{x.name[o]}, []string{n})
		vi, err := x.valueInfo(n, o.Meta, x.bax[o])
		if err != nil {
			return nil, err
		}
		gp.Output = append(gp.Output, vi)
	}
	if x.batchDim != "" {
		// The batch size, read from the input before anything uses it.
		shape := &onnxpb.NodeProto{OpType: proto.String("Shape"), Name: proto.String(x.unique("Shape_batch")), Input: []string{x.topInput}, Output: []string{x.unique("input_shape")}}
		slice := &onnxpb.NodeProto{OpType: proto.String("Slice"), Name: proto.String(x.unique("Slice_batch")),
			Input: []string{shape.GetOutput()[0], x.constInts(0), x.constInts(1)}, Output: []string{x.batchDim}}
		nodes = append([]*onnxpb.NodeProto{shape, slice}, nodes...)
	}
	gp.Node = nodes
	gp.Initializer = x.inits
	return gp, nil
}

// batchShape returns the name of a 1-D int64 value holding shape with
// axis b's extent computed from the input's batch size (the extent is a
// multiple of the traced batch).
func (x *exporter) batchShape(shape tensor.Shape, b int) string {
	if x.batchDim == "" {
		x.batchDim = x.unique("batch_size")
	}
	parts := make([]string, len(shape))
	for k, d := range shape {
		switch {
		case k != b:
			parts[k] = x.constInts(int64(d))
		case d == x.batch:
			parts[k] = x.batchDim
		default:
			parts[k] = x.op1("Mul", []string{x.batchDim, x.constInts(int64(d / x.batch))})
		}
	}
	return x.op1("Concat", parts, exAInt("axis", 0))
}

func exDefaultName(base string, i, n int) string {
	if n == 1 {
		return base
	}
	return fmt.Sprintf("%s%d", base, i)
}

// values translates g's values into the current node list. g's inputs
// must be named already.
func (x *exporter) values(g *graph.Graph) error {
	projs := map[*graph.Value][]*graph.Value{}
	for _, v := range g.Values {
		if v.Kind == graph.KindProj {
			projs[v.Args[0]] = append(projs[v.Args[0]], v)
		}
	}
	for _, v := range g.Values {
		switch v.Kind {
		case graph.KindInput:
			if _, ok := x.name[v]; !ok {
				return fmt.Errorf("onnx: Export: internal error: input %d of %s is unbound", v.Index, g.Name)
			}
		case graph.KindParam:
			base := x.pnames[v.Tensor]
			if base == "" {
				base = v.Tensor.Name()
			}
			if base == "" {
				base = "param"
			}
			n, err := x.initializer(v.Tensor, base)
			if err != nil {
				return fmt.Errorf("onnx: Export: parameter %s: %v", base, err)
			}
			x.name[v] = n
			x.bax[v] = -1
		case graph.KindConst:
			if f, ok := x.fills[v]; ok {
				if err := x.fill(v, f); err != nil {
					return fmt.Errorf("onnx: Export: constant at %s: %v", exLocOr(v), err)
				}
				continue
			}
			n, err := x.initializer(v.Tensor, "const")
			if err != nil {
				return fmt.Errorf("onnx: Export: constant at %s: %v", exLocOr(v), err)
			}
			x.name[v] = n
			x.bax[v] = -1
		case graph.KindProj:
			// Named when its op was translated.
		case graph.KindOp:
			if err := x.op(v, projs[v]); err != nil {
				return err
			}
		}
	}
	return nil
}

func exLocOr(v *graph.Value) string {
	if v.Loc != "" {
		return v.Loc
	}
	return "an unknown line"
}

// op translates one op value (and names its projections).
func (x *exporter) op(v *graph.Value, projs []*graph.Value) error {
	emit := exportEmitters[v.Prim]
	if emit == nil {
		return fmt.Errorf("onnx: Export: primitive %s (applied at %s) has no ONNX translation", v.Prim.Name, exLocOr(v))
	}
	in := make([]string, len(v.Args))
	for i, a := range v.Args {
		in[i] = x.name[a]
	}
	var outs []string
	if v.IsMulti() {
		outs = make([]string, len(v.Metas))
		for _, p := range projs {
			if outs[p.Index] == "" {
				outs[p.Index] = x.unique(fmt.Sprintf("v%d_%d", v.ID, p.Index))
			}
			x.name[p] = outs[p.Index]
		}
		for i := range outs {
			if outs[i] == "" {
				outs[i] = x.unique(fmt.Sprintf("v%d_%d", v.ID, i))
			}
		}
	} else {
		outs = []string{x.unique(fmt.Sprintf("v%d", v.ID))}
		x.name[v] = outs[0]
	}
	if err := emit(x, v, in, outs); err != nil {
		if strings.HasPrefix(err.Error(), "onnx: Export: ") { // from a value of a body
			return fmt.Errorf("%v (in a body of %s applied at %s)", err, v.Prim.Name, exLocOr(v))
		}
		return fmt.Errorf("onnx: Export: %s (applied at %s): %v", v.Prim.Name, exLocOr(v), err)
	}
	return nil
}

// baxOf is the batch axis of v (-1: none).
func (x *exporter) baxOf(v *graph.Value) int {
	if b, ok := x.bax[v]; ok {
		return b
	}
	return -1
}

// argBax is the batch axis of v's argument i (-1: none).
func (x *exporter) argBax(v *graph.Value, i int) int { return x.baxOf(v.Args[i]) }

// inline translates the values of a control-flow body r of owner into
// the current node list. The body's first len(lead) inputs get the names
// in lead (a sub-graph's own inputs: loop carries, scan slices); the
// others, captures, take the names of the owner's arguments they are
// bound to, which a sub-graph reads from the outer scope. It returns the
// names of the body's results.
func (x *exporter) inline(owner *graph.Value, r *graph.Region, lead []string) ([]string, error) {
	g := r.Graph
	for i, in := range g.Inputs {
		if i < len(lead) {
			x.name[in] = lead[i]
			continue
		}
		x.name[in] = x.name[owner.Args[r.Binds[i]]]
	}
	if err := x.values(g); err != nil {
		return nil, err
	}
	outs := make([]string, len(g.Outputs))
	for i, o := range g.Outputs {
		outs[i] = x.name[o]
	}
	return outs, nil
}

// subgraph builds an ONNX sub-graph: inputs named and typed as given,
// the body fn fills in, and outputs renamed through Identity nodes (an
// ONNX sub-graph's outputs must be produced inside it, under names of
// their own).
func (x *exporter) subgraph(name string, inputs []*onnxpb.ValueInfoProto, metas []tensor.Meta, outBax func(i int) int, body func() ([]string, error)) (*onnxpb.GraphProto, error) {
	saved := x.nodes
	var nodes []*onnxpb.NodeProto
	x.nodes = &nodes
	defer func() { x.nodes = saved }()
	outs, err := body()
	if err != nil {
		return nil, err
	}
	gp := &onnxpb.GraphProto{Name: proto.String(x.unique(name)), Input: inputs}
	for i, o := range outs {
		n := x.tmp()
		x.node("Identity", []string{o}, []string{n})
		vi, err := x.valueInfo(n, metas[i], outBax(i))
		if err != nil {
			return nil, err
		}
		gp.Output = append(gp.Output, vi)
	}
	gp.Node = nodes
	return gp, nil
}

// exOutMetas returns the metas of a graph's outputs.
func exOutMetas(g *graph.Graph) []tensor.Meta {
	ms := make([]tensor.Meta, len(g.Outputs))
	for i, o := range g.Outputs {
		ms[i] = o.Meta
	}
	return ms
}

var exCfCond, exCfWhile, exCfScan *core.Prim

// exEmitCond translates Cond to If: each branch is a sub-graph without
// inputs that reads the operands and captures from the outer scope.
func exEmitCond(x *exporter, v *graph.Value, in, outs []string) error {
	branch := func(k int, name string) (*onnxpb.GraphProto, error) {
		r := v.Regions[k]
		return x.subgraph(name, nil, exOutMetas(r.Graph), func(i int) int { return x.baxOf(r.Graph.Outputs[i]) }, func() ([]string, error) {
			return x.inline(v, r, nil)
		})
	}
	thenG, err := branch(0, "then")
	if err != nil {
		return err
	}
	elseG, err := branch(1, "else")
	if err != nil {
		return err
	}
	x.node("If", []string{in[0]}, outs, exAGraph("then_branch", thenG), exAGraph("else_branch", elseG))
	return nil
}

// exEmitWhile translates While to Loop with no trip count: the condition
// is evaluated once before the loop (inlined in the enclosing graph) and
// again at the end of each iteration (inlined in the body), which is
// where ONNX's Loop reads it.
func exEmitWhile(x *exporter, v *graph.Value, in, outs []string) error {
	condR, bodyR := v.Regions[0], v.Regions[1]
	n := condR.Lead
	initNames := in[:n]
	c0, err := x.inline(v, condR, initNames)
	if err != nil {
		return err
	}
	cond0 := x.op1("Reshape", []string{c0[0], x.constInts()})
	iter, condIn := x.tmp(), x.tmp()
	ivi, _ := x.valueInfo(iter, tensor.Meta{Shape: tensor.Shape{}, DType: tensor.Int64}, -1)
	cvi, _ := x.valueInfo(condIn, tensor.Meta{Shape: tensor.Shape{}, DType: tensor.Bool}, -1)
	inputs := []*onnxpb.ValueInfoProto{ivi, cvi}
	carries := make([]string, n)
	for i := range n {
		carries[i] = x.tmp()
		vi, err := x.valueInfo(carries[i], bodyR.Graph.Inputs[i].Meta, x.baxOf(bodyR.Graph.Inputs[i]))
		if err != nil {
			return err
		}
		inputs = append(inputs, vi)
	}
	metas := append([]tensor.Meta{{Shape: tensor.Shape{}, DType: tensor.Bool}}, exOutMetas(bodyR.Graph)...)
	body, err := x.subgraph("loop", inputs, metas, func(i int) int {
		if i == 0 {
			return -1
		}
		return x.baxOf(bodyR.Graph.Outputs[i-1])
	}, func() ([]string, error) {
		next, err := x.inline(v, bodyR, carries)
		if err != nil {
			return nil, err
		}
		// The condition again, on the new carries: a copy of the region,
		// so that its values get names of their own, with the batch axes
		// of the values they copy.
		cr := condR.Clone()
		x.copyBax(condR.Graph, cr.Graph)
		c, err := x.inline(v, cr, next)
		if err != nil {
			return nil, err
		}
		return append([]string{x.op1("Reshape", []string{c[0], x.constInts()})}, next...), nil
	})
	if err != nil {
		return err
	}
	x.node("Loop", append([]string{"", cond0}, initNames...), outs, exAGraph("body", body))
	return nil
}

// copyBax gives the values of c, a clone of g, the batch axes of g's.
func (x *exporter) copyBax(g, c *graph.Graph) {
	var vs, cs []*graph.Value
	_ = graph.Walk(g, func(v *graph.Value, _ *graph.Graph, _ *graph.Value) error { vs = append(vs, v); return nil })
	_ = graph.Walk(c, func(v *graph.Value, _ *graph.Graph, _ *graph.Value) error { cs = append(cs, v); return nil })
	for i, v := range vs {
		if b, ok := x.bax[v]; ok && i < len(cs) {
			x.bax[cs[i]] = b
		}
	}
}

// exEmitScan translates Scan to ONNX Scan: the carries are its state
// variables, the scanned inputs its scan inputs, the stacked results its
// scan outputs; a reverse scan reads and writes both in reverse, so that
// ys[t] is still step t's output.
func exEmitScan(x *exporter, v *graph.Value, in, outs []string) error {
	nc, nx, reverse, ok := exScanLayout(v.Attrs)
	if !ok {
		return fmt.Errorf("attributes %T are not a Scan's", v.Attrs)
	}
	r := v.Regions[0]
	lead := make([]string, nc+nx)
	var inputs []*onnxpb.ValueInfoProto
	for i := range nc + nx {
		lead[i] = x.tmp()
		vi, err := x.valueInfo(lead[i], r.Graph.Inputs[i].Meta, x.baxOf(r.Graph.Inputs[i]))
		if err != nil {
			return err
		}
		inputs = append(inputs, vi)
	}
	body, err := x.subgraph("scan", inputs, exOutMetas(r.Graph), func(i int) int { return x.baxOf(r.Graph.Outputs[i]) }, func() ([]string, error) {
		return x.inline(v, r, lead)
	})
	if err != nil {
		return err
	}
	ny := len(v.Metas) - nc
	dir := int64(0)
	if reverse {
		dir = 1
	}
	inDirs, outDirs := make([]int64, nx), make([]int64, ny)
	for i := range inDirs {
		inDirs[i] = dir
	}
	for i := range outDirs {
		outDirs[i] = dir
	}
	attrs := []*onnxpb.AttributeProto{exAGraph("body", body), exAInt("num_scan_inputs", int64(nx))}
	if nx > 0 {
		attrs = append(attrs, exAInts("scan_input_directions", inDirs...))
	}
	if ny > 0 {
		attrs = append(attrs, exAInts("scan_output_directions", outDirs...))
	}
	x.node("Scan", in[:nc+nx], outs, attrs...)
	return nil
}

// deriveBatch finds the batch axis of every value of g, the graph traced
// at batch b1, from g2, the same function traced at batch b2: the one
// axis whose extent changed, in proportion to the batch (c·b1 to c·b2).
// Constants sized by the batch and filled with one value become fills.
// Anything else that changes with the batch — a second extent, an extent
// that is not a multiple of it (b+1), a constant sized by it that is not
// a fill, a constant whose value changes with it, a different graph —
// is an error naming the first such value, by the source line of the op
// that made it or, for a constant, of an op that reads it: a model that
// would be wrong at other batch sizes is never written.
func (x *exporter) deriveBatch(g, g2 *graph.Graph, b1, b2 int) error {
	x.fills = map[*graph.Value]exFill{}
	var vs, vs2 []*graph.Value
	users := map[*graph.Value]*graph.Value{}
	collect := func(into *[]*graph.Value) func(v *graph.Value, _ *graph.Graph, _ *graph.Value) error {
		return func(v *graph.Value, _ *graph.Graph, _ *graph.Value) error {
			*into = append(*into, v)
			for _, a := range v.Args {
				if users[a] == nil && v.Loc != "" {
					users[a] = v
				}
			}
			return nil
		}
	}
	_ = graph.Walk(g, collect(&vs))
	_ = graph.Walk(g2, collect(&vs2))
	if len(vs) != len(vs2) {
		return fmt.Errorf("the traced graph has %d values at batch %d but %d at batch %d: it depends on the batch size beyond the batch axis", len(vs), b1, len(vs2), b2)
	}
	where := func(v *graph.Value) string {
		if v.Loc != "" {
			return "at " + v.Loc
		}
		if u := users[v]; u != nil {
			return fmt.Sprintf("read by %s at %s", u.Prim.Name, u.Loc)
		}
		return "(no source line)"
	}
	what := func(v *graph.Value) string {
		switch v.Kind {
		case graph.KindConst:
			return "constant"
		case graph.KindOp:
			return v.Prim.Name
		case graph.KindProj:
			return v.Args[0].Prim.Name
		case graph.KindInput:
			return "input"
		}
		return "value"
	}
	for i, v := range vs {
		v2 := vs2[i]
		if v.Kind != v2.Kind || v.Prim != v2.Prim {
			return fmt.Errorf("the traced graph differs at batch %d from batch %d %s", b2, b1, where(v))
		}
		if v.IsMulti() {
			continue // its projections carry its results' shapes
		}
		s1, s2 := v.Meta.Shape, v2.Meta.Shape
		axis := -1
		if len(s1) != len(s2) {
			axis = -2
		}
		for k := 0; axis > -2 && k < len(s1); k++ {
			if s1[k] == s2[k] {
				continue
			}
			if axis >= 0 || s1[k]%b1 != 0 || s1[k]/b1*b2 != s2[k] {
				axis = -2
				break
			}
			axis = k
		}
		if axis == -2 {
			return fmt.Errorf("%s %s is %v at batch %d and %v at batch %d, which the exported model cannot follow: only one extent may change with the batch, in proportion to it (make constants from the inputs with ops the batch flows through, not from a Go int such as x.Dim(0))", what(v), where(v), s1, b1, s2, b2)
		}
		if v.Kind == graph.KindConst {
			switch {
			case axis >= 0 && exIsFill(v.Tensor) && exIsFill(v2.Tensor) && exSameValues(exFirst(v.Tensor), exFirst(v2.Tensor)):
				x.fills[v] = exFill{axis: axis}
			case axis >= 0:
				return fmt.Errorf("constant %s is %v at batch %d and %v at batch %d and is not filled with one value: the exported model cannot follow it (make it from the inputs with ops the batch flows through)", where(v), s1, b1, s2, b2)
			case !exSameValues(v.Tensor, v2.Tensor):
				// A value computed from the shapes at trace time: a mean
				// over the batch axis divides by the batch, Shape and Size
				// give it.
				return fmt.Errorf("constant %s holds %v at batch %d and %v at batch %d: its value depends on the batch size (a mean over the batch axis, a shape read from the input), or on randomness, and the exported model would keep the first", where(v), exPreview(v.Tensor), b1, exPreview(v2.Tensor), b2)
			}
		}
		if axis >= 0 {
			x.bax[v] = axis
		}
	}
	return nil
}

// exFirst is a one-element tensor holding t's first element.
func exFirst(t *tensor.Tensor) *tensor.Tensor {
	return tensor.FromSlice(t.Float64s()[:1])
}

// exIsFill reports whether every element of t is the same.
func exIsFill(t *tensor.Tensor) bool {
	vals := t.Float64s()
	for _, v := range vals {
		if v != vals[0] && !(v != v && vals[0] != vals[0]) {
			return false
		}
	}
	return len(vals) > 0
}

// fill writes constant v as its one value expanded to its shape, with
// the batch axis's extent computed from the input's batch size.
func (x *exporter) fill(v *graph.Value, f exFill) error {
	scalar, err := x.scalarOf(v.Tensor)
	if err != nil {
		return err
	}
	n := x.unique(fmt.Sprintf("v%d", v.ID))
	x.node("Expand", []string{scalar, x.batchShape(v.Meta.Shape, f.axis)}, []string{n})
	x.name[v] = n
	return nil
}

// scalarOf adds a rank-0 initializer holding t's first element.
func (x *exporter) scalarOf(t *tensor.Tensor) (string, error) {
	var s *tensor.Tensor
	switch d := t.Data().(type) {
	case []float32:
		s = tensor.Scalar(d[0])
	case []float64:
		s = tensor.Scalar(d[0])
	case []int32:
		s = tensor.Scalar(d[0])
	case []int64:
		s = tensor.Scalar(d[0])
	case []bool:
		s = tensor.Scalar(d[0])
	case []uint8:
		s = tensor.Scalar(d[0])
	default:
		return "", fmt.Errorf("elements of type %T cannot be written", d)
	}
	return x.initializer(s, "fill")
}

// exSameValues reports whether two constants of one shape hold the same
// elements (NaN equal to NaN).
func exSameValues(a, b *tensor.Tensor) bool {
	if a.DType() != b.DType() {
		return false
	}
	va, vb := a.Float64s(), b.Float64s()
	for i := range va {
		if va[i] != vb[i] && !(va[i] != va[i] && vb[i] != vb[i]) {
			return false
		}
	}
	return true
}

// exPreview prints a constant's first elements.
func exPreview(t *tensor.Tensor) string {
	v := t.Float64s()
	if len(v) > 4 {
		return fmt.Sprintf("%v...", v[:4])
	}
	return fmt.Sprint(v)
}
