package optim

import (
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// SGDConfig configures SGD; the zero value is plain SGD at rate 0.1,
// MindSpore's default.
type SGDConfig struct {
	Common
	// Momentum is the momentum factor μ (0 for none).
	Momentum float64
	// Dampening τ scales the gradient's contribution to the momentum
	// buffer by 1−τ (from the second step on, as in MindSpore and PyTorch).
	Dampening float64
	// Nesterov uses Nesterov momentum; it needs Momentum > 0 and no
	// Dampening.
	Nesterov bool
}

// SGD is stochastic gradient descent with optional momentum, Nesterov
// momentum and L2 weight decay — MindSpore's nn.SGD, which updates as
// PyTorch's torch.optim.SGD does. For a parameter p with gradient g,
// learning rate η, weight decay λ, momentum μ and dampening τ:
//
//	g ← g + λ·p
//	b ← μ·b + (1−τ)·g      (b = g on the first step)
//	g ← g + μ·b if Nesterov, else b
//	p ← p − η·g
//
// The momentum buffers b are the state "accum.<parameter name>", as in
// MindSpore (zeros before the first step, which makes the first-step rule
// b = g hold with τ applied only from the second step). A buffer entry
// that falls below the smallest normal float (2⁻¹²⁶ in float32) is stored
// as zero, as under PyTorch's set_flush_denormal: subnormal arithmetic is
// slow on x86 and so small a momentum moves no weight of ordinary size.
type SGD struct {
	base
	cfg   SGDConfig
	accum []*tensor.Tensor
}

// NewSGD returns an SGD optimiser over params (or over cfg.Groups' params
// when params is nil).
func NewSGD(params []*tensor.Tensor, cfg SGDConfig) *SGD {
	const op = "optim.SGD"
	switch {
	case cfg.Momentum < 0:
		core.Panicf(op, "momentum %v is negative", cfg.Momentum)
	case cfg.Dampening < 0 || cfg.Dampening > 1:
		core.Panicf(op, "dampening %v is not in [0, 1]", cfg.Dampening)
	case cfg.Nesterov && (cfg.Momentum <= 0 || cfg.Dampening != 0):
		core.Panicf(op, "Nesterov momentum requires momentum > 0 and zero dampening (momentum %v, dampening %v)", cfg.Momentum, cfg.Dampening)
	}
	s := &SGD{base: newBase(op, params, cfg.Common, 0.1), cfg: cfg}
	if cfg.Momentum != 0 {
		s.accum = s.slots("accum")
	}
	return s
}

// Step applies one SGD update (see SGD).
func (s *SGD) Step(grads []*tensor.Tensor) { s.run(grads, s.step) }

func (s *SGD) step(grads []*tensor.Tensor) {
	st := s.begin(grads)
	mu := s.cfg.Momentum
	for i, p := range s.params {
		g := grads[i]
		if g == nil {
			continue
		}
		if wd := s.wd[i]; wd != 0 {
			g = axpy(wd, p, g)
		}
		if mu != 0 {
			b := s.accum[i]
			gb := g
			if d := s.cfg.Dampening; d != 0 {
				// 1−τ from the second step on: 1 − τ·min(t, 1).
				c := ops.SubScalar(ops.MulScalar(ops.Minimum(st.t, scalarLike(st.t, 1)), -d), -1)
				gb = ops.Mul(g, st.as(c, p.DType()))
			}
			nb := flushState(axpy(mu, b, gb))
			b.Assign(nb)
			if s.cfg.Nesterov {
				g = axpy(mu, nb, g)
			} else {
				g = nb
			}
		}
		p.Assign(ops.Sub(p, ops.Mul(g, s.lrFor(st, i))))
	}
}
