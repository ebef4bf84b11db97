package profile

import (
	"github.com/sporeml/spore/compile"
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// The cost model: floating-point operations and bytes moved per run of a
// step, estimated from the shapes the plan was compiled for, as
// torch.profiler's with_flops estimates them (from the operands' shapes,
// for the ops that dominate).
//
//   - GEMM (every MatMul family member: plain, with an epilogue, fused
//     into a weight update, in bfloat16): 2·M·N·K per result matrix, K read
//     off the first operand (its last two dimensions hold M·K elements,
//     transposed or not), plus the epilogue's work.
//   - Convolution (forward and both gradients, and the fused anchor):
//     2·(C/groups)·kh·kw multiply-adds per element of the convolution's
//     output (or output gradient); the anchor's epilogue and pooling add
//     per-element work.
//   - Attention: the two products, 2·L·S·(E + Ev) per batch and head,
//     plus five operations per score for the softmax; its gradient is
//     counted as two forward passes.
//   - Pooling: one operation per window element per result; a pooling
//     gradient one per cell of its input.
//   - Anything else reads its traits: an elementwise op (a fused loop
//     included) costs Traits.Cost per result element (at least one), a
//     reduction one per element read. Other ops (copies, transposes,
//     concatenations, gathers) move data and count no arithmetic: their
//     Cost is a price for the fusion pass, not a count of operations.
//
// Bytes moved are the operands' and results' sizes: what a step must
// read and write at least once, ignoring re-reads from cache.

// flopRule estimates one run of a value's step.
type flopRule func(v *graph.Value) int64

// flopRules holds the ops whose work is not a fixed count per result
// element, matched by handle.
var flopRules = map[*core.Prim]flopRule{
	ops.MatMulPrim:                        gemmFLOPs(0),
	ops.Conv2DPrim:                        convFLOPs,
	ops.Conv2DBackpropInputPrim:           convInputGradFLOPs,
	ops.Conv2DBackpropFilterPrim:          convFilterGradFLOPs,
	ops.ScaledDotProductAttentionPrim:     attentionFLOPs(1),
	ops.ScaledDotProductAttentionGradPrim: attentionFLOPs(2),
	ops.MaxPoolPrim:                       poolFLOPs,
	ops.AvgPoolPrim:                       poolFLOPs,
}

// FLOPs estimates the floating-point operations of one run of v's step.
func FLOPs(v *graph.Value) int64 {
	if v == nil || v.Kind != graph.KindOp {
		return 0
	}
	if v.Prim == compile.Anchor {
		return anchorFLOPs(v)
	}
	if r, ok := flopRules[v.Prim]; ok {
		return r(v)
	}
	tr := v.Prim.Traits
	switch {
	case tr.Elementwise:
		return resultElems(v) * int64(max(tr.Cost, 1))
	case tr.Reduction:
		if len(v.Args) == 0 {
			return 0
		}
		return elems(v.Args[0].Meta.Shape)
	}
	return 0
}

// Bytes is the size of v's operands and results: the least one run of
// its step reads and writes.
func Bytes(v *graph.Value) int64 {
	if v == nil || v.Kind != graph.KindOp {
		return 0
	}
	var n int64
	for _, a := range v.Args {
		n += metaBytes(a.Meta)
	}
	if v.IsMulti() {
		for _, m := range v.Metas {
			n += metaBytes(m)
		}
		return n
	}
	return n + metaBytes(v.Meta)
}

func metaBytes(m tensor.Meta) int64 { return elems(m.Shape) * int64(m.DType.Size()) }

func elems(s tensor.Shape) int64 {
	n := int64(1)
	for _, d := range s {
		n *= int64(d)
	}
	return n
}

// resultElems counts v's result elements, over all results.
func resultElems(v *graph.Value) int64 {
	if v.IsMulti() {
		var n int64
		for _, m := range v.Metas {
			n += elems(m.Shape)
		}
		return n
	}
	return elems(v.Meta.Shape)
}

// gemmFLOPs is the rule of a GEMM whose result is op(a)·op(b) (a and b its
// first two operands), plus an operation per result element for each op
// fused after the product (compile.Absorbed), or perElem where the fused
// op does not list them.
func gemmFLOPs(perElem int64) flopRule {
	return func(v *graph.Value) int64 {
		if len(v.Args) < 2 || v.IsMulti() {
			return 0
		}
		out, a := v.Meta.Shape, v.Args[0].Meta.Shape
		if len(out) < 2 || len(a) < 2 || out[len(out)-2] == 0 {
			return 0
		}
		m := int64(out[len(out)-2])
		k := int64(a[len(a)-2]) * int64(a[len(a)-1]) / m
		after := perElem
		if abs := compile.Absorbed(v); len(abs) > 1 {
			after = int64(len(abs) - 1) // one per op fused after the product
		}
		return elems(out) * (2*k + after)
	}
}

// convInner is the multiply-adds per output element of a convolution
// with weight w [Cout, C/groups, kh, kw].
func convInner(w tensor.Shape) int64 {
	if len(w) < 2 || w[0] == 0 {
		return 0
	}
	return elems(w) / int64(w[0])
}

// convFLOPs: Conv2D(x, w).
func convFLOPs(v *graph.Value) int64 {
	if len(v.Args) < 2 {
		return 0
	}
	return 2 * elems(v.Meta.Shape) * convInner(v.Args[1].Meta.Shape)
}

// convInputGradFLOPs: Conv2DBackpropInput(dy, w) does the forward's work,
// counted over dy.
func convInputGradFLOPs(v *graph.Value) int64 {
	if len(v.Args) < 2 {
		return 0
	}
	return 2 * elems(v.Args[0].Meta.Shape) * convInner(v.Args[1].Meta.Shape)
}

// convFilterGradFLOPs: Conv2DBackpropFilter(x, dy), whose result is the
// weight's gradient.
func convFilterGradFLOPs(v *graph.Value) int64 {
	if len(v.Args) < 2 {
		return 0
	}
	return 2 * elems(v.Args[1].Meta.Shape) * convInner(v.Meta.Shape)
}

// convInputGradPoolFLOPs: Conv2DBackpropInputPool(act, gp, w), the input
// gradient of a convolution whose output act was ReLU'd and max-pooled:
// the pooling's gradient over act, then the convolution's over it.
func convInputGradPoolFLOPs(v *graph.Value) int64 {
	if len(v.Args) < 3 {
		return 0
	}
	dy := elems(v.Args[0].Meta.Shape)
	return dy + 2*dy*convInner(v.Args[2].Meta.Shape)
}

// convFilterGradPoolFLOPs: Conv2DBackpropFilterPool(x, act, gp), the
// weight gradient of the same chain.
func convFilterGradPoolFLOPs(v *graph.Value) int64 {
	if len(v.Args) < 2 {
		return 0
	}
	dy := elems(v.Args[1].Meta.Shape)
	return dy + 2*dy*convInner(v.Meta.Shape)
}

// firstArgFLOPs is one operation per element of the first operand (a
// pooling gradient's comparison per cell).
func firstArgFLOPs(v *graph.Value) int64 {
	if len(v.Args) == 0 {
		return 0
	}
	return elems(v.Args[0].Meta.Shape)
}

// convEpilogueFLOPs: the pooled convolution anchor (x, w, ...): the
// convolution over its own output size (before any pooling), one
// operation per element for each of bias, scale, shift and ReLU, and the
// pooling's windows.
func convEpilogueFLOPs(v *graph.Value) int64 {
	a, ok := v.Attrs.(ops.ConvEpilogueAttrs)
	if !ok || len(v.Args) < 2 {
		return 0
	}
	x, w := v.Args[0].Meta.Shape, v.Args[1].Meta.Shape
	if len(x) != 4 || len(w) != 4 {
		return 0
	}
	c := a.Conv
	size := func(in, k, lo, hi, d, s int) int64 {
		if s <= 0 {
			s = 1
		}
		d = max(d, 1)
		return int64(max((in+lo+hi-d*(k-1)-1)/s+1, 0))
	}
	ho := size(x[2], w[2], c.Pads[0], c.Pads[1], c.Dilation[0], c.Stride[0])
	wo := size(x[3], w[3], c.Pads[2], c.Pads[3], c.Dilation[1], c.Stride[1])
	convOut := int64(x[0]) * int64(w[0]) * ho * wo
	n := 2 * convOut * convInner(w)
	for _, on := range []bool{a.Bias, a.Scale, a.Shift, a.ReLU} {
		if on {
			n += convOut
		}
	}
	if a.Pool != nil {
		n += elems(v.Meta.Shape) * int64(a.Pool.Kernel[0]) * int64(a.Pool.Kernel[1])
	}
	return n
}

// attentionFLOPs: ScaledDotProductAttention(q [..., L, E], k [..., S, E],
// v [..., S, Ev], ...), passes times the forward's work.
func attentionFLOPs(passes int64) flopRule {
	return func(v *graph.Value) int64 {
		if len(v.Args) < 3 {
			return 0
		}
		q, k, val := v.Args[0].Meta.Shape, v.Args[1].Meta.Shape, v.Args[2].Meta.Shape
		if len(q) < 2 || len(k) < 2 || len(val) < 1 {
			return 0
		}
		l, e := int64(q[len(q)-2]), int64(q[len(q)-1])
		s, ev := int64(k[len(k)-2]), int64(val[len(val)-1])
		if l*e == 0 {
			return 0
		}
		batch := elems(q) / (l * e)
		return passes * batch * l * s * (2*e + 2*ev + 5)
	}
}

// poolFLOPs: one operation per window element per result.
func poolFLOPs(v *graph.Value) int64 {
	a, ok := v.Attrs.(ops.PoolAttrs)
	if !ok {
		return elems(v.Meta.Shape)
	}
	return elems(v.Meta.Shape) * int64(a.Kernel[0]) * int64(a.Kernel[1])
}

// anchorFLOPs: compile.Anchor, a GEMM or convolution finished by an
// epilogue program (the anchor op's work over its own operands, then one
// operation per element for each epilogue member) or by a fixed fused
// step (whose kernel's operands and attributes the Anchor carries: the
// rule of that step's kernel).
func anchorFLOPs(v *graph.Value) int64 {
	a, ok := v.Attrs.(*compile.AnchorAttrs)
	if !ok {
		return 0
	}
	if a.Fused != nil {
		w := &graph.Value{Kind: graph.KindOp, Prim: v.Prim, Attrs: a.Fused, Args: v.Args, Meta: v.Meta}
		switch {
		case a.Op == ops.MatMulPrim:
			return gemmFLOPs(2)(w)
		case a.Op == ops.Conv2DPrim:
			return convEpilogueFLOPs(w)
		case a.Op == ops.Conv2DBackpropInputPrim && a.PooledGrad:
			return convInputGradPoolFLOPs(w)
		case a.Op == ops.Conv2DBackpropFilterPrim && a.PooledGrad:
			return convFilterGradPoolFLOPs(w)
		}
		return firstArgFLOPs(w)
	}
	if a.NumOpArgs > len(v.Args) {
		return 0
	}
	w := &graph.Value{Kind: graph.KindOp, Prim: a.Op, Attrs: a.OpAttrs, Args: v.Args[:a.NumOpArgs],
		Meta: tensor.Meta{Shape: a.OpShape, DType: tensor.Float32}}
	return FLOPs(w) + elems(a.OpShape)*int64(max(len(a.Members)-1, 0))
}
