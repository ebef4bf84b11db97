package graph_test

import (
	"fmt"

	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

func Example() {
	// Trace f(x) = relu(x·x + 1) into a graph and print it.
	g, err := graph.Trace("f", []tensor.Meta{{Shape: tensor.Shape{2, 2}, DType: tensor.Float32}},
		func(in []*tensor.Tensor) []*tensor.Tensor {
			x := in[0]
			return []*tensor.Tensor{ops.ReLU(ops.Add(ops.MatMul(x, x), ops.ScalarLike(x, 1)))}
		})
	if err != nil {
		panic(err)
	}
	fmt.Print(g)
	fmt.Println(graph.Verify(g))
	// Output:
	// func f(%0: f32[2,2]) -> (f32[2,2])
	//   %1 = MatMul(%0, %0) {ta=false tb=false} : f32[2,2]
	//   %2 = const [1] : f32[]
	//   %3 = Add(%1, %2) : f32[2,2]
	//   %4 = ReLU(%3) : f32[2,2]
	//   return %4
	// <nil>
}
