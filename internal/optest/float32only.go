package optest

import (
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// Float32Only returns a primitive that doubles its input and has a kernel
// for Float32 alone, for tests of what a missing kernel does. It is not
// recorded with core.Define: it belongs to the tests, not to the op set.
func Float32Only(name string) *core.Prim {
	p := &core.Prim{
		Name:  name,
		Infer: func(_ any, in []*tensor.Tensor) tensor.Meta { return in[0].Meta() },
	}
	p.Register(tensor.Float32, core.CPU, func(_ any, in []*tensor.Tensor, out *tensor.Tensor) {
		o := out.Data().([]float32)
		for i, v := range in[0].Data().([]float32) {
			o[i] = 2 * v
		}
	})
	return p
}
