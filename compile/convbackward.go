package compile

import (
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// convInputPoolKind, an Anchor of Conv2DBackpropInput reading the pooled
// gradient (PooledGrad) with operands (act, gp, w), is
// Conv2DBackpropInput(PoolReLUGrad(act, gp), w) in one kernel
// (ops.ConvInputGradPoolKernel), and convFilterPoolKind, of
// Conv2DBackpropFilter with operands (x, act, gp), is
// Conv2DBackpropFilter(x, PoolReLUGrad(act, gp)), where PoolReLUGrad is
// maxPoolReLUGradKind's step; both with
// ops.ConvGradPoolAttrs, for stride-1 convolutions and max poolings whose
// windows do not overlap: each image's output gradient is built from the
// pooled gradient at the pitch the convolution's gradient reads it, so the
// full-size gradient is never written. Their VJPs are the unfused chain's.
var (
	convInputPoolKind = newFixedKind(&fixedKind{
		spec:  AnchorSpec{Op: ops.Conv2DBackpropInputPrim, Precision: tensor.Float32, PooledGrad: true},
		name:  "ConvInputGradPool",
		infer: ops.InferConvInputGradPool,
		vjp: func(attrs any, in []*tensor.Tensor, _, h *tensor.Tensor) []*tensor.Tensor {
			a := attrs.(ops.ConvGradPoolAttrs)
			act, gp, w := in[0], in[1], in[2]
			dy := maxPoolReLUGrad(a.Pool, act, gp)
			g := ops.Conv2DBackpropInputPrim.VJP(a.Grad, []*tensor.Tensor{dy, w}, nil, h)
			return []*tensor.Tensor{nil, poolGradVJP(a.Pool, act, gp, dy, g[0]), g[1]}
		},
		members: func(any, *graph.Value) []string {
			return []string{ops.MaxPoolGradPrim.Name, ops.ReluGradPrim.Name, ops.Conv2DBackpropInputPrim.Name}
		},
	}, ops.ConvGradPoolAttrs{})
	convFilterPoolKind = newFixedKind(&fixedKind{
		spec:  AnchorSpec{Op: ops.Conv2DBackpropFilterPrim, Precision: tensor.Float32, PooledGrad: true},
		name:  "ConvFilterGradPool",
		infer: ops.InferConvFilterGradPool,
		vjp: func(attrs any, in []*tensor.Tensor, _, h *tensor.Tensor) []*tensor.Tensor {
			a := attrs.(ops.ConvGradPoolAttrs)
			x, act, gp := in[0], in[1], in[2]
			dy := maxPoolReLUGrad(a.Pool, act, gp)
			g := ops.Conv2DBackpropFilterPrim.VJP(a.Grad, []*tensor.Tensor{x, dy}, nil, h)
			return []*tensor.Tensor{g[0], nil, poolGradVJP(a.Pool, act, gp, dy, g[1])}
		},
		members: func(any, *graph.Value) []string {
			return []string{ops.MaxPoolGradPrim.Name, ops.ReluGradPrim.Name, ops.Conv2DBackpropFilterPrim.Name}
		},
	}, ops.ConvGradPoolAttrs{})
)

// poolGradVJP carries the cotangent h of dy = PoolReLUGrad(act, gp)
// back to gp (nil for a nil h).
func poolGradVJP(p ops.PoolAttrs, act, gp, dy, h *tensor.Tensor) *tensor.Tensor {
	if h == nil {
		return nil
	}
	return maxPoolReLUGradKind.vjp(p, []*tensor.Tensor{act, gp}, dy, h)[1]
}

func init() {
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		convInputPoolKind.register(dt, ops.ConvInputGradPoolKernel(dt))
		convFilterPoolKind.register(dt, ops.ConvFilterGradPoolKernel(dt))
	}
}

// ConvBackward moves the gradient of a ReLU and a max pooling into the
// gradients of the stride-1 convolution before them, in training graphs:
//
//	dy = Anchor(act, gp){op=MaxPool2DGrad pooledgrad}
//	Conv2DBackpropInput(dy, w)   →  Anchor(act, gp, w){op=Conv2DBackpropInput pooledgrad}
//	Conv2DBackpropFilter(x, dy)  →  Anchor(x, act, gp){op=Conv2DBackpropFilter pooledgrad}
//
// when every user of dy is one of these two and the pooling's windows do
// not overlap. The pooled ReLU gradient ConvEpilogue made is then dead.
// Unfused, the pooling gradient writes the convolution's whole output
// gradient, mostly zeros, and each convolution gradient reads it back to
// copy it at its padded planes' pitch; fused, each image's gradient is
// built at that pitch while the image is in cache. The values the
// convolution gradients see are the same bit for bit (see
// conv.MaxPoolReLUGradPitched), so results are those of PyNative mode.
func ConvBackward(g *graph.Graph) {
	g.CountUses()
	us := users(g)
	for _, mg := range g.Values {
		fused, isPG := fixedOf(mg, maxPoolReLUGradKind)
		if !isPG || len(us[mg.ID]) == 0 || mg.Uses != len(us[mg.ID]) {
			continue // also used as an output or assigned
		}
		pa, ok := fused.(ops.PoolAttrs)
		act, gp := mg.Args[0], mg.Args[1]
		if !ok || !ops.PoolGradFuses(pa, act.Meta.Shape) {
			continue
		}
		fuses := true
		for _, u := range us[mg.ID] {
			fuses = fuses && convGradOf(u, mg)
		}
		if !fuses {
			continue
		}
		for _, u := range us[mg.ID] {
			ga := u.Attrs.(ops.ConvGradAttrs)
			attrs := ops.ConvGradPoolAttrs{Grad: ga, Pool: pa}
			if isOp(u, ops.Conv2DBackpropInputPrim) {
				toFixed(g, u, convInputPoolKind, attrs, []*graph.Value{act, gp, u.Args[1]})
			} else {
				toFixed(g, u, convFilterPoolKind, attrs, []*graph.Value{u.Args[0], act, gp})
			}
		}
	}
}

// convGradOf reports whether u is a stride-1 convolution gradient that
// takes dy as its output gradient, and only there.
func convGradOf(u, dy *graph.Value) bool {
	ga, ok := u.Attrs.(ops.ConvGradAttrs)
	if !ok || ga.Stride != [2]int{1, 1} || len(u.Args) != 2 || u.Meta.DType != dy.Meta.DType {
		return false
	}
	switch {
	case isOp(u, ops.Conv2DBackpropInputPrim):
		return u.Args[0] == dy && u.Args[1] != dy
	case isOp(u, ops.Conv2DBackpropFilterPrim):
		return u.Args[1] == dy && u.Args[0] != dy
	}
	return false
}
