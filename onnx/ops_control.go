package onnx

import (
	"fmt"
	"slices"

	"github.com/sporeml/spore/internal/control"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Control flow: If, Loop and Scan become spore.Cond, spore.Scan and
// spore.While, which run Go closures in PyNative mode and become nodes
// holding their bodies as sub-graphs in Graph mode (not unrolled). The
// bodies run through c.runGraph, which gives them the enclosing graphs'
// values (ONNX's outer scope); under a trace those become the control-flow
// node's captured inputs.
//
// Limits, shared by both modes so that they agree: If's branches must
// return the same shapes when the condition is only known at run time
// (spore.Cond's rule); a Loop whose stopping condition depends on its
// values cannot also have scan outputs (spore.While carries fixed shapes
// and has no stacked outputs), nor can one without a constant trip count.

func init() {
	register("If", 1, 0, opIf)
	register("Loop", 1, 0, opLoop)
	register("Scan", 9, 0, opScan)
}

// maxScanTrips bounds a Loop's constant trip count when it runs as a Scan,
// which materialises the iteration numbers: a hostile M of 2^62 must not
// allocate, and a loop that long has no scan outputs worth stacking.
const maxScanTrips = 1 << 24

// body returns a Go closure that runs sub-graph g on its arguments,
// panicking with the runner's error (callOp names the node).
func body(c *nodeCtx, g *onnxpb.GraphProto) func(...*tensor.Tensor) []*tensor.Tensor {
	return func(xs ...*tensor.Tensor) []*tensor.Tensor {
		outs, err := c.runGraph(g, xs)
		if err != nil {
			panic(c.Errorf("%v", err))
		}
		return outs
	}
}

// opIf runs then_branch or else_branch. A condition known when the node
// runs (a constant, or computed from shapes) picks its branch at once, in
// both modes, so that branches of different shapes work there; otherwise
// spore.Cond stages both.
func opIf(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	cond := c.In(ins, 0)
	thenG, elseG := c.GraphAttr("then_branch"), c.GraphAttr("else_branch")
	if thenG == nil || elseG == nil {
		return nil, c.Errorf("then_branch and else_branch are required")
	}
	if cond == nil || cond.DType() != tensor.Bool || cond.Size() != 1 {
		return nil, c.Errorf("the condition must be a one-element bool tensor")
	}
	for _, g := range []*onnxpb.GraphProto{thenG, elseG} {
		if len(g.GetInput()) != 0 {
			return nil, c.Errorf("branch %q takes %d inputs; If's branches take none", g.GetName(), len(g.GetInput()))
		}
	}
	// A condition computed from graph inputs alone (a sample rate, a
	// flag) is read as a value, so that the Model specialises its plan on
	// it, as torch.compile guards on a Python bool: both modes then run
	// the branch it picks, and branches of different shapes work.
	if c.specialisable(cond) {
		if _, err := c.Concrete(cond, "cond"); err != nil {
			return nil, err
		}
	}
	if !c.dynamic(cond) {
		if cond.Bool() {
			return body(c, thenG)(), nil
		}
		return body(c, elseG)(), nil
	}
	if !cond.IsSymbolic() {
		// PyNative mode, a condition computed from the data: run the
		// branch it picks, as spore.Cond does, but when that returns
		// sequences or optionals run the other too, so that branches of
		// different structures are refused here as in Graph mode.
		picked, other := thenG, elseG
		if !cond.Bool() {
			picked, other = elseG, thenG
		}
		outs := body(c, picked)()
		if anyBoxed(outs) {
			rest := body(c, other)()
			a, b := outs, rest
			if picked == elseG {
				a, b = rest, outs
			}
			if err := sameStructure(a, b); err != nil {
				return nil, c.Errorf("%v", err)
			}
		}
		return outs, nil
	}
	// Graph mode: spore.Cond stages both branches; sequences and optionals
	// go through it opened into their tensors, which must match.
	var thenV, elseV []bval
	flat := control.Cond(cond, func(...*tensor.Tensor) []*tensor.Tensor {
		outs := body(c, thenG)()
		thenV = openAll(outs)
		return leavesOf(thenV)
	}, func(...*tensor.Tensor) []*tensor.Tensor {
		outs := body(c, elseG)()
		elseV = openAll(outs)
		return leavesOf(elseV)
	})
	if err := sameStructureV(thenV, elseV); err != nil {
		return nil, c.Errorf("%v", err)
	}
	next := 0
	outs := make([]*tensor.Tensor, len(thenV))
	for i, v := range thenV {
		outs[i] = fill(v, flat, &next).close()
	}
	return outs, nil
}

// anyBoxed reports whether any of ts is a sequence or optional handle.
func anyBoxed(ts []*tensor.Tensor) bool {
	for _, t := range ts {
		if boxOf(t) != nil {
			return true
		}
	}
	return false
}

func openAll(ts []*tensor.Tensor) []bval {
	vs := make([]bval, len(ts))
	for i, t := range ts {
		vs[i] = open(t)
	}
	return vs
}

// leavesOf lists the tensors of trees vs, depth first.
func leavesOf(vs []bval) []*tensor.Tensor {
	var out []*tensor.Tensor
	var walk func(v bval)
	walk = func(v bval) {
		out = append(out, v.T...)
		for _, e := range v.Elems {
			walk(e)
		}
	}
	for _, v := range vs {
		walk(v)
	}
	return out
}

// fill returns tree v with its tensors replaced, in leavesOf's order, by
// leaves[*next:].
func fill(v bval, leaves []*tensor.Tensor, next *int) bval {
	out := bval{Kind: v.Kind, DType: v.DType}
	if len(v.T) > 0 {
		out.T = []*tensor.Tensor{leaves[*next]}
		*next++
	}
	for _, e := range v.Elems {
		out.Elems = append(out.Elems, fill(e, leaves, next))
	}
	return out
}

// structure describes a tree for comparing branches: kinds, lengths, and
// the tensors' shapes and dtypes.
func structure(v bval) string {
	if len(v.T) > 0 {
		return fmt.Sprintf("%v%v", v.T[0].DType(), v.T[0].Shape())
	}
	parts := make([]string, len(v.Elems))
	for i, e := range v.Elems {
		parts[i] = structure(e)
	}
	return fmt.Sprintf("%v%v", v.Kind, parts)
}

func sameStructure(a, b []*tensor.Tensor) error { return sameStructureV(openAll(a), openAll(b)) }

// sameStructureV checks that If's branches give values of one structure,
// which a condition known only at run time needs.
func sameStructureV(a, b []bval) error {
	if len(a) != len(b) {
		return fmt.Errorf("the branches return %d and %d values", len(a), len(b))
	}
	for i := range a {
		if sa, sb := structure(a[i]), structure(b[i]); sa != sb {
			return fmt.Errorf("with a condition known only at run time, the branches must return values of one structure; output %d is %s in then_branch and %s in else_branch", i, sa, sb)
		}
	}
	return nil
}

// alwaysTrue reports whether the Loop body's output condition is its
// input condition passed through (directly or by Identity), or a
// constant true: a loop that stops only on its trip count.
func alwaysTrue(g *onnxpb.GraphProto) bool {
	if len(g.GetInput()) < 2 || len(g.GetOutput()) < 1 {
		return false
	}
	condIn, name := g.GetInput()[1].GetName(), g.GetOutput()[0].GetName()
	for range len(g.GetNode()) + 1 {
		if name == condIn {
			return true
		}
		var prod *onnxpb.NodeProto
		for _, n := range g.GetNode() {
			for _, o := range n.GetOutput() {
				if o == name {
					prod = n
				}
			}
		}
		switch {
		case prod == nil:
			return false
		case prod.GetOpType() == "Identity" && len(prod.GetInput()) == 1:
			name = prod.GetInput()[0]
		case prod.GetOpType() == "Constant":
			for _, a := range prod.GetAttribute() {
				if a.GetName() == "value" && a.GetT() != nil {
					t, err := tensorFromProto(a.GetT(), "")
					return err == nil && t.DType() == tensor.Bool && t.Size() == 1 && t.Bool()
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// opLoop runs ONNX's Loop: inputs M (trip count, optional), cond
// (optional) and the loop-carried values; the body maps (iteration, cond,
// carried...) to (cond, carried..., scan outputs...).
//
// A loop that stops only on a constant trip count becomes spore.Scan over
// the iteration numbers, which stacks scan outputs and is differentiable
// in both modes; any other becomes spore.While, which has neither.
func opLoop(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	g := c.GraphAttr("body")
	if g == nil {
		return nil, c.Errorf("attribute body is required")
	}
	var vs []*tensor.Tensor
	if len(ins) > 2 {
		vs = ins[2:]
	}
	nv := len(vs)
	for i, v := range vs {
		if v == nil {
			return nil, c.Errorf("loop-carried input %d is absent", i)
		}
	}
	if len(g.GetInput()) != 2+nv {
		return nil, c.Errorf("the body takes %d inputs, want 2 + %d loop-carried values", len(g.GetInput()), nv)
	}
	nScan := len(g.GetOutput()) - 1 - nv
	if nScan < 0 {
		return nil, c.Errorf("the body returns %d outputs, want at least 1 + %d loop-carried values", len(g.GetOutput()), nv)
	}
	mIn, condIn := c.In(ins, 0), c.In(ins, 1)
	if condIn != nil && (condIn.DType() != tensor.Bool || condIn.Size() != 1) {
		return nil, c.Errorf("cond must be a one-element bool tensor, got %v %v", condIn.Shape(), condIn.DType())
	}
	if mIn != nil && (mIn.DType() != tensor.Int64 || mIn.Size() != 1) {
		return nil, c.Errorf("M must be a one-element int64 tensor, got %v %v", mIn.Shape(), mIn.DType())
	}
	if anyBoxed(vs) {
		return unrollLoop(c, g, mIn, condIn, vs, nScan)
	}
	run := body(c, g)

	trips := int64(-1) // constant trip count, or -1
	if mIn != nil && nScan > 0 && c.dynamic(mIn) {
		// Scan outputs need the trip count: read it as a value, which a
		// Model specialises on when it comes from graph inputs.
		if _, err := c.Concrete(mIn, "M"); err != nil {
			return nil, err
		}
	}
	// M and cond computed from the model's input values count as unknown
	// in PyNative mode too (c.dynamic), so that both modes take one path.
	if mIn != nil && !c.dynamic(mIn) {
		trips = mIn.Int64s()[0]
	}
	condTrue := condIn == nil || !c.dynamic(condIn) && condIn.Bool()
	if condIn != nil && !c.dynamic(condIn) && !condIn.Bool() {
		if nScan > 0 {
			return nil, c.Errorf("the loop runs zero times (cond is false) and has scan outputs, whose shapes spore cannot know")
		}
		return vs, nil
	}
	// Without scan outputs, a loop that nothing differentiates runs as
	// spore.While, carrying its iteration number: its memory does not grow
	// with the trip count. spore.Scan would materialise the iteration
	// numbers (and, in PyNative mode, one tensor per step), which for
	// millions of trips costs hundreds of megabytes. In PyNative mode
	// While is a Go loop that the tape records when its values are
	// differentiated, so it is used always; in Graph mode, where While has
	// no gradient, Scan stays for a model in training mode, carried values
	// being differentiated, and a body that reads a trainable parameter or
	// a value being differentiated (whose gradient may be asked for).
	noGrad := core.CurrentTracer() == nil || !c.Training && !anyTracked(vs) && !readsTrainable(c, g)
	if nScan == 0 && noGrad && (mIn != nil || !alwaysTrue(g) || !condTrue) {
		return whileLoop(c, g, mIn, condIn, vs, nv), nil
	}
	if trips >= 0 && condTrue && alwaysTrue(g) && trips <= maxScanTrips {
		if trips == 0 {
			if nScan > 0 {
				return nil, c.Errorf("the loop runs zero times (M is 0) and has scan outputs, whose shapes spore cannot know")
			}
			return vs, nil
		}
		iters := tensor.Arange(tensor.Int64, 0, float64(trips), 1)
		t := tensor.Scalar(true)
		carry, ys := control.Scan(func(carry, x []*tensor.Tensor) ([]*tensor.Tensor, []*tensor.Tensor) {
			outs := run(append([]*tensor.Tensor{x[0], t}, carry...)...)
			return outs[1 : 1+nv], outs[1+nv:]
		}, vs, []*tensor.Tensor{iters})
		return append(carry, ys...), nil
	}
	if nScan > 0 {
		return nil, c.Errorf("a Loop with scan outputs needs a constant trip count M (at most %d) and a body whose condition stays true; this one has M %s and a condition computed by the body", maxScanTrips, describeTrips(mIn, trips))
	}
	if mIn == nil && alwaysTrue(g) && condTrue {
		return nil, c.Errorf("the loop has no trip count and its condition never changes: it would never end")
	}
	return whileLoop(c, g, mIn, condIn, vs, nv), nil
}

// whileLoop runs the Loop as spore.While, which carries (iteration, cond,
// values...).
func whileLoop(c *nodeCtx, g *onnxpb.GraphProto, mIn, condIn *tensor.Tensor, vs []*tensor.Tensor, nv int) []*tensor.Tensor {
	run := body(c, g)
	scalar := func(t *tensor.Tensor) *tensor.Tensor { return ops.Reshape(t) }
	iter0 := tensor.Scalar(int64(0))
	cond0 := tensor.Scalar(true)
	if condIn != nil {
		cond0 = scalar(condIn)
	}
	var limit *tensor.Tensor
	if mIn != nil {
		limit = scalar(mIn)
	}
	init := append([]*tensor.Tensor{iter0, cond0}, vs...)
	var prev []*tensor.Tensor
	outs := control.While(func(carry ...*tensor.Tensor) *tensor.Tensor {
		if limit == nil {
			return carry[1]
		}
		return ops.LogicalAnd(carry[1], ops.Less(carry[0], limit))
	}, func(carry ...*tensor.Tensor) []*tensor.Tensor {
		outs := run(carry...)
		next := []*tensor.Tensor{ops.Add(carry[0], tensor.Scalar(int64(1))), scalar(outs[0])}
		// The values the previous step returned are spent: unmark them
		// (see scope.added), so that an eager loop of millions of steps
		// holds one step's values, not all of them.
		for _, t := range prev {
			if !slices.Contains(outs, t) && !slices.Contains(vs, t) {
				delete(c.fromData, t)
			}
		}
		prev = append(prev[:0], outs...)
		return append(next, outs[1:1+nv]...)
	}, init...)
	return outs[2:]
}

// readsTrainable reports whether body g (or a sub-graph in it) reads from
// the enclosing scopes a parameter that requires gradients or a value
// autodiff records.
func readsTrainable(c *nodeCtx, g *onnxpb.GraphProto) bool {
	if c.lookup == nil {
		return false
	}
	for _, name := range freeNames(g) {
		if t, ok := c.lookup(name); ok && t != nil && (t.IsParameter() && t.RequiresGrad() || core.IsTracked(t)) {
			return true
		}
	}
	return false
}

// freeNames lists the names g and its sub-graphs read but do not define.
func freeNames(g *onnxpb.GraphProto) []string {
	defined := map[string]bool{}
	for _, v := range g.GetInput() {
		defined[v.GetName()] = true
	}
	for _, t := range g.GetInitializer() {
		defined[t.GetName()] = true
	}
	for _, n := range g.GetNode() {
		for _, o := range n.GetOutput() {
			defined[o] = true
		}
	}
	seen := map[string]bool{}
	var out []string
	add := func(name string) {
		if name != "" && !defined[name] && !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	for _, n := range g.GetNode() {
		for _, in := range n.GetInput() {
			add(in)
		}
		for _, sub := range subGraphs(n) {
			for _, name := range freeNames(sub) {
				add(name)
			}
		}
	}
	for _, o := range g.GetOutput() {
		add(o.GetName())
	}
	return out
}

// anyTracked reports whether autodiff records any of ts.
func anyTracked(ts []*tensor.Tensor) bool {
	for _, t := range ts {
		if t != nil && core.IsTracked(t) {
			return true
		}
	}
	return false
}

// unrollLoop runs a Loop that carries sequences or optionals one step at a
// time, at trace time in Graph mode: a sequence may change its length from
// step to step, which no staged loop can carry. So the trip count and the
// condition must be known when the node runs (not computed from the
// model's input values), and the steps are bounded by maxUnrolled.
func unrollLoop(c *nodeCtx, g *onnxpb.GraphProto, mIn, condIn *tensor.Tensor, vs []*tensor.Tensor, nScan int) ([]*tensor.Tensor, error) {
	trips := int64(-1)
	if mIn != nil {
		m, err := c.Ints(mIn, "M (a Loop carrying a sequence or optional runs its steps at trace time)")
		if err != nil {
			return nil, err
		}
		trips = m[0]
	}
	cond := true
	if condIn != nil {
		if _, err := c.Concrete(condIn, "cond (a Loop carrying a sequence or optional runs its steps at trace time)"); err != nil {
			return nil, err
		}
		cond = condIn.Bool()
	}
	nv := len(vs)
	carry := append([]*tensor.Tensor(nil), vs...)
	ys := make([][]*tensor.Tensor, nScan)
	for i := int64(0); cond && (trips < 0 || i < trips); i++ {
		if i >= maxUnrolled {
			return nil, c.Errorf("a Loop carrying a sequence or optional runs its steps at trace time, at most %d of them", maxUnrolled)
		}
		outs, err := c.runUnrolled(g, append([]*tensor.Tensor{tensor.Scalar(i), tensor.Scalar(cond)}, carry...))
		if err != nil {
			return nil, c.Errorf("%v", err)
		}
		co, err := c.Concrete(outs[0], "the body's condition (a Loop carrying a sequence or optional runs its steps at trace time)")
		if err != nil {
			return nil, err
		}
		if co.DType() != tensor.Bool || co.Size() != 1 || boxOf(co) != nil {
			return nil, c.Errorf("the body's condition must be a one-element bool tensor, got %s", describeBoxed(co))
		}
		cond = co.Bool()
		carry = outs[1 : 1+nv]
		for j, y := range outs[1+nv:] {
			if boxOf(y) != nil {
				return nil, c.Errorf("scan output %d is not a tensor (%s)", j, describeBoxed(y))
			}
			ys[j] = append(ys[j], y)
		}
	}
	res := carry
	for j := range ys {
		if len(ys[j]) == 0 {
			return nil, c.Errorf("the loop runs zero times and has scan outputs, whose shapes spore cannot know")
		}
		res = append(res, ops.Stack(0, ys[j]...))
	}
	return res, nil
}

func describeTrips(m *tensor.Tensor, trips int64) string {
	switch {
	case m == nil:
		return "absent"
	case trips < 0:
		return "computed from the data"
	default:
		return fmt.Sprint(trips)
	}
}

// opScan runs ONNX's Scan (opset 9 semantics, unchanged since): the first
// len(ins)-num_scan_inputs inputs are state, the rest are scanned along
// scan_input_axes in scan_input_directions; the body maps (state...,
// slices...) to (state..., per-step outputs...), which are stacked along
// scan_output_axes in scan_output_directions.
func opScan(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	g := c.GraphAttr("body")
	if g == nil {
		return nil, c.Errorf("attribute body is required")
	}
	m := int(c.Int("num_scan_inputs", 0))
	if m <= 0 || m > len(ins) {
		return nil, c.Errorf("num_scan_inputs is %d with %d inputs", m, len(ins))
	}
	n := len(ins) - m
	if len(g.GetInput()) != n+m {
		return nil, c.Errorf("the body takes %d inputs, want %d states + %d scanned", len(g.GetInput()), n, m)
	}
	k := len(g.GetOutput()) - n
	if k < 0 {
		return nil, c.Errorf("the body returns %d outputs, fewer than the %d states", len(g.GetOutput()), n)
	}
	inAxes := c.IntsAttr("scan_input_axes", make([]int64, m))
	inDirs := c.IntsAttr("scan_input_directions", make([]int64, m))
	outAxes := c.IntsAttr("scan_output_axes", make([]int64, k))
	outDirs := c.IntsAttr("scan_output_directions", make([]int64, k))
	if len(inAxes) != m || len(inDirs) != m || len(outAxes) != k || len(outDirs) != k {
		return nil, c.Errorf("scan_input_axes/directions need %d entries and scan_output_axes/directions %d", m, k)
	}
	state := ins[:n]
	xs := make([]*tensor.Tensor, m)
	for i, x := range ins[n:] {
		if x == nil {
			return nil, c.Errorf("scan input %d is absent", i)
		}
		ax, err := normAxis(inAxes[i], x.Rank())
		if err != nil {
			return nil, c.Errorf("scan_input_axes[%d]: %v", i, err)
		}
		x = ops.MoveAxis(x, ax, 0)
		if inDirs[i] != 0 {
			x = flip0(x)
		}
		xs[i] = x
	}
	run := body(c, g)
	carry, ys := control.Scan(func(carry, x []*tensor.Tensor) ([]*tensor.Tensor, []*tensor.Tensor) {
		outs := run(append(append([]*tensor.Tensor(nil), carry...), x...)...)
		return outs[:n], outs[n:]
	}, state, xs)
	for j, y := range ys {
		if outDirs[j] != 0 {
			y = flip0(y)
		}
		ax, err := normAxis(outAxes[j], y.Rank())
		if err != nil {
			return nil, c.Errorf("scan_output_axes[%d]: %v", j, err)
		}
		ys[j] = ops.MoveAxis(y, 0, ax)
	}
	return append(carry, ys...), nil
}

// normAxis maps a possibly negative axis into [0, rank).
func normAxis(ax int64, rank int) (int, error) {
	if ax < -int64(rank) || ax >= int64(rank) {
		return 0, fmt.Errorf("axis %d is out of range for rank %d", ax, rank)
	}
	if ax < 0 {
		ax += int64(rank)
	}
	return int(ax), nil
}

// flip0 reverses x along its first axis.
func flip0(x *tensor.Tensor) *tensor.Tensor {
	n := x.Dim(0)
	idx := make([]int64, n)
	for i := range idx {
		idx[i] = int64(n - 1 - i)
	}
	return ops.Gather(x, tensor.FromSlice(idx, n), 0)
}
