package optim

import (
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// AdamConfig configures Adam and AdamW. Zero Beta1, Beta2 and Eps take
// the defaults 0.9, 0.999 and 1e-8.
type AdamConfig struct {
	Common
	// Beta1 and Beta2 are the decay rates of the first and second moments.
	Beta1, Beta2 float64
	// Eps keeps the denominator away from zero.
	Eps float64
}

func (c *AdamConfig) defaults(op string) {
	if c.Beta1 == 0 {
		c.Beta1 = 0.9
	}
	if c.Beta2 == 0 {
		c.Beta2 = 0.999
	}
	if c.Eps == 0 {
		c.Eps = 1e-8
	}
	if c.Beta1 < 0 || c.Beta1 >= 1 || c.Beta2 < 0 || c.Beta2 >= 1 {
		core.Panicf(op, "betas (%v, %v) must be in [0, 1)", c.Beta1, c.Beta2)
	}
	if c.Eps < 0 {
		core.Panicf(op, "eps %v is negative", c.Eps)
	}
}

// Adam is MindSpore's nn.Adam (Kingma & Ba, with the bias correction
// folded into the step size). For step t = 1, 2, ..., gradient g, learning
// rate η and weight decay λ (an L2 penalty, as in MindSpore and PyTorch):
//
//	g ← g + λ·p
//	m ← β₁·m + (1−β₁)·g
//	v ← β₂·v + (1−β₂)·g²
//	p ← p − η·√(1−β₂ᵗ)/(1−β₁ᵗ) · m/(√v + ε)
//
// This is MindSpore's ApplyAdam: ε is added to √v before the bias
// correction, where PyTorch adds it to √v̂ after; the two differ only
// while √v is comparable to ε. The moments are the state
// "moment1.<name>" and "moment2.<name>"; t comes from "global_step", so
// the bias corrections are computed inside the step (βᵗ with Pow), also
// in a compiled graph. Moment entries that fall below the smallest normal
// float (2⁻¹²⁶ in float32) are stored as zero, as under PyTorch's
// set_flush_denormal, because subnormal arithmetic is slow on x86; at the
// default ε the update does not change (√v that small is rounded away
// against ε), only an ε below about 1e-19 would see it.
type Adam struct {
	base
	cfg    AdamConfig
	m, v   []*tensor.Tensor
	decoup bool
}

// NewAdam returns an Adam optimiser (default rate 1e-3) over params (or
// over cfg.Groups' params when params is nil).
func NewAdam(params []*tensor.Tensor, cfg AdamConfig) *Adam {
	const op = "optim.Adam"
	cfg.defaults(op)
	a := &Adam{base: newBase(op, params, cfg.Common, 1e-3), cfg: cfg}
	a.m = a.slots("moment1")
	a.v = a.slots("moment2")
	return a
}

// AdamW is Adam with decoupled weight decay (Loshchilov & Hutter), as
// PyTorch's torch.optim.AdamW and mindspore.experimental.optim.AdamW:
//
//	p ← p·(1 − η·λ)
//	m ← β₁·m + (1−β₁)·g
//	v ← β₂·v + (1−β₂)·g²
//	p ← p − η/(1−β₁ᵗ) · m/(√v/√(1−β₂ᵗ) + ε)
//
// MindSpore's older nn.AdamWeightDecay differs: it applies no bias
// correction. The state slots are named as Adam's. NewAdamW's default
// weight decay is 0.01 when cfg.WeightDecay is 0 and no group sets one;
// pass groups with optim.Decay(0) to turn it off for some parameters.
type AdamW = Adam

// NewAdamW returns an AdamW optimiser (default rate 1e-3, weight decay
// 1e-2) over params (or over cfg.Groups' params when params is nil).
func NewAdamW(params []*tensor.Tensor, cfg AdamConfig) *AdamW {
	const op = "optim.AdamW"
	cfg.defaults(op)
	if cfg.WeightDecay == 0 {
		cfg.WeightDecay = 1e-2
	}
	a := &Adam{base: newBase(op, params, cfg.Common, 1e-3), cfg: cfg, decoup: true}
	a.m = a.slots("moment1")
	a.v = a.slots("moment2")
	return a
}

// Step applies one Adam (or AdamW) update.
func (a *Adam) Step(grads []*tensor.Tensor) { a.run(grads, a.step) }

func (a *Adam) step(grads []*tensor.Tensor) {
	st := a.begin(grads)
	b1, b2 := a.cfg.Beta1, a.cfg.Beta2
	t := ops.AddScalar(st.t, 1)
	bc1 := ops.SubScalar(ops.Neg(ops.Pow(scalarLike(t, b1), t)), -1) // 1 − β₁ᵗ
	bc2 := ops.SubScalar(ops.Neg(ops.Pow(scalarLike(t, b2), t)), -1) // 1 − β₂ᵗ
	var scale, sqrtBC2 *tensor.Tensor
	if a.decoup {
		sqrtBC2 = ops.Sqrt(bc2)
	} else {
		scale = ops.Div(ops.Sqrt(bc2), bc1)
	}
	for i, p := range a.params {
		g := grads[i]
		if g == nil {
			continue
		}
		dt := p.DType()
		lr := a.lrFor(st, i)
		wd := a.wd[i]
		var w *tensor.Tensor = p
		if wd != 0 {
			if a.decoup {
				// p·(1 − η·λ)
				w = ops.Mul(p, ops.SubScalar(ops.MulScalar(lr, -wd), -1))
			} else {
				g = axpy(wd, p, g)
			}
		}
		m := flushState(axpy(b1, a.m[i], ops.MulScalar(g, 1-b1)))
		v := flushState(axpy(b2, a.v[i], ops.MulScalar(ops.Square(g), 1-b2)))
		a.m[i].Assign(m)
		a.v[i].Assign(v)
		var upd *tensor.Tensor
		if a.decoup {
			step := ops.Div(lr, st.as(bc1, dt))
			den := ops.AddScalar(ops.Div(ops.Sqrt(v), st.as(sqrtBC2, dt)), a.cfg.Eps)
			upd = ops.Mul(ops.Div(m, den), step)
		} else {
			step := ops.Mul(lr, st.as(scale, dt))
			upd = ops.Mul(ops.Div(m, ops.AddScalar(ops.Sqrt(v), a.cfg.Eps)), step)
		}
		p.Assign(ops.Sub(w, upd))
	}
}
