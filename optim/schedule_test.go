package optim_test

import (
	"math"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/tensor"
)

func TestSchedules(t *testing.T) {
	cases := []struct {
		name string
		s    optim.Schedule
		want func(step int) float64
	}{
		{"constant", optim.Constant(0.3), func(int) float64 { return 0.3 }},
		{"step decay", optim.StepDecay(0.1, 0.5, 3), func(s int) float64 { return 0.1 * math.Pow(0.5, float64(s/3)) }},
		{"step decay 7", optim.StepDecay(1, 0.9, 7), func(s int) float64 { return math.Pow(0.9, float64(s/7)) }},
		{"exponential", optim.ExponentialDecay(0.1, 0.5, 4, false), func(s int) float64 { return 0.1 * math.Pow(0.5, float64(s)/4) }},
		{"multistep", optim.MultiStepDecay(1, 0.1, 2, 5), func(s int) float64 {
			switch {
			case s >= 5:
				return 0.01
			case s >= 2:
				return 0.1
			}
			return 1
		}},
		{"cosine", optim.CosineDecay(0.01, 0.1, 10), func(s int) float64 {
			p := math.Min(float64(s), 10) / 10
			return 0.01 + 0.5*(0.1-0.01)*(1+math.Cos(math.Pi*p))
		}},
		{"warmup", optim.LinearWarmup(0.2, 4), func(s int) float64 { return 0.2 * math.Min(float64(s), 4) / 4 }},
		{"warmup then cosine", optim.Sequential([]int{3}, optim.LinearWarmup(0.1, 3), optim.CosineDecay(0, 0.1, 8)), func(s int) float64 {
			if s < 3 {
				return 0.1 * float64(s) / 3
			}
			p := math.Min(float64(s-3), 8) / 8
			return 0.05 * (1 + math.Cos(math.Pi*p))
		}},
		{"scaled", optim.Scale(optim.StepDecay(1, 0.5, 2), 0.1), func(s int) float64 { return 0.1 * math.Pow(0.5, float64(s/2)) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for s := range 16 {
				got, want := optim.Eval(c.s, s), c.want(s)
				if math.Abs(got-want) > 1e-15*max(1, math.Abs(want)) {
					t.Errorf("step %d: lr %.17g, want %.17g", s, got, want)
				}
			}
		})
	}
}

// TestStepDecayLargeSteps checks the exact floor at big step counts,
// where a rounded quotient could cross an integer.
func TestStepDecayLargeSteps(t *testing.T) {
	s := optim.StepDecay(1, 0.5, 3)
	for _, step := range []int{2999999, 3000000, 3000001, 16777215, 16777216} {
		got := optim.Eval(s, step)
		want := math.Pow(0.5, float64(step/3))
		if got != want {
			t.Errorf("step %d: %g, want %g", step, got, want)
		}
	}
}

// TestScheduleInsideJit runs SGD with a gradient of −1 on one parameter,
// so that each step adds exactly that step's learning rate. The jitted
// step (one compiled graph, the schedule computed inside it from
// global_step) must give the eager sequence.
func TestScheduleInsideJit(t *testing.T) {
	sched := optim.Sequential([]int{3}, optim.LinearWarmup(0.1, 3), optim.StepDecay(0.1, 0.5, 2))
	run := func(jit bool) []float64 {
		p := tensor.NewParameter("p", tensor.Zeros(tensor.Float32, 1))
		opt := optim.NewSGD([]*tensor.Tensor{p}, optim.SGDConfig{Common: optim.Common{LR: sched}, Momentum: 0.5})
		step := func(g *tensor.Tensor) *tensor.Tensor { opt.Step([]*tensor.Tensor{g}); return ops.Sum(g) }
		j := spore.NewJit(step)
		var lrs []float64
		prev := 0.0
		g := tensor.Full(tensor.Float32, -1, 1)
		for range 10 {
			lrs = append(lrs, opt.LR())
			if jit {
				j.Fn(g)
			} else {
				step(g)
			}
			cur := p.Item()
			lrs = append(lrs, cur-prev)
			prev = cur
		}
		if jit && j.Stats().Compiles != 1 {
			t.Fatalf("compiled %d times", j.Stats().Compiles)
		}
		return lrs
	}
	eager, jitted := run(false), run(true)
	for i := range eager {
		if math.Abs(eager[i]-jitted[i]) > 1e-6 {
			t.Fatalf("value %d: eager %v, jitted %v\neager  %v\njitted %v", i, eager[i], jitted[i], eager, jitted)
		}
	}
	// The reported LR follows the schedule.
	for k := range 10 {
		if got, want := eager[2*k], optim.Eval(sched, k); math.Abs(got-want) > 1e-12 {
			t.Errorf("LR before step %d = %v, want %v", k, got, want)
		}
	}
}
