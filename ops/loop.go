package ops

import "sync"

// loop carries a convolution or pooling kernel's operands to the worker
// pool. Kernels take one from a pool and hand it to parallel.ForBody, so
// splitting a kernel over the cores allocates nothing (a closure capturing
// the operands would be allocated on every call, in every compiled plan
// that runs the kernel).
type loop[T float32 | float64] struct {
	kind    loopKind
	cg      convGeom
	pg      poolGeom
	a, b, c []T // the kernel's operands, in its own argument order
	d       []T // scratch shared by the chunks (partial sums)
	n       int
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
	}
}

var loops32, loops64 sync.Pool

func getLoop[T float32 | float64]() *loop[T] {
	var z T
	p := &loops64
	if _, ok := any(z).(float32); ok {
		p = &loops32
	}
	if v, ok := p.Get().(*loop[T]); ok {
		return v
	}
	return new(loop[T])
}

// putLoop clears l (so that it keeps no buffer alive) and pools it.
func putLoop[T float32 | float64](l *loop[T]) {
	*l = loop[T]{}
	var z T
	if _, ok := any(z).(float32); ok {
		loops32.Put(l)
	} else {
		loops64.Put(l)
	}
}
