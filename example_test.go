package spore_test

import (
	"fmt"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/ops"
)

func Example() {
	// f(x) = Σ x², eagerly, differentiated, and compiled.
	f := func(x *spore.Tensor) *spore.Tensor { return ops.Sum(ops.Mul(x, x)) }
	x := spore.FromSlice([]float32{1, 2, 3}, 3)

	fmt.Println(f(x))
	fmt.Println(spore.Grad(f)(x)[0])

	compiled := spore.Jit(f)
	fmt.Println(compiled(x))
	// Output:
	// 14.0
	// [2. 4. 6.]
	// 14.0
}

func ExampleCond() {
	relu := spore.Jit(func(x *spore.Tensor) *spore.Tensor {
		positive := ops.Greater(x, ops.ScalarLike(x, 0))
		return spore.Cond(positive,
			func(a ...*spore.Tensor) []*spore.Tensor { return a },
			func(a ...*spore.Tensor) []*spore.Tensor { return []*spore.Tensor{ops.ZerosLike(a[0])} },
			x)[0]
	})
	fmt.Println(relu(spore.Scalar(float32(2))), relu(spore.Scalar(float32(-2))))
	// Output: 2.0 0.0
}

// The seed network with the core API alone: a reshape for Flatten, then
// matmul + add + relu per dense layer.
func Example_seedNetwork() {
	spore.SetSeed(1)
	param := func(shape ...int) *spore.Tensor {
		return spore.NewParameter("", spore.RandUniform(spore.Float32, -0.05, 0.05, shape...))
	}
	w1, b1, w2, b2, w3, b3 := param(784, 512), param(512), param(512, 512), param(512), param(512, 10), param(10)
	network := func(x *spore.Tensor) *spore.Tensor {
		h := ops.Reshape(x, x.Dim(0), -1)
		h = ops.ReLU(ops.Add(ops.MatMul(h, w1), b1))
		h = ops.ReLU(ops.Add(ops.MatMul(h, w2), b2))
		return ops.Add(ops.MatMul(h, w3), b3)
	}
	out := network(spore.Ones(spore.Float32, 64, 1, 28, 28))
	fmt.Println(out.Shape())
	fmt.Printf("first row, rounded: %.3f\n", out.Float32s()[:10])
	// Output:
	// [64 10]
	// first row, rounded: [-0.115 -0.073 -0.244 -0.221 0.006 0.005 -0.024 -0.247 -0.222 -0.029]
}

// The two ways into Graph mode: a global context, or one function at a
// time.
func Example_modes() {
	forward := func(x *spore.Tensor) *spore.Tensor { return ops.ReLU(ops.SubScalar(x, 1)) }
	x := spore.FromSlice([]float32{0, 1, 2, 3}, 4)
	defer spore.SetContext(spore.WithMode(spore.GetContext().Mode))

	spore.SetContext(spore.WithMode(spore.GraphMode)) // globally
	var run = spore.Jit(forward)                      // per function
	fmt.Println(run(x))
	// Output: [0. 0. 1. 2.]
}

// Jit over Grad: forward and backward pass traced into one graph.
func ExampleGrad_jit() {
	x := spore.FromSlice([]float32{1, 2, 3}, 3)
	f := func(x *spore.Tensor) *spore.Tensor { return ops.Sum(ops.Mul(x, x)) }
	g := spore.Grad(f) // ∇f, itself differentiable
	run := spore.Jit(func(x *spore.Tensor) *spore.Tensor { return g(x)[0] })
	fmt.Println(run(x)) // forward and backward in one compiled graph
	// Output: [2. 4. 6.]
}
