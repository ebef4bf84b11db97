package spore_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/ops"
)

// Profile times every step of the compiled functions called inside it;
// the README's profiling section is this example.
func ExampleProfile() {
	step := spore.Jit(func(x *spore.Tensor) *spore.Tensor {
		return ops.Sum(ops.ReLU(ops.MatMul(x, x)))
	})
	x := spore.RandUniform(spore.Float32, -1, 1, 128, 128)
	step(x) // compiled before the profile starts

	r, err := spore.Profile(func() {
		for range 10 {
			step(x)
		}
	})
	if err != nil {
		panic(err)
	}

	for _, s := range r.Functions[0].Steps { // or r.Table(os.Stdout, 20): the top rows by time
		fmt.Println(s.Label(), s.Shape, s.Calls, s.FLOPs)
	}
	trace := filepath.Join(os.TempDir(), "spore-trace.json")
	if err := r.WriteTraceFile(trace); err != nil { // for ui.perfetto.dev
		panic(err)
	}
	// Output:
	// Anchor(MatMul+ReLU) [128,128] [128,128] → [128,128] 10 4210688
	// ReduceSum [128,128] → [] 10 16384
}
