package ops

import (
	"fmt"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// MatMulAttrs are MatMul's transpose flags: the product is op(a)·op(b) with
// op(x) = xᵀ (of the last two axes) when the flag is set.
type MatMulAttrs struct{ TransA, TransB bool }

// String prints every attribute, for IR dumps and CSE keys.
func (a MatMulAttrs) String() string { return fmt.Sprintf("ta=%v tb=%v", a.TransA, a.TransB) }

// matmulDims checks a MatMul's operands and returns the broadcast batch
// shape and m, k, n.
func matmulDims(at MatMulAttrs, a, b *tensor.Tensor) (batch tensor.Shape, m, k, n int) {
	as, bs := a.Shape(), b.Shape()
	if len(as) < 2 || len(bs) < 2 {
		core.Panicf("MatMul", "operands must have rank >= 2, got %v x %v", as, bs)
	}
	if a.DType() != b.DType() || !a.DType().IsFloat() {
		core.Panicf("MatMul", "want two float operands of one dtype, got %v %v x %v %v", as, a.DType(), bs, b.DType())
	}
	m, k = as[len(as)-2], as[len(as)-1]
	if at.TransA {
		m, k = k, m
	}
	k2, n := bs[len(bs)-2], bs[len(bs)-1]
	if at.TransB {
		k2, n = n, k2
	}
	if k != k2 {
		core.Panicf("MatMul", "inner dimensions differ: %v x %v (transpose flags %v, %v)", as, bs, at.TransA, at.TransB)
	}
	batch = BroadcastShapes("MatMul", as[:len(as)-2], bs[:len(bs)-2])
	return batch, m, k, n
}

func init() {
	MatMulPrim = core.Define(&core.Prim{
		Name:   "MatMul",
		Batch:  batchMatMul,
		Traits: core.Traits{Cost: 100},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			batch, m, _, n := matmulDims(attrs.(MatMulAttrs), in[0], in[1])
			return tensor.Meta{Shape: append(batch.Clone(), m, n), DType: in[0].DType()}
		},
		// C = op(A)·op(B) is bilinear: dop(A) = G·op(B)ᵀ, dop(B) = op(A)ᵀ·G,
		// and a transposed operand takes the transpose of its derivative.
		JVP: bilinearJVP(&MatMulPrim),
		VJP: bilinearVJP(wantedOperands,
			func(attrs any, in []*tensor.Tensor, g *tensor.Tensor) *tensor.Tensor {
				at, a, b := attrs.(MatMulAttrs), in[0], in[1]
				if at.TransA {
					return sumTo(MatMulT(b, g, at.TransB, true), a.Shape())
				}
				return sumTo(MatMulT(g, b, false, !at.TransB), a.Shape())
			},
			func(attrs any, in []*tensor.Tensor, g *tensor.Tensor) *tensor.Tensor {
				at, a, b := attrs.(MatMulAttrs), in[0], in[1]
				if at.TransB {
					return sumTo(MatMulT(g, a, true, at.TransA), b.Shape())
				}
				return sumTo(MatMulT(a, g, !at.TransA, false), b.Shape())
			}),
	})
	registerFloats(MatMulPrim, matmulKernel(impl32), matmulKernel(impl64))
}

var MatMulPrim *core.Prim

// MatMul returns the matrix product a·b over the last two axes, with NumPy
// broadcasting over the leading (batch) axes.
func MatMul(a, b *tensor.Tensor) *tensor.Tensor { return MatMulT(a, b, false, false) }

// MatMulT returns op(a)·op(b), where op transposes the last two axes of an
// operand whose flag is set — without materialising the transpose.
func MatMulT(a, b *tensor.Tensor, transA, transB bool) *tensor.Tensor {
	return core.Apply(MatMulPrim, MatMulAttrs{transA, transB}, a, b)
}

// matmulKernel returns MatMul's kernel for T, bound to T's GEMM (see
// matmulBatched for how the batch axes map onto it).
func matmulKernel[T float32 | float64](im *floatImpl[T]) core.KernelFunc {
	return func(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
		at := attrs.(MatMulAttrs)
		matmulBatched(im, at.TransA, at.TransB, in[0], in[1], out)
	}
}
