package ops

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// RandomUniformAttrs are the attributes of RandomUniformLike: the range
// [Lo, Hi) and, when Seeded, the seed. The seed is a float32, as ONNX's
// RandomUniformLike writes it, so that a seeded draw survives an export
// and a load unchanged.
type RandomUniformAttrs struct {
	Lo, Hi float64
	Seeded bool
	Seed   float32
}

// String prints every attribute, for IR dumps and CSE keys.
func (a RandomUniformAttrs) String() string {
	if !a.Seeded {
		return fmt.Sprintf("lo=%v hi=%v", a.Lo, a.Hi)
	}
	return fmt.Sprintf("lo=%v hi=%v seed=%v", a.Lo, a.Hi, a.Seed)
}

// RandomUniformLikePrim draws uniform values shaped like its input.
var RandomUniformLikePrim *core.Prim

func init() {
	// As RandomMask's, the input supplies only the shape and dtype, and
	// taking it as an input makes the draw a graph node under a trace
	// rather than a constant. Impure and Fresh for the same reasons; no
	// VJP, as the values do not depend on the input's.
	RandomUniformLikePrim = core.Define(&core.Prim{
		Name:   "RandomUniformLike",
		Batch:  batchBroadcasting(&RandomUniformLikePrim),
		Traits: core.Traits{Impure: true, Fresh: true, Cost: 4},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			x := in[0]
			if !x.DType().IsFloat() {
				core.Panicf("RandomUniformLike", "unsupported dtype %v (shape %v)", x.DType(), x.Shape())
			}
			a := attrs.(RandomUniformAttrs)
			if !(a.Lo <= a.Hi) || math.IsInf(a.Lo, 0) || math.IsInf(a.Hi, 0) {
				core.Panicf("RandomUniformLike", "range [%v, %v) is not a finite interval", a.Lo, a.Hi)
			}
			return x.Meta()
		},
	})
	registerFloats(RandomUniformLikePrim, randomUniformKernel[float32], randomUniformKernel[float64])
}

// randomUniformKernel is RandomUniformLike's kernel for T.
func randomUniformKernel[T float32 | float64](attrs any, _ []*tensor.Tensor, out *tensor.Tensor) {
	a := attrs.(RandomUniformAttrs)
	o := out.Data().([]T)
	seed := core.RandUint64()
	if a.Seeded {
		seed = uint64(math.Float32bits(a.Seed)) | 1<<32
	}
	var r rand.PCG
	r.Seed(seed, 0x5eed_0f_a11)
	for i := range o {
		for {
			u := float64(r.Uint64()>>11) * 0x1p-53 // in [0, 1)
			v := T(a.Lo + (a.Hi-a.Lo)*u)
			// Rounding to float32 may reach hi: draw again, keeping the
			// interval open and the draw uniform.
			if float64(v) < a.Hi || a.Hi == a.Lo {
				o[i] = v
				break
			}
		}
	}
}

// RandomUniformLike returns values drawn uniformly from [lo, hi), shaped
// like x (float32 or float64; its values are not read). Each run of the
// kernel — every eager call, every execution of a compiled plan — draws
// its seed from the framework's random source (tensor.SetSeed), as
// RandomMask does. It is not differentiable.
func RandomUniformLike(x *tensor.Tensor, lo, hi float64) *tensor.Tensor {
	return core.Apply(RandomUniformLikePrim, RandomUniformAttrs{Lo: lo, Hi: hi}, x)
}

// RandomUniformLikeSeeded is RandomUniformLike with a fixed seed: every
// run draws the same values, in both modes.
func RandomUniformLikeSeeded(x *tensor.Tensor, lo, hi float64, seed float32) *tensor.Tensor {
	return core.Apply(RandomUniformLikePrim, RandomUniformAttrs{Lo: lo, Hi: hi, Seeded: true, Seed: seed}, x)
}
