package spore_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/optest"
	"github.com/sporeml/spore/tensor"
)

// doubleF32 doubles a Float32 tensor; it registers no kernel for any other
// dtype (and is not recorded with core.Define: it belongs to this test).
var doubleF32 = optest.Float32Only("DoubleFloat32Only")

// panicOf returns the error f panics with, or nil.
func panicOf(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(error)
			if !ok {
				e = fmt.Errorf("%v", r)
			}
			err = e
		}
	}()
	f()
	return nil
}

// TestMissingKernelIsACompileError applies a primitive to a dtype it has
// no kernel for: Jit fails when it compiles the function — before running
// anything — and PyNative mode fails when the op is applied, both with a
// *tensor.Error naming the op, the dtype and the backend. The dtype it
// has a kernel for runs in both modes.
func TestMissingKernelIsACompileError(t *testing.T) {
	f := func(x *spore.Tensor) *spore.Tensor { return core.Apply(doubleF32, nil, x) }
	for _, tc := range []struct {
		x       *spore.Tensor
		wantErr []string // empty: runs
	}{
		{tensor.FromSlice([]float32{1, 2}, 2), nil},
		{tensor.FromSlice([]float64{1, 2}, 2), []string{"DoubleFloat32Only", "Float64", "CPU"}},
		{tensor.FromSlice([]int64{1, 2}, 2), []string{"DoubleFloat32Only", "Int64", "CPU"}},
	} {
		for _, mode := range []string{"PyNative", "Jit"} {
			t.Run(tc.x.DType().String()+"/"+mode, func(t *testing.T) {
				g := f
				if mode == "Jit" {
					g = spore.Jit(f)
				}
				var got *spore.Tensor
				err := panicOf(func() { got = g(tc.x) })
				if len(tc.wantErr) == 0 {
					if err != nil {
						t.Fatal(err)
					}
					if v := got.Float32s(); v[0] != 2 || v[1] != 4 {
						t.Fatalf("got %v, want [2 4]", v)
					}
					return
				}
				t.Log(err)
				var te *tensor.Error
				if !errors.As(err, &te) {
					t.Fatalf("got %v (%T), want a *tensor.Error", err, err)
				}
				want := tc.wantErr
				if mode == "Jit" {
					// Found by the plan's kernel lookup, not by running.
					want = append(want, "compiling")
				}
				for _, w := range want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not name %q", err, w)
					}
				}
			})
		}
	}
}
