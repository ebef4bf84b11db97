package compile

import (
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/freelist"
	"github.com/sporeml/spore/internal/kernels/gemm"
	"github.com/sporeml/spore/internal/kernels/half"
	"github.com/sporeml/spore/internal/kernels/parallel"
	"github.com/sporeml/spore/internal/kernels/vec"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// matMulMomentumKind, an Anchor of MatMul updating its third operand in
// place (UpdateMomentum), is the momentum buffer's update of SGD with
// momentum for a weight whose gradient is a matrix product:
//
//	Anchor(a, b, buf, mu) = FlushSubnormal(buf·mu + op(a)·op(b))
//
// for 2-D float32 a, b and buf and a one-element float32 mu; its attributes
// are ops.MatMulAttrs. The product is computed a block of rows at a time
// into scratch that stays in cache, and each block is at once scaled,
// added and flushed as the unfused Mul, Add and FlushSubnormal round it:
// the unfused update's bits, without writing the gradient out and reading
// it back (two passes over a weight-sized array of the seven the unfused
// product and momentum update make). The GEMM's sums do not depend on how
// its rows are blocked, so the blocks hold the whole product's values.
// The executor may compute it straight into buf's buffer (Anchor's
// Traits.Accumulates). It has no VJP: it updates an optimiser's state.
var matMulMomentumKind = newFixedKind(&fixedKind{
	spec:  AnchorSpec{Op: ops.MatMulPrim, Precision: tensor.Float32, Update: UpdateMomentum},
	name:  "MatMulMomentum",
	infer: inferGemmApply("MatMulMomentum"),
	members: func(any, *graph.Value) []string {
		return []string{ops.MatMulPrim.Name, ops.MulPrim.Name, ops.AddPrim.Name, ops.FlushSubnormalPrim.Name}
	},
}, ops.MatMulAttrs{})

// The fused kernel exists for float32 (the pass fuses nothing else).
func init() { matMulMomentumKind.register(tensor.Float32, kernelMatMulMomentum) }

func kernelMatMulMomentum(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
	at := attrs.(ops.MatMulAttrs)
	a, b, buf := in[0], in[1], in[2]
	m, n := buf.Dim(0), buf.Dim(1)
	if m*n == 0 {
		return
	}
	k := a.Dim(1)
	if at.TransA {
		k = a.Dim(0)
	}
	t := momentumTasks.Get()
	*t = momentumTask{
		transA: at.TransA, transB: at.TransB, m: m, n: n, k: k,
		a: a.Data().([]float32), lda: a.Dim(1), b: b.Data().([]float32), ldb: b.Dim(1),
		buf: buf.Data().([]float32), o: out.Data().([]float32), mu: in[3].Data().([]float32)[0],
	}
	t.rows = momentumRows(m, n, k, parallel.Workers())
	parallel.ForBody((m+t.rows-1)/t.rows, 1, t)
	*t = momentumTask{} // keep none of the caller's memory
	momentumTasks.Put(t)
}

// momentumRows returns the height of MatMulMomentum's row blocks: a block
// of the product fits L1 and L2 beside its share of buf when k is short (a
// small batch's gradient, whose product is a few multiply-adds per element
// and costs what writing it costs), and L2 when k is long, where each
// block reads all of op(b) again. With several threads it is at most an
// even share of the rows, so that every thread gets a block.
func momentumRows(m, n, k, threads int) int {
	budget := 16 << 10 // floats: 64 KiB
	if k > 64 {
		budget = 128 << 10
	}
	rows := max(1, budget/n)
	if threads > 1 {
		rows = min(rows, (m+threads-1)/threads)
	}
	return max(1, rows)
}

// momentumTask is one MatMulMomentum call, split into blocks of rows
// run by whichever thread claims them.
type momentumTask struct {
	transA, transB bool
	m, n, k, rows  int
	a, b, buf, o   []float32
	lda, ldb       int
	mu             float32
}

var (
	momentumTasks freelist.List[momentumTask]
	momentumBlock freelist.List[[]float32]
)

// Run computes blocks [lo, hi): each block's product into scratch, then
// o = FlushSubnormal(buf·mu + product) over the block.
func (t *momentumTask) Run(lo, hi int) {
	n := t.n
	sp := getScratch(&momentumBlock, t.rows*n)
	for blk := lo; blk < hi; blk++ {
		i0 := blk * t.rows
		rows := min(t.rows, t.m-i0)
		r := (*sp)[:rows*n]
		if t.k == 0 {
			clear(r)
		} else {
			ao := i0 * t.lda // rows i0… of op(a): columns of a when transposed
			if t.transA {
				ao = i0
			}
			gemm.Sgemm(t.transA, t.transB, rows, n, t.k, 1, t.a[ao:], t.lda, t.b, t.ldb, 0, r, n)
		}
		applyMomentum(t.o[i0*n:(i0+rows)*n], t.buf[i0*n:(i0+rows)*n], r, t.mu)
	}
	momentumBlock.Put(sp)
}

// applyMomentum sets o = FlushSubnormal(buf·mu + r) stretch by stretch, in
// L1, each step rounded as the unfused Mul, Add and FlushSubnormal round
// it. o may be buf: each element of buf is read before the same element of
// o is written.
func applyMomentum(o, buf, r []float32, mu float32) {
	const stretch = 2048
	for i := 0; i < len(r); i += stretch {
		j := min(len(r), i+stretch)
		vec.MulScalar(o[i:j], buf[i:j], mu)
		vec.Add(o[i:j], o[i:j], r[i:j])
		vec.FlushSubnormal(o[i:j], o[i:j])
	}
}

// bf16MomentumKind is matMulMomentumKind at bfloat16 precision, for
// mixed precision's weight gradients (bf16MatMulKind's product of
// bfloat16-rounded operands, rounded to bfloat16):
//
//	Anchor(a, b, buf, mu) = FlushSubnormal(buf·mu + f32(bf16(bf16(op(a))·bf16(op(b)))))
//
// for 2-D a and b (Float32 or BFloat16, as bf16MatMulKind's), a 2-D float32
// buf and a one-element float32 mu; its attributes are ops.MatMulAttrs. Its
// blocks are bf16UpdateKind's (row counts that keep every element's
// sum), so it gives the unfused chain's bits. The executor may compute it
// straight into buf's buffer (Anchor's Traits.Accumulates).
var bf16MomentumKind = newFixedKind(&fixedKind{
	spec:  AnchorSpec{Op: ops.MatMulPrim, Precision: tensor.BFloat16, Update: UpdateMomentum},
	name:  "BF16MatMulMomentum",
	infer: inferBF16Blocked("BF16MatMulMomentum"),
	members: func(_ any, v *graph.Value) []string {
		return append(operandCasts(v), ops.MatMulPrim.Name, ops.CastPrim.Name, ops.MulPrim.Name, ops.AddPrim.Name, ops.FlushSubnormalPrim.Name)
	},
}, ops.MatMulAttrs{})

func init() {
	k := func(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
		kernelBF16Blocked(attrs, in, out, applyBF16Momentum)
	}
	bf16MomentumKind.register(tensor.Float32, k)
	bf16MomentumKind.register(tensor.BFloat16, k)
}

// applyBF16Momentum sets o = FlushSubnormal(buf·mu + f32(bf16(r))) stretch
// by stretch, in L1: the BF16MatMul's rounding and its cast back, then the
// momentum update as applyMomentum computes it. r is overwritten; o may be
// buf.
func applyBF16Momentum(o, buf, r []float32, mu float32) {
	var bits [2048]uint16
	for i := 0; i < len(r); i += len(bits) {
		j := min(len(r), i+len(bits))
		half.BF16FromFloat32s(bits[:j-i], r[i:j])
		half.BF16ToFloat32s(r[i:j], bits[:j-i])
		applyMomentum(o[i:j], buf[i:j], r[i:j], mu)
	}
}

// momentumMaxK is the longest k GemmMomentum fuses: a product with long k
// (a large batch's weight gradient) costs its multiply-adds, not the
// passes the fusion saves, and blocking it by rows re-packs op(b) once per
// block. Measured on the seed network's training step on two cores, the
// fusion made the step 1.32× as fast at batch 1, 1.12× at 16 and 1.06–1.10×
// at 64, but 0.94× at 128, 0.89× at 256 and 0.92× at 1024.
const momentumMaxK = 64

// GemmMomentum fuses the gradient product of a weight into its SGD
// momentum update: a value FlushSubnormal(buf·mu + op(a)·op(b)) assigned
// to the buffer buf (what package optim's SGD with momentum computes),
// where the product and the partial results are used only there and mu has
// one element, becomes an Anchor updating buf in place (UpdateMomentum),
// at bfloat16 precision when the product is mixed precision's. The weight's own update, which
// reads the new buffer, is left to loop fusion. It runs before loop
// fusion, which would otherwise take the Mul, Add and FlushSubnormal.
func GemmMomentum(g *graph.Graph) {
	g.CountUses()
	assigned := map[*graph.Value]*graph.Value{}
	for _, a := range g.Assigns {
		assigned[a.Val] = a.Param
	}
	for _, v := range g.Values {
		buf := assigned[v]
		if buf == nil || !isOp(v, ops.FlushSubnormalPrim) || buf.Meta.DType != tensor.Float32 || buf.Meta.Shape.Rank() != 2 {
			continue
		}
		add := v.Args[0]
		if !isOp(add, ops.AddPrim) || add.Uses != 1 || !sameMeta(add.Meta, buf.Meta) {
			continue
		}
		mul, mm := add.Args[0], add.Args[1]
		if !isOp(mul, ops.MulPrim) {
			mul, mm = mm, mul
		}
		if !isOp(mul, ops.MulPrim) || mul.Uses != 1 || !sameMeta(mul.Meta, buf.Meta) ||
			mm.Uses != 1 || !sameMeta(mm.Meta, buf.Meta) {
			continue
		}
		// A float32 product, or mixed precision's (AmpMatMul ran first)
		// without a bias or activation.
		fused, at := matMulMomentumKind, matmulAttrs(mm)
		bfa, isBF16 := fixedOf(mm, bf16MatMulKind)
		switch {
		case isOp(mm, ops.MatMulPrim):
		case isBF16:
			ba, _ := bfa.(BF16MatMulAttrs)
			if ba.Bias || ba.Act != ActNone {
				continue
			}
			fused, at = bf16MomentumKind, ops.MatMulAttrs{TransA: ba.TransA, TransB: ba.TransB}
		default:
			continue
		}
		x, mu := mul.Args[0], mul.Args[1]
		if x != buf {
			x, mu = mu, x
		}
		if x != buf || mu.Meta.Shape.Size() != 1 || mu.Meta.DType != tensor.Float32 {
			continue
		}
		a0, a1 := mm.Args[0].Meta.Shape, mm.Args[1].Meta.Shape
		if a0.Rank() != 2 || a1.Rank() != 2 {
			continue
		}
		if k := a0[1]; at.TransA && a0[0] > momentumMaxK || !at.TransA && k > momentumMaxK {
			continue
		}
		toFixed(g, v, fused, at, []*graph.Value{mm.Args[0], mm.Args[1], buf, mu})
	}
}
