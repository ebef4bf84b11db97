package optim_test

import (
	"fmt"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/tensor"
)

// Minimise (w − 3)² with SGD and Nesterov momentum, under a schedule that
// warms up for two steps and then decays.
func Example() {
	w := tensor.NewParameter("w", tensor.FromSlice([]float64{0}))
	sched := optim.Sequential([]int{2}, optim.LinearWarmup(0.1, 2), optim.StepDecay(0.1, 0.5, 20))
	opt := optim.NewSGD([]*tensor.Tensor{w}, optim.SGDConfig{
		Common:   optim.Common{LR: sched},
		Momentum: 0.9,
		Nesterov: true,
	})
	for range 100 {
		grad := ops.MulScalar(ops.SubScalar(w, 3), 2) // d/dw (w−3)²
		opt.Step([]*tensor.Tensor{grad})
	}
	fmt.Printf("w = %.3f after %d steps, lr now %.5f\n", w.Item(), opt.GlobalStep(), opt.LR())
	for _, s := range opt.State() {
		fmt.Println(s.Name(), s.Shape())
	}
	// Output:
	// w = 3.000 after 100 steps, lr now 0.00625
	// global_step []
	// accum.w [1]
}

// A training step traced whole: forward, backward and the optimiser's
// in-place update run as one compiled plan on every call.
func Example_jit() {
	spore.SetSeed(1)
	net := nn.NewDense(2, 1)
	lossAndGrads := spore.ValueAndGrad(func(x, y *spore.Tensor) *spore.Tensor {
		return ops.MSE(net.Call(x), y, "mean")
	}, spore.GradPosition(), spore.Weights(net.TrainableParameters()...))
	x := tensor.FromSlice([]float32{0, 1, 1, 0, 1, 1, 2, 1}, 4, 2)
	y := tensor.FromSlice([]float32{-1, 1, 0, 1}, 4, 1) // x₀ − x₁

	opt := optim.NewSGD(net.TrainableParameters(), optim.SGDConfig{
		Common:   optim.Common{LR: optim.CosineDecay(0, 0.1, 1000)},
		Momentum: 0.9,
	})
	step := spore.Jit(func(x, y *spore.Tensor) *spore.Tensor {
		loss, grads := lossAndGrads(x, y)
		opt.Step(grads)
		return loss
	})
	first := step(x, y).Item()
	var last float64
	for range 200 {
		last = step(x, y).Item()
	}
	fmt.Printf("loss %.2f -> below 0.001: %v\n", first, last < 0.001)
	// Output: loss 3.89 -> below 0.001: true
}
