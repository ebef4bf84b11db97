package nn

import (
	"sync"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// AmpLevel is a level of automatic mixed precision, as MindSpore's
// amp_level (see spore.AmpLevel for what each level computes in).
type AmpLevel = spore.AmpLevel

// The mixed-precision levels under MindSpore's names.
const (
	// O0 runs everything in Float32.
	O0 = spore.AmpO0
	// O2 runs matmuls and convolutions in bfloat16 with float32
	// accumulation; softmax, norms and the loss stay Float32.
	O2 = spore.AmpO2
	// O3 runs every op that has a bfloat16 kernel in bfloat16.
	O3 = spore.AmpO3
)

// ampCalls are a cell's own Construct dispatchers, kept so that a second
// AutoMixedPrecision replaces the level instead of nesting inside it.
type ampCalls struct {
	call1 func(x *tensor.Tensor) *tensor.Tensor
	call2 func(x, y *tensor.Tensor) *tensor.Tensor
	callN func(xs []*tensor.Tensor) *tensor.Tensor
	level AmpLevel
}

var (
	ampMu    sync.Mutex
	ampOrigs = map[*Cell]ampCalls{}
)

// AutoMixedPrecision sets net's mixed precision, MindSpore's
// amp.auto_mixed_precision(network, amp_level), and returns net. Every
// later Call of net — in PyNative mode, compiled, or inlined into an
// enclosing trace — runs its Construct under level (spore.AmpScope): at
// O2 each matmul and convolution casts its Float32 operands, the weights
// included, to bfloat16 and its result back to Float32; at O3 every op
// with a bfloat16 kernel runs in bfloat16. The parameters stay Float32
// (fp32 master weights): gradients reach them through the casts, and
// optimisers update them in float32. A BFloat16 result comes back
// Float32, so a loss computed on it outside net runs in float32.
//
// O0 restores full precision; O1 and unknown levels panic with an *Error.
// The level lives with net's dispatch (Call), not with Construct: calling
// net.Construct directly, or Init on net again, runs in Float32. Set it
// before compiling anything that contains net (a WithLossCell or
// TrainOneStepCell already run in Graph mode keeps the plan it traced;
// ResetJit it), as MindSpore sets amp_level before building the model.
func AutoMixedPrecision[T Module](net T, level AmpLevel) T {
	const op = "nn.AutoMixedPrecision"
	c := net.Base()
	c.mustInit(op)
	if err := level.Validate(); err != nil {
		panic(core.Errorf(op, "%s: %v", c.name, err))
	}
	ampMu.Lock()
	orig, ok := ampOrigs[c]
	if !ok {
		orig = ampCalls{call1: c.call1, call2: c.call2, callN: c.callN}
	}
	if level == O0 || level == "" {
		delete(ampOrigs, c)
	} else {
		orig.level = level
		ampOrigs[c] = orig
	}
	ampMu.Unlock()

	c.call1, c.call2, c.callN = orig.call1, orig.call2, orig.callN
	if level != O0 && level != "" {
		if f := orig.call1; f != nil {
			c.call1 = func(x *tensor.Tensor) *tensor.Tensor {
				defer spore.AmpScope(level)()
				return ampOut(f(x))
			}
		}
		if f := orig.call2; f != nil {
			c.call2 = func(x, y *tensor.Tensor) *tensor.Tensor {
				defer spore.AmpScope(level)()
				return ampOut(f(x, y))
			}
		}
		if f := orig.callN; f != nil {
			c.callN = func(xs []*tensor.Tensor) *tensor.Tensor {
				defer spore.AmpScope(level)()
				return ampOut(f(xs))
			}
		}
	}
	// Plans traced at the old level are stale.
	c.ResetJit()
	return net
}

// AmpLevelOf returns the mixed-precision level set on net by
// AutoMixedPrecision (O0 when none).
func AmpLevelOf(net Module) AmpLevel {
	ampMu.Lock()
	defer ampMu.Unlock()
	if a, ok := ampOrigs[net.Base()]; ok {
		return a.level
	}
	return O0
}

// ampOut casts a BFloat16 result back to Float32. It runs inside the
// level's scope, which leaves casts alone.
func ampOut(y *tensor.Tensor) *tensor.Tensor {
	if y != nil && y.DType() == tensor.BFloat16 {
		return core.Apply(ops.CastPrim, tensor.Float32, y)
	}
	return y
}
