package exec_test

import (
	"strings"
	"testing"

	"github.com/sporeml/spore/exec"
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/optest"
	"github.com/sporeml/spore/tensor"
)

// float32Only is a primitive with a kernel for Float32 alone (it is not
// recorded with core.Define: it belongs to this test, not to the op set).
var float32Only = optest.Float32Only("Float32Only")

// TestCompileResolvesKernels checks that a plan finds each kernel when it
// is compiled: a dtype with a kernel compiles and runs it, and a dtype
// without one is a compile-time error naming the op, the dtype and the
// backend.
func TestCompileResolvesKernels(t *testing.T) {
	for _, tc := range []struct {
		dt      tensor.DType
		wantErr []string // empty: compiles
	}{
		{tensor.Float32, nil},
		{tensor.Float64, []string{"Float32Only", "Float64", "CPU"}},
		{tensor.Int32, []string{"Float32Only", "Int32", "CPU"}},
	} {
		t.Run(tc.dt.String(), func(t *testing.T) {
			m := tensor.Meta{Shape: tensor.Shape{3}, DType: tc.dt}
			g, err := graph.Trace("f", []tensor.Meta{m}, func(in []*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{core.Apply(float32Only, nil, in[0])}
			})
			if err != nil {
				t.Fatal(err)
			}
			p, err := exec.Compile(g)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("compiled a plan for %v, which has no kernel", tc.dt)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not name %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := p.Run([]*tensor.Tensor{tensor.FromSlice([]float32{1, 2, 3}, 3)})[0].Float32s()
			for i, w := range []float32{2, 4, 6} {
				if got[i] != w {
					t.Fatalf("result %v, want [2 4 6]", got)
				}
			}
		})
	}
}
