package optim

import (
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/kernels/vec"
	"github.com/sporeml/spore/tensor"
)

// flushPrim maps subnormal floats to zeros of their sign and leaves every
// other value as it is (vec.FlushSubnormal): the flush-to-zero the
// optimisers apply to the state they keep (see flushState). It is
// elementwise, so under a compiled update it joins the fused loop that
// computes the state and costs one in-cache pass over each block.
var flushPrim = func() *core.Prim {
	const name = "FlushSubnormal"
	p := core.Define(&core.Prim{Name: name, Traits: core.Traits{Elementwise: true, Cost: 1}})
	body := func(_ any, in []tensor.DType) any {
		switch in[0] {
		case tensor.Float32:
			return vec.FlushSubnormal
		case tensor.Float64:
			return vec.FlushSubnormalF64
		}
		return nil
	}
	p.Infer = func(_ any, in []*tensor.Tensor) tensor.Meta {
		x := in[0]
		if body(nil, []tensor.DType{x.DType()}) == nil {
			core.Panicf(name, "unsupported dtype %v (input shape %v): only floating-point values have subnormals", x.DType(), x.Shape())
		}
		return x.Meta()
	}
	p.Elementwise = &core.Elementwise{Body: body}
	p.Batch = func(attrs any, in []*tensor.Tensor, dims []int) (*tensor.Tensor, int) {
		return core.Apply(p, attrs, in[0]), dims[0]
	}
	p.Register(tensor.Float32, core.CPU, func(_ any, in []*tensor.Tensor, out *tensor.Tensor) {
		vec.FlushSubnormal(out.Data().([]float32), in[0].Data().([]float32))
	})
	p.Register(tensor.Float64, core.CPU, func(_ any, in []*tensor.Tensor, out *tensor.Tensor) {
		vec.FlushSubnormalF64(out.Data().([]float64), in[0].Data().([]float64))
	})
	return p
}()

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
func flushState(x *tensor.Tensor) *tensor.Tensor { return core.Apply(flushPrim, nil, x) }
