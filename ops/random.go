package ops

import (
	"fmt"
	"math/rand/v2"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// RandomMaskAttrs are the attributes of RandomMask: the drop probability
// and, when non-zero, a fixed seed. A zero seed (what RandomMask uses)
// draws a fresh one from the framework's random source every time the
// kernel runs, so a compiled plan draws a new mask on every execution just
// as eager calls do.
type RandomMaskAttrs struct {
	P    float64
	Seed uint64
}

// String prints every attribute, for IR dumps and CSE keys.
func (a RandomMaskAttrs) String() string { return fmt.Sprintf("p=%v seed=%#x", a.P, a.Seed) }

var RandomMaskPrim *core.Prim

func init() {
	// RandomMask's input only supplies the shape and dtype: its values are
	// never read. Taking it as an input (rather than a shape attribute with
	// no inputs) ties the mask to the traced computation, so under a trace
	// it becomes a graph node instead of a constant baked in at trace time.
	//
	// The prim has no VJP: the mask is constant with respect to its input,
	// so Dropout's gradient flows through the Mul alone, as g·mask.
	RandomMaskPrim = core.Define(&core.Prim{
		Name:   "RandomMask",
		Batch:  batchBroadcasting(&RandomMaskPrim),
		Traits: core.Traits{Impure: true, Fresh: true, Cost: 4},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			x := in[0]
			if !x.DType().IsFloat() {
				core.Panicf("RandomMask", "unsupported dtype %v (shape %v)", x.DType(), x.Shape())
			}
			if p := attrs.(RandomMaskAttrs).P; !(p >= 0 && p <= 1) {
				core.Panicf("RandomMask", "drop probability %v is not in [0, 1]", p)
			}
			return x.Meta()
		},
	})
	registerFloats(RandomMaskPrim, randomMaskKernel[float32], randomMaskKernel[float64])
}

// randomMaskKernel is RandomMask's kernel for T.
func randomMaskKernel[T float32 | float64](attrs any, _ []*tensor.Tensor, out *tensor.Tensor) {
	fillMask(out.Data().([]T), attrs.(RandomMaskAttrs))
}

// fillMask draws each element independently: 0 with probability p, else
// 1/(1−p).
func fillMask[T float32 | float64](o []T, a RandomMaskAttrs) {
	if a.P >= 1 {
		clear(o)
		return
	}
	// A PCG value rather than a rand.Rand keeps the kernel allocation-free.
	seed := a.Seed
	if seed == 0 {
		seed = core.RandUint64()
	}
	var r rand.PCG
	r.Seed(seed, 0xd209_0f7a)
	scale := T(1 / (1 - a.P))
	for i := range o {
		if float64(r.Uint64()>>11)*0x1p-53 < a.P {
			o[i] = 0
		} else {
			o[i] = scale
		}
	}
}

// RandomMask returns an inverted-dropout mask shaped like x (whose values
// are not read): each element is 0 with probability p and 1/(1−p)
// otherwise, so the mask has mean 1. Each run of the kernel — every eager
// call, every execution of a compiled plan — draws its seed from the
// framework's random source (tensor.SetSeed), so masks are fresh each time
// and a seeded program is reproducible. The prim is Impure: the compiler
// neither folds nor deduplicates it; and Fresh: a compiled function holding
// it is differentiated on the tape, so that its gradient uses the masks
// its forward pass drew. (Replaying a traced control-flow body
// to differentiate it draws a new mask; dropout inside Cond or Scan bodies
// under Graph-mode differentiation is therefore not supported exactly.)
func RandomMask(x *tensor.Tensor, p float64) *tensor.Tensor {
	return core.Apply(RandomMaskPrim, RandomMaskAttrs{P: p}, x)
}

// Dropout zeroes each element of x with probability p and scales the rest
// by 1/(1−p) when training (inverted dropout, MindSpore's nn.Dropout with
// keep_prob = 1−p), so inference needs no rescaling. It returns x itself
// when not training or when p is 0. The gradient is g·mask.
func Dropout(x *tensor.Tensor, p float64, training bool) *tensor.Tensor {
	if !(p >= 0 && p <= 1) {
		core.Panicf("Dropout", "drop probability %v is not in [0, 1]", p)
	}
	if !training || p == 0 {
		return x
	}
	return Mul(x, RandomMask(x, p))
}
