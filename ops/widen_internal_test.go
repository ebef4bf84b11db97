package ops

import (
	"reflect"
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

// Every primitive whose 16-bit kernels are derived has the adapted
// inference (halfInfer) installed: widen.go's init wraps the primitives
// defined by then, so a primitive defined in an init that runs after it
// would be missed, and is named here.
func TestEveryPrimHasAdaptedInference(t *testing.T) {
	var h halfInfer
	infer, inferN := reflect.ValueOf(h.meta).Pointer(), reflect.ValueOf(h.metas).Pointer()
	n := 0
	for _, p := range core.Prims() {
		if !derivesHalf(p) {
			continue
		}
		n++
		if p.Infer != nil && reflect.ValueOf(p.Infer).Pointer() != infer {
			t.Errorf("%s: 16-bit kernels derived but its Infer is not adapted", p.Name)
		}
		if p.InferN != nil && reflect.ValueOf(p.InferN).Pointer() != inferN {
			t.Errorf("%s: 16-bit kernels derived but its InferN is not adapted", p.Name)
		}
	}
	if n < 50 {
		t.Fatalf("only %d primitives derive 16-bit kernels; package ops has more", n)
	}
}
