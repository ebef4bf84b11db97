package compile

import (
	"fmt"
	"strings"
	"sync"

	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/kernels/fuse"
	"github.com/sporeml/spore/tensor"
)

// fusable maps the elementwise primitives loop fusion knows to the fuse
// package's instruction computing them. BroadcastTo has no instruction: the
// broadcast is how its operand is read (fuse.Row, Col or Scalar).
var fusable = map[string]fuse.Op{
	"Add": fuse.Add, "Sub": fuse.Sub, "Mul": fuse.Mul, "Div": fuse.Div,
	"Maximum": fuse.Max, "Minimum": fuse.Min, "Pow": fuse.Pow,
	"Neg": fuse.Neg, "Abs": fuse.Abs, "Exp": fuse.Exp, "Log": fuse.Log, "Log1p": fuse.Log1p,
	"Sqrt": fuse.Sqrt, "Rsqrt": fuse.Rsqrt, "Square": fuse.Square, "Reciprocal": fuse.Reciprocal,
	"Tanh": fuse.Tanh, "Sigmoid": fuse.Sigmoid, "ReLU": fuse.Relu, "ReLUGrad": fuse.ReluGrad,
	"GELU": fuse.Gelu, "Softplus": fuse.Softplus, "Sign": fuse.Sign, "Sin": fuse.Sin, "Cos": fuse.Cos,
	"BroadcastTo": 0,
}

// immForm gives, for a binary op whose second operand is a scalar constant,
// the one-register instruction taking the constant as an immediate.
var immForm = map[fuse.Op]fuse.Op{
	fuse.Add: fuse.AddScalar, fuse.Mul: fuse.MulScalar, fuse.Max: fuse.MaxScalar,
	fuse.Min: fuse.MinScalar, fuse.Pow: fuse.PowScalar,
}

// fuseOp returns v's fuse instruction (0 for BroadcastTo) and whether v's
// primitive can join a fused loop at all.
func fuseOp(v *graph.Value) (fuse.Op, bool) {
	if !plainOp(v) || !v.Prim.Traits.Elementwise {
		return 0, false
	}
	op, ok := fusable[v.Prim.Name]
	if !ok {
		return 0, false
	}
	return op, true
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
	if p.Equal(out) {
		return fuse.Full, true
	}
	if p.Size() == 1 {
		return fuse.Scalar, true
	}
	row, col := true, p[r-1] == 1
	for j := 0; j < r-1; j++ {
		row = row && p[j] == 1
		col = col && p[j] == out[j]
	}
	switch {
	case row && p[r-1] == out[r-1]:
		return fuse.Row, true
	case col:
		return fuse.Col, true
	}
	return 0, false
}

// fusibleIn reports whether v can be a member of a fused loop over shape:
// a known float32 elementwise op producing the whole shape, whose operands
// are all float32 and read in a supported mode.
func fusibleIn(v *graph.Value, shape tensor.Shape) bool {
	if _, ok := fuseOp(v); !ok || v.Meta.DType != tensor.Float32 || !v.Meta.Shape.Equal(shape) || shape.Size() == 0 {
		return false
	}
	for _, a := range v.Args {
		if a.Meta.DType != tensor.Float32 {
			return false
		}
		if _, ok := readMode(a.Meta.Shape, shape); !ok {
			return false
		}
	}
	return true
}

// Fuse is elementwise loop fusion: it grows, from each float32
// elementwise op (visited from the outputs back), the largest group of
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
// is left alone. Only float32 is fused (the fuse kernels' type).
func Fuse(g *graph.Graph) {
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
		if grouped[root.ID] || !fusibleIn(root, shape) {
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
					if member[a] || grouped[a.ID] || !fusibleIn(a, shape) || !inside(a) {
						continue
					}
					member[a] = true
					list = append(list, a)
					changed = true
				}
			}
		}
		if len(list) < 2 {
			continue
		}
		for _, m := range list {
			grouped[m.ID] = true
		}
		sortByPos(list, pos)
		buildFused(root, list, member)
	}
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
	// In describes the operands: their shapes and how they are read.
	In []FusedInput
	// Shape is the output's shape (the dtype is float32).
	Shape tensor.Shape
	calls sync.Pool // *fusedCall
}

// FusedInput is one operand of a fused op.
type FusedInput struct {
	Shape  tensor.Shape
	Mode   fuse.Mode
	Period int
}

// fusedCall is the per-call scratch of a fused kernel, pooled so that
// running a plan allocates nothing.
type fusedCall struct {
	ins  []fuse.Input
	outs [][]float32
}

var modeNames = [...]string{fuse.Full: "full", fuse.Scalar: "scalar", fuse.Row: "row", fuse.Col: "col"}

// String prints the program, one instruction per clause:
//
//	in r0 full, r1 row; r2 = Add r0 r1; r2 = Relu r2; out r2
func (a *FusedAttrs) String() string {
	var b strings.Builder
	b.WriteString("in")
	for i, in := range a.In {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " r%d %s", i, modeNames[in.Mode])
	}
	for _, in := range a.Prog.Insts {
		fmt.Fprintf(&b, "; r%d = %v", in.Dst, in.Op)
		for j, r := range [3]int{in.A, in.B, in.C} {
			if j < in.Op.Arity() {
				fmt.Fprintf(&b, " r%d", r)
			}
		}
		switch in.Op {
		case fuse.AddScalar, fuse.MulScalar, fuse.MaxScalar, fuse.MinScalar, fuse.PowScalar:
			fmt.Fprintf(&b, " %v", in.Imm)
		}
	}
	fmt.Fprintf(&b, "; out r%d", a.Prog.Outs[0])
	return b.String()
}

// buildFused rewrites root into the fused op computing the members (in
// topological order, root last).
func buildFused(root *graph.Value, members []*graph.Value, member map[*graph.Value]bool) {
	shape := root.Meta.Shape.Clone()
	reg := map[*graph.Value]int{}
	var args []*graph.Value
	var ins []FusedInput
	operand := func(a *graph.Value) int {
		if r, ok := reg[a]; ok {
			return r
		}
		mode, _ := readMode(a.Meta.Shape, shape)
		r := len(args)
		args = append(args, a)
		period := 1 // a rank-0 output has no last axis; only Full operands
		if len(shape) > 0 {
			period = shape[len(shape)-1]
		}
		ins = append(ins, FusedInput{Shape: a.Meta.Shape.Clone(), Mode: mode, Period: period})
		reg[a] = r
		return r
	}
	type pending struct {
		v       *graph.Value
		op      fuse.Op
		a, b, c *graph.Value
		imm     float32
	}
	// First pass: choose instructions and discover the operands, which
	// take the first registers.
	var code []pending
	var names []string
	cost := 0
	for _, m := range members {
		op, _ := fuseOp(m)
		names = append(names, m.Prim.Name)
		cost += m.Prim.Traits.Cost
		p := pending{v: m, op: op, a: m.Args[0]}
		if len(m.Args) > 1 {
			p.b = m.Args[1]
			if k := m.Args[1]; k.Kind == graph.KindConst && k.Meta.Shape.Size() == 1 && !member[k] {
				x := float32(k.Tensor.Float64s()[0])
				switch {
				case immForm[op] != 0:
					p.op, p.b, p.imm = immForm[op], nil, x
				case op == fuse.Sub: // x - c = x + (-c) exactly
					p.op, p.b, p.imm = fuse.AddScalar, nil, -x
				}
			}
		}
		for _, a := range []*graph.Value{p.a, p.b} {
			if a != nil && !member[a] {
				operand(a)
			}
		}
		code = append(code, p)
	}
	// Second pass: registers. A member's value dies after its last reader;
	// its register is then reused, keeping the register file (and the L1
	// footprint) small.
	last := map[*graph.Value]int{}
	for i, p := range code {
		for _, a := range []*graph.Value{p.a, p.b} {
			if a != nil && member[a] {
				last[a] = i
			}
		}
	}
	nin := len(args)
	nregs := nin
	var free []int
	prog := &fuse.Program{NumInputs: nin}
	for i, p := range code {
		if p.op == 0 { // BroadcastTo: read the operand in its mode
			reg[p.v] = reg[p.a]
			continue
		}
		ra := reg[p.a]
		rb := 0
		if p.b != nil {
			rb = reg[p.b]
		}
		// Release the registers of members read for the last time here,
		// so the result may reuse one (fuse allows Dst == A).
		for _, a := range []*graph.Value{p.a, p.b} {
			if a != nil && member[a] && last[a] == i && reg[a] >= nin {
				free = append(free, reg[a])
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
		reg[p.v] = dst
		prog.Insts = append(prog.Insts, fuse.Inst{Op: p.op, Dst: dst, A: ra, B: rb, Imm: p.imm})
	}
	out := reg[root]
	if out < nin { // the group reduced to a broadcast of an operand
		prog.Insts = append(prog.Insts, fuse.Inst{Op: fuse.Copy, Dst: nregs, A: out})
		out = nregs
		nregs++
	}
	prog.NumRegs = nregs
	prog.Outs = []int{out}
	if err := prog.Check(); err != nil {
		panic(fmt.Sprintf("compile: fuse built a bad program for %s: %v", root.LongString(), err))
	}
	attrs := &FusedAttrs{Members: names, Prog: prog, In: ins, Shape: shape}
	root.Prim = fusedPrim(names, cost)
	root.Attrs = attrs
	root.Args = args
}

// fusedPrim returns the primitive of a fused group, named after its
// members so that the IR shows what was fused.
func fusedPrim(names []string, cost int) *core.Prim {
	return &core.Prim{
		Name: "Fused[" + strings.Join(names, ",") + "]",
		// Elementwise lets the planner run it in place over an operand
		// that dies here: the program reads each block before writing it.
		Traits: core.Traits{Elementwise: true, Cost: cost},
		Infer:  inferFused,
		Kernel: kernelFused,
	}
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
		if x.DType() != tensor.Float32 || !x.Shape().Equal(a.In[i].Shape) {
			core.Panicf("Fused", "operand %d is %v %v, the program was built for float32 %v", i, x.DType(), x.Shape(), a.In[i].Shape)
		}
	}
	return tensor.Meta{Shape: a.Shape, DType: tensor.Float32}
}

func kernelFused(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
	a := attrs.(*FusedAttrs)
	c, _ := a.calls.Get().(*fusedCall)
	if c == nil {
		c = &fusedCall{ins: make([]fuse.Input, len(a.In)), outs: make([][]float32, 1)}
	}
	for i, x := range in {
		c.ins[i] = fuse.Input{Data: x.Data().([]float32), Mode: a.In[i].Mode, Period: a.In[i].Period}
	}
	c.outs[0] = out.Data().([]float32)
	a.Prog.Run(c.outs, c.ins)
	clear(c.ins) // drop the buffers: the pool may outlive the plan's arena
	c.outs[0] = nil
	a.calls.Put(c)
}
