package nn

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// Module is any cell: a struct that embeds Cell. The method set of *Cell
// is promoted to the embedding struct, so *MyNet satisfies Module (and has
// Call, NamedParameters, SetTrain, ...) as soon as it embeds nn.Cell.
type Module interface {
	// Base returns the embedded Cell.
	Base() *Cell
}

// Layer is a cell with one input and one output, the kind SequentialCell
// chains: Dense, Conv2d, the activations, Flatten, ...
type Layer interface {
	Module
	// Construct computes the cell's output, MindSpore's construct. It runs
	// eagerly on concrete tensors and is traced on symbolic ones.
	Construct(x *spore.Tensor) *spore.Tensor
}

// Loss is a cell computing a loss from a prediction and a target.
type Loss interface {
	Module
	// Construct returns the loss of logits against labels.
	Construct(logits, labels *spore.Tensor) *spore.Tensor
}

// Cell is the base of every network block, MindSpore's nn.Cell. Embed it
// (by value) in a struct and build the struct with Init:
//
//	type Network struct {
//		nn.Cell
//		Flatten             *nn.Flatten
//		DenseReluSequential *nn.SequentialCell
//	}
//
//	func (n *Network) Construct(x *spore.Tensor) *spore.Tensor {
//		return n.DenseReluSequential.Call(n.Flatten.Call(x))
//	}
//
//	net := nn.Init(&Network{Flatten: nn.NewFlatten(), DenseReluSequential: ...})
//	y := net.Call(x)
//
// The struct's exported fields define the cell tree: a field holding a
// cell (any Module) is a child, a field holding a parameter
// (tensor.NewParameter) is a parameter, and slices and arrays of either
// hold children or parameters named by index. Names are the fields' names
// in snake_case (DenseReluSequential → dense_relu_sequential), joined with
// dots, so that they match MindSpore's and PyTorch's. A struct tag changes
// that: `nn:"name"` renames the field, `nn:"-"` hides it, and
// `nn:",inline"` adds its children without a name segment of its own (as
// SequentialCell's list, whose children are "0", "1", ...).
//
// A Cell must not be copied after Init.
type Cell struct {
	self  Module
	call1 func(x *tensor.Tensor) *tensor.Tensor
	call2 func(x, y *tensor.Tensor) *tensor.Tensor
	callN func(xs []*tensor.Tensor) *tensor.Tensor
	name  string // the outer type's name, for compiled-function names

	training bool

	mu       sync.Mutex
	forced   *spore.JitConfig // set by Jit: compile whatever the mode
	jits     map[jitKey]*spore.JitFunc[func(...*tensor.Tensor) *tensor.Tensor]
	sigEpoch int64 // trainEpoch when sig was computed, +1 (0: never)
	sig      string
	inputs   []spore.InputSpec // set by SetInputs
}

// jitKey tells apart the compiled versions of one cell: the level, and the
// training flags of the whole tree, which Construct reads at trace time.
type jitKey struct {
	level spore.Level
	train string
}

// trainEpoch counts SetTrain calls, so that a cell re-reads its tree's
// training flags only after one.
var trainEpoch atomic.Int64

// Base returns c itself; it makes every struct embedding Cell a Module.
func (c *Cell) Base() *Cell { return c }

// Init registers m's outer struct with its embedded Cell, initialises any
// child cell not yet initialised, and names every parameter by its path
// from m (dense_relu_sequential.0.weight). It returns m, so that a network
// is built in one expression:
//
//	net := nn.Init(&Network{...})
//
// Init may be called again after the tree changes; a cell that becomes a
// child of an initialised parent is renamed with the parent's prefix, as
// MindSpore does when a cell is assigned to an attribute.
func Init[T Module](m T) T {
	initCell(m)
	return m
}

func initCell(m Module) {
	c := m.Base()
	if c == nil {
		panic(core.Errorf("nn.Init", "%T has a nil Cell", m))
	}
	c.self = m
	t := reflect.TypeOf(m)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	c.name = t.Name()
	c.call1, c.call2, c.callN = nil, nil, nil
	switch f := m.(type) {
	case interface {
		Construct(*tensor.Tensor) *tensor.Tensor
	}:
		c.call1 = f.Construct
		c.callN = func(xs []*tensor.Tensor) *tensor.Tensor { checkArgs(c, 1, len(xs)); return f.Construct(xs[0]) }
	case interface {
		Construct(*tensor.Tensor, *tensor.Tensor) *tensor.Tensor
	}:
		c.call2 = f.Construct
		c.callN = func(xs []*tensor.Tensor) *tensor.Tensor { checkArgs(c, 2, len(xs)); return f.Construct(xs[0], xs[1]) }
	case interface {
		Construct(*tensor.Tensor, *tensor.Tensor, *tensor.Tensor) *tensor.Tensor
	}:
		c.callN = func(xs []*tensor.Tensor) *tensor.Tensor {
			checkArgs(c, 3, len(xs))
			return f.Construct(xs[0], xs[1], xs[2])
		}
	case interface {
		Construct(...*tensor.Tensor) *tensor.Tensor
	}:
		c.callN = func(xs []*tensor.Tensor) *tensor.Tensor { return f.Construct(xs...) }
	}
	c.ResetJit()
	// A parameter reachable twice (a shared cell) keeps its first name, as
	// NamedParameters lists it.
	named := map[*tensor.Tensor]bool{}
	walk(m, "", func(name string, p *tensor.Tensor) {
		if !named[p] {
			named[p] = true
			p.SetName(name)
		}
	}, func(_ string, ch Module) bool {
		if ch.Base().self == nil {
			initCell(ch)
		}
		return true
	})
}

func checkArgs(c *Cell, want, got int) {
	if want != got {
		panic(core.Errorf("nn.Call", "%s.Construct takes %d tensors, called with %d", c.name, want, got))
	}
}

func (c *Cell) mustInit(op string) {
	if c.self == nil {
		panic(core.Errorf(op, "cell is not initialised: build it with nn.Init(&T{...}) (layers from nn.New... are initialised already)"))
	}
}

// Call runs the cell, MindSpore's Cell.__call__. In PyNative mode (the
// default) it calls Construct at once. In Graph mode, or after Jit, it
// compiles the whole of Construct with spore.Jit — once per input shapes
// and dtypes, level and training state — and runs the compiled plan.
// Called while an enclosing function is being traced, it is inlined.
//
// Construct must take one, two or three tensors, or be variadic, and
// return one tensor; cells with other signatures are compiled with
// spore.Jit on their Construct method.
func (c *Cell) Call(xs ...*tensor.Tensor) *tensor.Tensor {
	if c.forced == nil && spore.GetContext().Mode != spore.GraphMode || anySymbolic(xs) {
		switch {
		case len(xs) == 1 && c.call1 != nil:
			return c.call1(xs[0])
		case len(xs) == 2 && c.call2 != nil:
			return c.call2(xs[0], xs[1])
		}
		if c.callN == nil {
			c.noConstruct()
		}
		// xs is copied so that it stays on the caller's stack on the paths
		// above, which need no allocation.
		return c.callN(append([]*tensor.Tensor(nil), xs...))
	}
	return c.compiled().Call(xs...)
}

// CallInto is Call writing the result into outs[0], which must have the
// result's shape and dtype, rather than into a new tensor. In Graph mode,
// once the input signature is compiled, it allocates nothing at all: the
// serving loop's entry point, as an output binding is in other runtimes.
// (Call allocates only the tensor it returns.) In PyNative mode it runs
// Call and copies the result.
func (c *Cell) CallInto(outs []*tensor.Tensor, xs ...*tensor.Tensor) {
	if len(outs) != 1 || outs[0] == nil {
		panic(core.Errorf("nn.CallInto", "%s: want one output tensor, got %d", c.name, len(outs)))
	}
	if c.forced == nil && spore.GetContext().Mode != spore.GraphMode || anySymbolic(xs) {
		y := c.Call(xs...)
		if !y.Shape().Equal(outs[0].Shape()) || y.DType() != outs[0].DType() {
			panic(core.Errorf("nn.CallInto", "%s: result %v %v does not fit output %v %v", c.name, y.Shape(), y.DType(), outs[0].Shape(), outs[0].DType()))
		}
		core.Copy(outs[0], y)
		return
	}
	c.compiled().RunInto(xs, outs)
}

func (c *Cell) noConstruct() {
	c.mustInit("nn.Call")
	panic(core.Errorf("nn.Call", "%s has no Construct method of tensors returning one tensor; compile it with spore.Jit(net.Construct)", c.name))
}

func anySymbolic(xs []*tensor.Tensor) bool {
	for _, x := range xs {
		if x != nil && x.IsSymbolic() {
			return true
		}
	}
	return false
}

// compiled returns the compiled function for the current level and
// training state, creating it on first use (compilation itself happens on
// the first call, per input signature).
func (c *Cell) compiled() *spore.JitFunc[func(...*tensor.Tensor) *tensor.Tensor] {
	if c.callN == nil {
		c.noConstruct()
	}
	ctx := spore.GetContext()
	cfg := spore.JitConfig{}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.forced != nil {
		cfg = *c.forced
	}
	if cfg.Level == spore.Level(0) {
		cfg.Level = ctx.JitLevel
	}
	if cfg.Name == "" {
		cfg.Name = c.name
	}
	if cfg.Inputs == nil {
		cfg.Inputs = c.inputs
	}
	if e := trainEpoch.Load() + 1; e != c.sigEpoch {
		c.sig = trainSignature(c.self)
		c.sigEpoch = e
	}
	k := jitKey{level: cfg.Level, train: c.sig}
	j := c.jits[k]
	if j == nil {
		callN := c.callN
		j = spore.NewJit(func(xs ...*tensor.Tensor) *tensor.Tensor { return callN(xs) }, cfg)
		if c.jits == nil {
			c.jits = map[jitKey]*spore.JitFunc[func(...*tensor.Tensor) *tensor.Tensor]{}
		}
		c.jits[k] = j
	}
	return j
}

// trainSignature lists the training flags of m's tree in walk order.
func trainSignature(m Module) string {
	var b strings.Builder
	flag := func(c *Cell) {
		if c.training {
			b.WriteByte('1')
		} else {
			b.WriteByte('0')
		}
	}
	flag(m.Base())
	walk(m, "", nil, func(_ string, ch Module) bool { flag(ch.Base()); return true })
	return b.String()
}

// SetInputs declares the cell's input signature, MindSpore's
// Cell.set_inputs: in Graph mode (or after Jit) the cell's compiled
// function is compiled once for specs, with -1 for a dynamic dimension and
// its bound in Max, and that one plan serves every size up to the bound
// (see spore.JitConfig's Inputs, which documents the fallback for calls
// that do not fit). It drops the plans compiled so far; with no specs it
// removes the signature. A signature given to Jit's configuration wins over
// this one.
func (c *Cell) SetInputs(specs ...spore.InputSpec) {
	c.mustInit("SetInputs")
	c.mu.Lock()
	c.inputs = append([]spore.InputSpec(nil), specs...)
	if len(specs) == 0 {
		c.inputs = nil
	}
	c.jits = nil
	c.mu.Unlock()
}

// CompileInputs compiles the cell's input signature (SetInputs) now, at
// the current level and training state, so that no later call compiles:
// spore.JitFunc's CompileSpec, whose errors it returns.
func (c *Cell) CompileInputs() error {
	c.mustInit("CompileInputs")
	return c.compiled().CompileSpec()
}

// ResetJit drops the cell's compiled plans. Plans bake in everything that
// is not a tensor — the tree's structure and plain Go fields such as a
// Dropout probability — so call it after changing those.
func (c *Cell) ResetJit() {
	c.mu.Lock()
	c.jits = nil
	c.sigEpoch = 0
	c.mu.Unlock()
}

// JitStats returns the compile-cache statistics of the cell's compiled
// plans, summed over levels and training states.
func (c *Cell) JitStats() spore.JitStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	var s spore.JitStats
	for _, j := range c.jits {
		s = s.Add(j.Stats())
	}
	return s
}

// Jit makes m always run compiled, whatever the global mode: MindSpore's
// @jit on construct. It returns m:
//
//	net := nn.Jit(nn.Init(&Network{...}), spore.JitConfig{Level: spore.O0})
//
// The configuration's zero Level follows the context's JitLevel.
func Jit[T Module](m T, cfg ...spore.JitConfig) T {
	c := m.Base()
	c.mustInit("nn.Jit")
	var jc spore.JitConfig
	if len(cfg) > 0 {
		jc = cfg[0]
	}
	c.mu.Lock()
	c.forced = &jc
	c.jits = nil
	c.mu.Unlock()
	return m
}

// SetTrain switches the cell and all its descendants to training (true) or
// inference (false) behaviour, MindSpore's set_train: Dropout drops and
// BatchNorm uses and updates batch statistics only in training. Cells
// start in inference mode, as in MindSpore; training cells call
// SetTrain(true).
func (c *Cell) SetTrain(on bool) {
	c.mustInit("SetTrain")
	c.training = on
	walk(c.self, "", nil, func(_ string, ch Module) bool { ch.Base().training = on; return true })
	trainEpoch.Add(1)
}

// Training reports whether the cell is in training mode.
func (c *Cell) Training() bool { return c.training }

// Param is a parameter with its hierarchical name relative to the cell it
// was listed from.
type Param struct {
	Name   string
	Tensor *spore.Tensor
}

// ParamList is a field type holding parameters that are named by their
// Name rather than by their position: the layers whose MindSpore names
// follow a pattern (an LSTM's weight_ih_l0, weight_hh_l0, ...,
// weight_ih_l1_reverse) keep them in one ParamList, tagged `nn:",inline"`
// to put the names directly under the cell.
type ParamList []Param

// Get returns the parameter called name, or nil.
func (l ParamList) Get(name string) *tensor.Tensor {
	for _, p := range l {
		if p.Name == name {
			return p.Tensor
		}
	}
	return nil
}

// NamedParameters returns the parameters of the cell and its descendants
// with their paths from this cell, in field order, depth first; a
// parameter reachable twice is listed once.
func (c *Cell) NamedParameters() []Param {
	c.mustInit("NamedParameters")
	var out []Param
	seen := map[*tensor.Tensor]bool{}
	walk(c.self, "", func(name string, p *tensor.Tensor) {
		if !seen[p] {
			seen[p] = true
			out = append(out, Param{name, p})
		}
	}, nil)
	return out
}

// Parameters returns the parameters of the cell and its descendants, in
// the order of NamedParameters (MindSpore's get_parameters).
func (c *Cell) Parameters() []*spore.Tensor {
	np := c.NamedParameters()
	out := make([]*spore.Tensor, len(np))
	for i, p := range np {
		out[i] = p.Tensor
	}
	return out
}

// TrainableParameters returns the parameters that require gradients
// (MindSpore's trainable_params): those not frozen, in the order of
// NamedParameters. BatchNorm's moving statistics are not trainable.
func (c *Cell) TrainableParameters() []*spore.Tensor {
	var out []*spore.Tensor
	for _, p := range c.NamedParameters() {
		if p.Tensor.RequiresGrad() {
			out = append(out, p.Tensor)
		}
	}
	return out
}

// SetRequiresGrad freezes (false) or unfreezes (true) every parameter of
// the cell and its descendants. Unfreezing skips nothing: BatchNorm's
// moving statistics become trainable too, so unfreeze single parameters
// with their own SetRequiresGrad where that matters.
func (c *Cell) SetRequiresGrad(on bool) {
	for _, p := range c.Parameters() {
		p.SetRequiresGrad(on)
	}
}

// Child is a descendant cell with its hierarchical name.
type Child struct {
	Name string
	Cell Module
}

// NamedCells returns the cell's descendants (not the cell itself) with
// their paths, depth first in field order (MindSpore's cells_and_names
// without the root). Inline children take no name segment, so a
// SequentialCell's children are "0", "1", ...
func (c *Cell) NamedCells() []Child {
	c.mustInit("NamedCells")
	var out []Child
	walk(c.self, "", nil, func(name string, ch Module) bool {
		out = append(out, Child{name, ch})
		return true
	})
	return out
}

// Cells returns the cell's direct children in field order (MindSpore's
// cells).
func (c *Cell) Cells() []Module {
	c.mustInit("Cells")
	var out []Module
	walk(c.self, "", nil, func(_ string, ch Module) bool {
		out = append(out, ch)
		return false
	})
	return out
}

// String describes the cell tree with its parameters' shapes.
func (c *Cell) String() string {
	if c.self == nil {
		return "Cell<uninitialised>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s<", c.name)
	for i, p := range c.NamedParameters() {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s%v", p.Name, p.Tensor.Shape())
	}
	b.WriteString(">")
	return b.String()
}

var (
	cellType      = reflect.TypeFor[Cell]()
	moduleType    = reflect.TypeFor[Module]()
	tensorType    = reflect.TypeFor[*tensor.Tensor]()
	paramListType = reflect.TypeFor[ParamList]()
)

// fieldInfo is what walk needs of one struct field; computed once per type.
type fieldInfo struct {
	index  int
	name   string
	inline bool
}

var fieldCache sync.Map // reflect.Type -> []fieldInfo

// fieldsOf returns the fields of struct type t that may hold cells or
// parameters.
func fieldsOf(t reflect.Type) []fieldInfo {
	if v, ok := fieldCache.Load(t); ok {
		return v.([]fieldInfo)
	}
	var fs []fieldInfo
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || f.Type == cellType || !mayHold(f.Type) {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("nn"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = SnakeCase(f.Name)
		}
		fs = append(fs, fieldInfo{index: i, name: name, inline: opts == "inline"})
	}
	fieldCache.Store(t, fs)
	return fs
}

// mayHold reports whether a value of type t can be a cell, a parameter or
// a slice or array of them.
func mayHold(t reflect.Type) bool {
	if t == paramListType {
		return true
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return mayHold(t.Elem())
	case reflect.Interface:
		return true
	case reflect.Pointer:
		return t == tensorType || t.Implements(moduleType)
	}
	return false
}

// walk visits, depth first in field order, the parameters (onParam) and
// descendant cells (onCell, which says whether to descend) of m, naming
// them with paths below prefix. Either callback may be nil.
func walk(m Module, prefix string, onParam func(string, *tensor.Tensor), onCell func(string, Module) bool) {
	v := reflect.ValueOf(m)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return
	}
	s := v.Elem()
	for _, f := range fieldsOf(s.Type()) {
		name := join(prefix, f.name)
		if f.inline {
			name = prefix
		}
		visit(s.Field(f.index), name, onParam, onCell)
	}
}

func visit(v reflect.Value, name string, onParam func(string, *tensor.Tensor), onCell func(string, Module) bool) {
	if v.Type() == paramListType {
		for _, p := range v.Interface().(ParamList) {
			if p.Tensor != nil && p.Tensor.IsParameter() && onParam != nil {
				onParam(join(name, p.Name), p.Tensor)
			}
		}
		return
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			visit(v.Index(i), join(name, strconv.Itoa(i)), onParam, onCell)
		}
		return
	case reflect.Interface:
		if v.IsNil() {
			return
		}
		visit(v.Elem(), name, onParam, onCell) // an interface may hold a typed nil
		return
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
	default:
		return
	}
	switch x := v.Interface().(type) {
	case *tensor.Tensor:
		if x.IsParameter() && onParam != nil {
			onParam(name, x)
		}
	case Module:
		if onCell == nil || onCell(name, x) {
			walk(x, name, onParam, onCell)
		}
	}
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// SnakeCase converts a Go field name to the snake_case used in parameter
// names: DenseReluSequential → dense_relu_sequential, FC1 → fc1,
// ConvBN → conv_bn, HTTPServer → http_server.
func SnakeCase(s string) string {
	r := []rune(s)
	var b strings.Builder
	isUpper := func(c rune) bool { return c >= 'A' && c <= 'Z' }
	isLowerOrDigit := func(c rune) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
	for i, c := range r {
		if !isUpper(c) {
			b.WriteRune(c)
			continue
		}
		// A word starts at an upper-case letter after a lower-case letter
		// or digit, or at the last capital of an acronym followed by a
		// lower-case letter (HTTPServer → http_server).
		if i > 0 && (isLowerOrDigit(r[i-1]) || isUpper(r[i-1]) && i+1 < len(r) && r[i+1] >= 'a' && r[i+1] <= 'z') {
			b.WriteByte('_')
		}
		b.WriteRune(c - 'A' + 'a')
	}
	return b.String()
}
