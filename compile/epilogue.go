package compile

import (
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/kernels/gemm"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Act is the activation the bfloat16 GEMMs (BF16MatMulBiasAct,
// BF16MatMul) apply to their output: the GEMM kernel's own enumeration.
// The float32 GEMM takes any elementwise epilogue instead (Anchor).
type Act = gemm.Act

// The activations of Act.
const (
	ActNone = gemm.ActNone
	ActReLU = gemm.ActReLU
	ActGELU = gemm.ActGELU
)

// actPrim returns the ops primitive computing activation a (nil for
// ActNone).
func actPrim(a Act) *core.Prim {
	switch a {
	case ActReLU:
		return ops.ReluPrim
	case ActGELU:
		return ops.GeluPrim
	}
	return nil
}

// wantOperands checks a fused GEMM's operand count: the two factors, and
// the bias when it has one.
func wantOperands(op string, in []*tensor.Tensor, bias bool) {
	want := 2
	if bias {
		want = 3
	}
	if len(in) != want {
		core.Panicf(op, "got %d operands, want %d (bias=%v)", len(in), want, bias)
	}
}

// gemmResult checks a fused GEMM's bias (float32, [n] or [1 n]) and
// returns its float32 m×n result's meta.
func gemmResult(op string, in []*tensor.Tensor, bias bool, m, n int) tensor.Meta {
	if bias {
		s := in[2].Shape()
		if !((len(s) == 1 && s[0] == n) || (len(s) == 2 && s[0] == 1 && s[1] == n)) || in[2].DType() != tensor.Float32 {
			core.Panicf(op, "bias is %v %v, want float32 [%d] or [1 %d]", s, in[2].DType(), n, n)
		}
	}
	return tensor.Meta{Shape: tensor.Shape{m, n}, DType: tensor.Float32}
}
