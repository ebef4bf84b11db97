package ops

import (
	"github.com/sporeml/spore/internal/freelist"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/kernels/gemm"
	"github.com/sporeml/spore/internal/kernels/half"
	"github.com/sporeml/spore/tensor"
)

// MatMul's BFloat16 kernel: the bfloat16 GEMM (AMX tiles or AVX512-BF16
// where the CPU has them, a Go twin elsewhere) multiplies the operands'
// bits with float32 accumulation, and the float32 result is rounded to
// bfloat16. Mixed precision's O2 casts a Dense layer's operands to
// BFloat16 and its result back to Float32 around this kernel; a compiled
// plan fuses the three into one GEMM on weights packed once per update
// (see package compile).
//
// This file's init runs after matmul.go's, which defines MatMulPrim
// ("matmul.go" sorts before "matmul_bf16.go").
func init() {
	MatMulPrim.Register(tensor.BFloat16, core.CPU, matmulBF16)
}

// bf16Scratch pools the float32 products a BFloat16 matmul rounds from.
var bf16Scratch freelist.List[[]float32]

func matmulBF16(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
	at := attrs.(MatMulAttrs)
	a, b := in[0], in[1]
	batch, m, k, n := matmulDims(at, a, b)
	as, bs := a.Shape(), b.Shape()
	strideA, strideB := m*k, k*n
	if len(as) == 2 {
		strideA = 0
	}
	if len(bs) == 2 {
		strideB = 0
	}
	if !(len(as) == 2 || len(bs) == 2 || as[:len(as)-2].Equal(bs[:len(bs)-2])) {
		// General batch broadcasting: materialise both operands at the
		// broadcast batch shape first.
		a = BroadcastTo(a, append(batch.Clone(), as[len(as)-2:]...)...)
		b = BroadcastTo(b, append(batch.Clone(), bs[len(bs)-2:]...)...)
		strideA, strideB = m*k, k*n
	}
	lda, ldb := k, n
	if at.TransA {
		lda = m
	}
	if at.TransB {
		ldb = k
	}
	ab, bb, cb := tensor.Bits16(a), tensor.Bits16(b), tensor.Bits16(out)
	sp := bf16Scratch.Get()
	if cap(*sp) < m*n {
		*sp = make([]float32, m*n)
	}
	c := (*sp)[:m*n]
	for i := range batch.Size() {
		if m*n == 0 {
			break
		}
		if k == 0 {
			clear(c)
		} else {
			gemm.GemmBF16(at.TransA, at.TransB, m, n, k, ab[i*strideA:], lda, bb[i*strideB:], ldb, 0, c, n)
		}
		half.BF16FromFloat32s(cb[i*m*n:(i+1)*m*n], c)
	}
	bf16Scratch.Put(sp)
}
