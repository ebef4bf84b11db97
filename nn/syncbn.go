package nn

import (
	"github.com/sporeml/spore"
	"github.com/sporeml/spore/comm"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
)

// SyncBatchNorm is batch normalisation whose batch statistics are taken
// over the global batch, across every rank of package comm: MindSpore's
// nn.SyncBatchNorm, PyTorch's torch.nn.SyncBatchNorm. Plain BatchNorm
// normalises by each rank's own share of the batch; with small shares per
// rank those statistics are noisy, and SyncBatchNorm restores the
// statistics one process would compute over the whole batch.
//
// In training it all-reduces, per channel, the element count, the sum of
// x, and then the sum of squared deviations from the global mean (two
// passes, as BatchNorm computes mean and variance, rather than the
// cancellation-prone sum of squares), so ranks may hold batches of
// different sizes. Gradients flow through the all-reduces (the gradient of
// an all-reduced sum is the all-reduced sum of the cotangents), so the
// backward pass is that of BatchNorm over the global batch. In one process
// it computes what BatchNorm does. Inference uses the running statistics,
// which every rank updates identically. Input is [N, C] or [N, C, H, W].
type SyncBatchNorm struct {
	Cell
	// Gamma and Beta are the [C] scale and shift.
	Gamma, Beta *spore.Tensor
	// MovingMean and MovingVariance are the [C] running statistics.
	MovingMean, MovingVariance *spore.Tensor
	// Eps and Momentum are as in BatchNormConfig.
	Eps, Momentum float64
}

// NewSyncBatchNorm returns a synchronised batch normalisation over
// numFeatures channels, configured as BatchNorm.
func NewSyncBatchNorm(numFeatures int, cfg ...BatchNormConfig) *SyncBatchNorm {
	b := newBatchNorm("nn.SyncBatchNorm", 4, numFeatures, cfg)
	return Init(&SyncBatchNorm{Gamma: b.Gamma, Beta: b.Beta, MovingMean: b.MovingMean, MovingVariance: b.MovingVariance, Eps: b.Eps, Momentum: b.Momentum})
}

// Construct normalises x by the global batch statistics in training (and
// updates the running statistics in place), by the running statistics in
// inference.
func (b *SyncBatchNorm) Construct(x *spore.Tensor) *spore.Tensor {
	const op = "nn.SyncBatchNorm"
	xs := x.Shape()
	if len(xs) != 2 && len(xs) != 4 {
		core.Panicf(op, "want input of shape [N C] or [N C H W], got %v", xs)
	}
	c := b.Gamma.Shape()[0]
	if xs[1] != c || x.DType() != b.Gamma.DType() {
		core.Panicf(op, "want %d channels of %v, got %v %v", c, b.Gamma.DType(), xs, x.DType())
	}
	if !b.Training() {
		y, _, _ := ops.BatchNorm(x, b.Gamma, b.Beta, b.MovingMean, b.MovingVariance, false, b.Momentum, b.Eps)
		return y
	}
	axes, bshape := []int{0}, []int{1, c}
	local := xs[0]
	if len(xs) == 4 {
		axes, bshape = []int{0, 2, 3}, []int{1, c, 1, 1}
		local *= xs[2] * xs[3]
	}
	if local*comm.Size() < 2 {
		core.Panicf(op, "training needs more than one value per channel, got x %v on %d rank(s)", xs, comm.Size())
	}
	per := func(p *spore.Tensor) *spore.Tensor { return ops.Reshape(p, bshape...) }
	// The global count is a tensor reduced at run time, not Size times the
	// local count: the last batch of a sharded epoch may differ by rank.
	count := comm.AllReduce(ops.ScalarLike(x, float64(local)), comm.Sum)
	inv := ops.Div(ops.ScalarLike(x, 1), count)
	mean := ops.Mul(comm.AllReduce(ops.SumKeepDims(x, axes...), comm.Sum), inv)
	d := ops.Sub(x, mean)
	v := ops.Mul(comm.AllReduce(ops.SumKeepDims(ops.Mul(d, d), axes...), comm.Sum), inv)
	y := ops.Add(ops.Mul(ops.Mul(d, ops.Rsqrt(ops.Add(v, ops.ScalarLike(v, b.Eps)))), per(b.Gamma)), per(b.Beta))
	// The running variance is unbiased over the global batch: m/(m−1).
	unbias := ops.Div(count, ops.Sub(count, ops.ScalarLike(x, 1)))
	mom, rest := ops.ScalarLike(x, b.Momentum), ops.ScalarLike(x, 1-b.Momentum)
	b.MovingMean.Assign(ops.Add(ops.Mul(mom, b.MovingMean), ops.Mul(rest, ops.Reshape(mean, c))))
	b.MovingVariance.Assign(ops.Add(ops.Mul(mom, b.MovingVariance), ops.Mul(rest, ops.Mul(ops.Reshape(v, c), unbias))))
	return y
}
