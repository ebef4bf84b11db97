package optim

import (
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// flushState returns x with its subnormal values flushed to zeros of their
// sign, for optimiser state before it is stored. State that decays
// geometrically — a momentum buffer whose gradient stays zero (a dead
// ReLU unit's weights), Adam's moments — otherwise drifts through the
// subnormal range for hundreds of steps, and every multiplication of a
// subnormal number takes a slow path on x86 CPUs (some thirty times the
// time of a normal one), which made such entries the larger part of a
// small network's training step. Values that small (below 2⁻¹²⁶ ≈ 1.2e-38
// in float32) move no weight of ordinary size: the update they feed is
// rounded away against it. This is PyTorch's set_flush_denormal(True)
// applied to the state, and it is the same in both modes, step by step
// and sunk.
func flushState(x *tensor.Tensor) *tensor.Tensor { return ops.FlushSubnormal(x) }
