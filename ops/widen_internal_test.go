package ops

import (
	"testing"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// derivesHalf reports whether some 16-bit kernel of p is derived from its
// Float32 one rather than registered.
func derivesHalf(p *core.Prim) bool {
	for _, dt := range halfDTypes {
		if p.InferN != nil {
			if p.RegisteredN(tensor.Float32, core.CPU) && !p.RegisteredN(dt, core.CPU) {
				return true
			}
			continue
		}
		for _, ix := range indexKeys(p) {
			if p.Registered(core.Key{DType: tensor.Float32, Index: ix}, core.CPU) && !p.Registered(core.Key{DType: dt, Index: ix}, core.CPU) {
				return true
			}
		}
	}
	return false
}

// A primitive defined after every init — as a file sorting after
// widen.go, another package or a test would define one — whose inference
// accepts only Float32 and Float64 and which has only those kernels runs on
// 16-bit operands: its kernel is widened on demand and its inference sees
// Float32 stand-ins, through core.Prim.Meta. Before, the inference wrapper
// was installed by widen.go's init on the primitives defined by then, and
// this one was refused ("want Float32").
func TestHalfAdaptsPrimDefinedLater(t *testing.T) {
	p := core.Define(&core.Prim{
		Name: "TestDoubleLater",
		Infer: func(_ any, in []*tensor.Tensor) tensor.Meta {
			if d := in[0].DType(); d != tensor.Float32 && d != tensor.Float64 {
				core.Panicf("TestDoubleLater", "want Float32 or Float64, got %v", d)
			}
			return tensor.Meta{Shape: in[0].Shape(), DType: in[0].DType()}
		},
	})
	p.Register(tensor.Float32, core.CPU, func(_ any, in []*tensor.Tensor, out *tensor.Tensor) {
		x, y := in[0].Data().([]float32), out.Data().([]float32)
		for i := range x {
			y[i] = 2 * x[i]
		}
	})
	// Every primitive has both float kernels (TestEveryPrimHasKernels, which
	// sees this one once it is defined).
	p.Register(tensor.Float64, core.CPU, func(_ any, in []*tensor.Tensor, out *tensor.Tensor) {
		x, y := in[0].Data().([]float64), out.Data().([]float64)
		for i := range x {
			y[i] = 2 * x[i]
		}
	})
	for _, dt := range halfDTypes {
		x := Cast(tensor.FromSlice([]float32{1, 1.5, -3}, 3), dt)
		y := core.Apply(p, nil, x)
		if y.DType() != dt {
			t.Fatalf("%v: result is %v, want %v", dt, y.DType(), dt)
		}
		if got := Cast(y, tensor.Float32).Float32s(); got[0] != 2 || got[1] != 3 || got[2] != -6 {
			t.Errorf("%v: got %v, want [2 3 -6]", dt, got)
		}
	}
	if !derivesHalf(p) {
		t.Error("derivesHalf does not see the derived kernels")
	}
}
