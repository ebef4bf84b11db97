package fuse_test

import (
	"fmt"

	"github.com/sporeml/spore/internal/kernels/fuse"
	"github.com/sporeml/spore/internal/kernels/vec"
)

// y = tanh(x·w + b) with w a scalar and b a per-column bias, and the
// derivative 1-y² as a second output, in one pass. The bodies are plain
// block functions (here package vec's kernels and two closures binding
// constants), as the ops define them.
func Example() {
	oneMinusSq := func(d, y []float32) {
		vec.Mul(d, y, y)
		vec.MulScalar(d, d, -1)
		vec.AddScalar(d, d, 1)
	}
	p := &fuse.Program{
		NumInputs: 3, // r0 = x, r1 = w, r2 = b
		InTypes:   []fuse.Type{fuse.F32, fuse.F32, fuse.F32},
		NumRegs:   5,
		Insts: []fuse.Inst{
			{Fn: fuse.MustBind(vec.Mul), Name: "Mul", Dst: 3, A: 0, B: 1},
			{Fn: fuse.MustBind(vec.Add), Name: "Add", Dst: 3, A: 3, B: 2},
			{Fn: fuse.MustBind(vec.Tanh), Name: "Tanh", Dst: 3, A: 3},
			{Fn: fuse.MustBind(oneMinusSq), Name: "1-y²", Dst: 4, A: 3},
		},
		Outs: []int{3, 4},
	}
	if err := p.Check(); err != nil {
		panic(err)
	}
	x := []float32{0, 1, 2, 3} // a 2×2 matrix
	y, dy := make([]float32, 4), make([]float32, 4)
	p.Run([]any{y, dy}, []fuse.Input{
		{Data: x},
		{Data: []float32{0.5}, Mode: fuse.Scalar},
		{Data: []float32{0, -1}, Mode: fuse.Row, Period: 2},
	})
	fmt.Printf("%.4f\n%.4f\n", y, dy)
	// Output:
	// [0.0000 -0.4621 0.7616 0.4621]
	// [1.0000 0.7864 0.4200 0.7864]
}
