package serve

import (
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/sporeml/spore/internal/jit"
	"github.com/sporeml/spore/tensor"
)

// Model is a model served from Go (Server.AddModel): a spore cell or any
// function of tensors, with the description the protocol's metadata and
// the batcher need. Fn is compiled in Graph mode, once per instance, and
// warmed up before the model serves.
type Model struct {
	// Inputs and Outputs describe Fn's arguments and results, in order.
	// When MaxBatchSize > 0 their shapes leave out the batch dimension
	// (as a Triton config's dims do): Fn sees and returns tensors with one
	// more, leading, dimension. A variable dimension is -1; a model with
	// one is compiled at its first call of each new shape, not ahead.
	Inputs, Outputs []TensorMetadata
	// Fn runs the model. It must take and return tensors only, with no
	// side effects: it is traced once per instance and batch size. A cell
	// serves as One(cell.Call).
	Fn func(xs ...*tensor.Tensor) []*tensor.Tensor
	// MaxBatchSize is the largest batch formed from concurrent requests;
	// 0 runs each request alone (and the shapes include no batch dim).
	MaxBatchSize int
	// MaxQueueDelay is how long the oldest queued request waits for
	// others to join its batch; 0 batches what is queued when an instance
	// comes free.
	MaxQueueDelay time.Duration
	// MaxQueueSize bounds the queue; 0 means DefaultMaxQueueSize.
	MaxQueueSize int
	// Instances run side by side; 0 means 1.
	Instances int
	// Platform is the metadata's platform; empty means "spore".
	Platform string
}

// One adapts a function of one result, such as a cell's Call, to
// Model.Fn.
func One(f func(xs ...*tensor.Tensor) *tensor.Tensor) func(xs ...*tensor.Tensor) []*tensor.Tensor {
	return func(xs ...*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{f(xs...)} }
}

// tspec is one input or output of a model version as the core checks it.
type tspec struct {
	name string
	dt   tensor.DType
	// dims leave out the batch dimension when the model batches; -1 is
	// variable; nil with anyShape means the model declares no shape.
	dims     []int64
	anyShape bool
}

// spec is everything needed to build a model version's instances.
type spec struct {
	name     string
	version  string
	platform string
	inputs   []tspec
	outputs  []tspec
	// outIndex maps each served output to its index among fn's results.
	outIndex  []int
	maxBatch  int
	delay     time.Duration
	queueSize int
	instances int
	fn        func(xs ...*tensor.Tensor) []*tensor.Tensor
	// md is the metadata, computed once by finish.
	md ModelMetadata
}

// metadata is the protocol's model metadata of the spec.
func (sp *spec) metadata() ModelMetadata {
	md := ModelMetadata{Name: sp.name, Platform: sp.platform}
	conv := func(ts []tspec) []TensorMetadata {
		out := make([]TensorMetadata, len(ts))
		for i, t := range ts {
			var shape []int64
			if sp.maxBatch > 0 {
				shape = append(shape, -1)
			}
			shape = append(shape, t.dims...)
			if shape == nil {
				shape = []int64{}
			}
			out[i] = TensorMetadata{Name: t.name, Datatype: Datatype(t.dt), Shape: shape}
		}
		return out
	}
	md.Inputs, md.Outputs = conv(sp.inputs), conv(sp.outputs)
	return md
}

// specOfModel checks a Go model and returns its spec.
func specOfModel(name string, m Model) (*spec, error) {
	if m.Fn == nil {
		return nil, fmt.Errorf("model %q: Fn is nil", name)
	}
	if len(m.Inputs) == 0 || len(m.Outputs) == 0 {
		return nil, fmt.Errorf("model %q: a model needs at least one input and one output (has %d and %d)", name, len(m.Inputs), len(m.Outputs))
	}
	if m.MaxBatchSize < 0 || m.MaxBatchSize > maxBatchLimit {
		return nil, fmt.Errorf("model %q: MaxBatchSize %d is outside 0..%d", name, m.MaxBatchSize, maxBatchLimit)
	}
	if m.Instances < 0 || m.Instances > maxInstances {
		return nil, fmt.Errorf("model %q: Instances %d is outside 0..%d", name, m.Instances, maxInstances)
	}
	if m.MaxQueueDelay < 0 || m.MaxQueueSize < 0 {
		return nil, fmt.Errorf("model %q: negative MaxQueueDelay or MaxQueueSize", name)
	}
	sp := &spec{name: name, version: "1", platform: m.Platform, maxBatch: m.MaxBatchSize,
		delay: m.MaxQueueDelay, queueSize: m.MaxQueueSize, instances: m.Instances, fn: m.Fn}
	if sp.platform == "" {
		sp.platform = "spore"
	}
	conv := func(what string, ts []TensorMetadata) ([]tspec, error) {
		out := make([]tspec, len(ts))
		seen := map[string]bool{}
		for i, t := range ts {
			if t.Name == "" || seen[t.Name] {
				return nil, fmt.Errorf("model %q: %s %d has an empty or repeated name %q", name, what, i, t.Name)
			}
			seen[t.Name] = true
			dt, err := DTypeOf(t.Datatype)
			if err != nil {
				return nil, fmt.Errorf("model %q: %s %q: %v", name, what, t.Name, err)
			}
			for _, d := range t.Shape {
				if d < -1 {
					return nil, fmt.Errorf("model %q: %s %q: dimension %d in %v (want -1 for a variable one)", name, what, t.Name, d, t.Shape)
				}
			}
			out[i] = tspec{name: t.Name, dt: dt, dims: append([]int64(nil), t.Shape...)}
		}
		return out, nil
	}
	var err error
	if sp.inputs, err = conv("input", m.Inputs); err != nil {
		return nil, err
	}
	if sp.outputs, err = conv("output", m.Outputs); err != nil {
		return nil, err
	}
	sp.outIndex = make([]int, len(sp.outputs))
	for i := range sp.outIndex {
		sp.outIndex[i] = i
	}
	sp.finish()
	return sp, nil
}

// finish fills a spec's zero scheduling fields and its metadata.
func (sp *spec) finish() {
	sp.md = sp.metadata()
	if sp.queueSize == 0 {
		sp.queueSize = DefaultMaxQueueSize
	}
	if sp.instances == 0 {
		sp.instances = 1
	}
}

// instance is one compiled copy of a model version. Runs of one plan are
// serialised (they share its arena), so instances that run side by side
// each have their own function and plans.
type instance struct {
	sp *spec
	f  *jit.Func[func(...*tensor.Tensor) []*tensor.Tensor]
	// call runs a batch: f.Fn (a test may put a function of its own).
	call func(xs ...*tensor.Tensor) []*tensor.Tensor
	// dynamic says one plan serves every batch size; whyPerShape, for a
	// batching model without it, says why not.
	dynamic     bool
	whyPerShape string
}

// newInstance compiles an instance of sp and warms it up: after it
// returns, no request whose shapes the spec fixes compiles anything.
//
// A batching model is compiled, when Graph mode can, as one plan whose
// batch dimension is dynamic up to max_batch_size (jit.Config.Inputs,
// Func.CompileSpec); a model it cannot serve so gets one plan per batch
// size, each compiled here.
func newInstance(sp *spec, idx int) (*instance, error) {
	name := "serve." + sp.name + "/" + sp.version + "#" + strconv.Itoa(idx)
	in := &instance{sp: sp}
	if specs := sp.inputSpecs(); specs != nil {
		in.f = jit.New(sp.fn, jit.Config{Name: name, Inputs: specs})
		in.call = in.f.Fn
		err := in.f.CompileSpec()
		if err == nil {
			// The plan serves every size; check its results at both ends.
			if err := in.warmUp([]int{1, sp.maxBatch}); err != nil {
				return nil, err
			}
			if in.f.Stats().DynamicFallback == "" {
				in.dynamic = true
				return in, nil
			}
			err = errors.New(in.f.Stats().DynamicFallback)
		}
		in.whyPerShape = err.Error()
	}
	cache := 16
	sizes := []int{0} // 0: the unbatched shapes
	if sp.maxBatch > 0 {
		cache = sp.maxBatch + 16
		sizes = sizes[:0]
		for b := 1; b <= sp.maxBatch; b++ {
			sizes = append(sizes, b)
		}
	}
	in.f = jit.New(sp.fn, jit.Config{Name: name, CacheSize: cache})
	in.call = in.f.Fn
	if err := in.warmUp(sizes); err != nil {
		return nil, err
	}
	return in, nil
}

// inputSpecs is the input signature of a batching model whose other
// dimensions are all fixed: the batch dynamic up to max_batch_size. Nil
// for a model without one.
func (sp *spec) inputSpecs() []jit.InputSpec {
	if sp.maxBatch == 0 || !sp.fixed() {
		return nil
	}
	specs := make([]jit.InputSpec, len(sp.inputs))
	for i, t := range sp.inputs {
		shape := []int{-1}
		for _, d := range t.dims {
			shape = append(shape, int(d))
		}
		specs[i] = jit.InputSpec{DType: t.dt, Shape: shape, Max: []int{sp.maxBatch}}
	}
	return specs
}

// fixed reports whether every input's non-batch dimensions are known.
func (sp *spec) fixed() bool {
	for _, t := range sp.inputs {
		if t.anyShape {
			return false
		}
		for _, d := range t.dims {
			if d < 0 {
				return false
			}
		}
	}
	return true
}

// warmUp runs the instance once on zeros at each batch size (0: the
// unbatched shapes), which compiles what a per-shape plan needs and
// checks the results. A model with a variable non-batch dimension cannot
// be run ahead: its first request of each shape compiles.
func (in *instance) warmUp(sizes []int) error {
	sp := in.sp
	if !sp.fixed() {
		return nil
	}
	for _, b := range sizes {
		xs := make([]*tensor.Tensor, len(sp.inputs))
		for i, t := range sp.inputs {
			shape := make([]int, 0, len(t.dims)+1)
			if b > 0 {
				shape = append(shape, b)
			}
			for _, d := range t.dims {
				shape = append(shape, int(d))
			}
			xs[i] = tensor.Zeros(t.dt, shape...)
		}
		outs, err := in.run(xs)
		if err == nil {
			err = in.checkOutputs(outs, b)
		}
		if err != nil {
			if b > 0 {
				return fmt.Errorf("warming up at batch size %d: %v", b, err)
			}
			return fmt.Errorf("warming up: %v", err)
		}
	}
	return nil
}

// internalError is a runtime error (an index out of range, a nil
// dereference) raised inside a model run: a bug, whose message and stack
// go to the server's log rather than to a client.
type internalError struct {
	err   error
	stack []byte
}

func (e *internalError) Error() string { return e.err.Error() }

// run runs the instance on a batch, turning a panic in the model (a shape
// it refuses, a bug) into an error.
func (in *instance) run(xs []*tensor.Tensor) (outs []*tensor.Tensor, err error) {
	defer func() {
		switch r := recover().(type) {
		case nil:
		case runtime.Error:
			err = &internalError{err: r, stack: debug.Stack()}
		case error:
			err = r
		default:
			err = fmt.Errorf("%v", r)
		}
	}()
	res := in.call(xs...)
	outs = make([]*tensor.Tensor, len(in.sp.outIndex))
	for i, j := range in.sp.outIndex {
		if j >= len(res) {
			return nil, fmt.Errorf("the model returned %d results, output %q is result %d", len(res), in.sp.outputs[i].name, j)
		}
		outs[i] = res[j]
	}
	return outs, nil
}

// checkOutputs compares a run's outputs with the spec: dtype, and the
// batch dimension when rows > 0.
func (in *instance) checkOutputs(outs []*tensor.Tensor, rows int) error {
	for i, t := range in.sp.outputs {
		o := outs[i]
		if o == nil {
			return fmt.Errorf("output %q is nil", t.name)
		}
		if o.DType() != t.dt {
			return fmt.Errorf("output %q is %s, the model declares %s", t.name, Datatype(o.DType()), Datatype(t.dt))
		}
		if rows > 0 && (o.Rank() == 0 || o.Dim(0) != rows) {
			return fmt.Errorf("output %q has shape %v for a batch of %d rows: a batching model's outputs must have the batch as their first dimension", t.name, o.Shape(), rows)
		}
	}
	return nil
}

// checkRequest checks a request's inputs and outputs against the spec and
// returns the inputs in the model's order, the batch rows (1 for a model
// that does not batch), the batching key (the non-batch shapes) and the
// served outputs' indices the request asks for.
func (sp *spec) checkRequest(req *InferRequest) (xs []*tensor.Tensor, rows int, key string, outs []int, err error) {
	bad := func(format string, args ...any) error {
		return errorf(http.StatusBadRequest, "model %q version %s: "+format, append([]any{sp.name, sp.version}, args...)...)
	}
	xs = make([]*tensor.Tensor, len(sp.inputs))
	for _, in := range req.Inputs {
		i := -1
		for j, t := range sp.inputs {
			if t.name == in.Name {
				i = j
				break
			}
		}
		if i < 0 {
			return nil, 0, "", nil, bad("has no input %q (its inputs: %s)", in.Name, names(sp.inputs))
		}
		if xs[i] != nil {
			return nil, 0, "", nil, bad("input %q is given twice", in.Name)
		}
		if in.Tensor == nil {
			return nil, 0, "", nil, bad("input %q has no data", in.Name)
		}
		if in.Tensor.IsSymbolic() {
			return nil, 0, "", nil, bad("input %q is a symbolic tensor", in.Name)
		}
		xs[i] = in.Tensor
	}
	for i, t := range sp.inputs {
		if xs[i] == nil {
			return nil, 0, "", nil, bad("input %q is missing (%s %v)", t.name, Datatype(t.dt), sp.md.Inputs[i].Shape)
		}
	}
	rows = 1
	var kb []byte
	for i, t := range sp.inputs {
		x := xs[i]
		if x.DType() != t.dt {
			return nil, 0, "", nil, bad("input %q has datatype %s, the model wants %s", t.name, Datatype(x.DType()), Datatype(t.dt))
		}
		shape := x.Shape()
		want := sp.md.Inputs[i].Shape
		if sp.maxBatch > 0 {
			if len(shape) == 0 {
				return nil, 0, "", nil, bad("input %q is a scalar; the model batches, so its first dimension is the batch (shape %v)", t.name, want)
			}
			b := shape[0]
			if b < 1 {
				return nil, 0, "", nil, bad("input %q has batch size %d", t.name, b)
			}
			if b > sp.maxBatch {
				return nil, 0, "", nil, bad("input %q has batch size %d, more than the model's max_batch_size %d", t.name, b, sp.maxBatch)
			}
			if i > 0 && b != rows {
				return nil, 0, "", nil, bad("input %q has batch size %d, input %q %d: a request's inputs share one batch size", t.name, b, sp.inputs[0].name, rows)
			}
			rows = b
			shape = shape[1:]
		}
		if !t.anyShape {
			ok := len(shape) == len(t.dims)
			for j := 0; ok && j < len(shape); j++ {
				ok = t.dims[j] < 0 || int64(shape[j]) == t.dims[j]
			}
			if !ok {
				return nil, 0, "", nil, bad("input %q has shape %v, the model wants %v", t.name, x.Shape(), want)
			}
		}
		for _, d := range shape {
			kb = strconv.AppendInt(kb, int64(d), 10)
			kb = append(kb, ',')
		}
		kb = append(kb, ';')
	}
	if len(req.Outputs) == 0 {
		outs = make([]int, len(sp.outputs))
		for i := range outs {
			outs[i] = i
		}
	} else {
		seen := map[int]bool{}
		for _, o := range req.Outputs {
			j := -1
			for k, t := range sp.outputs {
				if t.name == o.Name {
					j = k
					break
				}
			}
			if j < 0 {
				return nil, 0, "", nil, bad("has no output %q (its outputs: %s)", o.Name, names(sp.outputs))
			}
			if seen[j] {
				return nil, 0, "", nil, bad("output %q is requested twice", o.Name)
			}
			seen[j] = true
			outs = append(outs, j)
		}
	}
	return xs, rows, string(kb), outs, nil
}

// names lists tensor names for messages.
func names(ts []tspec) string {
	s := ""
	for i, t := range ts {
		if i > 0 {
			s += ", "
		}
		s += strconv.Quote(t.name)
	}
	return s
}
