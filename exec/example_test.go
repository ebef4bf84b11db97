package exec_test

import (
	"fmt"

	"github.com/sporeml/spore/exec"
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

func Example() {
	m := tensor.Meta{Shape: tensor.Shape{3}, DType: tensor.Float32}
	g, _ := graph.Trace("f", []tensor.Meta{m}, func(in []*tensor.Tensor) []*tensor.Tensor {
		return []*tensor.Tensor{ops.Exp(ops.Neg(ops.Mul(in[0], in[0])))}
	})
	plan, err := exec.Compile(g)
	if err != nil {
		panic(err)
	}
	out := plan.Run([]*tensor.Tensor{tensor.FromSlice([]float32{0, 1, 2}, 3)})
	fmt.Println(out[0])
	// The three elementwise steps share one buffer: each writes in place
	// over an operand that dies with it.
	fmt.Printf("%d steps, %d arena buffer\n", plan.NumSteps(), plan.Buffers)
	// Output:
	// [1.         0.36787945 0.01831564]
	// 3 steps, 1 arena buffer
}
