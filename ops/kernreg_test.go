package ops_test

import (
	"testing"

	"github.com/sporeml/spore/internal/core"
	_ "github.com/sporeml/spore/ops" // defines the primitives
	"github.com/sporeml/spore/tensor"
)

// TestEveryPrimHasKernels enumerates every primitive recorded with
// core.Define and checks that the kernel table holds a CPU kernel for at
// least one dtype (with the legacy per-op kernel field gone, a primitive
// without one could run nowhere), and that floating-point primitives —
// those with a Float32 kernel — have a Float64 one too, which gradient
// checks rely on.
func TestEveryPrimHasKernels(t *testing.T) {
	dts := []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Bool, tensor.Uint8}
	prims := core.Prims()
	if len(prims) < 50 {
		t.Fatalf("core.Prims lists %d primitives; ops defines more", len(prims))
	}
	for _, p := range prims {
		has := map[tensor.DType]bool{}
		for _, dt := range dts {
			var err error
			if p.InferN != nil {
				_, err = p.KernelNFor(dt, core.CPU)
			} else {
				// An index op keys on its indices' dtype too: Int64 ones.
				in := []tensor.DType{dt, tensor.Int64}
				_, err = p.KernelForKey(p.KeyOf(in[:max(p.IndexInput, 1)], dt), core.CPU)
			}
			has[dt] = err == nil
		}
		some := false
		for _, dt := range dts {
			some = some || has[dt]
		}
		if !some {
			t.Errorf("%s has no CPU kernel for any dtype", p.Name)
		}
		if has[tensor.Float32] && !has[tensor.Float64] {
			t.Errorf("%s has a Float32 kernel but no Float64 one", p.Name)
		}
	}
}

// The integer dtypes are served alike: a primitive with an Int64 kernel
// has one for every integer dtype (Neg alone is signed-only, as ONNX's
// Neg is), so that no op handles Int32 and Int64 but forgets Int8 or
// Uint64. The primitives keyed by an operand of indices or labels, which
// are Int32 or Int64 by definition, are set aside.
func TestIntegerPrimsCoverEveryIntType(t *testing.T) {
	indexKeyed := map[string]bool{"CheckIndices": true, "OneHot": true, "CheckLabels": true}
	ints := []tensor.DType{tensor.Int8, tensor.Int16, tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Uint16, tensor.Uint32, tensor.Uint64}
	for _, p := range core.Prims() {
		has := func(dt tensor.DType) bool {
			if p.InferN != nil {
				_, err := p.KernelNFor(dt, core.CPU)
				return err == nil
			}
			in := []tensor.DType{dt, tensor.Int64}
			_, err := p.KernelForKey(p.KeyOf(in[:max(p.IndexInput, 1)], dt), core.CPU)
			return err == nil
		}
		if !has(tensor.Int64) || indexKeyed[p.Name] {
			continue
		}
		for _, dt := range ints {
			if !has(dt) && !(p.Name == "Neg" && dt.IsUnsigned()) {
				t.Errorf("%s has an Int64 kernel but no %v one", p.Name, dt)
			}
		}
	}
}
