package ops

import (
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// BatchNorm is plain Go over primitives, so its gradients of any order
// come from the primitives' VJPs and the compiler can fuse every step.

// BatchNorm normalises x per channel, MindSpore's nn.BatchNorm1d/2d: x is
// [N, C] or NCHW [N, C, H, W], and gamma, beta, runningMean, runningVar are
// [C].
//
// Training uses the batch statistics (over N, or N, H, W) — the biased
// variance to normalise — and returns the updated running statistics with
// MindSpore's momentum convention (0.9 is its default):
//
//	newMean = momentum·runningMean + (1 − momentum)·mean
//	newVar  = momentum·runningVar  + (1 − momentum)·var·m/(m − 1)
//
// where m is the number of values per channel: the running variance takes
// the unbiased estimate, as MindSpore's GPU/Ascend kernels (cuDNN) and
// PyTorch do. The caller assigns the new statistics to its parameters.
//
// Inference (training false) normalises with the running statistics and
// returns them unchanged.
func BatchNorm(x, gamma, beta, runningMean, runningVar *tensor.Tensor, training bool, momentum, eps float64) (y, newMean, newVar *tensor.Tensor) {
	const op = "BatchNorm"
	checkFloat(op, x)
	xs := x.Shape()
	if len(xs) != 2 && len(xs) != 4 {
		core.Panicf(op, "want x of shape [N C] or [N C H W], got %v", xs)
	}
	c := xs[1]
	for _, p := range []*tensor.Tensor{gamma, beta, runningMean, runningVar} {
		if !p.Shape().Equal(tensor.Shape{c}) || p.DType() != x.DType() {
			core.Panicf(op, "gamma, beta and running statistics must be [%d] %v for x %v, got %v %v", c, x.DType(), xs, p.Shape(), p.DType())
		}
	}
	axes := []int{0}
	bshape := []int{1, c}
	if len(xs) == 4 {
		axes = []int{0, 2, 3}
		bshape = []int{1, c, 1, 1}
	}
	per := func(p *tensor.Tensor) *tensor.Tensor { return Reshape(p, bshape...) }
	scaleShift := func(xhat *tensor.Tensor) *tensor.Tensor {
		return Add(Mul(xhat, per(gamma)), per(beta))
	}
	if !training {
		// One scale and one shift per channel, computed on [C] vectors, so
		// that the full-size tensor is touched twice rather than four times
		// (PyTorch's CPU inference kernel folds it the same way).
		scale := Mul(gamma, Rsqrt(Add(runningVar, ScalarLike(runningVar, eps))))
		shift := Sub(beta, Mul(runningMean, scale))
		return Add(Mul(x, per(scale)), per(shift)), runningMean, runningVar
	}
	m := 1
	for _, a := range axes {
		m *= xs[a]
	}
	if m < 2 {
		core.Panicf(op, "training needs more than one value per channel, got x %v", xs)
	}
	mean := meanKeep(x, axes)
	d := Sub(x, mean)
	v := meanKeep(Mul(d, d), axes)
	y = scaleShift(Mul(d, Rsqrt(Add(v, ScalarLike(v, eps)))))
	mom := ScalarLike(x, momentum)
	rest := ScalarLike(x, 1-momentum)
	bm := Reshape(mean, c)
	bv := Mul(Reshape(v, c), ScalarLike(x, float64(m)/float64(m-1)))
	newMean = Add(Mul(mom, runningMean), Mul(rest, bm))
	newVar = Add(Mul(mom, runningVar), Mul(rest, bv))
	return y, newMean, newVar
}
