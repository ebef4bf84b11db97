package profile_test

import (
	"fmt"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/profile"
)

func Example() {
	f := spore.Jit(func(x *spore.Tensor) *spore.Tensor {
		return ops.Sum(ops.Tanh(ops.MatMul(x, x)))
	})
	x := spore.RandUniform(spore.Float32, -1, 1, 64, 64)
	f(x) // compiled before the profile starts
	r, err := profile.Run(func() {
		for range 10 {
			f(x)
		}
	})
	if err != nil {
		panic(err)
	}
	// r.Table(os.Stdout, 10) prints the top rows with their times;
	// r.WriteTraceFile("trace.json") writes what Perfetto opens.
	for _, s := range r.Functions[0].Steps {
		fmt.Printf("%s %s: %d calls, %d FLOPs each\n", s.Label(), s.Shape, s.Calls, s.FLOPs)
	}
	// Output:
	// Anchor(MatMul+Tanh) [64,64] [64,64] → [64,64]: 10 calls, 528384 FLOPs each
	// ReduceSum [64,64] → []: 10 calls, 4096 FLOPs each
}
