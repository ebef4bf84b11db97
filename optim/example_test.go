package optim_test

import (
	"fmt"

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
