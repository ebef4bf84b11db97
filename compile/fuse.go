package compile

import (
	"fmt"
	"strings"

	"github.com/sporeml/spore/internal/freelist"

	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/kernels/fuse"
	"github.com/sporeml/spore/tensor"
)

// fuseType is the fuse package's name for dtype d.
func fuseType(d tensor.DType) (fuse.Type, bool) {
	switch d {
	case tensor.Float32:
		return fuse.F32, true
	case tensor.Float64:
		return fuse.F64, true
	case tensor.Int32:
		return fuse.I32, true
	case tensor.Int64:
		return fuse.I64, true
	case tensor.Uint8:
		return fuse.U8, true
	case tensor.Bool:
		return fuse.Bool, true
	}
	return 0, false
}

// fusable reports whether the fused loop has registers of v's dtype and
// its operands' (BFloat16 and Float16 values, say, it has none: their
// nodes stay unfused).
func fusable(v *graph.Value) bool {
	if _, ok := fuseType(v.Meta.DType); !ok {
		return false
	}
	for _, a := range v.Args {
		if _, ok := fuseType(a.Meta.DType); !ok {
			return false
		}
	}
	return true
}

// argTypes returns the dtypes of v's operands.
func argTypes(v *graph.Value) []tensor.DType {
	ds := make([]tensor.DType, len(v.Args))
	for i, a := range v.Args {
		ds[i] = a.Meta.DType
	}
	return ds
}

// bodyOf returns the fuse instruction body of v, from its primitive's
// block body (core.Elementwise) bound for the interpreter, and whether v
// can join a fused loop at all: an elementwise op with a body for its
// operands' dtypes whose types are what v's meta says. An op whose body is
// a plain broadcast (Copy) joins with the zero Fn: the loop reads its
// operand broadcast.
func bodyOf(v *graph.Value) (fuse.Fn, bool) {
	if !plainOp(v) || !v.Prim.Traits.Elementwise || v.Prim.Elementwise == nil || !fusable(v) {
		return fuse.Fn{}, false
	}
	e := v.Prim.Elementwise
	if e.Copy {
		return fuse.Fn{}, len(v.Args) == 1 && v.Args[0].Meta.DType == v.Meta.DType
	}
	body := e.Body(v.Attrs, argTypes(v))
	if body == nil {
		return fuse.Fn{}, false
	}
	fn, err := fuse.Bind(body)
	if err != nil || fn.Arity != len(v.Args) {
		return fuse.Fn{}, false
	}
	// A body whose types disagree with the graph's would read memory as
	// the wrong type: refuse it (the enumeration test catches such an op).
	if t, ok := fuseType(v.Meta.DType); !ok || t != fn.Dst {
		return fuse.Fn{}, false
	}
	for i, a := range v.Args {
		if t, ok := fuseType(a.Meta.DType); !ok || t != fn.Args[i] {
			return fuse.Fn{}, false
		}
	}
	return fn, true
}

// readMode says how an operand of shape s is read by a loop over a tensor
// of shape out: in full, as a scalar, as a row repeated over the leading
// axes (a bias), or as a column repeated along the last axis (a per-row
// statistic). Other broadcasts are not fused.
func readMode(s, out tensor.Shape) (fuse.Mode, bool) {
	r := len(out)
	if len(s) > r {
		return 0, false
	}
	p := make(tensor.Shape, r) // s right-aligned, padded with 1s
	for i := range p {
		p[i] = 1
	}
	copy(p[r-len(s):], s)
	if r == 0 {
		return fuse.Full, true // a scalar over a scalar
	}
	row, col := true, p[r-1] == 1
	for j := 0; j < r-1; j++ {
		row = row && p[j] == 1
		col = col && p[j] == out[j]
	}
	row = row && p[r-1] == out[r-1]
	// A row of lower rank than the result (a Dense bias) is read as a
	// row even where the leading axes have extent 1 and Full would do
	// as well: the mode then does not depend on the batch size, so plans
	// compiled at batch 1 and at larger batches agree op for op, as one
	// plan for a dynamic batch requires.
	if row && len(s) < r && p.Size() > 1 {
		return fuse.Row, true
	}
	if p.Equal(out) {
		return fuse.Full, true
	}
	if p.Size() == 1 {
		return fuse.Scalar, true
	}
	switch {
	case row:
		return fuse.Row, true
	case col:
		return fuse.Col, true
	}
	return 0, false
}

// fuser holds one run of Fuse: the bound bodies of the values it has
// looked at, since growing groups asks about the same value repeatedly.
type fuser struct {
	fns map[*graph.Value]fuse.Fn
	ok  map[*graph.Value]bool
}

// fusibleIn reports whether v can be a member of a fused loop over shape:
// an elementwise op with a body, producing the whole shape, whose operands
// are read in a supported mode.
func (f *fuser) fusibleIn(v *graph.Value, shape tensor.Shape) bool {
	return f.fusibleWith(v, shape, func(a, out tensor.Shape) bool {
		_, ok := readMode(a, out)
		return ok
	})
}

// fusibleWith is fusibleIn with readable deciding whether an operand of
// a shape can be read (loop fusion's readMode, or an epilogue's anchorMode).
func (f *fuser) fusibleWith(v *graph.Value, shape tensor.Shape, readable func(arg, shape tensor.Shape) bool) bool {
	if !v.Meta.Shape.Equal(shape) || shape.Size() == 0 {
		return false
	}
	ok, seen := f.ok[v]
	if !seen {
		var fn fuse.Fn
		fn, ok = bodyOf(v)
		f.fns[v], f.ok[v] = fn, ok
	}
	if !ok {
		return false
	}
	for _, a := range v.Args {
		if !readable(a.Meta.Shape, shape) {
			return false
		}
	}
	return true
}

// Fuse is elementwise loop fusion: it grows, from each elementwise op
// (visited from the outputs back), the largest group of
// elementwise producers whose every use is inside the group, and replaces
// the group with one op running a fuse.Program: one pass over memory in
// L1-sized blocks, intermediates never stored. The op (its root) is
// rewritten in place and the absorbed producers are left to DCE.
//
// Members all have the root's shape; operands from outside may also be
// scalars, rows (biases) or columns (row statistics). Because a member may
// not be used outside its group, nothing is ever computed twice, so an
// expensive producer (Traits.Cost) is never duplicated, and a group has
// exactly one result, as a Prim does. A lone op is not worth a program and
// is left alone, unless it reads an operand as a row or a column
// (readsBroadcast).
//
// Any primitive whose definition carries a block body (core.Elementwise)
// fuses; the program runs those same bodies, so a fused group computes
// exactly what its ops compute one by one. Members may change dtype along
// the group (a comparison feeding a Select, a Cast): each register holds
// the type its instruction writes, and the group's result has the root's
// dtype.
func Fuse(g *graph.Graph) {
	f := &fuser{fns: map[*graph.Value]fuse.Fn{}, ok: map[*graph.Value]bool{}}
	g.CountUses()
	us := users(g)
	grouped := make([]bool, g.NumIDs())
	pos := make([]int, g.NumIDs())
	for i, v := range g.Values {
		pos[v.ID] = i
	}
	for i := len(g.Values) - 1; i >= 0; i-- {
		root := g.Values[i]
		shape := root.Meta.Shape
		if grouped[root.ID] || !f.fusibleIn(root, shape) {
			continue
		}
		member := map[*graph.Value]bool{root: true}
		list := []*graph.Value{root}
		inside := func(a *graph.Value) bool {
			if a.Uses != len(us[a.ID]) {
				return false // an output or an assigned value
			}
			for _, u := range us[a.ID] {
				if !member[u] {
					return false
				}
			}
			return true
		}
		// Absorb until nothing changes: a producer used by two members
		// joins only once both have.
		for changed := true; changed; {
			changed = false
			for j := 0; j < len(list); j++ {
				for _, a := range list[j].Args {
					if member[a] || grouped[a.ID] || !f.fusibleIn(a, shape) || !inside(a) {
						continue
					}
					member[a] = true
					list = append(list, a)
					changed = true
				}
			}
		}
		if len(list) < 2 && !readsBroadcast(root) {
			continue
		}
		for _, m := range list {
			grouped[m.ID] = true
		}
		sortByPos(list, pos)
		f.build(root, list, member)
	}
}

// readsBroadcast reports whether one of v's operands is read as a row (a
// per-feature scale) or a column (a per-row statistic, as in a
// normalisation's x − mean). The eager binary kernels have fast paths for
// equal shapes and scalars, and for rows only in some ops, and walk other
// broadcasts element by element; a fused loop of one op reads rows and
// columns at full speed, so such a lone op is worth a program.
func readsBroadcast(v *graph.Value) bool {
	for _, a := range v.Args {
		if m, _ := readMode(a.Meta.Shape, v.Meta.Shape); m == fuse.Col || m == fuse.Row {
			return true
		}
	}
	return false
}

func sortByPos(list []*graph.Value, pos []int) {
	for i := 1; i < len(list); i++ { // insertion sort: groups are small
		for j := i; j > 0 && pos[list[j].ID] < pos[list[j-1].ID]; j-- {
			list[j], list[j-1] = list[j-1], list[j]
		}
	}
}

// FusedAttrs are the attributes of a fused elementwise op: its program and
// how each operand is read.
type FusedAttrs struct {
	// Members names the fused primitives in program order.
	Members []string
	// Prog computes the output from registers 0..len(In)-1 (the operands).
	Prog *fuse.Program
	// In describes the operands: their shapes, dtypes and how they are read.
	In []FusedInput
	// Shape and DType are the output's.
	Shape tensor.Shape
	DType tensor.DType
	// imm[k] prints instruction k's constant operand, if it has one.
	imm   []string
	calls freelist.List[fusedCall]
}

// FusedInput is one operand of a fused op.
type FusedInput struct {
	Shape  tensor.Shape
	DType  tensor.DType
	Mode   fuse.Mode
	Period int
	Inner  int // the elements per channel of a fuse.Chan operand
}

// fusedCall is the per-call scratch of a fused kernel, pooled so that
// running a plan allocates nothing.
type fusedCall struct {
	ins  []fuse.Input
	outs []any
}

var modeNames = [...]string{fuse.Full: "full", fuse.Scalar: "scalar", fuse.Row: "row", fuse.Col: "col", fuse.Chan: "chan"}

// String prints the program, one instruction per clause, a constant
// operand as its value:
//
//	in r0 full, r1 row; r2 = Add r0 r1; r2 = ReLU r2; r2 = Mul r2 0.5; out r2
func (a *FusedAttrs) String() string {
	var b strings.Builder
	b.WriteString("in")
	for i, in := range a.In {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " r%d %s", i, modeNames[in.Mode])
	}
	for k, in := range a.Prog.Insts {
		fmt.Fprintf(&b, "; r%d = %s", in.Dst, in.Name)
		regs := [3]int{in.A, in.B, in.C}
		for _, r := range regs[:in.Fn.Arity] {
			fmt.Fprintf(&b, " r%d", r)
		}
		if k < len(a.imm) && a.imm[k] != "" {
			fmt.Fprintf(&b, " %s", a.imm[k])
		}
	}
	fmt.Fprintf(&b, "; out r%d", a.Prog.Outs[0])
	return b.String()
}

// build rewrites root into the fused op computing the members (in
// topological order, root last).
func (f *fuser) build(root *graph.Value, members []*graph.Value, member map[*graph.Value]bool) {
	pr := f.program(root, members, member, nil, plainMode)
	attrs := &FusedAttrs{Members: pr.names, Prog: pr.prog, In: pr.ins, Shape: root.Meta.Shape.Clone(), DType: root.Meta.DType, imm: pr.imm}
	root.Prim = fusedPrim(pr.names, pr.cost)
	root.Attrs = attrs
	root.Args = pr.args
}

// modeFunc says how an operand of shape s is read by a loop over a
// tensor of shape out: its mode, period and inner extent (fuse.Input).
type modeFunc func(s, out tensor.Shape) FusedInput

// plainMode is how elementwise loop fusion reads an operand (readMode): in
// full, as a scalar, a row or a column.
func plainMode(s, out tensor.Shape) FusedInput {
	mode, _ := readMode(s, out)
	period := 1 // a rank-0 output has no last axis; only Full operands
	if len(out) > 0 {
		period = out[len(out)-1]
	}
	return FusedInput{Mode: mode, Period: period}
}

// built is a program compiled from a group of elementwise values.
type built struct {
	prog  *fuse.Program
	args  []*graph.Value // the operands, one per input register
	ins   []FusedInput
	names []string // the members' primitives, in program order
	imm   []string
	cost  int
}

// program compiles the members (in topological order, root last) into
// one program over root's shape. Operands from outside the group take the
// first registers, first (when non-nil) in register 0; mode says how each
// is read.
func (f *fuser) program(root *graph.Value, members []*graph.Value, member map[*graph.Value]bool, first *graph.Value, mode modeFunc) built {
	shape := root.Meta.Shape.Clone()
	reg := map[*graph.Value]int{}
	var args []*graph.Value
	var ins []FusedInput
	var inTypes []fuse.Type
	operand := func(a *graph.Value) int {
		if r, ok := reg[a]; ok {
			return r
		}
		r := len(args)
		args = append(args, a)
		in := mode(a.Meta.Shape, shape)
		in.Shape, in.DType = a.Meta.Shape.Clone(), a.Meta.DType
		ins = append(ins, in)
		t, _ := fuseType(a.Meta.DType)
		inTypes = append(inTypes, t)
		reg[a] = r
		return r
	}
	if first != nil {
		operand(first)
	}
	type pending struct {
		v    *graph.Value
		fn   fuse.Fn // zero for a broadcast (Copy)
		name string
		imm  string         // the constant operand of a scalar form
		args []*graph.Value // the operands read from registers
	}
	// First pass: choose instructions and discover the operands, which
	// take the first registers.
	var code []pending
	var names []string
	cost := 0
	for _, m := range members {
		names = append(names, m.Prim.Name)
		cost += m.Prim.Traits.Cost
		p := pending{v: m, fn: f.fns[m], name: m.Prim.Name, args: m.Args}
		if fn, imm, ok := scalarForm(m, member); ok {
			p.fn, p.imm, p.args = fn, imm, m.Args[:1]
		}
		for _, a := range p.args {
			if !member[a] {
				operand(a)
			}
		}
		code = append(code, p)
	}
	// Second pass: registers. A member's value dies after its last reader;
	// its register is then reused, keeping the register file (and the L1
	// footprint) small. A register holds any type, so reuse ignores types.
	last := map[*graph.Value]int{}
	for i, p := range code {
		for _, a := range p.args {
			if member[a] {
				last[a] = i
			}
		}
	}
	nin := len(args)
	nregs := nin
	var free []int
	prog := &fuse.Program{NumInputs: nin, InTypes: inTypes}
	var imm []string
	for i, p := range code {
		if p.fn.Arity == 0 { // a broadcast: read the operand in its mode
			reg[p.v] = reg[p.args[0]]
			continue
		}
		var rs [3]int
		for j, a := range p.args {
			rs[j] = reg[a]
		}
		// Release the registers of members read for the last time here,
		// so the result may reuse one (fuse allows Dst == A) — unless the
		// result is of another width, which would overwrite elements of
		// the operand not yet read: such a register is freed after.
		var later []int
		for _, a := range p.args {
			if member[a] && last[a] == i && reg[a] >= nin {
				if a.Meta.DType.Size() == p.v.Meta.DType.Size() {
					free = append(free, reg[a])
				} else {
					later = append(later, reg[a])
				}
				last[a] = -1 // release once even if read twice
			}
		}
		var dst int
		if len(free) > 0 {
			dst, free = free[len(free)-1], free[:len(free)-1]
		} else {
			dst = nregs
			nregs++
		}
		free = append(free, later...)
		reg[p.v] = dst
		prog.Insts = append(prog.Insts, fuse.Inst{Fn: p.fn, Name: p.name, Dst: dst, A: rs[0], B: rs[1], C: rs[2]})
		imm = append(imm, p.imm)
	}
	out := reg[root]
	if out < nin { // the group reduced to a broadcast of an operand
		prog.Insts = append(prog.Insts, fuse.Inst{Fn: copyFn(root.Meta.DType), Name: "Copy", Dst: nregs, A: out})
		out = nregs
		nregs++
	}
	prog.NumRegs = nregs
	prog.Outs = []int{out}
	if err := prog.Check(); err != nil {
		panic(fmt.Sprintf("compile: fuse built a bad program for %s: %v", root.LongString(), err))
	}
	return built{prog: prog, args: args, ins: ins, names: names, imm: imm, cost: cost}
}

// scalarForm returns the one-operand instruction computing m when its
// second operand is a scalar constant outside the group and m's op has a
// form taking it as an immediate (core.Elementwise.Scalar: a vectorised
// x+s, say), and the constant as printed.
func scalarForm(m *graph.Value, member map[*graph.Value]bool) (fuse.Fn, string, bool) {
	e := m.Prim.Elementwise
	if e == nil || e.Scalar == nil || len(m.Args) != 2 {
		return fuse.Fn{}, "", false
	}
	k := m.Args[1]
	if k.Kind != graph.KindConst || k.Meta.Shape.Size() != 1 || member[k] || !k.Meta.DType.IsFloat() {
		return fuse.Fn{}, "", false
	}
	s := k.Tensor.Float64s()[0]
	body := e.Scalar(m.Attrs, argTypes(m), s)
	if body == nil {
		return fuse.Fn{}, "", false
	}
	fn, err := fuse.Bind(body)
	if err != nil || fn.Arity != 1 || fn.Dst != fn.Args[0] {
		return fuse.Fn{}, "", false
	}
	if k.Meta.DType == tensor.Float32 {
		return fn, fmt.Sprint(float32(s)), true // as the program holds it
	}
	return fn, fmt.Sprint(s), true
}

// copyFn is the body copying a register of dtype d.
func copyFn(d tensor.DType) fuse.Fn {
	var body any
	switch d {
	case tensor.Float32:
		body = func(dst, a []float32) { copy(dst, a) }
	case tensor.Float64:
		body = func(dst, a []float64) { copy(dst, a) }
	case tensor.Int32:
		body = func(dst, a []int32) { copy(dst, a) }
	case tensor.Int64:
		body = func(dst, a []int64) { copy(dst, a) }
	case tensor.Uint8:
		body = func(dst, a []uint8) { copy(dst, a) }
	default:
		body = func(dst, a []bool) { copy(dst, a) }
	}
	return fuse.MustBind(body)
}

// fusedPrim returns the primitive of a fused group, named after its
// members so that the IR shows what was fused. Its one kernel serves every
// dtype: the program carries its types.
func fusedPrim(names []string, cost int) *core.Prim {
	p := &core.Prim{
		Name: "Fused[" + strings.Join(names, ",") + "]",
		// Elementwise lets the planner run it in place over an operand
		// that dies here: the program reads each block before writing it.
		Traits: core.Traits{Elementwise: true, Cost: cost},
		Infer:  inferFused,
	}
	for d := tensor.Float32; d <= tensor.Uint8; d++ {
		p.Register(d, core.CPU, kernelFused)
	}
	return p
}

func inferFused(attrs any, in []*tensor.Tensor) tensor.Meta {
	a, ok := attrs.(*FusedAttrs)
	if !ok {
		core.Panicf("Fused", "attributes are %T, want *compile.FusedAttrs", attrs)
	}
	if len(in) != len(a.In) {
		core.Panicf("Fused", "got %d operands, the program reads %d", len(in), len(a.In))
	}
	for i, x := range in {
		if x.DType() != a.In[i].DType || !x.Shape().Equal(a.In[i].Shape) {
			core.Panicf("Fused", "operand %d is %v %v, the program was built for %v %v", i, x.DType(), x.Shape(), a.In[i].DType, a.In[i].Shape)
		}
	}
	return tensor.Meta{Shape: a.Shape, DType: a.DType}
}

func kernelFused(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
	a := attrs.(*FusedAttrs)
	c := a.calls.Get()
	if c.outs == nil {
		c.ins, c.outs = make([]fuse.Input, len(a.In)), make([]any, 1)
	}
	for i, x := range in {
		c.ins[i] = fuse.Input{Data: x.Data(), Mode: a.In[i].Mode, Period: a.In[i].Period, Inner: a.In[i].Inner}
	}
	c.outs[0] = out.Data()
	a.Prog.Run(c.outs, c.ins)
	clear(c.ins) // drop the buffers: the pool may outlive the plan's arena
	c.outs[0] = nil
	a.calls.Put(c)
}
