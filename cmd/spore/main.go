// Command spore runs spore's main job. Until the training CLI lands it
// builds the seed network (Flatten → Dense 784→512 → ReLU → Dense 512→512 →
// ReLU → Dense 512→10) with the core API, feeds ones(64, 1, 28, 28) and
// prints the (64, 10) output in PyNative mode and compiled, with timings.
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

type network struct{ w1, b1, w2, b2, w3, b3 *spore.Tensor }

func newNetwork() *network {
	spore.SetSeed(0)
	p := func(name string, bound float64, shape ...int) *spore.Tensor {
		return tensor.NewParameter(name, tensor.RandUniform(spore.Float32, -bound, bound, shape...))
	}
	return &network{
		p("dense_relu_sequential.0.weight", 1/28.0, 784, 512), p("dense_relu_sequential.0.bias", 1/28.0, 512),
		p("dense_relu_sequential.2.weight", 1/22.6, 512, 512), p("dense_relu_sequential.2.bias", 1/22.6, 512),
		p("dense_relu_sequential.4.weight", 1/22.6, 512, 10), p("dense_relu_sequential.4.bias", 1/22.6, 10),
	}
}

func (n *network) construct(x *spore.Tensor) *spore.Tensor {
	h := ops.Reshape(x, x.Dim(0), -1)
	h = ops.ReLU(ops.Add(ops.MatMul(h, n.w1), n.b1))
	h = ops.ReLU(ops.Add(ops.MatMul(h, n.w2), n.b2))
	return ops.Add(ops.MatMul(h, n.w3), n.b3)
}

func main() {
	net := newNetwork()
	x := tensor.Ones(spore.Float32, 64, 1, 28, 28)

	start := time.Now()
	eager := net.construct(x)
	fmt.Printf("PyNative mode (%v):\n%v\n\n", time.Since(start), eager)

	run := spore.NewJit(net.construct)
	graph := run.Fn(x)
	fmt.Printf("Graph mode (compiled in %v):\n%v\n\n", run.Stats().LastCompileTime, graph)

	a, b := eager.Float32s(), graph.Float32s()
	for i := range a {
		if d := a[i] - b[i]; d > 1e-5 || d < -1e-5 {
			fmt.Fprintf(os.Stderr, "spore: modes disagree at element %d: %v vs %v\n", i, a[i], b[i])
			os.Exit(1)
		}
	}
	fmt.Println("output shape", graph.Shape(), "- both modes agree")
}
