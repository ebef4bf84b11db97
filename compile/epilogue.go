package compile

import (
	"fmt"

	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/kernels/gemm"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Act is the activation a fused GEMM applies to its output: the GEMM
// kernel's own enumeration (ReLU; GELU in its exact erf form, as ops.GELU,
// evaluated in float32 by the epilogue to within a few ulp).
type Act = gemm.Act

// The activations MatMulBiasAct applies.
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

// EpilogueAttrs are MatMulBiasAct's attributes: MatMul's transpose flags,
// whether a bias (the third operand) is added, and the activation.
type EpilogueAttrs struct {
	TransA, TransB bool
	Bias           bool
	Act            Act
	// packed, set by Prepack, holds the plan's packed copy of the weight
	// (the second operand, a parameter).
	packed *packedWeight
}

// String prints every attribute, for IR dumps and CSE keys.
func (a EpilogueAttrs) String() string {
	s := fmt.Sprintf("ta=%v tb=%v bias=%v act=%v", a.TransA, a.TransB, a.Bias, a.Act)
	if a.packed != nil {
		s += " packed"
	}
	return s
}

// MatMulBiasAct is the fused GEMM of epilogue fusion:
//
//	MatMulBiasAct(a, b[, bias]) = act(op(a)·op(b) + bias)
//
// for 2-D float32 a and b and a bias of shape [n] or [1, n] broadcast over
// the rows. Its kernel is gemm.SgemmBiasAct, which adds the bias and
// applies the activation to each output tile while it is still in
// registers or L1, so the product is written to memory once instead of
// three times. Its VJP is the unfused chain's, so a graph differentiated
// after fusion still gets correct gradients.
var MatMulBiasAct = &core.Prim{
	Name:   "MatMulBiasAct",
	Traits: core.Traits{Cost: 100},
	Infer:  inferMatMulBiasAct,
	VJP:    vjpMatMulBiasAct,
}

// The fused kernel exists for float32 (the pass fuses nothing else).
func init() { MatMulBiasAct.Register(tensor.Float32, core.CPU, kernelMatMulBiasAct) }

func inferMatMulBiasAct(attrs any, in []*tensor.Tensor) tensor.Meta {
	at, ok := attrs.(EpilogueAttrs)
	if !ok {
		core.Panicf("MatMulBiasAct", "attributes are %T, want compile.EpilogueAttrs", attrs)
	}
	wantOperands("MatMulBiasAct", in, at.Bias)
	a, b := in[0], in[1]
	if a.Rank() != 2 || b.Rank() != 2 || a.DType() != tensor.Float32 || b.DType() != tensor.Float32 {
		core.Panicf("MatMulBiasAct", "want two 2-D float32 operands, got %v %v x %v %v", a.Shape(), a.DType(), b.Shape(), b.DType())
	}
	if at.Act > ActGELU {
		core.Panicf("MatMulBiasAct", "unknown activation %v", at.Act)
	}
	m, _, n := gemmDims("MatMulBiasAct", at.TransA, at.TransB, a, b)
	return gemmResult("MatMulBiasAct", in, at.Bias, m, n)
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

func kernelMatMulBiasAct(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
	at := attrs.(EpilogueAttrs)
	a, b := in[0], in[1]
	m, n := out.Dim(0), out.Dim(1)
	k := a.Dim(1)
	if at.TransA {
		k = a.Dim(0)
	}
	var bias []float32
	if at.Bias {
		bias = in[2].Data().([]float32)
	}
	if at.packed != nil {
		at.packed.run(at, a, b, bias, out.Data().([]float32))
		return
	}
	gemm.SgemmBiasAct(at.TransA, at.TransB, m, n, k, a.Data().([]float32), a.Dim(1), b.Data().([]float32), b.Dim(1), bias, at.Act, out.Data().([]float32), n)
}

// vjpMatMulBiasAct differentiates the unfused chain: the cotangent passes
// back through the activation's own VJP (at the recomputed
// pre-activation), then through Add (the bias gets its column sums) and
// MatMul's own VJP.
func vjpMatMulBiasAct(attrs any, in []*tensor.Tensor, out, g *tensor.Tensor) []*tensor.Tensor {
	at := attrs.(EpilogueAttrs)
	mmAttrs := ops.MatMulAttrs{TransA: at.TransA, TransB: at.TransB}
	gz := g
	if at.Act != ActNone {
		z := ops.MatMulT(in[0], in[1], at.TransA, at.TransB)
		if at.Bias {
			z = ops.Add(z, in[2])
		}
		gz = actPrim(at.Act).VJP(nil, []*tensor.Tensor{z}, out, g)[0]
	}
	gs := ops.MatMulPrim.VJP(mmAttrs, in[:2], nil, gz)
	if !at.Bias {
		return gs
	}
	gb := ops.Reshape(ops.Sum(gz, 0), in[2].Shape()...)
	return []*tensor.Tensor{gs[0], gs[1], gb}
}

// Epilogue fuses a 2-D float32 MatMul with the bias add and activation
// that consume it into one MatMulBiasAct:
//
//	Act(Add(MatMul(a, b), bias))  →  MatMulBiasAct(a, b, bias){act}
//	Add(MatMul(a, b), bias)       →  MatMulBiasAct(a, b, bias){none}
//	Act(MatMul(a, b))             →  MatMulBiasAct(a, b){act}
//
// with Act one of ReLU and GELU and bias of shape [n] or [1, n] (either
// operand order of the Add). Each intermediate must have no other user:
// fusing a value that is also read elsewhere would compute the product
// twice. The last op of the chain is rewritten in place, so it keeps its
// position (after everything the fused op reads) and its users. Float64
// products are not fused: the GEMM epilogue exists for float32 only.
func Epilogue(g *graph.Graph) {
	g.CountUses()
	only := soleUser(g)
	for _, mm := range g.Values {
		if !isOp(mm, ops.MatMulPrim) || mm.Meta.DType != tensor.Float32 || mm.Args[0].Meta.Shape.Rank() != 2 || mm.Args[1].Meta.Shape.Rank() != 2 {
			continue
		}
		if mm.Args[0].Meta.DType != tensor.Float32 {
			continue
		}
		n := mm.Meta.Shape[1]
		at := matmulAttrs(mm)
		ea := EpilogueAttrs{TransA: at.TransA, TransB: at.TransB}
		args := []*graph.Value{mm.Args[0], mm.Args[1]}
		last := mm
		if u := only(mm); u != nil {
			if bias := rowBias(u, mm, n); bias != nil {
				ea.Bias = true
				args = append(args, bias)
				last = u
			}
		}
		if u := only(last); u != nil && sameMeta(u.Meta, mm.Meta) {
			switch {
			case isOp(u, ops.ReluPrim):
				ea.Act, last = ActReLU, u
			case isOp(u, ops.GeluPrim):
				ea.Act, last = ActGELU, u
			}
		}
		if last == mm {
			continue // nothing to fuse: a plain GEMM is already one kernel
		}
		last.Prim = MatMulBiasAct
		last.Attrs = ea
		last.Args = args
	}
}
