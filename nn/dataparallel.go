package nn

import (
	"github.com/sporeml/spore"
	"github.com/sporeml/spore/comm"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Data parallelism in the training step (MindSpore's DATA_PARALLEL,
// PyTorch's DDP): every rank holds the whole model and computes the loss
// and the gradients of its share of the global batch; the step then
// all-reduces the gradients, so that every rank applies the same update,
// and averages the loss, so that the step reports the loss of the global
// batch.
//
// Gradients are reduced in buckets rather than one by one: each bucket is
// one message, the gradients of consecutive parameters packed one after
// another, filled in the order backward produces them (last layer first).
// Each bucket is an AllReduceStart, which packs and starts the reduction
// (MPI_Iallreduce, or a blocking MPI_Allreduce: see package comm), and an
// AllReduceWait, which completes it and unpacks. In a compiled plan the
// gradients are computed straight into the bucket and the update reads
// them from it, so neither step copies. For GradientsMean the loss is
// scaled by 1/N before differentiation and the buckets are summed, so no
// pass divides them.
//
// In Graph mode the compiler's schedule (compile.Schedule) issues each
// start as soon as the bucket's last gradient is computed and each wait
// just before the first use of its result, so that a non-blocking
// reduction overlaps the rest of the backward pass; in PyNative mode the
// backward pass has finished when the buckets are issued, and the waits
// follow. The same ops run in both modes, so they compute the same values.

// meanScaledGrad returns the loss and the gradients of loss/N, N being the
// number of ranks, so that summing them across ranks gives their mean
// (GradientsMean) without a pass over the gradients to divide them: the
// 1/N rides on the backward pass's seed. For N a power of two the scaling
// is exact, and the gradients are bitwise those of dividing afterwards.
// The loss returned is the unscaled one.
func meanScaledGrad(loss func(x, y *spore.Tensor) *spore.Tensor, weights []*spore.Tensor) func(...*spore.Tensor) (*spore.Tensor, []*spore.Tensor) {
	g := spore.ValueAndGradAux(func(xs ...*spore.Tensor) (*spore.Tensor, []*spore.Tensor) {
		l := loss(xs[0], xs[1])
		n := comm.Size()
		if n == 1 {
			return l, nil
		}
		return ops.Mul(l, ops.ScalarLike(l, 1/float64(n))), []*spore.Tensor{l}
	}, spore.GradPosition(), spore.Weights(weights...))
	return func(xs ...*spore.Tensor) (*spore.Tensor, []*spore.Tensor) {
		v, aux, grads := g(xs...)
		if len(aux) > 0 {
			v = aux[0]
		}
		return v, grads
	}
}

// bucket is a run of gradients reduced as one message.
type bucket struct {
	idx []int // positions in the gradient list, in backward order
}

// planBuckets groups the gradients into buckets of about limit bytes,
// last parameter first (the order backward produces them), never mixing
// dtypes in one bucket. Nil gradients are left out.
func planBuckets(grads []*spore.Tensor, limit int) []bucket {
	var bs []bucket
	var cur bucket
	var bytes int
	var dt tensor.DType
	for i := len(grads) - 1; i >= 0; i-- {
		g := grads[i]
		if g == nil {
			continue
		}
		size := g.Size() * g.DType().Size()
		if len(cur.idx) > 0 && (g.DType() != dt || bytes+size > limit) {
			bs = append(bs, cur)
			cur, bytes = bucket{}, 0
		}
		cur.idx = append(cur.idx, i)
		bytes += size
		dt = g.DType()
	}
	if len(cur.idx) > 0 {
		bs = append(bs, cur)
	}
	return bs
}

// allReduceStep reduces a step's loss (mean over ranks) and gradients
// (summed: for GradientsMean they were scaled by 1/N, meanScaledGrad)
// across ranks, returning new tensors; grads is not modified. With every
// rank's loss the mean over an equal share of the global batch, the mean
// loss is the global batch's. The loss, scaled by 1/N and summed, rides at
// the front of the first bucket (one message fewer per step) when it has
// the gradients' dtype.
func allReduceStep(loss *spore.Tensor, grads []*spore.Tensor, pc spore.AutoParallelContext) (*spore.Tensor, []*spore.Tensor) {
	const op = comm.Sum
	scaled := loss
	if n := comm.Size(); n > 1 {
		scaled = ops.Mul(loss, ops.ScalarLike(loss, 1/float64(n)))
	}
	bs := planBuckets(grads, pc.Buckets())
	if len(bs) == 0 || grads[bs[0].idx[0]].DType() != loss.DType() {
		bs = append([]bucket{{}}, bs...) // the loss alone
	}
	handles := make([]*spore.Tensor, len(bs))
	for k, b := range bs {
		var xs []*spore.Tensor
		if k == 0 {
			xs = append(xs, scaled)
		}
		for _, i := range b.idx {
			xs = append(xs, grads[i])
		}
		handles[k] = comm.AllReduceStart(op, xs...)
	}
	out := append([]*spore.Tensor(nil), grads...)
	var mean *spore.Tensor
	for k, b := range bs {
		var shapes []tensor.Shape
		if k == 0 {
			shapes = append(shapes, loss.Shape())
		}
		for _, i := range b.idx {
			shapes = append(shapes, grads[i].Shape())
		}
		rs := comm.AllReduceWait(handles[k], op, shapes...)
		if k == 0 {
			mean, rs = rs[0], rs[1:]
		}
		for j, r := range rs {
			out[b.idx[j]] = r
		}
	}
	return mean, out
}
