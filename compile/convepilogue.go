package compile

import (
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// convPoolKind is the fused convolution of ConvEpilogue, an Anchor of
// Conv2D whose fused step is (pooled when ops.ConvEpilogueAttrs.Pool is
// set):
//
//	Anchor(x, w[, b][, s][, t]) = Pool(ReLU((Conv2D(x, w) + b)·s + t))
//
// with each of the bias b, the scale s, the shift t (per channel, [1, O,
// 1, 1]), the ReLU and the max or average pooling optional
// (ops.ConvEpilogueAttrs), for stride-1 float convolutions. Its kernel
// (ops.ConvEpilogueKernel) finishes each output plane from the GEMM's
// result while it is in cache, with the unfused chain's arithmetic. Its VJP
// is the unfused chain's, so a graph differentiated after fusion still gets
// correct gradients.
var convPoolKind = newFixedKind(&fixedKind{
	spec:    AnchorSpec{Op: ops.Conv2DPrim, Precision: tensor.Float32},
	name:    "ConvEpilogue",
	infer:   ops.InferConvEpilogue,
	vjp:     vjpConvEpilogue,
	members: convPoolMembers,
}, ops.ConvEpilogueAttrs{})

// maxPoolReLUGradKind, an Anchor of MaxPool2DGrad reading the pooling's
// input a and the pooled gradient dy (PooledGrad), is
// ReLUGrad(a, MaxPool2DGrad(a, dy)) in one pass (ops.MaxPoolReLUGradKernel),
// for max pooling with the attributes (ops.PoolAttrs) whose windows lie
// inside a: each dy goes to its window's winner where the winner is
// positive.
var maxPoolReLUGradKind = newFixedKind(&fixedKind{
	spec:  AnchorSpec{Op: ops.MaxPoolGradPrim, Precision: tensor.Float32, PooledGrad: true},
	name:  "MaxPoolReLUGrad",
	infer: ops.InferMaxPoolReLUGrad,
	// Linear in dy: its adjoint gathers the masked cotangent from each
	// window's winner.
	vjp: func(attrs any, in []*tensor.Tensor, _, h *tensor.Tensor) []*tensor.Tensor {
		a := in[0]
		return []*tensor.Tensor{nil, core.Apply(ops.MaxPoolGatherPrim, attrs, a, core.Apply(ops.ReluGradPrim, nil, a, h))}
	},
	members: func(any, *graph.Value) []string {
		return []string{ops.MaxPoolGradPrim.Name, ops.ReluGradPrim.Name}
	},
}, ops.PoolAttrs{})

func init() {
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		convPoolKind.register(dt, ops.ConvEpilogueKernel(dt))
		maxPoolReLUGradKind.register(dt, ops.MaxPoolReLUGradKernel(dt))
	}
}

// maxPoolReLUGrad applies the fused pooling-and-ReLU gradient eagerly
// (for the VJPs of the fused convolution gradients).
func maxPoolReLUGrad(p ops.PoolAttrs, act, gp *tensor.Tensor) *tensor.Tensor {
	return core.Apply(Anchor, fixedAnchor(maxPoolReLUGradKind, p), act, gp)
}

// convPoolMembers lists what the fused convolution took in.
func convPoolMembers(fused any, _ *graph.Value) []string {
	a, ok := fused.(ops.ConvEpilogueAttrs)
	if !ok {
		return nil
	}
	add := ops.AddPrim.Name
	names := []string{ops.Conv2DPrim.Name}
	for _, s := range []struct {
		on   bool
		name string
	}{{a.Bias, add}, {a.Scale, ops.MulPrim.Name}, {a.Shift, add}, {a.ReLU, ops.ReluPrim.Name}} {
		if s.on {
			names = append(names, s.name)
		}
	}
	switch {
	case a.Pool != nil && a.AvgPool:
		names = append(names, ops.AvgPoolPrim.Name)
	case a.Pool != nil:
		names = append(names, ops.MaxPoolPrim.Name)
	}
	return names
}

// vjpConvEpilogue differentiates the unfused chain, recomputing its
// intermediates.
func vjpConvEpilogue(attrs any, in []*tensor.Tensor, _, g *tensor.Tensor) []*tensor.Tensor {
	a := attrs.(ops.ConvEpilogueAttrs)
	x, w := in[0], in[1]
	next := 2
	operand := func(on bool) *tensor.Tensor {
		if !on {
			return nil
		}
		next++
		return in[next-1]
	}
	b, s, t := operand(a.Bias), operand(a.Scale), operand(a.Shift)
	// The forward chain: z0 = conv, z1 = z0 + b, z2 = z1·s, z3 = z2 + t,
	// r = ReLU(z3), each step present only if fused.
	z1 := core.Apply(ops.Conv2DPrim, a.Conv, x, w)
	if b != nil {
		z1 = ops.Add(z1, b)
	}
	z3 := z1
	if s != nil {
		z3 = ops.Mul(z3, s)
	}
	if t != nil {
		z3 = ops.Add(z3, t)
	}
	r := z3
	if a.ReLU {
		r = ops.ReLU(z3)
	}
	// And back.
	gr := g
	if p := a.Pool; p != nil {
		if a.AvgPool {
			pa := *p
			pa.Shape = r.Shape().Clone()
			gr = core.Apply(ops.AvgPoolGradPrim, pa, g)
		} else {
			gr = core.Apply(ops.MaxPoolGradPrim, *p, r, g)
		}
	}
	g3 := gr
	if a.ReLU {
		g3 = core.Apply(ops.ReluGradPrim, nil, r, gr)
	}
	perChannel := func(v, like *tensor.Tensor) *tensor.Tensor {
		return ops.Reshape(ops.Sum(v, 0, 2, 3), like.Shape()...)
	}
	var gb, gs, gt *tensor.Tensor
	if t != nil {
		gt = perChannel(g3, t)
	}
	g1 := g3
	if s != nil {
		gs = perChannel(ops.Mul(g3, z1), s)
		g1 = ops.Mul(g3, s)
	}
	if b != nil {
		gb = perChannel(g1, b)
	}
	grads := ops.Conv2DPrim.VJP(a.Conv, in[:2], nil, g1)
	for _, gv := range []*tensor.Tensor{gb, gs, gt} {
		if gv != nil {
			grads = append(grads, gv)
		}
	}
	return grads
}

// ConvEpilogue fuses a stride-1 float convolution with the per-channel bias
// add, scale and shift (an inference BatchNorm), ReLU and max or average
// pooling that consume it into one Anchor (convPoolKind), each optional but
// in that order (the shift only after a scale):
//
//	MaxPool2D(ReLU(Add(Conv2D(x, w), b)))             →  Conv2DBiasReLUPool(x, w, b){bias relu pool}
//	ReLU(Conv2D(x, w))                                 →  Conv2DBiasReLUPool(x, w){relu}
//	MaxPool2D(ReLU(Add(Mul(Add(Conv2D(x, w), b), s), t)))  →  Conv2DBiasReLUPool(x, w, b, s, t){bias scale shift relu pool}
//	AvgPool2D(ReLU(Add(Conv2D(x, w), b)))             →  Conv2DBiasReLUPool(x, w, b){bias relu avgpool}
//
// with b, s and t of shape [1, O, 1, 1] (nn.Conv2d's bias, BatchNorm's
// per-channel scale and shift, either operand order) and pooling windows
// inside the convolution's output. BatchNorm sits between the convolution
// and its ReLU in most CNNs exported from PyTorch; without its scale and
// shift in the epilogue, neither the ReLU nor the pooling would fuse, and
// the convolution's whole output would be written, read back for the
// scale, the shift, the ReLU and the pooling. The scale is applied to the
// GEMM's result, not folded into the weights, so that the fused kernel
// rounds as the unfused chain does. The fused
// kernel finishes each output plane from the GEMM's result while it is in
// cache, so the convolution's output is never written whole and read back
// twice: in LeNet-5's inference that was a pass over the first layer's
// 4.6× larger unpooled output for the ReLU and another for the pooling.
//
// It also fuses the gradient of that chain's tail in training graphs:
//
//	ReLUGrad(a, MaxPool2DGrad(a, dy))  →  Anchor(a, dy){op=MaxPool2DGrad pooledgrad}
//
// which routes each dy to its window's winner only where the winner is
// positive, in one pass instead of a scatter and a masking pass.
//
// Each intermediate must have no other user (a training graph's forward
// ReLU output, read again by the backward pass, is not fused away). The
// last op of a chain is rewritten in place, so it keeps its position and
// its users. The fused kernels do the unfused chain's arithmetic in its
// order, so results are those of PyNative mode.
func ConvEpilogue(g *graph.Graph) {
	g.CountUses()
	only := soleUser(g)
	for _, cv := range g.Values {
		if isOp(cv, ops.ReluGradPrim) {
			fuseMaxPoolReLUGrad(g, cv, only)
			continue
		}
		if !isOp(cv, ops.Conv2DPrim) || !convPoolKind.hasKernel(cv.Meta.DType) || cv.Args[0].Meta.DType != cv.Meta.DType {
			continue
		}
		ca, ok := cv.Attrs.(ops.ConvAttrs)
		if !ok || ca.Stride != [2]int{1, 1} {
			continue
		}
		ea := ops.ConvEpilogueAttrs{Conv: ca}
		args := []*graph.Value{cv.Args[0], cv.Args[1]}
		last := cv
		o := cv.Meta.Shape[1]
		// channel returns the per-channel operand ([1, O, 1, 1]) of u, a
		// binary op p on last, if it is one.
		channel := func(u *graph.Value, p *core.Prim) *graph.Value {
			if u == nil || !isOp(u, p) || len(u.Args) != 2 || !sameMeta(u.Meta, cv.Meta) {
				return nil
			}
			b := u.Args[1]
			if b == last {
				b = u.Args[0]
			}
			if b == last || b.Meta.DType != cv.Meta.DType || !b.Meta.Shape.Equal(tensor.Shape{1, o, 1, 1}) {
				return nil
			}
			return b
		}
		if b := channel(only(last), ops.AddPrim); b != nil {
			ea.Bias, args, last = true, append(args, b), only(last)
		}
		// An inference BatchNorm (ops.BatchNorm): a per-channel scale
		// and shift.
		if s := channel(only(last), ops.MulPrim); s != nil {
			ea.Scale, args, last = true, append(args, s), only(last)
			if t := channel(only(last), ops.AddPrim); t != nil {
				ea.Shift, args, last = true, append(args, t), only(last)
			}
		}
		if u := only(last); u != nil && isOp(u, ops.ReluPrim) && sameMeta(u.Meta, cv.Meta) {
			ea.ReLU, last = true, u
		}
		if u := only(last); u != nil && (isOp(u, ops.MaxPoolPrim) || isOp(u, ops.AvgPoolPrim)) {
			if pa, ok := u.Attrs.(ops.PoolAttrs); ok && ops.PoolFits(pa, cv.Meta.Shape) {
				ea.Pool, ea.AvgPool, last = &pa, isOp(u, ops.AvgPoolPrim), u
			}
		}
		if last == cv {
			continue // a plain convolution is already one kernel
		}
		if ea.Pool == nil && cv.Meta.DType == tensor.Float32 {
			// Without a pooling to finish in cache, the anchor pass
			// does better: its convolution is the shape-chosen engine
			// (depthwise, pointwise, Winograd, tiled over the cores),
			// and its epilogue program runs on each finished tile.
			continue
		}
		toFixed(g, last, convPoolKind, ea, args)
	}
}

// fuseMaxPoolReLUGrad rewrites rg = ReLUGrad(a, MaxPool2DGrad(a, dy)) into
// the fused pooling-and-ReLU gradient (maxPoolReLUGradKind) of (a, dy)
// when the pooling gradient has no other user.
func fuseMaxPoolReLUGrad(g *graph.Graph, rg *graph.Value, only func(*graph.Value) *graph.Value) {
	a, mg := rg.Args[0], rg.Args[1]
	if !isOp(mg, ops.MaxPoolGradPrim) || mg.Args[0] != a || only(mg) != rg || !maxPoolReLUGradKind.hasKernel(a.Meta.DType) || !sameMeta(rg.Meta, a.Meta) {
		return
	}
	pa, ok := mg.Attrs.(ops.PoolAttrs)
	if !ok || !ops.PoolFits(pa, a.Meta.Shape) {
		return
	}
	toFixed(g, rg, maxPoolReLUGradKind, pa, []*graph.Value{a, mg.Args[1]})
}
