package nn

import (
	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
)

// GlobalNorm returns the L2 norm of all the tensors together,
// √(Σᵢ ‖gᵢ‖²), as a scalar of the first non-nil tensor's dtype; nil
// entries are skipped.
func GlobalNorm(grads []*spore.Tensor) *spore.Tensor {
	var sq *spore.Tensor
	for _, g := range grads {
		if g == nil {
			continue
		}
		s := ops.Sum(ops.Square(g))
		if sq == nil {
			sq = s
			continue
		}
		if s.DType() != sq.DType() {
			s = ops.Cast(s, sq.DType())
		}
		sq = ops.Add(sq, s)
	}
	if sq == nil {
		core.Panicf("nn.GlobalNorm", "no tensors (all %d are nil)", len(grads))
	}
	return ops.Sqrt(sq)
}

// ClipByGlobalNorm scales gradients so that their global norm is at most
// maxNorm, MindSpore's ops.clip_by_global_norm: every gᵢ becomes
// gᵢ·maxNorm/max(‖g‖, maxNorm), so gradients within the bound pass
// unchanged and the direction is kept. Nil entries stay nil. It is written
// with ops, so it runs eagerly or inside a compiled training step.
func ClipByGlobalNorm(grads []*spore.Tensor, maxNorm float64) []*spore.Tensor {
	if !(maxNorm > 0) {
		core.Panicf("nn.ClipByGlobalNorm", "clip norm %v must be positive", maxNorm)
	}
	norm := GlobalNorm(grads)
	scale := ops.Div(ops.ScalarLike(norm, maxNorm), ops.Maximum(norm, ops.ScalarLike(norm, maxNorm)))
	out := make([]*spore.Tensor, len(grads))
	for i, g := range grads {
		if g == nil {
			continue
		}
		s := scale
		if s.DType() != g.DType() {
			s = ops.Cast(s, g.DType())
		}
		out[i] = ops.Mul(g, s)
	}
	return out
}
