package compile

import (
	"fmt"

	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/freelist"
	"github.com/sporeml/spore/internal/kernels/gemm"
	"github.com/sporeml/spore/internal/kernels/half"
	"github.com/sporeml/spore/internal/kernels/parallel"
	"github.com/sporeml/spore/internal/kernels/vec"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// BF16MatMulAttrs are BF16MatMul's attributes: MatMul's transpose flags,
// whether a bias (the third operand) is added, and the activation (ActNone
// or ActReLU).
type BF16MatMulAttrs struct {
	TransA, TransB bool
	Bias           bool
	Act            Act
}

// String prints every attribute, for IR dumps and CSE keys.
func (a BF16MatMulAttrs) String() string {
	return fmt.Sprintf("ta=%v tb=%v bias=%v act=%v", a.TransA, a.TransB, a.Bias, a.Act)
}

// bf16MatMulKind, the fused step BF16MatMul of an Anchor of MatMul at
// bfloat16 precision with BF16MatMulAttrs, is mixed precision's product of
// two matrices whose values change on every call (AmpMatMul), the
// products of a training step:
//
//	Anchor(a, b[, bias]) = act(f32(bf16(bf16(op(a))·bf16(op(b)))) + bias)
//
// each 2-D operand Float32 (rounded to bfloat16 by the kernel) or
// BFloat16 (a cast the graph keeps because several products read it), the
// product accumulated in float32 and rounded to bfloat16, widened back,
// then the float32 bias add and activation. It is the unfused chain
// Cast(MatMul(Cast(a), Cast(b))) at the same rounding points, with the
// same bfloat16 GEMM on the same bits, so a compiled training step gives
// PyNative mode's bits; it skips materialising the product's two casts
// and the operands' unshared ones. Unlike BF16MatMulBiasAct, nothing is
// packed ahead: both operands are packed on every call, as the unfused
// MatMul packs them. Its VJP is the unfused chain's (a gradient in its
// operand's dtype).
var bf16MatMulKind = newFixedKind(&fixedKind{
	spec:  AnchorSpec{Op: ops.MatMulPrim, Precision: tensor.BFloat16},
	name:  "BF16MatMul",
	infer: inferBF16MatMul,
	vjp:   vjpBF16MatMul,
	members: func(fused any, v *graph.Value) []string {
		a, _ := fused.(BF16MatMulAttrs)
		return bf16Chain(append(operandCasts(v), ops.MatMulPrim.Name, ops.CastPrim.Name), a.Bias, a.Act)
	},
}, BF16MatMulAttrs{})

// The kernel is keyed by the first operand, which is Float32 or, when the
// graph keeps its cast for other products, BFloat16.
func init() {
	bf16MatMulKind.register(tensor.Float32, kernelBF16MatMul)
	bf16MatMulKind.register(tensor.BFloat16, kernelBF16MatMul)
}

// ampOperand reports whether x can be a fused product's operand: a 2-D
// Float32 value, rounded by the product, or BFloat16 bits.
func ampOperand(x *tensor.Tensor) bool {
	return x.Rank() == 2 && (x.DType() == tensor.Float32 || x.DType() == tensor.BFloat16)
}

func inferBF16MatMul(attrs any, in []*tensor.Tensor) tensor.Meta {
	at, ok := attrs.(BF16MatMulAttrs)
	if !ok {
		core.Panicf("BF16MatMul", "attributes are %T, want compile.BF16MatMulAttrs", attrs)
	}
	wantOperands("BF16MatMul", in, at.Bias)
	a, b := in[0], in[1]
	if !ampOperand(a) || !ampOperand(b) {
		core.Panicf("BF16MatMul", "want two 2-D Float32 or BFloat16 operands, got %v %v x %v %v", a.Shape(), a.DType(), b.Shape(), b.DType())
	}
	if at.Act != ActNone && at.Act != ActReLU {
		core.Panicf("BF16MatMul", "activation %v: only none and ReLU are fused", at.Act)
	}
	m, _, n := gemmDims("BF16MatMul", at.TransA, at.TransB, a, b)
	return gemmResult("BF16MatMul", in, at.Bias, m, n)
}

func kernelBF16MatMul(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
	at := attrs.(BF16MatMulAttrs)
	a, b := in[0], in[1]
	m, n := out.Dim(0), out.Dim(1)
	k := a.Dim(1)
	if at.TransA {
		k = a.Dim(0)
	}
	c := out.Data().([]float32)
	if m*n == 0 {
		return
	}
	if k == 0 {
		clear(c)
	} else {
		bf16Product(at.TransA, at.TransB, m, n, k, a, b, c)
	}
	roundBF16s(c)
	if at.Bias {
		vec.AddRow(c, c, in[2].Data().([]float32))
	}
	if at.Act == ActReLU {
		vec.Relu(c, c)
	}
}

// bf16Product computes op(a)·op(b) (m×k by k×n) into c (row stride n)
// with each operand rounded to bfloat16: the product MatMul's BFloat16
// kernel computes on the operands' casts, with the same kernel, the same
// blocking and so the same sums (see bf16Operands).
func bf16Product(transA, transB bool, m, n, k int, a, b *tensor.Tensor, c []float32) {
	var o bf16Operands
	o.init(transA, m, k, a, b)
	gemm.GemmBF16(o.transA, transB, m, n, k, o.a, o.lda, o.b, o.ldb, 0, c, n)
	o.release()
}

// bf16Operands are a fused product's operands as bfloat16 bits: a
// BFloat16 operand (a cast the graph keeps, shared by several products)
// as it is; a Float32 one rounded whole, with one call of the vectorised
// conversion, into pooled bits that the GEMM then packs by copying
// (rounding while packing would convert a weight 64 elements per call),
// a transposed a first transposed (see leftRows). The bits are those the
// unfused chain's casts hold, so the GEMM computes the same sums.
type bf16Operands struct {
	a, b     []uint16
	lda, ldb int
	transA   bool // op(a) is still a's transpose (a was given as bits)
	ah, bh   *[]uint16
}

func (o *bf16Operands) init(transA bool, m, k int, a, b *tensor.Tensor) {
	if a.DType() == tensor.BFloat16 {
		o.a, o.lda, o.transA = tensor.Bits16(a), a.Dim(1), transA
	} else {
		ad, lda, sp := leftRows(transA, m, k, a)
		o.ah = getBits(&bf16BitsA, m*lda)
		half.BF16FromFloat32s(*o.ah, ad[:m*lda])
		if sp != nil {
			bf16Trans.Put(sp)
		}
		o.a, o.lda = *o.ah, lda
	}
	o.ldb = b.Dim(1)
	if b.DType() == tensor.BFloat16 {
		o.b = tensor.Bits16(b)
	} else {
		o.bh = getBits(&bf16BitsB, b.Size())
		half.BF16FromFloat32s(*o.bh, b.Data().([]float32))
		o.b = *o.bh
	}
}

// release puts the pooled bits back.
func (o *bf16Operands) release() {
	if o.ah != nil {
		bf16BitsA.Put(o.ah)
	}
	if o.bh != nil {
		bf16BitsB.Put(o.bh)
	}
	*o = bf16Operands{}
}

// bf16BitsA and bf16BitsB hold the fused products' rounded operands.
var bf16BitsA, bf16BitsB freelist.List[[]uint16]

// getBits returns bits from l with n elements.
func getBits(l *freelist.List[[]uint16], n int) *[]uint16 {
	sp := l.Get()
	if cap(*sp) < n {
		*sp = make([]uint16, n)
	}
	*sp = (*sp)[:n]
	return sp
}

// leftRows returns op(a) (m×k) stored row by row, and its row stride. A
// transposed a (the weight gradients' Gᵀ·X) is transposed in float32, 16×16
// blocks at a time, into pooled scratch (returned, for the caller to put
// back), so that the GEMM packs op(a) row by row with the vectorised
// rounding rather than gathering it element by element for every block of
// columns; the GEMM packs the same bits either way.
func leftRows(transA bool, m, k int, a *tensor.Tensor) ([]float32, int, *[]float32) {
	ad := a.Data().([]float32)
	if !transA {
		return ad, a.Dim(1), nil
	}
	sp := getScratch(&bf16Trans, m*k)
	vec.Transpose(*sp, k, ad, m, k, m)
	return *sp, k, sp
}

// The float32 scratch of the fused products, pooled by use so that a
// pool's buffers keep one size: op(a) transposed, and the row blocks of
// the product BF16MatMulUpdate rounds from.
var bf16Trans, bf16Block freelist.List[[]float32]

// getScratch returns scratch from l with n elements.
func getScratch(l *freelist.List[[]float32], n int) *[]float32 {
	sp := l.Get()
	if cap(*sp) < n {
		*sp = make([]float32, n)
	}
	*sp = (*sp)[:n]
	return sp
}

// roundBF16s rounds every element of c to bfloat16 and widens it back in
// place: the unfused chain's BFloat16 MatMul result (rounded by the
// conversion MatMul's kernel uses) cast back to Float32 (exactly), in
// stretches that stay in L1, with no allocation.
func roundBF16s(c []float32) {
	var buf [2048]uint16
	for len(c) > 0 {
		n := min(len(c), len(buf))
		half.BF16FromFloat32s(buf[:n], c[:n])
		half.BF16ToFloat32s(c[:n], buf[:n])
		c = c[n:]
	}
}

// vjpBF16MatMul differentiates the unfused chain: through the activation
// (at the recomputed pre-activation), the bias add, the trailing cast
// (the cotangent to bfloat16), the BFloat16 MatMul (MatMul's own rule)
// and the operands' casts (the gradients back to Float32).
func vjpBF16MatMul(attrs any, in []*tensor.Tensor, out, g *tensor.Tensor) []*tensor.Tensor {
	at := attrs.(BF16MatMulAttrs)
	a, b := in[0], in[1]
	ab, bb := ops.Cast(a, tensor.BFloat16), ops.Cast(b, tensor.BFloat16)
	gz := g
	if at.Act == ActReLU {
		z := ops.Cast(ops.MatMulT(ab, bb, at.TransA, at.TransB), tensor.Float32)
		if at.Bias {
			z = ops.Add(z, in[2])
		}
		gz = ops.ReluPrim.VJP(nil, []*tensor.Tensor{z}, out, g)[0]
	}
	gb := ops.Cast(gz, tensor.BFloat16)
	res := make([]*tensor.Tensor, len(in))
	// C = op(A)·op(B): dop(A) = G·op(B)ᵀ, dop(B) = op(A)ᵀ·G, and a
	// transposed operand takes the transpose of its derivative.
	if core.NeedsGrad(a) {
		var ga *tensor.Tensor
		if at.TransA {
			ga = ops.MatMulT(bb, gb, at.TransB, true)
		} else {
			ga = ops.MatMulT(gb, bb, false, !at.TransB)
		}
		res[0] = ops.Cast(ga, a.DType())
	}
	if core.NeedsGrad(b) {
		var gw *tensor.Tensor
		if at.TransB {
			gw = ops.MatMulT(gb, ab, true, at.TransA)
		} else {
			gw = ops.MatMulT(ab, gb, !at.TransA, false)
		}
		res[1] = ops.Cast(gw, b.DType())
	}
	if at.Bias {
		res[2] = ops.Reshape(ops.Sum(gz, 0), in[2].Shape()...)
	}
	return res
}

// bf16UpdateKind, the fused step BF16MatMulUpdate of an Anchor of MatMul
// at bfloat16 precision updating p in place (UpdateAccumulate), is the
// gradient-descent update of a weight whose gradient is a mixed-precision
// product, fused as matMulUpdateKind fuses a float32 one:
//
//	Anchor(a, b, p, s) = p − f32(bf16(bf16(op(a))·bf16(op(b))))·s
//
// for 2-D a and b (Float32 or BFloat16, as BF16MatMul's), a 2-D float32
// p and a one-element float32 scale s; its
// attributes are ops.MatMulAttrs. The product is BF16MatMul's, rounded to
// bfloat16 at the same point, then scaled and subtracted from p with
// float32 rounding after each step, as the Mul and Sub it replaces round:
// the unfused update's bits, without writing the gradient out and reading
// it back. The executor may compute it straight into p's buffer
// (Anchor's Traits.Accumulates).
var bf16UpdateKind = newFixedKind(&fixedKind{
	spec:  AnchorSpec{Op: ops.MatMulPrim, Precision: tensor.BFloat16, Update: UpdateAccumulate},
	name:  "BF16MatMulUpdate",
	infer: inferBF16Blocked("BF16MatMulUpdate"),
	vjp:   vjpBF16MatMulUpdate,
	members: func(_ any, v *graph.Value) []string {
		return append(operandCasts(v), ops.MatMulPrim.Name, ops.CastPrim.Name, ops.MulPrim.Name, ops.SubPrim.Name)
	},
}, ops.MatMulAttrs{})

func init() {
	k := func(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
		kernelBF16Blocked(attrs, in, out, applyBF16Update)
	}
	bf16UpdateKind.register(tensor.Float32, k)
	bf16UpdateKind.register(tensor.BFloat16, k)
}

// inferBF16Blocked is the shape rule of the fused products that apply
// their rounded result to a float32 matrix p with a one-element float32
// s (BF16MatMulUpdate, BF16MatMulMomentum): op(a)·op(b) must be p's shape.
func inferBF16Blocked(name string) func(attrs any, in []*tensor.Tensor) tensor.Meta {
	return func(attrs any, in []*tensor.Tensor) tensor.Meta {
		at, ok := attrs.(ops.MatMulAttrs)
		if !ok || len(in) != 4 {
			core.Panicf(name, "want ops.MatMulAttrs and 4 operands, got %T and %d", attrs, len(in))
		}
		a, b, p, s := in[0], in[1], in[2], in[3]
		if !ampOperand(a) || !ampOperand(b) || p.DType() != tensor.Float32 || s.DType() != tensor.Float32 {
			core.Panicf(name, "want 2-D Float32 or BFloat16 a and b, Float32 p and s, got %v %v, %v %v, %v %v, %v %v",
				a.Shape(), a.DType(), b.Shape(), b.DType(), p.Shape(), p.DType(), s.Shape(), s.DType())
		}
		if a.Rank() != 2 || b.Rank() != 2 || p.Rank() != 2 || s.Size() != 1 {
			core.Panicf(name, "want 2-D a, b, p and a one-element scale, got %v %v %v %v", a.Shape(), b.Shape(), p.Shape(), s.Shape())
		}
		m, _, n := gemmDims(name, at.TransA, at.TransB, a, b)
		if p.Dim(0) != m || p.Dim(1) != n {
			core.Panicf(name, "shapes do not fit: %v x %v (transpose flags %v, %v) into %v", a.Shape(), b.Shape(), at.TransA, at.TransB, p.Shape())
		}
		return p.Meta()
	}
}

// bf16Apply applies a block r of a fused product (float32 sums, rounded
// by the function itself) to the same block of p, writing o; s is the
// op's one-element operand. o may be p.
type bf16Apply func(o, p, r []float32, s float32)

// kernelBF16Blocked is the kernel of the fused products that apply their
// rounded result to p a block of rows at a time (BF16MatMulUpdate with
// applyBF16Update, BF16MatMulMomentum with applyBF16Momentum).
func kernelBF16Blocked(attrs any, in []*tensor.Tensor, out *tensor.Tensor, apply bf16Apply) {
	at := attrs.(ops.MatMulAttrs)
	a, b, p, s := in[0], in[1], in[2], in[3]
	m, n := p.Dim(0), p.Dim(1)
	k := a.Dim(1)
	if at.TransA {
		k = a.Dim(0)
	}
	o, pd := out.Data().([]float32), p.Data().([]float32)
	sv := s.Data().([]float32)[0]
	if m*n == 0 {
		return
	}
	// The product goes to scratch (o may be p's own buffer, which must not
	// be overwritten before p is read), a block of rows at a time, so that
	// the block is still in cache when it is rounded and applied.
	var ops2 bf16Operands
	ops2.init(at.TransA, m, k, a, b)
	defer ops2.release()
	if bs := bf16ThreadRows(m, n, k); bs > 0 && !ops2.transA {
		// Small enough blocks for one thread each: op(b) is packed once,
		// and each thread computes, rounds and applies its own blocks,
		// in its own cache.
		pb := bf16Packs.Get()
		pb.PackBits(at.TransB, k, n, ops2.b, ops2.ldb)
		t := bf16UpdatePool.Get()
		*t = bf16UpdateTask{a: ops2.a, lda: ops2.lda, pb: pb, o: o, p: pd, s: sv, m: m, n: n, k: k, bs: bs, nb: m / bs, apply: apply}
		parallel.ForBody(t.nb, 1, t)
		*t = bf16UpdateTask{}
		bf16UpdatePool.Put(t)
		bf16Packs.Put(pb)
		return
	}
	sp := getScratch(&bf16Block, min(m, 2*bf16UpdateRows)*n)
	for i0, rows := 0, 0; i0 < m; i0 += rows {
		rows = m - i0
		if rows >= 2*bf16UpdateRows {
			rows = bf16UpdateRows
		}
		r := (*sp)[:rows*n]
		if k == 0 {
			clear(r)
		} else {
			ao := i0 * ops2.lda // rows i0… of op(a): columns of a when transposed
			if ops2.transA {
				ao = i0
			}
			gemm.GemmBF16(ops2.transA, at.TransB, rows, n, k, ops2.a[ao:], ops2.lda, ops2.b, ops2.ldb, 0, r, n)
		}
		apply(o[i0*n:(i0+rows)*n], pd[i0*n:(i0+rows)*n], r, sv)
	}
	bf16Block.Put(sp)
}

// applyBF16Update sets o = p − f32(bf16(r))·s stretch by stretch, in L1:
// round (the MatMul's BFloat16 result and its cast back), scale (Mul),
// subtract (Sub), each rounded to float32 as those kernels round. r is
// overwritten; o may be p: each element of p is read before the same
// element of o is written.
func applyBF16Update(o, p, r []float32, s float32) {
	var buf [2048]uint16
	for i := 0; i < len(r); i += len(buf) {
		j := min(len(r), i+len(buf))
		half.BF16FromFloat32s(buf[:j-i], r[i:j])
		half.BF16ToFloat32s(r[i:j], buf[:j-i])
		vec.MulScalar(r[i:j], r[i:j], s)
		vec.Sub(o[i:j], p[i:j], r[i:j])
	}
}

// bf16ThreadRows returns the height of the row blocks BF16MatMulUpdate
// spreads over threads, each block's product run by one thread on op(b)
// packed once; or 0 when the product is better left to the GEMM's own
// split (a block would be big enough for the GEMM to split it, or there
// would be fewer than two blocks). The height is a multiple of the kernel's
// tile rows (16 for AMX, 14 for VDPBF16PS), so that each element is
// computed by the same instruction sequence, with the same sum, as in the
// whole product; the last block takes the rest (so that no block is short
// enough for the few-row kernel). k must fit one cache block of k (then
// the packed product sums k as the unpacked one does).
func bf16ThreadRows(m, n, k int) int {
	var tile int
	switch gemm.BF16Kernel() {
	case "amx", "generic":
		tile = 16
	case "avx512bf16":
		tile = 14
	default:
		return 0
	}
	// The GEMM splits a product of 1M multiply-adds, or a packed one of
	// 64K weights, over threads: keep each block below both.
	if k == 0 || k > 256 || k*n >= 1<<16 || parallel.Workers() < 2 {
		return 0
	}
	bs := (1<<20 - 1) / (n * k) / tile * tile
	// With short k (a small batch's weight gradient) that bound alone
	// would leave the whole product to one block, and one thread, where
	// the unfused update splits its loop over every thread: take at most
	// half the rows.
	if half := m / 2 / tile * tile; half > 0 {
		bs = min(bs, half)
	}
	if bs == 0 || m/bs < 2 {
		return 0
	}
	return bs
}

// bf16UpdateTask is a blocked fused product (BF16MatMulUpdate's or
// BF16MatMulMomentum's) split into row blocks of bs
// rows (the last takes the rest), one thread each.
type bf16UpdateTask struct {
	a       []uint16 // op(a)'s bits, row by row
	lda     int
	pb      *gemm.PackedBF16
	o, p    []float32
	s       float32
	m, n, k int
	bs, nb  int
	apply   bf16Apply
}

var (
	bf16UpdatePool freelist.List[bf16UpdateTask]
	bf16Packs      freelist.List[gemm.PackedBF16]
)

// Run computes, rounds and applies blocks [lo, hi).
func (t *bf16UpdateTask) Run(lo, hi int) {
	n := t.n
	sp := getScratch(&bf16Block, (2*t.bs-1)*n)
	for blk := lo; blk < hi; blk++ {
		i0, rows := blk*t.bs, t.bs
		if blk == t.nb-1 {
			rows = t.m - i0
		}
		r := (*sp)[:rows*n]
		gemm.GemmPackedBF16Bits(rows, n, t.k, t.a[i0*t.lda:], t.lda, t.pb, nil, gemm.ActNone, r, n)
		t.apply(t.o[i0*n:(i0+rows)*n], t.p[i0*n:(i0+rows)*n], r, t.s)
	}
	bf16Block.Put(sp)
}

// bf16UpdateRows is the height of BF16MatMulUpdate's row blocks: a
// multiple of every bf16 kernel's row granules (32 and 16 for AMX, 14 for
// VDPBF16PS) and cache blocks (64 and 112 rows), so that each element of
// a block is computed by the same tile, with the same sum, as in the
// whole product; the last block takes the rest (at least as many rows),
// so that no block is short enough for the few-row kernel.
const bf16UpdateRows = 224

// vjpBF16MatMulUpdate is the gradient of the unfused expression
// p − BF16MatMul(a, b)·s, for completeness: passes run after
// differentiation.
func vjpBF16MatMulUpdate(attrs any, in []*tensor.Tensor, _, g *tensor.Tensor) []*tensor.Tensor {
	at := attrs.(ops.MatMulAttrs)
	a, b, s := in[0], in[1], in[3]
	ma := BF16MatMulAttrs{TransA: at.TransA, TransB: at.TransB}
	r := core.Apply(Anchor, fixedAnchor(bf16MatMulKind, ma), a, b)
	gt := ops.Neg(g) // Sub's rule for its second operand
	gab := vjpBF16MatMul(ma, in[:2], r, ops.Mul(gt, s))
	gs := ops.Reshape(ops.Sum(ops.Mul(gt, r)), s.Shape()...)
	return []*tensor.Tensor{gab[0], gab[1], g, gs}
}

// AmpMatMul fuses the mixed-precision products that AmpGemm leaves — those
// of a training step: the forward products of weights the step assigns,
// and the backward products its MatMul VJPs build (G·W and Gᵀ·X, with
// their transposes), whose operands are activations and gradients —
//
//	Cast{Float32}(MatMul(Cast{BFloat16}(a), Cast{BFloat16}(b)))
//	  [→ Add(·, bias)] [→ ReLU(·)]
//
// into one BF16MatMul, for 2-D float32 a and b and either transpose
// flags. An operand's cast read by this product alone is bypassed (the
// kernel rounds a itself); one that other products read too stays, and
// the products take its bits, so that a weight or an activation is
// rounded once. The bfloat16 product and its cast back are never written,
// and the neighbouring float32 ops meet float32 values that loop fusion
// can take. The product and its cast back must have no other user. A weight gradient so fused that only feeds its
// weight's gradient-descent update, p − BF16MatMul(·)·s assigned to p,
// becomes one BF16MatMulUpdate (as GemmUpdate fuses float32 ones). It
// runs after AmpGemm, which gives the products of weights the graph does
// not assign their packed copies.
func AmpMatMul(g *graph.Graph) {
	g.CountUses()
	only := soleUser(g)
	for _, mm := range g.Values {
		if !isOp(mm, ops.MatMulPrim) || mm.Meta.DType != tensor.BFloat16 || len(mm.Args) != 2 {
			continue
		}
		a, b := castOf(mm.Args[0], tensor.BFloat16), castOf(mm.Args[1], tensor.BFloat16)
		if a == nil || b == nil || a.Meta.DType != tensor.Float32 || b.Meta.DType != tensor.Float32 ||
			a.Meta.Shape.Rank() != 2 || b.Meta.Shape.Rank() != 2 {
			continue
		}
		at := matmulAttrs(mm)
		// A cast that other products read too stays, and the products
		// take its bits: the operand is then rounded once (a weight, by
		// the forward product and the input gradient's). A transposed
		// left operand is taken in float32 whatever, to be transposed
		// before it is rounded (see leftRows).
		if mm.Args[0].Uses > 1 && !at.TransA {
			a = mm.Args[0]
		}
		if mm.Args[1].Uses > 1 {
			b = mm.Args[1]
		}
		back := only(mm)
		if back == nil || castOf(back, tensor.Float32) != mm {
			continue
		}
		n := mm.Meta.Shape[1]
		ea := BF16MatMulAttrs{TransA: at.TransA, TransB: at.TransB}
		args := []*graph.Value{a, b}
		last := back
		if u := only(back); u != nil {
			if bias := rowBias(u, back, n); bias != nil {
				ea.Bias = true
				args = append(args, bias)
				last = u
			}
		}
		if u := only(last); u != nil && isOp(u, ops.ReluPrim) && sameMeta(u.Meta, back.Meta) {
			ea.Act, last = ActReLU, u
		}
		toFixed(g, last, bf16MatMulKind, ea, args)
	}
	bf16Updates(g)
}

// bf16Updates rewrites p − BF16MatMul(a, b)·s (or s·BF16MatMul(a, b)),
// assigned to p, into BF16MatMulUpdate(a, b, p, s) when the product (with
// no bias or activation) and the scaled product are used only there.
func bf16Updates(g *graph.Graph) {
	g.CountUses()
	assigned := map[*graph.Value]*graph.Value{}
	for _, a := range g.Assigns {
		assigned[a.Val] = a.Param
	}
	for _, v := range g.Values {
		p := assigned[v]
		if p == nil || !isOp(v, ops.SubPrim) || v.Args[0] != p || p.Meta.DType != tensor.Float32 || p.Meta.Shape.Rank() != 2 {
			continue
		}
		mul := v.Args[1]
		if !isOp(mul, ops.MulPrim) || mul.Uses != 1 || !sameMeta(mul.Meta, p.Meta) {
			continue
		}
		mm, s := mul.Args[0], mul.Args[1]
		if _, ok := fixedOf(mm, bf16MatMulKind); !ok {
			mm, s = s, mm
		}
		fa, ok := fixedOf(mm, bf16MatMulKind)
		if !ok || mm.Uses != 1 || s.Meta.Shape.Size() != 1 || s.Meta.DType != tensor.Float32 || !sameMeta(mm.Meta, p.Meta) {
			continue
		}
		at := fa.(BF16MatMulAttrs)
		if at.Bias || at.Act != ActNone {
			continue
		}
		toFixed(g, v, bf16UpdateKind, ops.MatMulAttrs{TransA: at.TransA, TransB: at.TransB}, []*graph.Value{mm.Args[0], mm.Args[1], p, s})
	}
}
