package compile_test

import (
	"fmt"

	"github.com/sporeml/spore/compile"
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// A dense layer with a ReLU, a redundant ·1 and a sigmoid output head,
// optimised at O1: the multiplication by one disappears, and the matmul
// becomes one Anchor whose epilogue adds the bias and applies the ReLU,
// the sigmoid and the scaling to each block of rows as it is computed.
func Example() {
	f32 := func(s ...int) tensor.Meta { return tensor.Meta{Shape: s, DType: tensor.Float32} }
	g := graph.New("layer")
	x, w, b := g.Input(f32(8, 4)), g.Input(f32(4, 3)), g.Input(f32(3))
	h := g.Op(ops.MatMulPrim, ops.MatMulAttrs{}, x, w)
	h = g.Op(ops.ReluPrim, nil, g.Op(ops.AddPrim, nil, h, b))
	h = g.Op(ops.MulPrim, nil, h, g.Const(tensor.Scalar(float32(1))))
	y := g.Op(ops.SigmoidPrim, nil, h)
	y = g.Op(ops.MulPrim, nil, y, g.Const(tensor.Scalar(float32(2))))
	g.Outputs = []*graph.Value{y}

	res, err := compile.Run(g, compile.Options{Level: compile.O1, Verify: true})
	if err != nil {
		panic(err)
	}
	fmt.Print(res.Graph)
	fmt.Println("kernels per run:", res.Plan.NumSteps())
	// Output:
	// func layer(%0: f32[8,4], %1: f32[4,3], %2: f32[3]) -> (f32[8,3])
	//   %3 = Anchor(%0, %1, %2) {op=MatMul(ta=false tb=false) epilogue: in r0 full, r1 row; r2 = Add r0 r1; r2 = ReLU r2; r2 = Sigmoid r2; r2 = Mul r2 2; out r2} : f32[8,3]
	//   return %3
	// kernels per run: 1
}
