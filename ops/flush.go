package ops

import (
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/kernels/vec"
	"github.com/sporeml/spore/tensor"
)

// FlushSubnormalPrim maps subnormal floats to zeros of their sign and
// leaves every other value as it is (vec.FlushSubnormal): the flush-to-zero
// the optimisers apply to the state they keep (package optim). It is
// elementwise, so under a compiled update it joins the fused loop that
// computes the state and costs one in-cache pass over each block.
var FlushSubnormalPrim = func() *core.Prim {
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

// FlushSubnormal returns x with its subnormal values replaced by zeros of
// their sign, every other value unchanged. The optimisers apply it to the
// state they keep: state that decays geometrically otherwise drifts
// through the subnormal range, where every multiplication takes a slow
// path on x86 CPUs.
func FlushSubnormal(x *tensor.Tensor) *tensor.Tensor { return core.Apply(FlushSubnormalPrim, nil, x) }
