package compile

import (
	"fmt"
	"sync"

	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/kernels/gemm"
	"github.com/sporeml/spore/internal/kernels/half"
	"github.com/sporeml/spore/internal/kernels/vec"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// BF16EpilogueAttrs are BF16MatMulBiasAct's attributes: whether the weight
// is used transposed, whether a bias (the third operand) is added, the
// activation (ActNone or ActReLU), and the plan's packed copy of the
// weight (set by AmpGemm; without it the weight is packed on every call).
type BF16EpilogueAttrs struct {
	TransB bool
	Bias   bool
	Act    Act
	packed *packedBF16
}

// String prints every attribute, for IR dumps and CSE keys.
func (a BF16EpilogueAttrs) String() string {
	s := fmt.Sprintf("tb=%v bias=%v act=%v", a.TransB, a.Bias, a.Act)
	if a.packed != nil {
		s += " packed"
	}
	return s
}

// bf16BiasActKind, the fused step BF16MatMulBiasAct of an Anchor of
// MatMul at bfloat16 precision with BF16EpilogueAttrs, is the fused
// product of mixed precision's inference (AmpGemm):
//
//	Anchor(x, w[, bias]) = act(bf16(bf16(x)·bf16(op(w))) + bias)
//
// for a 2-D float32 x and a 2-D float32 weight w: each operand rounded to
// bfloat16, the product accumulated in float32 and rounded to bfloat16 —
// what the unfused chain Cast(MatMul(Cast(x), Cast(w))) computes, at the
// same rounding points, so a compiled inference plan gives PyNative
// mode's bits — then the float32 bias add and activation. The weight is
// rounded and packed for the bfloat16 GEMM (AMX or AVX512-BF16) once, and
// again only when the parameter is written; x is rounded as the GEMM
// packs it. Its VJP is the unfused chain's.
var bf16BiasActKind = newFixedKind(&fixedKind{
	spec:  AnchorSpec{Op: ops.MatMulPrim, Precision: tensor.BFloat16},
	name:  "BF16MatMulBiasAct",
	infer: inferBF16MatMulBiasAct,
	vjp:   vjpBF16MatMulBiasAct,
	members: func(fused any, _ *graph.Value) []string {
		a, _ := fused.(BF16EpilogueAttrs)
		cast := ops.CastPrim.Name
		return bf16Chain([]string{cast, cast, ops.MatMulPrim.Name, cast}, a.Bias, a.Act)
	},
}, BF16EpilogueAttrs{})

func init() { bf16BiasActKind.register(tensor.Float32, kernelBF16MatMulBiasAct) }

func inferBF16MatMulBiasAct(attrs any, in []*tensor.Tensor) tensor.Meta {
	at, ok := attrs.(BF16EpilogueAttrs)
	if !ok {
		core.Panicf("BF16MatMulBiasAct", "attributes are %T, want compile.BF16EpilogueAttrs", attrs)
	}
	wantOperands("BF16MatMulBiasAct", in, at.Bias)
	a, b := in[0], in[1]
	if a.Rank() != 2 || b.Rank() != 2 || a.DType() != tensor.Float32 || b.DType() != tensor.Float32 {
		core.Panicf("BF16MatMulBiasAct", "want two 2-D float32 operands, got %v %v x %v %v", a.Shape(), a.DType(), b.Shape(), b.DType())
	}
	if at.Act != ActNone && at.Act != ActReLU {
		core.Panicf("BF16MatMulBiasAct", "activation %v: only none and ReLU are fused", at.Act)
	}
	m, _, n := gemmDims("BF16MatMulBiasAct", false, at.TransB, a, b)
	return gemmResult("BF16MatMulBiasAct", in, at.Bias, m, n)
}

func kernelBF16MatMulBiasAct(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
	at := attrs.(BF16EpilogueAttrs)
	a, w := in[0], in[1]
	m, n := out.Dim(0), out.Dim(1)
	k := a.Dim(1)
	c := out.Data().([]float32)
	if m*n == 0 {
		return
	}
	p := at.packed
	if p == nil {
		// Applied outside a plan (eagerly): packed for this call only.
		p = new(packedBF16)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if k == 0 {
		clear(c)
	} else {
		p.pack(at.TransB, w, k, n)
		gemm.GemmPackedBF16(m, n, k, a.Data().([]float32), k, &p.pb, nil, ActNone, c, n)
	}
	// The unfused chain's rounding points: the product rounded to bfloat16
	// (the MatMul's BFloat16 result) and widened exactly (its Cast back),
	// with the conversions MatMul's and Cast's kernels use; then the
	// float32 bias add and ReLU, each exactly rounded as Add's and ReLU's
	// kernels are.
	if cap(p.bits) < m*n {
		p.bits = make([]uint16, m*n)
	}
	bits := p.bits[:m*n]
	half.BF16FromFloat32s(bits, c)
	half.BF16ToFloat32s(c, bits)
	if at.Bias {
		vec.AddRow(c, c, in[2].Data().([]float32))
	}
	if at.Act == ActReLU {
		vec.Relu(c, c)
	}
}

// vjpBF16MatMulBiasAct differentiates the unfused chain: through the
// activation (at the recomputed pre-activation), the bias add, the
// trailing cast (the cotangent to bfloat16), the bfloat16 MatMul and the
// operands' casts (the gradients back to float32).
func vjpBF16MatMulBiasAct(attrs any, in []*tensor.Tensor, out, g *tensor.Tensor) []*tensor.Tensor {
	at := attrs.(BF16EpilogueAttrs)
	x, w := in[0], in[1]
	xb, wb := ops.Cast(x, tensor.BFloat16), ops.Cast(w, tensor.BFloat16)
	gz := g
	if at.Act == ActReLU {
		z := ops.Cast(ops.MatMulT(xb, wb, false, at.TransB), tensor.Float32)
		if at.Bias {
			z = ops.Add(z, in[2])
		}
		gz = ops.ReluPrim.VJP(nil, []*tensor.Tensor{z}, out, g)[0]
	}
	gb := ops.Cast(gz, tensor.BFloat16)
	res := make([]*tensor.Tensor, len(in))
	// C = x·op(W): dx = G·op(W)ᵀ, and dW = Gᵀ·x when W is used
	// transposed, xᵀ·G otherwise.
	if core.NeedsGrad(x) {
		res[0] = ops.Cast(ops.MatMulT(gb, wb, false, !at.TransB), tensor.Float32)
	}
	if core.NeedsGrad(w) {
		if at.TransB {
			res[1] = ops.Cast(ops.MatMulT(gb, xb, true, false), tensor.Float32)
		} else {
			res[1] = ops.Cast(ops.MatMulT(xb, gb, true, false), tensor.Float32)
		}
	}
	if at.Bias {
		res[2] = ops.Reshape(ops.Sum(gz, 0), in[2].Shape()...)
	}
	return res
}

// packedBF16 is one fused product's packed bfloat16 copy of its weight,
// with what it was packed from: the parameter's buffer and version (as
// packedWeight does for float32), and the product's bits rounded to
// bfloat16 (kept, so that a call allocates nothing).
type packedBF16 struct {
	// mu serialises packing and the runs that use the copy and the bits:
	// a plan's runs are serialised already, but attributes may be shared
	// by two plans (a graph compiled twice).
	mu      sync.Mutex
	pb      gemm.PackedBF16
	packed  bool
	src     *float32
	version uint64
	bits    []uint16
}

// pack packs op(w) (k×n) if the parameter has been written, or replaced,
// since the last packing. p.mu must be held.
func (p *packedBF16) pack(transB bool, w *tensor.Tensor, k, n int) {
	wd := w.Data().([]float32)
	var src *float32
	if len(wd) > 0 {
		src = &wd[0]
	}
	ver := core.ParamVersion(w)
	if pk, pn := p.pb.Dims(); !p.packed || src != p.src || ver != p.version || pk != k || pn != n {
		// Into the same memory: repacking after an update allocates
		// nothing.
		p.pb.Pack(transB, k, n, wd, w.Dim(1))
		p.packed, p.src, p.version = true, src, ver
	}
}

// AmpGemm fuses mixed precision's products of a float32 activation and a
// weight that the graph does not assign (a layer of an inference graph),
//
//	Cast{Float32}(MatMul(Cast{BFloat16}(x), Cast{BFloat16}(W)))
//	  [→ Add(·, bias)] [→ ReLU(·)]
//
// into one BF16MatMulBiasAct on x and W themselves, so that W is rounded
// and packed once per update rather than cast on every call, and x is
// rounded as the GEMM packs it. Each intermediate must have no other user
// (the casts of x and W may: they stay for those users). A training graph,
// which assigns W, keeps the plain ops: repacking on every call would gain
// nothing. Other activations stay separate ops, so that the result is
// exactly the unfused chain's.
func AmpGemm(g *graph.Graph) {
	assigned := map[*graph.Value]bool{}
	for _, a := range g.Assigns {
		assigned[a.Param] = true
	}
	g.CountUses()
	only := soleUser(g)
	for _, mm := range g.Values {
		if !isOp(mm, ops.MatMulPrim) || mm.Meta.DType != tensor.BFloat16 || len(mm.Args) != 2 {
			continue
		}
		at := matmulAttrs(mm)
		x, w := castOf(mm.Args[0], tensor.BFloat16), castOf(mm.Args[1], tensor.BFloat16)
		if at.TransA || x == nil || w == nil || x.Meta.DType != tensor.Float32 || w.Meta.DType != tensor.Float32 ||
			x.Meta.Shape.Rank() != 2 || w.Meta.Shape.Rank() != 2 {
			continue
		}
		if !(w.Kind == graph.KindParam && !assigned[w] || w.Kind == graph.KindConst) {
			continue
		}
		back := only(mm)
		if back == nil || castOf(back, tensor.Float32) != mm {
			continue
		}
		n := mm.Meta.Shape[1]
		ea := BF16EpilogueAttrs{TransB: at.TransB, packed: new(packedBF16)}
		args := []*graph.Value{x, w}
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
		toFixed(g, last, bf16BiasActKind, ea, args)
	}
}
