package ops

import (
	"fmt"
	"math"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/kernels/norm"
	"github.com/sporeml/spore/tensor"
)

// LayerNormAttrs are the attributes of the layer-normalisation
// primitives: the first normalised axis and the epsilon added to the
// variance.
type LayerNormAttrs struct {
	Begin int
	Eps   float64
}

// String prints every attribute, for IR dumps and CSE keys.
func (a LayerNormAttrs) String() string { return fmt.Sprintf("begin=%d eps=%v", a.Begin, a.Eps) }

// The layer-normalisation primitives: the fused forward pass (x, gamma,
// beta → y) and its gradient ((x, gamma, dy) → dx, dgamma, dbeta), which
// recomputes the statistics from x rather than keeping them.
var LayerNormPrim, LayerNormGradPrim *core.Prim

// lnCheck validates LayerNorm's operands x and gamma (and beta when
// given) against a, panicking with an error naming op.
func lnCheck(op string, a LayerNormAttrs, x, gamma, beta *tensor.Tensor) {
	if !x.DType().IsFloat() {
		core.Panicf(op, "want a float x, got %v %v", x.Shape(), x.DType())
	}
	if a.Begin < 0 || a.Begin > x.Rank() {
		core.Panicf(op, "first normalised axis %d out of range for x %v", a.Begin, x.Shape())
	}
	if !(a.Eps >= 0) || math.IsInf(a.Eps, 0) {
		core.Panicf(op, "eps %v is not a finite non-negative number", a.Eps)
	}
	ps := x.Shape()[a.Begin:]
	for _, p := range []*tensor.Tensor{gamma, beta} {
		if p != nil && (!p.Shape().Equal(ps) || p.DType() != x.DType()) {
			core.Panicf(op, "gamma and beta must be %v %v (x %v from axis %d), got %v %v", ps, x.DType(), x.Shape(), a.Begin, p.Shape(), p.DType())
		}
	}
}

func init() {
	LayerNormPrim = core.Define(&core.Prim{
		Name:   "LayerNorm",
		Traits: core.Traits{Cost: 8},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			if len(in) != 3 {
				core.Panicf("LayerNorm", "got %d operands, want x, gamma and beta", len(in))
			}
			lnCheck("LayerNorm", attrs.(LayerNormAttrs), in[0], in[1], in[2])
			return in[0].Meta()
		},
		VJP:   layerNormVJP,
		JVP:   layerNormJVP,
		Batch: layerNormBatch,
	})
	LayerNormGradPrim = core.Define(&core.Prim{
		Name:   "LayerNormGrad",
		Traits: core.Traits{Cost: 12},
		InferN: func(attrs any, in []*tensor.Tensor) []tensor.Meta {
			const op = "LayerNormGrad"
			if len(in) != 3 {
				core.Panicf(op, "got %d operands, want x, gamma and dy", len(in))
			}
			x, gamma, dy := in[0], in[1], in[2]
			lnCheck(op, attrs.(LayerNormAttrs), x, gamma, nil)
			if !dy.Shape().Equal(x.Shape()) || dy.DType() != x.DType() {
				core.Panicf(op, "dy is %v %v, want x's %v %v", dy.Shape(), dy.DType(), x.Shape(), x.DType())
			}
			return []tensor.Meta{x.Meta(), gamma.Meta(), gamma.Meta()}
		},
		VJPN:   layerNormGradVJP,
		JVPN:   layerNormGradJVP,
		BatchN: layerNormGradBatch,
	})
	registerFloats(LayerNormPrim, layerNormKernel(norm.Float32), layerNormKernel(norm.Float64))
	LayerNormGradPrim.RegisterN(core.Float32, core.CPU, layerNormGradKernel(norm.Float32))
	LayerNormGradPrim.RegisterN(core.Float64, core.CPU, layerNormGradKernel(norm.Float64))
}

// lnRows returns the number of rows and their length for x normalised
// from axis begin.
func lnRows(x *tensor.Tensor, begin int) (rows, d int) {
	s := x.Shape()
	return s[:begin].Size(), s[begin:].Size()
}

// layerNormKernel is the forward primitive's kernel for T.
func layerNormKernel[T float32 | float64](im *norm.Impl[T]) core.KernelFunc {
	return func(attrs any, in []*tensor.Tensor, out *tensor.Tensor) {
		a := attrs.(LayerNormAttrs)
		rows, d := lnRows(in[0], a.Begin)
		im.LayerNorm(rows, d, a.Eps, in[0].Data().([]T), in[1].Data().([]T), in[2].Data().([]T), out.Data().([]T))
	}
}

// layerNormGradKernel is the gradient primitive's kernel for T.
func layerNormGradKernel[T float32 | float64](im *norm.Impl[T]) core.KernelNFunc {
	return func(attrs any, in []*tensor.Tensor, outs []*tensor.Tensor) {
		a := attrs.(LayerNormAttrs)
		rows, d := lnRows(in[0], a.Begin)
		dt := func(t *tensor.Tensor) []T { return t.Data().([]T) }
		im.LayerNormGrad(rows, d, a.Eps, dt(in[0]), dt(in[1]), dt(in[2]), dt(outs[0]), dt(outs[1]), dt(outs[2]))
	}
}

// LayerNorm normalises x over the axes from axis (MindSpore's
// begin_norm_axis; negative counts from the end) to the last, to zero mean
// and unit variance (the biased variance, with eps added), then scales by
// gamma and shifts by beta, both shaped like those axes (x.Shape()[axis:]).
//
// It is one primitive with a fused kernel that takes each row's
// statistics and normalises it in one pass; its gradient is another,
// which recomputes the statistics instead of storing them. Gradients of
// gradients and forward-mode derivatives are formulas written with
// ordinary ops.
func LayerNorm(x, gamma, beta *tensor.Tensor, axis int, eps float64) *tensor.Tensor {
	const op = "LayerNorm"
	checkFloat(op, x)
	begin := core.NormAxis(op, axis, x.Rank())
	a := LayerNormAttrs{Begin: begin, Eps: eps}
	lnCheck(op, a, x, gamma, beta)
	return core.Apply(LayerNormPrim, a, x, gamma, beta)
}

// axesFrom returns the axes [from, rank).
func axesFrom(from, rank int) []int {
	axes := make([]int, 0, rank-from)
	for i := from; i < rank; i++ {
		axes = append(axes, i)
	}
	return axes
}

// lnStats returns x̂ = xc·r, r = 1/√(var + eps) and xc = x − mean over
// the axes from begin, with the biased variance, written with ordinary
// ops.
func lnStats(x *tensor.Tensor, begin int, eps float64) (xhat, r, xc *tensor.Tensor) {
	axes := axesFrom(begin, x.Rank())
	xc = Sub(x, meanKeep(x, axes))
	v := meanKeep(Mul(xc, xc), axes)
	r = Rsqrt(Add(v, ScalarLike(v, eps)))
	return Mul(xc, r), r, xc
}

// lnSumRows sums t over the axes [lead, begin): the rows whose parameter
// gradients add up (lead is 1 under a batching rule, whose axis 0 is the
// batch).
func lnSumRows(t *tensor.Tensor, lead, begin int) *tensor.Tensor {
	if begin == lead {
		return t
	}
	axes := make([]int, 0, begin-lead)
	for i := lead; i < begin; i++ {
		axes = append(axes, i)
	}
	return Sum(t, axes...)
}

// layerNormVJP is the forward primitive's gradient: the fused gradient
// primitive.
func layerNormVJP(attrs any, in []*tensor.Tensor, _, g *tensor.Tensor) []*tensor.Tensor {
	r := core.ApplyN(LayerNormGradPrim, attrs, in[0], in[1], g)
	return []*tensor.Tensor{r[0], r[1], r[2]}
}

// layerNormGradOps is the gradient primitive written with ordinary ops,
// for the batching rule: with g = dy∘gamma, per row
//
//	dx = r·(g − mean(g) − x̂·mean(g∘x̂)),  dgamma = Σ dy∘x̂,  dbeta = Σ dy,
//
// the sums over the axes [lead, begin).
func layerNormGradOps(a LayerNormAttrs, lead int, x, gamma, dy *tensor.Tensor) (dx, dgamma, dbeta *tensor.Tensor) {
	axes := axesFrom(a.Begin, x.Rank())
	xhat, r, _ := lnStats(x, a.Begin, a.Eps)
	g := Mul(dy, gamma)
	mg := meanKeep(g, axes)
	c := meanKeep(Mul(g, xhat), axes)
	dx = Mul(r, Sub(Sub(g, mg), Mul(xhat, c)))
	return dx, lnSumRows(Mul(dy, xhat), lead, a.Begin), lnSumRows(dy, lead, a.Begin)
}

// layerNormJVP is the forward primitive's forward-mode rule:
//
//	tx̂ = r·(tc − x̂·mean(x̂∘tc)), tc = tx − mean(tx),
//	ty = tx̂∘gamma + x̂∘tgamma + tbeta.
func layerNormJVP(attrs any, in, t []*tensor.Tensor, _ *tensor.Tensor) *tensor.Tensor {
	a := attrs.(LayerNormAttrs)
	x, gamma := in[0], in[1]
	xhat, r, _ := lnStats(x, a.Begin, a.Eps)
	var ty *tensor.Tensor
	if t[0] != nil {
		ty = Mul(lnTangentXhat(a, xhat, r, t[0]), gamma)
	}
	if t[1] != nil {
		ty = tadd(ty, Mul(xhat, t[1]))
	}
	if t[2] != nil {
		ty = tadd(ty, tshape(t[2], x.Shape()))
	}
	return tshape(ty, x.Shape())
}

// lnTangentXhat returns the tangent of x̂ along tx.
func lnTangentXhat(a LayerNormAttrs, xhat, r, tx *tensor.Tensor) *tensor.Tensor {
	axes := axesFrom(a.Begin, xhat.Rank())
	tc := Sub(tx, meanKeep(tx, axes))
	return Mul(r, Sub(tc, Mul(xhat, meanKeep(Mul(xhat, tc), axes))))
}

// layerNormBatch is the forward primitive's batching rule: with only x
// batched, the same primitive from one axis further; with batched
// parameters, the ordinary ops.
func layerNormBatch(attrs any, in []*tensor.Tensor, dims []int) (*tensor.Tensor, int) {
	a := attrs.(LayerNormAttrs)
	a.Begin++
	x := front(in[0], dims[0], batchSize(in, dims))
	if dims[1] < 0 && dims[2] < 0 {
		return core.Apply(LayerNormPrim, a, x, in[1], in[2]), 0
	}
	xhat, _, _ := lnStats(x, a.Begin, a.Eps)
	g := alignBatched([]*tensor.Tensor{xhat, in[1]}, []int{0, dims[1]})
	y := Mul(g[0], g[1])
	b := alignBatched([]*tensor.Tensor{y, in[2]}, []int{0, dims[2]})
	return Add(b[0], b[1]), 0
}

// layerNormGradBatch is the gradient primitive's batching rule: the
// ordinary ops, each example's parameter gradients summed over its own
// rows.
func layerNormGradBatch(attrs any, in []*tensor.Tensor, dims []int) ([]*tensor.Tensor, []int) {
	a := attrs.(LayerNormAttrs)
	a.Begin++
	n := batchSize(in, dims)
	x, dy := front(in[0], dims[0], n), front(in[2], dims[2], n)
	gamma := alignBatched([]*tensor.Tensor{x, in[1]}, []int{0, dims[1]})[1]
	dx, dg, db := layerNormGradOps(a, 1, x, gamma, dy)
	return []*tensor.Tensor{dx, dg, db}, []int{0, 0, 0}
}

// layerNormGradVJP differentiates the gradient primitive (gradients of
// gradients). With g = dy∘gamma, a = mean(g), c = mean(g∘x̂) per row, the
// primitive computes dx = r·(g − a − c·x̂), dgamma = Σ dy∘x̂ and
// dbeta = Σ dy; this rule carries the cotangents u (of dx), vg and vb back
// through each of them, then through x̂ = (x − mean)·r and
// r = (mean((x − mean)²) + eps)^(−1/2).
func layerNormGradVJP(attrs any, in, _, cs []*tensor.Tensor) []*tensor.Tensor {
	a := attrs.(LayerNormAttrs)
	x, gamma, dy := in[0], in[1], in[2]
	u, vg, vb := cs[0], cs[1], cs[2]
	axes := axesFrom(a.Begin, x.Rank())
	mean := func(t *tensor.Tensor) *tensor.Tensor { return meanKeep(t, axes) }
	xhat, r, xc := lnStats(x, a.Begin, a.Eps)
	g := Mul(dy, gamma)
	c := mean(Mul(g, xhat))
	// dx = r·(g − a − c·x̂).
	inner := Sub(Sub(g, mean(g)), Mul(c, xhat))
	gr := SumKeepDims(Mul(u, inner), axes...)
	w := Mul(r, u)
	s2 := mean(Mul(w, xhat))
	gg := Sub(Sub(w, mean(w)), Mul(s2, xhat))
	gxhat := Neg(Add(Mul(c, w), Mul(s2, g)))
	// dgamma = Σ dy∘x̂ and dbeta = Σ dy.
	gxhat = Add(gxhat, Mul(dy, vg))
	gdy := Add(Add(Mul(gg, gamma), Mul(vg, xhat)), tshape(vb, x.Shape()))
	ggamma := lnSumRows(Mul(gg, dy), 0, a.Begin)
	// x̂ = xc·r, r = (v + eps)^(−1/2), v = mean(xc²), xc = x − mean(x).
	grTotal := Add(gr, SumKeepDims(Mul(gxhat, xc), axes...))
	gv := Mul(Mul(ScalarLike(r, -0.5), Mul(Mul(r, r), r)), grTotal)
	d := x.Shape()[a.Begin:].Size()
	gxc := Add(Mul(gxhat, r), Mul(Mul(gv, ScalarLike(gv, 2/float64(max(1, d)))), xc))
	gx := Sub(gxc, mean(gxc))
	return []*tensor.Tensor{gx, ggamma, gdy}
}

// layerNormGradJVP is the gradient primitive's forward-mode rule: the
// tangent of each line of layerNormGradOps, in order.
func layerNormGradJVP(attrs any, in, t, _ []*tensor.Tensor) []*tensor.Tensor {
	a := attrs.(LayerNormAttrs)
	x, gamma, dy := in[0], in[1], in[2]
	tx, tgamma, tdy := orZeros(t[0], x), orZeros(t[1], gamma), orZeros(t[2], dy)
	axes := axesFrom(a.Begin, x.Rank())
	mean := func(t *tensor.Tensor) *tensor.Tensor { return meanKeep(t, axes) }
	xhat, r, _ := lnStats(x, a.Begin, a.Eps)
	txhat := lnTangentXhat(a, xhat, r, tx)
	// tr = −r²·mean(x̂∘(tx − mean(tx))).
	tr := Neg(Mul(Mul(r, r), mean(Mul(xhat, Sub(tx, mean(tx))))))
	g := Mul(dy, gamma)
	tg := Add(Mul(tdy, gamma), Mul(dy, tgamma))
	c := mean(Mul(g, xhat))
	tc := mean(Add(Mul(tg, xhat), Mul(g, txhat)))
	inner := Sub(Sub(g, mean(g)), Mul(c, xhat))
	tinner := Sub(Sub(tg, mean(tg)), Add(Mul(tc, xhat), Mul(c, txhat)))
	tdx := Add(Mul(tr, inner), Mul(r, tinner))
	tdgamma := lnSumRows(Add(Mul(tdy, xhat), Mul(dy, txhat)), 0, a.Begin)
	tdbeta := lnSumRows(tdy, 0, a.Begin)
	return []*tensor.Tensor{tdx, tdgamma, tdbeta}
}
