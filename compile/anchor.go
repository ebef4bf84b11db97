package compile

import (
	"fmt"
	"strings"

	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/freelist"
	"github.com/sporeml/spore/internal/kernels/fuse"
	"github.com/sporeml/spore/internal/kernels/gemm"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// An anchor is an op whose output an elementwise epilogue can finish tile
// by tile while the tile is in cache: a GEMM or a convolution. anchorKind
// is what the compiler knows of one: which applications qualify and how
// to run the op so that it reports its finished tiles. The epilogue
// itself is grown by trait and block body (core.Elementwise), as loop
// fusion's groups are, and names no op.
type anchorKind struct {
	// accepts reports whether application v can anchor an epilogue.
	accepts func(v *graph.Value) bool
	// run computes the op into out and calls c.span on every finished
	// contiguous range of out's elements, each exactly once (possibly
	// concurrently, for disjoint ranges).
	run func(attrs any, in []*tensor.Tensor, out []float32, c *anchorCall)
}

// anchorKinds maps each anchor primitive to its kind. The entries are the
// ops whose kernels deliver tiles (a 2-D product by row blocks, a
// convolution through ops.Conv2DFloat32's tile callback) and the ones
// whose whole output is finished at once (the two convolution gradients,
// a batched product); either way the epilogue costs no separate op.
var anchorKinds map[*core.Prim]anchorKind

func init() {
	whole := func(p *core.Prim) anchorKind {
		return anchorKind{
			accepts: func(v *graph.Value) bool { return true },
			run: func(attrs any, in []*tensor.Tensor, out []float32, c *anchorCall) {
				k, err := p.KernelFor(tensor.Float32, core.CPU)
				if err != nil {
					core.Panicf("Anchor", "%s has no float32 kernel: %v", p.Name, err)
				}
				k(attrs, in, c.scratchTensor(out))
				c.span(0, len(out))
			},
		}
	}
	anchorKinds = map[*core.Prim]anchorKind{
		ops.MatMulPrim: {
			accepts: func(v *graph.Value) bool { _, ok := v.Attrs.(ops.MatMulAttrs); return ok },
			run:     runMatMulAnchor,
		},
		ops.Conv2DPrim: {
			accepts: func(v *graph.Value) bool { _, ok := v.Attrs.(ops.ConvAttrs); return ok },
			run: func(attrs any, in []*tensor.Tensor, out []float32, c *anchorCall) {
				s := c.outShape
				c.planeO, c.planeP = s[1], s[2]*s[3]
				ops.Conv2DFloat32(attrs.(ops.ConvAttrs), in[0].Shape(), in[1].Shape(), in[0].Data().([]float32), in[1].Data().([]float32), out, c.convTile)
			},
		},
		ops.Conv2DBackpropInputPrim:  whole(ops.Conv2DBackpropInputPrim),
		ops.Conv2DBackpropFilterPrim: whole(ops.Conv2DBackpropFilterPrim),
	}
}

// anchorRowBlock is the number of output elements a 2-D product's row
// block aims at: 32 Ki float32s, 128 KiB, which with the block's share of
// A stays in L2 until the epilogue has read it.
const anchorRowBlock = 128 << 10

// anchorMinRows is the fewest rows a row block of a product has: each
// block repacks a transposed B, which costs one pass over B per block, so
// a block of r rows adds about 1/r to the product's time.
const anchorMinRows = 64

// runMatMulAnchor runs a product by row blocks when op(A)'s rows are rows
// of the output (B 2-D, A 2-D or, not transposed, of any rank: a dense
// layer over a batch of sequences), finishing each block's epilogue
// before computing the next; other products (batched by batched) run
// whole. The GEMM's sums do not depend on how its rows are blocked, so
// the blocks hold the whole product's values.
func runMatMulAnchor(attrs any, in []*tensor.Tensor, out []float32, c *anchorCall) {
	at := attrs.(ops.MatMulAttrs)
	a, b := in[0], in[1]
	if b.Rank() != 2 || a.Rank() < 2 || (at.TransA && a.Rank() != 2) || a.Dim(a.Rank()-1) == 0 {
		k, _ := ops.MatMulPrim.KernelFor(tensor.Float32, core.CPU)
		k(attrs, in, c.scratchTensor(out))
		c.span(0, len(out))
		return
	}
	// op(A) is m×k: A's rows (any leading axes flattened), or for a
	// transposed 2-D A its columns, read in place at A's row stride.
	lda := a.Dim(a.Rank() - 1)
	kk := lda
	if at.TransA {
		kk = a.Dim(0)
	}
	n := b.Dim(1)
	if at.TransB {
		n = b.Dim(0)
	}
	if n == 0 || len(out) == 0 {
		return
	}
	m := len(out) / n
	ad, bd := a.Data().([]float32), b.Data().([]float32)
	var pb *gemm.PackedB
	if pw := c.attrs.packed; pw != nil {
		pw.mu.Lock()
		defer pw.mu.Unlock()
		pb = pw.ensure(at.TransB, b)
	}
	rows := min(m, max(anchorMinRows, anchorRowBlock/n))
	if c.attrs.Prog == nil {
		rows = m // no epilogue: one product
	}
	for i0 := 0; i0 < m; i0 += rows {
		r := min(rows, m-i0)
		off := i0 * lda
		if at.TransA {
			off = i0
		}
		ai := ad[off:]
		ci := out[i0*n : (i0+r)*n]
		if pb != nil {
			gemm.SgemmPacked(at.TransA, r, n, kk, 1, ai, lda, pb, 0, ci, n)
		} else {
			gemm.Sgemm(at.TransA, at.TransB, r, n, kk, 1, ai, lda, bd, b.Dim(1), 0, ci, n)
		}
		c.span(i0*n, (i0+r)*n)
	}
}

// matmulAttrsOf returns a MatMul's attributes (the zero ones if they are
// of another type).
func matmulAttrsOf(attrs any) ops.MatMulAttrs {
	a, _ := attrs.(ops.MatMulAttrs)
	return a
}

// AnchorAttrs are the attributes of an Anchor: the anchor op with its own
// attributes, and the epilogue program that finishes its output.
type AnchorAttrs struct {
	// Op and OpAttrs are the anchor op (a MatMul, Conv2D or convolution
	// gradient) and its attributes; its operands are the Anchor's first
	// NumOpArgs operands.
	Op        *core.Prim
	OpAttrs   any
	NumOpArgs int
	// OpShape is the anchor op's output shape (the Anchor's own shape).
	OpShape tensor.Shape
	// Members names the anchor op and the epilogue's primitives, in the
	// order they compute.
	Members []string
	// Prog computes the result from register 0 (the anchor's output) and
	// the epilogue's operands (the Anchor's operands from NumOpArgs on);
	// nil for none (a product given a packed weight by Prepack).
	Prog *fuse.Program
	// In describes the program's inputs, register 0 first.
	In []FusedInput
	// DType is the result's (the anchor's is float32; a Cast in the
	// epilogue may change it).
	DType tensor.DType
	// Precision is the anchor's arithmetic: float32, or bfloat16 (the
	// operands rounded to bfloat16 as they are packed; a fused step, see
	// AnchorSpec).
	Precision tensor.DType
	// Update, Pool with AvgPool, and PooledGrad describe a fused step
	// (AnchorSpec): an in-place parameter update, the pooling that
	// follows a convolution, a gradient that reads the pooled gradient.
	Update     AnchorUpdate
	Pool       *ops.PoolAttrs
	AvgPool    bool
	PooledGrad bool
	// Fused, for an Anchor whose op is finished by a fixed fused step
	// rather than an epilogue program, holds that step's kernel
	// attributes (FixedAnchor); its operands are then the kernel's.
	Fused any
	fixed *fixedKind
	// steps recompute the unfused chain for the VJP: steps[0] is the
	// anchor op, each later one an epilogue member.
	steps []anchorStep
	imm   []string
	// packed, set by Prepack, holds the plan's packed copy of a product's
	// weight (its second operand, a parameter or constant).
	packed *packedWeight
	// calls pools the per-call state. It is a pointer so that the copies
	// a dynamic plan makes of these attributes for each size share one
	// pool, and a first call at a new size allocates nothing.
	calls *freelist.List[anchorCall]
}

// anchorStep is one op of the unfused chain an Anchor replaces: a
// primitive, its attributes and its operands, each an Anchor operand (≥ 0)
// or an earlier step's result (-1 - step).
type anchorStep struct {
	prim  *core.Prim
	attrs any
	args  []int
	// lits[j], when non-nil, is operand j: a constant the program holds as
	// an immediate rather than reading it from an operand.
	lits []*tensor.Tensor
}

// String prints the anchor op and the epilogue program, for dumps and CSE
// keys.
func (a *AnchorAttrs) String() string {
	var b strings.Builder
	if k := a.fixed; k != nil {
		fmt.Fprintf(&b, "op=%s precision=%v update=%v", a.Op.Name, a.Precision, a.Update)
		if a.Pool != nil {
			pool := "max"
			if a.AvgPool {
				pool = "avg"
			}
			fmt.Fprintf(&b, " pool=%s", pool)
		}
		if a.PooledGrad {
			b.WriteString(" pooledgrad")
		}
		fmt.Fprintf(&b, " fused={%v}", a.Fused)
		return b.String()
	}
	fmt.Fprintf(&b, "op=%s(%v)", a.Op.Name, a.OpAttrs)
	if a.packed != nil {
		b.WriteString(" packed")
	}
	if a.Prog == nil {
		b.WriteString(" epilogue: none")
		return b.String()
	}
	fa := FusedAttrs{Prog: a.Prog, In: a.In, imm: a.imm}
	b.WriteString(" epilogue: ")
	b.WriteString(fa.String())
	return b.String()
}

// anchorCall is one call's state, pooled so that running a plan allocates
// nothing: the program's inputs and output and the callbacks handed to
// the anchor's kernel, bound once.
type anchorCall struct {
	attrs    *AnchorAttrs
	ins      []fuse.Input
	outs     []any
	outShape tensor.Shape
	// planeO and planeP are a convolution output's channels and
	// positions per image, for convTile.
	planeO, planeP int
	convTile       ops.ConvTile
	// scratchT holds the anchor's output when the result has another
	// dtype (a Cast ends the epilogue); wrapped is the tensor the anchor
	// writes in this call (the result or scratchT).
	scratchT *tensor.Tensor
	wrapped  *tensor.Tensor
}

// span runs the epilogue on the output elements [lo, hi).
func (c *anchorCall) span(lo, hi int) {
	if lo < hi && c.attrs.Prog != nil {
		c.attrs.Prog.RunRange(c.outs, c.ins, lo, hi)
	}
}

// tile runs the epilogue on a convolution's tile: image n, channels [c0,
// c1), positions [p0, p1): one contiguous range when the tile spans whole
// planes, else one row of positions per channel, the operands bound once.
func (c *anchorCall) tile(n, c0, c1, p0, p1 int) {
	o, p := c.planeO, c.planeP
	if p0 == 0 && p1 == p {
		c.span((n*o+c0)*p, (n*o+c1)*p)
		return
	}
	if c.attrs.Prog != nil && p0 < p1 {
		c.attrs.Prog.RunRows(c.outs, c.ins, (n*o+c0)*p+p0, p1-p0, c1-c0, p)
	}
}

// scratchTensor returns the tensor the anchor writes in this call, whose
// buffer is buf.
func (c *anchorCall) scratchTensor(buf []float32) *tensor.Tensor { return c.wrapped }

// Anchor is the fused op of anchor fusion: an anchor op (a GEMM or a
// convolution) whose output an elementwise epilogue program finishes
// tile by tile, while each tile is in cache (AnchorAttrs), or that a fixed
// fused step finishes (FixedAnchor: a bfloat16 product, an in-place
// parameter update, a pooling, a pooled gradient). Its VJP recomputes and
// differentiates the unfused chain, so a graph differentiated after
// fusion still gets correct gradients.
//
// Its third operand may be its output buffer (Traits.Accumulates): an
// update's parameter, which its kernel reads element by element before
// writing it. No other Anchor is built computing the value assigned to
// its third operand (accumulateClash).
var Anchor = &core.Prim{
	Name:   "Anchor",
	Traits: core.Traits{Cost: 100, Accumulates: 3},
	Infer:  inferAnchor,
	VJP:    vjpAnchor,
}

func init() {
	for d := tensor.Float32; d <= tensor.BFloat16; d++ {
		Anchor.Register(d, core.CPU, kernelAnchor)
	}
}

func inferAnchor(attrs any, in []*tensor.Tensor) tensor.Meta {
	a, ok := attrs.(*AnchorAttrs)
	if !ok {
		core.Panicf("Anchor", "attributes are %T, want *compile.AnchorAttrs", attrs)
	}
	if a.fixed != nil {
		return a.fixed.infer(a.Fused, in)
	}
	if len(in) != a.NumOpArgs+len(a.In)-1 {
		core.Panicf("Anchor", "got %d operands, want %d for %s and %d for its epilogue", len(in), a.NumOpArgs, a.Op.Name, len(a.In)-1)
	}
	m := a.Op.Infer(a.OpAttrs, in[:a.NumOpArgs])
	if m.DType != tensor.Float32 || !m.Shape.Equal(a.OpShape) {
		core.Panicf("Anchor", "%s gives %v %v, the epilogue was built for float32 %v", a.Op.Name, m.DType, m.Shape, a.OpShape)
	}
	m.DType = a.DType
	for i, x := range in[a.NumOpArgs:] {
		want := a.In[i+1]
		if x.DType() != want.DType || !x.Shape().Equal(want.Shape) {
			core.Panicf("Anchor", "epilogue operand %d is %v %v, the program was built for %v %v", i, x.DType(), x.Shape(), want.DType, want.Shape)
		}
	}
	return m
}

func kernelAnchor(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
	a := attrs.(*AnchorAttrs)
	if k := a.fixed; k != nil {
		fn := k.kernels[core.KernelDType(in, out.DType())]
		if fn == nil {
			core.Panicf(k.name, "no kernel for %v operands", core.KernelDType(in, out.DType()))
		}
		fn(a.Fused, in, out)
		return
	}
	c := a.calls.Get()
	if c.ins == nil {
		c.ins, c.outs = make([]fuse.Input, len(a.In)), make([]any, 1)
		c.convTile = c.tile
	}
	c.attrs = a // this size's copy of the attributes (one pool serves all)
	// The shape of this call (a plan built for a dynamic batch runs at
	// smaller ones); the epilogue's periods do not depend on the batch.
	c.outShape = out.Shape()
	// The anchor writes the result's buffer itself, unless a Cast changes
	// the dtype: then a scratch buffer of its own, kept with its header
	// so that no call converts a slice to an interface (which allocates).
	var buf []float32
	if a.DType == tensor.Float32 {
		c.wrapped = out
		buf = out.Data().([]float32)
	} else {
		if c.scratchT == nil || !c.scratchT.Shape().Equal(c.outShape) {
			c.scratchT = tensor.New(tensor.Float32, c.outShape...)
		}
		c.wrapped = c.scratchT
		buf = c.scratchT.Data().([]float32)
	}
	c.ins[0] = fuse.Input{Data: c.wrapped.Data(), Mode: fuse.Full}
	for i, x := range in[a.NumOpArgs:] {
		d := a.In[i+1]
		c.ins[i+1] = fuse.Input{Data: x.Data(), Mode: d.Mode, Period: d.Period, Inner: d.Inner}
	}
	c.outs[0] = out.Data()
	anchorKinds[a.Op].run(a.OpAttrs, in[:a.NumOpArgs], buf, c)
	clear(c.ins) // drop the buffers: the pool may outlive the plan's arena
	c.outs[0], c.wrapped = nil, nil
	a.calls.Put(c)
}

// vjpAnchor recomputes the unfused chain and differentiates it step by
// step with each primitive's own VJP.
func vjpAnchor(attrs any, in []*tensor.Tensor, out, g *tensor.Tensor) []*tensor.Tensor {
	a := attrs.(*AnchorAttrs)
	if k := a.fixed; k != nil {
		if k.vjp == nil {
			core.Panicf(k.name, "has no VJP: it updates an optimiser's state in place")
		}
		return k.vjp(a.Fused, in, out, g)
	}
	vals := make([]*tensor.Tensor, len(a.steps))
	get := func(r int) *tensor.Tensor {
		if r >= 0 {
			return in[r]
		}
		return vals[-1-r]
	}
	argsOf := func(s anchorStep) []*tensor.Tensor {
		xs := make([]*tensor.Tensor, len(s.args))
		for j, r := range s.args {
			if s.lits != nil && s.lits[j] != nil {
				xs[j] = s.lits[j]
			} else {
				xs[j] = get(r)
			}
		}
		return xs
	}
	for k, s := range a.steps {
		vals[k] = core.Apply(s.prim, s.attrs, argsOf(s)...)
	}
	grads := make([]*tensor.Tensor, len(in))
	stepGrads := make([]*tensor.Tensor, len(a.steps))
	stepGrads[len(a.steps)-1] = g
	acc := func(dst **tensor.Tensor, x *tensor.Tensor) {
		if x == nil {
			return
		}
		if *dst == nil {
			*dst = x
		} else {
			*dst = ops.Add(*dst, x)
		}
	}
	for k := len(a.steps) - 1; k >= 0; k-- {
		s, gk := a.steps[k], stepGrads[k]
		if gk == nil || s.prim.VJP == nil {
			continue
		}
		gs := s.prim.VJP(s.attrs, argsOf(s), vals[k], gk)
		for j, r := range s.args {
			if j >= len(gs) {
				break
			}
			if s.lits != nil && s.lits[j] != nil {
				continue
			}
			if r >= 0 {
				acc(&grads[r], gs[j])
			} else {
				acc(&stepGrads[-1-r], gs[j])
			}
		}
	}
	return grads
}

// anchorMode is how an epilogue reads an operand of shape s over the
// anchor's output of shape out: loop fusion's modes (full, scalar, row,
// column), or per channel: s is 1 on every axis of out but a run of
// consecutive ones it matches (a convolution's [1, O, 1, 1] bias).
func anchorMode(s, out tensor.Shape) (FusedInput, bool) {
	if m, ok := readMode(s, out); ok {
		in := plainMode(s, out)
		in.Mode = m
		return in, true
	}
	r := len(out)
	if len(s) > r {
		return FusedInput{}, false
	}
	p := make(tensor.Shape, r)
	for i := range p {
		p[i] = 1
	}
	copy(p[r-len(s):], s)
	j0, j1 := -1, -1
	for j := 0; j < r; j++ {
		if p[j] == 1 && out[j] != 1 {
			continue
		}
		if p[j] != out[j] {
			return FusedInput{}, false
		}
		if out[j] == 1 {
			continue
		}
		if j0 < 0 {
			j0 = j
		} else if j1 >= 0 {
			return FusedInput{}, false // a second run of matched axes
		}
		if j+1 == r || p[j+1] == 1 && out[j+1] != 1 {
			j1 = j + 1
		}
	}
	if j0 < 0 || j1 < 0 {
		return FusedInput{}, false
	}
	period, inner := 1, 1
	for _, d := range out[j0:j1] {
		period *= d
	}
	for _, d := range out[j1:] {
		inner *= d
	}
	return FusedInput{Mode: fuse.Chan, Period: period, Inner: inner}, true
}

// epiFusible reports whether v can join an epilogue over shape: what
// loop fusion takes (fusibleIn), with operands read in a mode anchorMode
// supports.
func (f *fuser) epiFusible(v *graph.Value, shape tensor.Shape) bool {
	return f.fusibleWith(v, shape, func(a, out tensor.Shape) bool {
		_, ok := anchorMode(a, out)
		return ok
	})
}

// isAnchor reports whether v is a float32 application of an anchor op
// with float32 operands.
func isAnchor(v *graph.Value) bool {
	if !plainOp(v) || v.Meta.DType != tensor.Float32 {
		return false
	}
	k, ok := anchorKinds[v.Prim]
	if !ok || !k.accepts(v) {
		return false
	}
	for _, a := range v.Args {
		if a.Meta.DType != tensor.Float32 {
			return false
		}
	}
	return true
}

// Anchors is anchor fusion: each GEMM or convolution (an anchor, see
// anchorKinds) takes the elementwise ops that finish its output — a bias,
// an inference BatchNorm's per-channel scale and shift however spelled
// (Mul, Add, Sub, Div by per-channel operands), any activation, a residual
// Add of a same-shape tensor, a Cast — into one Anchor op, whose kernel
// runs them as a fuse.Program on each output tile while it is in cache.
//
// Groups grow as loop fusion's do (Fuse): from each elementwise op,
// visited from the outputs back, over elementwise producers of the same
// shape whose every use is inside the group, recognised by trait and
// block body (core.Elementwise) alone; here a group may also take one
// anchor whose every use is inside it. Only groups with an anchor are
// rewritten (the rest are loop fusion's). The group's last op is rewritten
// in place, so it keeps its position and its users; the absorbed ops are
// left to DCE. The program runs the ops' own bodies on the anchor's own
// result, so results are bitwise those of the unfused chain.
func Anchors(g *graph.Graph) {
	f := &fuser{fns: map[*graph.Value]fuse.Fn{}, ok: map[*graph.Value]bool{}}
	// Dead ops left by earlier rewrites would count as users and keep
	// their operands out of a group.
	DCE(g)
	g.CountUses()
	us := users(g)
	grouped := make([]bool, g.NumIDs())
	pos := make([]int, g.NumIDs())
	for i, v := range g.Values {
		pos[v.ID] = i
	}
	assigned := map[*graph.Value]bool{}
	for _, a := range g.Assigns {
		assigned[a.Param] = true
	}
	for i := len(g.Values) - 1; i >= 0; i-- {
		root := g.Values[i]
		shape := root.Meta.Shape
		if grouped[root.ID] || !f.epiFusible(root, shape) {
			continue
		}
		member := map[*graph.Value]bool{root: true}
		list := []*graph.Value{root}
		var anchor *graph.Value
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
		for changed := true; changed; {
			changed = false
			for j := 0; j < len(list); j++ {
				for _, a := range list[j].Args {
					if member[a] || a == anchor || grouped[a.ID] || !inside(a) {
						continue
					}
					switch {
					case f.epiFusible(a, shape):
						member[a] = true
						list = append(list, a)
						changed = true
					case anchor == nil && a.Meta.Shape.Equal(shape) && isAnchor(a):
						anchor = a
						changed = true
					}
				}
			}
		}
		if anchor == nil || updatesInPlace(list, assigned) {
			continue
		}
		// A member that reads the anchor only through another path is
		// fine; one that does not depend on the anchor at all is still
		// computed per tile from its own operands.
		for _, m := range list {
			grouped[m.ID] = true
		}
		grouped[anchor.ID] = true
		sortByPos(list, pos)
		f.buildAnchor(g, anchor, root, list, member)
	}
}

// bareAnchor returns the attributes of an Anchor computing v, an anchor
// op, with no epilogue.
func bareAnchor(v *graph.Value) *AnchorAttrs {
	refs := make([]int, len(v.Args))
	for j := range refs {
		refs[j] = j
	}
	return &AnchorAttrs{
		Op: v.Prim, OpAttrs: v.Attrs, NumOpArgs: len(v.Args), OpShape: v.Meta.Shape.Clone(),
		Members: []string{v.Prim.Name}, In: []FusedInput{{Shape: v.Meta.Shape.Clone(), DType: v.Meta.DType}},
		DType: v.Meta.DType, Precision: tensor.Float32,
		steps: []anchorStep{{prim: v.Prim, attrs: v.Attrs, args: refs}},
		calls: new(freelist.List[anchorCall]),
	}
}

// updatesInPlace reports whether a group reads in full a parameter the
// graph assigns (an optimiser's update, p ← f(p, grad); a bias, read as a
// row, does not count): loop fusion's program
// then runs in place over the parameter's buffer, while an Anchor, whose
// product would overwrite the parameter before the epilogue reads it,
// needs a buffer of its own and a copy into the parameter. Measured on a
// 784×512 momentum update with k = 128, the anchored update was 1.13–1.2×
// as slow as the product followed by the in-place loop, so such groups
// are left to loop fusion (gemmupdate and gemmmomentum fuse the ones
// whose GEMM accumulates into the parameter).
func updatesInPlace(members []*graph.Value, assigned map[*graph.Value]bool) bool {
	for _, m := range members {
		for _, a := range m.Args {
			if a.Kind == graph.KindParam && assigned[a] && a.Meta.Shape.Equal(m.Meta.Shape) {
				return true
			}
		}
	}
	return false
}

// buildAnchor rewrites root into the Anchor computing anchor and then the
// members (in topological order, root last) on its output.
func (f *fuser) buildAnchor(g *graph.Graph, anchor, root *graph.Value, members []*graph.Value, member map[*graph.Value]bool) {
	shape := anchor.Meta.Shape
	mode := func(s, out tensor.Shape) FusedInput {
		in, _ := anchorMode(s, out)
		return in
	}
	pr := f.program(root, members, member, anchor, mode)
	// The chain for the VJP, over the Anchor's operands: the anchor op's,
	// then the program's (pr.args[1:]).
	nop := len(anchor.Args)
	args := append(append([]*graph.Value(nil), anchor.Args...), pr.args[1:]...)
	ref := map[*graph.Value]int{}
	for j, a := range pr.args[1:] {
		ref[a] = nop + j
	}
	opRefs := make([]int, nop)
	for j := range opRefs {
		opRefs[j] = j
	}
	steps := []anchorStep{{prim: anchor.Prim, attrs: anchor.Attrs, args: opRefs}}
	ref[anchor] = -1
	for _, m := range members {
		s := anchorStep{prim: m.Prim, attrs: m.Attrs, args: make([]int, len(m.Args))}
		for j, a := range m.Args {
			r, ok := ref[a]
			if !ok { // an immediate of the program (scalarForm)
				if s.lits == nil {
					s.lits = make([]*tensor.Tensor, len(m.Args))
				}
				s.lits[j] = a.Tensor
			}
			s.args[j] = r
		}
		steps = append(steps, s)
		ref[m] = -len(steps)
	}
	if accumulateClash(g, root, args, UpdateNone) {
		return
	}
	names := append([]string{anchor.Prim.Name}, pr.names...)
	attrs := &AnchorAttrs{
		Op: anchor.Prim, OpAttrs: anchor.Attrs, NumOpArgs: nop, OpShape: shape.Clone(),
		Members: names, Prog: pr.prog, In: pr.ins, DType: root.Meta.DType,
		Precision: tensor.Float32, steps: steps, imm: pr.imm,
		calls: new(freelist.List[anchorCall]),
	}
	root.Prim = Anchor
	root.Attrs = attrs
	root.Args = args
}
