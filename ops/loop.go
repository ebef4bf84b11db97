package ops

// loop carries a convolution or pooling kernel's operands to the worker
// pool. Kernels take one from their type's pool (floatImpl.getLoop) and
// hand it to parallel.ForBody, so splitting a kernel over the cores
// allocates nothing (a closure capturing the operands would be allocated
// on every call, in every compiled plan that runs the kernel).
type loop[T float32 | float64] struct {
	kind    loopKind
	cg      convGeom
	pg      poolGeom
	a, b, c []T // the kernel's operands, in its own argument order
	d       []T // scratch shared by the chunks (partial sums)
	n       int
	ep      convEpilogue[T] // what the fused convolution applies to its output
	pooled  pooledGrad[T]   // the pool-fused convolution gradients' output gradient
	im      *floatImpl[T]   // the element type's GEMM and pools
}

type loopKind uint8

const (
	loopConv2DForward loopKind = iota
	loopConv2DBackInput
	loopConv2DBackFilter
	loopMaxPoolGather
	loopMaxPoolScatter
	loopAvgPoolForward
	loopAvgPoolBackward
	loopConv2DEpilogue
	loopMaxPoolReLUGrad
)

// Run processes items [lo, hi) of the kernel the loop was set up for.
func (l *loop[T]) Run(lo, hi int) {
	switch l.kind {
	case loopConv2DForward:
		l.conv2DForwardRun(lo, hi)
	case loopConv2DBackInput:
		l.conv2DBackInputRun(lo, hi)
	case loopConv2DBackFilter:
		l.conv2DBackFilterRun(lo, hi)
	case loopMaxPoolGather:
		l.maxPoolGatherRun(lo, hi)
	case loopMaxPoolScatter:
		l.maxPoolScatterRun(lo, hi)
	case loopAvgPoolForward:
		l.avgPoolForwardRun(lo, hi)
	case loopAvgPoolBackward:
		l.avgPoolBackwardRun(lo, hi)
	case loopConv2DEpilogue:
		l.conv2DEpilogueRun(lo, hi)
	case loopMaxPoolReLUGrad:
		l.maxPoolReLUGradRun(lo, hi)
	}
}
