package core_test

import (
	"sync"
	"testing"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops" // installs the HalfWidener
)

// triple returns a primitive that triples its input, with a kernel for
// Float32 alone, made after init.
func triple(name string) *core.Prim {
	p := &core.Prim{
		Name:  name,
		Infer: func(_ any, in []*core.Tensor) core.Meta { return in[0].Meta() },
	}
	p.Register(core.Float32, core.CPU, func(_ any, in []*core.Tensor, out *core.Tensor) {
		o := out.Data().([]float32)
		for i, v := range in[0].Data().([]float32) {
			o[i] = 3 * v
		}
	})
	return p
}

// A primitive defined and registered after every init, with a Float32
// kernel only, gets working BFloat16 and Float16 kernels when first asked
// (from any number of goroutines at once): the 16-bit kernels depend on no
// order of registration, let alone a file's name. A primitive made without
// Define keeps exactly the kernels registered for it.
func TestWidenOnDemand(t *testing.T) {
	p := core.Define(triple("TestTripleFloat32Only"))
	for _, dt := range []core.DType{core.BFloat16, core.Float16} {
		key := core.Key{DType: dt}
		if p.Registered(key, core.CPU) {
			t.Fatalf("%v kernel registered before any lookup", dt)
		}
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = p.KernelForKey(key, core.CPU)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatalf("%v: %v", dt, err)
			}
		}
		x := ops.Cast(core.FromSlice([]float32{1, 2.5, -4}), dt)
		y := core.Apply(p, nil, x)
		if y.DType() != dt {
			t.Fatalf("%v: result dtype %v", dt, y.DType())
		}
		for i, want := range []float32{3, 7.5, -12} {
			if got := y.Float32s()[i]; got != want {
				t.Errorf("%v: result[%d] = %v, want %v", dt, i, got, want)
			}
		}
		if p.Registered(key, core.CPU) {
			t.Errorf("%v: a derived kernel counts as registered", dt)
		}
	}
	if _, err := p.KernelFor(core.Int32, core.CPU); err == nil {
		t.Error("Int32 kernel derived from the Float32 one; only 16-bit floats are widened")
	}
	q := triple("TestTripleUndefined")
	if _, err := q.KernelFor(core.BFloat16, core.CPU); err == nil {
		t.Error("a primitive made without Define got a derived BFloat16 kernel")
	}
}
