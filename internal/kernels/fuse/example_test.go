package fuse_test

import (
	"fmt"

	"github.com/sporeml/spore/internal/kernels/fuse"
)

// y = tanh(x·w + b) with w a scalar and b a per-column bias, and the
// derivative 1-y² as a second output, in one pass.
func Example() {
	p := &fuse.Program{
		NumInputs: 3, // r0 = x, r1 = w, r2 = b
		NumRegs:   5,
		Insts: []fuse.Inst{
			{Op: fuse.Mul, Dst: 3, A: 0, B: 1},
			{Op: fuse.Add, Dst: 3, A: 3, B: 2},
			{Op: fuse.Tanh, Dst: 3, A: 3},
			{Op: fuse.Square, Dst: 4, A: 3},
			{Op: fuse.MulScalar, Dst: 4, A: 4, Imm: -1},
			{Op: fuse.AddScalar, Dst: 4, A: 4, Imm: 1},
		},
		Outs: []int{3, 4},
	}
	if err := p.Check(); err != nil {
		panic(err)
	}
	x := []float32{0, 1, 2, 3} // a 2×2 matrix
	y, dy := make([]float32, 4), make([]float32, 4)
	p.Run([][]float32{y, dy}, []fuse.Input{
		{Data: x},
		{Data: []float32{0.5}, Mode: fuse.Scalar},
		{Data: []float32{0, -1}, Mode: fuse.Row, Period: 2},
	})
	fmt.Printf("%.4f\n%.4f\n", y, dy)
	// Output:
	// [0.0000 -0.4621 0.7616 0.4621]
	// [1.0000 0.7864 0.4200 0.7864]
}
