package graph_test

import (
	"encoding/json"
	"fmt"

	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

func ExampleGraph_Doc() {
	g, err := graph.Trace("f", []tensor.Meta{{Shape: tensor.Shape{2, 2}, DType: tensor.Float32}},
		func(in []*tensor.Tensor) []*tensor.Tensor {
			x := in[0]
			return []*tensor.Tensor{ops.ReLU(ops.MatMul(x, x))}
		})
	if err != nil {
		panic(err)
	}
	// Every value was made by tracing here; a compiler pass would name
	// itself, and a fusion would list what it absorbed.
	d := g.Doc(func(*graph.Value) (string, []string) { return "trace", nil })
	mm, _ := json.Marshal(d.Nodes[1])
	fmt.Println(string(mm))
	fmt.Println(d.Inputs, d.Outputs)
	// Output:
	// {"id":1,"op":"MatMul","kind":"op","inputs":[0,0],"shape":[2,2],"dtype":"float32","attrs":{"text":"ta=false tb=false","transA":"false","transB":"false"},"pass":"trace","fused":[],"source":"export_example_test.go:16"}
	// [0] [2]
}
