package onnx

import (
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"runtime"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/sporeml/spore/compile"
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/atomicfile"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/tensor"
)

// ExportOption changes how Export writes a model.
type ExportOption func(*exportConfig)

type exportConfig struct {
	dynBatch bool
	inNames  []string
	outNames []string
	opset    int64
}

// The ai.onnx opsets Export writes: 17 by default (what ONNX Runtime and
// onnx 1.12 both read), up to 21. The emitters pick the form of each op
// the chosen opset defines (ReduceMax's axes became an input in 18, Gelu
// became an op in 20).
const (
	exportMinOpset     = 17
	exportMaxOpset     = 21
	exportDefaultOpset = 17
)

// exportIRVersions is the IR version written with each opset: the one
// of the ONNX release that introduced the opset, so that a runtime that
// reads the opset reads the file.
var exportIRVersions = map[int64]int64{17: 8, 18: 8, 19: 9, 20: 9, 21: 10}

// DynamicBatch makes axis 0 of every input a symbolic "batch" dimension,
// and the axis of every output that follows it: the model runs at any
// batch size, not only the example inputs'.
//
// Export traces f a second time, at another batch size, and compares
// the two graphs value by value: the axis whose extent changed in
// proportion to the batch is each value's batch axis. Reshapes write -1
// there, broadcasts and constants filled with one value (an RNN's zero
// state, ops.Zeros(x.Dim(0), n)) compute it from the input's batch, and
// slices of the whole batch run to its end. Anything else that changes
// with the batch — an extent such as batch+1, a constant that is not a
// fill, a value computed from the batch size (a mean over the batch
// axis, the input's Shape) — makes Export fail with an error naming the
// line, rather than write a model that is wrong at other batch sizes.
func DynamicBatch() ExportOption { return func(c *exportConfig) { c.dynBatch = true } }

// InputNames names the model's inputs, in order (default "input" for one
// input, "input0", "input1", ... for several).
func InputNames(names ...string) ExportOption {
	return func(c *exportConfig) { c.inNames = append([]string(nil), names...) }
}

// OutputNames names the model's outputs, in order (default "output" for
// one output, "output0", "output1", ... for several).
func OutputNames(names ...string) ExportOption {
	return func(c *exportConfig) { c.outNames = append([]string(nil), names...) }
}

// Opset sets the ai.onnx opset version written, 17 (the default) to 21.
func Opset(v int64) ExportOption { return func(c *exportConfig) { c.opset = v } }

// exportPasses are the compiler passes Export skips: those the pass table
// marks CompileOnly (compile.Pass), which replace standard ops by spore's
// fused ones, give ops attributes ONNX lacks, or move work out of loop
// bodies. The rest (folding, simplification, CSE, dead-code elimination)
// leave a smaller graph of ordinary primitives. Reading the trait rather
// than a list of names means a new fusing pass needs no change here.
var exportPasses = compile.CompileOnlyPasses()

// Export traces f in Graph mode on the example inputs and writes the
// traced, optimised graph to path as an ONNX model (ai.onnx opset 17 by
// default, with the IR version of that opset's release: 8), whole or not
// at all: it is written to a temporary file and renamed. The graph is
// taken before the compiler's fusions, so that it holds only standard
// ops; ONNX runtimes fuse for themselves.
//
// f is a function over tensors — func(*Tensor) *Tensor, func(a, b
// *Tensor) *Tensor, func(...*Tensor) *Tensor, func([]*Tensor) []*Tensor
// and the like — or an nn cell (an nn.Module with a Construct method),
// which is traced in evaluation mode (Dropout off, BatchNorm on its
// running statistics) and put back in the mode it was in. Parameters
// become initializers named as the cell names them (conv1.weight);
// constants become initializers too. Cond becomes If, While and Scan
// become Loop and Scan, with their bodies as sub-graphs. An imported
// Model exports every output, and keeps its inputs', outputs' and
// initializers' names: a model loaded and exported again round-trips.
//
// A primitive with no ONNX counterpart (a training-only op, Print, a
// collective) makes Export fail with an error naming it and the source
// line that applied it; nothing is written then.
func Export(f any, inputs []*tensor.Tensor, path string, opts ...ExportOption) (err error) {
	cfg := exportConfig{opset: exportDefaultOpset}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if path == "" {
		return errors.New("onnx: Export: empty output path")
	}
	m, err := exportModel(f, inputs, cfg)
	if err != nil {
		return err
	}
	if n := proto.Size(m); n > math.MaxInt32 {
		// Protobuf's limit, which every ONNX reader enforces; larger models
		// keep their initializers in external data files, which Export
		// does not write.
		return fmt.Errorf("onnx: Export: the model is %d bytes, over the 2 GiB a single ONNX file may hold (Export does not write external data)", n)
	}
	data, err := proto.Marshal(m)
	if err != nil {
		return fmt.Errorf("onnx: Export: encoding the model: %v", err)
	}
	if err := atomicfile.Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}); err != nil {
		return fmt.Errorf("onnx: Export: writing %s: %v", path, err)
	}
	return nil
}

// exportModel traces f and translates its graph; it writes nothing.
func exportModel(f any, inputs []*tensor.Tensor, cfg exportConfig) (m *onnxpb.ModelProto, err error) {
	if cfg.opset < exportMinOpset || cfg.opset > exportMaxOpset {
		return nil, fmt.Errorf("onnx: Export: opset %d is not supported; Export writes opsets %d to %d", cfg.opset, exportMinOpset, exportMaxOpset)
	}
	metas := make([]tensor.Meta, len(inputs))
	for i, x := range inputs {
		if x == nil {
			return nil, fmt.Errorf("onnx: Export: example input %d is nil", i)
		}
		if x.IsSymbolic() {
			return nil, fmt.Errorf("onnx: Export: example input %d is a traced value; pass a concrete tensor", i)
		}
		metas[i] = tensor.Meta{Shape: x.Shape().Clone(), DType: x.DType()}
	}
	if cfg.inNames != nil && len(cfg.inNames) != len(inputs) {
		return nil, fmt.Errorf("onnx: Export: %d input names for %d inputs", len(cfg.inNames), len(inputs))
	}
	if err := exCheckNames("input", cfg.inNames); err != nil {
		return nil, err
	}
	if err := exCheckNames("output", cfg.outNames); err != nil {
		return nil, err
	}
	if cfg.dynBatch {
		if len(metas) == 0 {
			return nil, errors.New("onnx: Export: DynamicBatch: the function has no inputs to take the batch from")
		}
		for i, m := range metas {
			if len(m.Shape) == 0 {
				return nil, fmt.Errorf("onnx: Export: DynamicBatch: input %d is a scalar and has no batch axis", i)
			}
			if m.Shape[0] != metas[0].Shape[0] {
				return nil, fmt.Errorf("onnx: Export: DynamicBatch: inputs differ in batch size: input 0 has %d, input %d has %d", metas[0].Shape[0], i, m.Shape[0])
			}
		}
	}
	if m, ok := f.(*Model); ok && m != nil {
		// An imported model keeps its inputs' and outputs' names.
		if cfg.inNames == nil && len(m.inputs) == len(inputs) {
			for _, vi := range m.inputs {
				cfg.inNames = append(cfg.inNames, vi.Name)
			}
		}
		if cfg.outNames == nil {
			for _, vi := range m.outputs {
				cfg.outNames = append(cfg.outNames, vi.Name)
			}
		}
	}
	fn, name, names, restore, err := exportTarget(f, len(inputs))
	if err != nil {
		return nil, err
	}
	defer restore()
	defer func() {
		if r := recover(); r != nil {
			// A shape or dtype error of the traced function (which names
			// the op and the line), or a bug of the exporter.
			if e, ok := r.(error); ok {
				err = fmt.Errorf("onnx: Export: %s: %w", name, e)
				return
			}
			err = fmt.Errorf("onnx: Export: %s: %v", name, r)
		}
	}()
	g, err := exportTrace(name, metas, fn)
	if err != nil {
		return nil, err
	}
	if cfg.outNames != nil && len(cfg.outNames) != len(g.Outputs) {
		return nil, fmt.Errorf("onnx: Export: %d output names for %d outputs", len(cfg.outNames), len(g.Outputs))
	}
	x := newExporter(cfg, names)
	if cfg.dynBatch {
		// Traced again at another batch size, the graph tells each value's
		// batch axis, or why the model could not follow the batch (see
		// DynamicBatch and deriveBatch). b+1, not 2b: an extent such as
		// b+1 is then told apart from one proportional to the batch.
		b1 := metas[0].Shape[0]
		b2 := b1 + 1
		other := make([]tensor.Meta, len(metas))
		for i, m := range metas {
			other[i] = tensor.Meta{Shape: append(tensor.Shape{b2}, m.Shape[1:]...), DType: m.DType}
		}
		g2, err := exportTrace(name, other, fn)
		if err != nil {
			return nil, fmt.Errorf("onnx: Export: DynamicBatch: traced again at batch %d: %v", b2, err)
		}
		x.batch = b1
		if err := x.deriveBatch(g, g2, b1, b2); err != nil {
			return nil, fmt.Errorf("onnx: Export: DynamicBatch: %v", err)
		}
	}
	gp, err := x.topGraph(g, name)
	if err != nil {
		return nil, err
	}
	return &onnxpb.ModelProto{
		IrVersion:    proto.Int64(exportIRVersions[cfg.opset]),
		ProducerName: proto.String("spore"),
		OpsetImport:  []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(cfg.opset)}},
		Graph:        gp,
	}, nil
}

// exportTrace traces fn on symbolic inputs of the given metas and runs
// the compiler's passes that keep standard primitives.
func exportTrace(name string, metas []tensor.Meta, fn func([]*tensor.Tensor) []*tensor.Tensor) (*graph.Graph, error) {
	tr := graph.NewTracer(name)
	tr.Level = int(compile.O1)
	g, err := graph.TraceWith(tr, metas, fn)
	if err != nil {
		return nil, fmt.Errorf("onnx: Export: %v", err)
	}
	if len(g.Assigns) > 0 {
		return nil, fmt.Errorf("onnx: Export: %s updates parameter %q when it runs; an ONNX model cannot (export the cell in evaluation mode)", name, g.Assigns[0].Param.Tensor.Name())
	}
	res, err := compile.Run(g, compile.Options{Level: compile.O1, Disable: exportPasses, Verify: true})
	if err != nil {
		return nil, fmt.Errorf("onnx: Export: compiling %s: %v", name, err)
	}
	return res.Graph, nil
}

// exCheckNames rejects empty and repeated input or output names.
func exCheckNames(what string, names []string) error {
	seen := map[string]bool{}
	for i, n := range names {
		if n == "" {
			return fmt.Errorf("onnx: Export: %s name %d is empty", what, i)
		}
		if seen[n] {
			return fmt.Errorf("onnx: Export: %s name %q is given twice", what, n)
		}
		seen[n] = true
	}
	return nil
}

var (
	exTensorType      = reflect.TypeFor[*tensor.Tensor]()
	exTensorSliceType = reflect.TypeFor[[]*tensor.Tensor]()
)

// exportTarget turns f into the function the tracer calls, with its name,
// the parameters' names (a cell's, by its tree) and a function that puts
// a cell back in the mode it was in.
func exportTarget(f any, nin int) (fn func([]*tensor.Tensor) []*tensor.Tensor, name string, names map[*tensor.Tensor]string, restore func(), err error) {
	restore = func() {}
	if f == nil {
		return nil, "", nil, restore, errors.New("onnx: Export: nil function")
	}
	fv := reflect.ValueOf(f)
	name = fmt.Sprintf("%T", f)
	if m, ok := f.(*Model); ok && m != nil {
		// An imported model exports every output, not only the first
		// that Construct returns.
		fv = reflect.ValueOf(m.Outputs)
		f = nn.Module(m)
	}
	if mod, ok := f.(nn.Module); ok {
		c := mod.Base()
		mv := fv
		if fv.Kind() != reflect.Func {
			mv = fv.MethodByName("Construct")
		}
		if !mv.IsValid() {
			return nil, "", nil, restore, fmt.Errorf("onnx: Export: cell %T has no Construct method", f)
		}
		names = map[*tensor.Tensor]string{}
		for _, p := range c.NamedParameters() {
			names[p.Tensor] = p.Name
		}
		was := c.Training()
		c.SetTrain(false)
		restore = func() { c.SetTrain(was) }
		fv = mv
		name = strings.TrimPrefix(name, "*")
	} else if fv.Kind() != reflect.Func {
		return nil, "", nil, restore, fmt.Errorf("onnx: Export: want a function over tensors or an nn cell, got %T", f)
	} else if rf := runtime.FuncForPC(fv.Pointer()); rf != nil {
		name = rf.Name()
		if i := strings.LastIndexByte(name, '/'); i >= 0 {
			name = name[i+1:]
		}
	}
	call, err := exTensorCaller(fv, nin)
	if err != nil {
		restore()
		return nil, "", nil, func() {}, fmt.Errorf("onnx: Export: %s: %v", name, err)
	}
	return call, name, names, restore, nil
}

// exTensorCaller adapts a Go function over tensors to a function from a
// slice of tensors to a slice of tensors.
func exTensorCaller(fv reflect.Value, nin int) (func([]*tensor.Tensor) []*tensor.Tensor, error) {
	ft := fv.Type()
	sliceIn := !ft.IsVariadic() && ft.NumIn() == 1 && ft.In(0) == exTensorSliceType
	if !sliceIn {
		for i := 0; i < ft.NumIn(); i++ {
			t := ft.In(i)
			if ft.IsVariadic() && i == ft.NumIn()-1 {
				t = t.Elem()
			}
			if t != exTensorType {
				return nil, fmt.Errorf("argument %d is %v; Export traces functions whose arguments are tensors", i, ft.In(i))
			}
		}
		fixed := ft.NumIn()
		if ft.IsVariadic() {
			fixed--
		}
		if nin < fixed || (!ft.IsVariadic() && nin != fixed) {
			return nil, fmt.Errorf("takes %d tensor arguments, got %d example inputs", ft.NumIn(), nin)
		}
	}
	if ft.NumOut() == 0 {
		return nil, errors.New("returns nothing")
	}
	for i := 0; i < ft.NumOut(); i++ {
		if t := ft.Out(i); t != exTensorType && !(ft.NumOut() == 1 && t == exTensorSliceType) {
			return nil, fmt.Errorf("result %d is %v; Export traces functions that return tensors", i, t)
		}
	}
	return func(xs []*tensor.Tensor) []*tensor.Tensor {
		var args []reflect.Value
		if sliceIn {
			args = []reflect.Value{reflect.ValueOf(xs)}
		} else {
			for _, x := range xs {
				args = append(args, reflect.ValueOf(x))
			}
		}
		outs := fv.Call(args)
		var res []*tensor.Tensor
		for _, o := range outs {
			if o.Type() == exTensorSliceType {
				res = append(res, o.Interface().([]*tensor.Tensor)...)
			} else {
				res = append(res, o.Interface().(*tensor.Tensor))
			}
		}
		return res
	}, nil
}

// exportDType is the ONNX element type of a spore dtype.
func exportDType(dt tensor.DType) (onnxpb.TensorProto_DataType, error) {
	if o, ok := onnxDTypeOf(dt); ok {
		return o, nil
	}
	return 0, fmt.Errorf("dtype %v has no ONNX element type", dt)
}

// exportTensor encodes a concrete tensor as a TensorProto with its
// elements in raw_data, little-endian, as ONNX stores them.
func exportTensor(t *tensor.Tensor, name string) (*onnxpb.TensorProto, error) {
	dt, err := exportDType(t.DType())
	if err != nil {
		return nil, err
	}
	dims := make([]int64, t.Rank())
	for i, d := range t.Shape() {
		dims[i] = int64(d)
	}
	raw, err := rawOf(t)
	if err != nil {
		return nil, fmt.Errorf("tensor %q: %w", name, err)
	}
	return &onnxpb.TensorProto{Name: proto.String(name), DataType: proto.Int32(int32(dt)), Dims: dims, RawData: raw}, nil
}
