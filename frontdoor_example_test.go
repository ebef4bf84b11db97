package spore_test

import (
	"fmt"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/optim"
)

// Tensors are created with spore's constructors; a program does not need
// package tensor.
func Example_creation() {
	fmt.Println(spore.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3))
	fmt.Println(spore.Scalar(int64(7)), spore.Zeros(spore.Float32, 3), spore.Ones(spore.Int32, 2))
	fmt.Println(spore.Full(spore.Float64, 0.5, 2), spore.Arange(spore.Int32, 0, 10, 3))
	fmt.Println(spore.Eye(spore.Float32, 2))

	spore.SetSeed(1)
	noise := spore.RandNormal(spore.Float32, 0, 1, 1000)
	u := spore.RandUniform(spore.Float64, -1, 1, 4)
	fmt.Println(noise.Shape(), noise.DType(), u.Shape(), u.DType())

	w := spore.NewParameter("w", spore.Zeros(spore.Float32, 2))
	w.Assign(spore.FromSlice([]float32{1, 2})) // parameters change in place
	fmt.Println(w.Name(), w)
	// Output:
	// [[1. 2. 3.]
	//  [4. 5. 6.]]
	// 7 [0. 0. 0.] [1 1]
	// [0.5 0.5] [0 3 6 9]
	// [[1. 0.]
	//  [0. 1.]]
	// [1000] Float32 [4] Float64
	// w [1. 2.]
}

// A typical program imports spore (tensors, modes, Jit, Grad), nn and
// optim: here a dense layer learns y = x₀ − 2·x₁ with a compiled training
// step.
func Example_frontDoor() {
	spore.SetSeed(1)
	x := spore.RandUniform(spore.Float32, -1, 1, 64, 2)
	y := ops.MatMul(x, spore.FromSlice([]float32{1, -2}, 2, 1))

	net := nn.NewDense(2, 1)
	lossAndGrads := spore.ValueAndGrad(func(x, y *spore.Tensor) *spore.Tensor {
		return ops.MSE(net.Call(x), y, "mean")
	}, spore.GradPosition(), spore.Weights(net.TrainableParameters()...))
	opt := optim.NewSGD(net.TrainableParameters(), optim.SGDConfig{Common: optim.Common{LR: optim.Constant(0.5)}})
	step := spore.Jit(func(x, y *spore.Tensor) *spore.Tensor {
		loss, grads := lossAndGrads(x, y)
		opt.Step(grads)
		return loss
	})
	for range 300 {
		step(x, y)
	}
	fmt.Printf("loss below 1e-6: %v\n", step(x, y).Item() < 1e-6)
	fmt.Printf("weight %.3f\n", net.Weight.Float32s())
	// Output:
	// loss below 1e-6: true
	// weight [1.000 -2.000]
}
