package compile

import (
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/kernels/gemm"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// matMulUpdateKind, an Anchor of MatMul updating in place
// (UpdateAccumulate), computes p − s·op(a)·op(b) for a matrix p and a one-element
// scale s: the gradient-descent update of a weight whose gradient is a
// matrix product. Its kernel is one GEMM accumulating into p (alpha = −s,
// beta = 1), so the gradient is never written out and no separate update
// pass reads it back. Its arguments are a, b, p, s; its attributes are
// ops.MatMulAttrs. The executor may compute it straight into p's buffer
// (Anchor's Traits.Accumulates).
var matMulUpdateKind = newFixedKind(&fixedKind{
	spec:  AnchorSpec{Op: ops.MatMulPrim, Precision: tensor.Float32, Update: UpdateAccumulate},
	name:  "MatMulUpdate",
	infer: inferGemmApply("MatMulUpdate"),
	vjp:   vjpMatMulUpdate,
	members: func(any, *graph.Value) []string {
		return []string{ops.MatMulPrim.Name, ops.MulPrim.Name, ops.SubPrim.Name}
	},
}, ops.MatMulAttrs{})

// The fused kernel exists for float32 (the pass fuses nothing else).
func init() { matMulUpdateKind.register(tensor.Float32, kernelMatMulUpdate) }

// inferGemmApply is the shape rule of the float32 products fused with
// what reads them, op(a)·op(b) applied to a matrix p with a one-element s
// (the float32 update and momentum Anchors): every operand float32, the product p's
// shape.
func inferGemmApply(name string) func(attrs any, in []*tensor.Tensor) tensor.Meta {
	return func(attrs any, in []*tensor.Tensor) tensor.Meta {
		at, ok := attrs.(ops.MatMulAttrs)
		if !ok || len(in) != 4 {
			core.Panicf(name, "want ops.MatMulAttrs and 4 operands, got %T and %d", attrs, len(in))
		}
		a, b, p, s := in[0], in[1], in[2], in[3]
		for _, x := range in {
			if x.DType() != tensor.Float32 {
				core.Panicf(name, "want float32 operands, got %v %v", x.Shape(), x.DType())
			}
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

func kernelMatMulUpdate(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
	at := attrs.(ops.MatMulAttrs)
	a, b, p, s := in[0], in[1], in[2], in[3]
	o := out.Data().([]float32)
	if pd := p.Data().([]float32); len(pd) > 0 && &pd[0] != &o[0] {
		copy(o, pd)
	}
	m, n := p.Dim(0), p.Dim(1)
	k := a.Dim(1)
	lda, ldb := a.Dim(1), b.Dim(1)
	if at.TransA {
		k = a.Dim(0)
	}
	gemm.Sgemm(at.TransA, at.TransB, m, n, k, -s.Data().([]float32)[0], a.Data().([]float32), lda, b.Data().([]float32), ldb, 1, o, n)
}

// vjpMatMulUpdate is the gradient of the unfused expression, for
// completeness: passes run after differentiation.
func vjpMatMulUpdate(attrs any, in []*tensor.Tensor, _, g *tensor.Tensor) []*tensor.Tensor {
	at := attrs.(ops.MatMulAttrs)
	a, b, s := in[0], in[1], in[3]
	// out = p − s·mm: MatMul's own rule, fed the cotangent −s·g.
	gs := ops.MatMulPrim.VJP(at, in[:2], nil, ops.Neg(ops.Mul(g, s)))
	mm := ops.MatMulT(a, b, at.TransA, at.TransB)
	gScale := ops.Reshape(ops.Neg(ops.Sum(ops.Mul(g, mm))), s.Shape()...)
	return []*tensor.Tensor{gs[0], gs[1], g, gScale}
}

// GemmUpdate fuses the gradient-descent update of a weight into the GEMM
// that produces its gradient: an assigned value p − op(a)·op(b)·s (or
// s·(op(a)·op(b))), where p is the parameter being assigned, the product
// is used only there and s has one element, becomes an Anchor updating p
// in place (UpdateAccumulate). It runs
// before loop fusion, which would otherwise take the Mul and Sub.
func GemmUpdate(g *graph.Graph) {
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
		if !isOp(mm, ops.MatMulPrim) {
			mm, s = s, mm
		}
		if !isOp(mm, ops.MatMulPrim) || mm.Uses != 1 || s.Meta.Shape.Size() != 1 || s.Meta.DType != tensor.Float32 || !sameMeta(mm.Meta, p.Meta) {
			continue
		}
		if mm.Args[0].Meta.Shape.Rank() != 2 || mm.Args[1].Meta.Shape.Rank() != 2 {
			continue
		}
		at := matmulAttrs(mm)
		toFixed(g, v, matMulUpdateKind, at, []*graph.Value{mm.Args[0], mm.Args[1], p, s})
	}
}
