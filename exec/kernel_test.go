package exec_test

import (
	"strings"
	"testing"

	"github.com/sporeml/spore/exec"
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// float32Only is a primitive with a kernel for Float32 alone (it is not
// recorded with core.Define: it belongs to this test, not to the op set).
var float32Only = func() *core.Prim {
	p := &core.Prim{
		Name:  "Float32Only",
		Infer: func(_ any, in []*tensor.Tensor) tensor.Meta { return in[0].Meta() },
	}
	p.Register(tensor.Float32, core.CPU, func(_ any, in []*tensor.Tensor, out *tensor.Tensor) {
		o := out.Data().([]float32)
		for i, v := range in[0].Data().([]float32) {
			o[i] = 2 * v
		}
	})
	return p
}()

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
