package ops

import (
	"fmt"
	"math/rand/v2"

	"github.com/sporeml/spore/tensor"
)

// RandomMaskAttrs are the attributes of RandomMask: the drop probability
// and the seed of this application's generator.
type RandomMaskAttrs struct {
	P    float64
	Seed uint64
}

func (a RandomMaskAttrs) String() string { return fmt.Sprintf("p=%v seed=%#x", a.P, a.Seed) }

var randomMaskPrim *tensor.Prim

func init() {
	// RandomMask's input only supplies the shape and dtype: its values are
	// never read. Taking it as an input (rather than a shape attribute with
	// no inputs) ties the mask to the traced computation, so under a trace
	// it becomes a graph node instead of a constant baked in at trace time.
	//
	// The prim has no VJP: the mask is constant with respect to its input,
	// so Dropout's gradient flows through the Mul alone, as g·mask.
	randomMaskPrim = &tensor.Prim{
		Name:   "RandomMask",
		Traits: tensor.Traits{Impure: true, Cost: 4},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			x := in[0]
			if !x.DType().IsFloat() {
				tensor.Panicf("RandomMask", "unsupported dtype %v (shape %v)", x.DType(), x.Shape())
			}
			if p := attrs.(RandomMaskAttrs).P; !(p >= 0 && p <= 1) {
				tensor.Panicf("RandomMask", "drop probability %v is not in [0, 1]", p)
			}
			return x.Meta()
		},
		Kernel: func(attrs any, _ []*tensor.Tensor, out *tensor.Tensor) {
			a := attrs.(RandomMaskAttrs)
			switch o := out.Data().(type) {
			case []float32:
				fillMask(o, a)
			case []float64:
				fillMask(o, a)
			}
		},
	}
}

// fillMask draws each element independently: 0 with probability p, else
// 1/(1−p), from a generator seeded by the attributes alone, so one
// application always yields the same mask.
func fillMask[T float32 | float64](o []T, a RandomMaskAttrs) {
	if a.P >= 1 {
		clear(o)
		return
	}
	// A PCG value rather than a rand.Rand keeps the kernel allocation-free.
	var r rand.PCG
	r.Seed(a.Seed, 0xd209_0f7a)
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
// otherwise, so the mask has mean 1. The seed is drawn from the framework's
// random source (tensor.SetSeed) each time RandomMask is called, so every
// eager call draws a fresh mask and a seeded program is reproducible.
//
// Under graph tracing the seed is drawn once, at trace time, and stored in
// the node's attributes; because the prim is Impure, a compiled plan must
// neither fold nor deduplicate it, and an executor that wants a fresh mask
// per execution re-draws the seed for each run (building new attributes,
// never mutating these).
func RandomMask(x *tensor.Tensor, p float64) *tensor.Tensor {
	return tensor.Apply(randomMaskPrim, RandomMaskAttrs{P: p, Seed: tensor.Uint64()}, x)
}

// Dropout zeroes each element of x with probability p and scales the rest
// by 1/(1−p) when training (inverted dropout, MindSpore's nn.Dropout with
// keep_prob = 1−p), so inference needs no rescaling. It returns x itself
// when not training or when p is 0. The gradient is g·mask.
func Dropout(x *tensor.Tensor, p float64, training bool) *tensor.Tensor {
	if !(p >= 0 && p <= 1) {
		tensor.Panicf("Dropout", "drop probability %v is not in [0, 1]", p)
	}
	if !training || p == 0 {
		return x
	}
	return Mul(x, RandomMask(x, p))
}
