package optim

import (
	"math"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Schedule is a learning-rate schedule, MindSpore's LearningRateSchedule:
// a function of the step, written with ops so that it is computed inside
// the training step — eagerly in PyNative mode, as part of the compiled
// graph in Graph mode — rather than read once as a Go value at trace time.
type Schedule interface {
	// At returns the learning rate after step completed steps. step is a
	// Float64 scalar tensor (concrete or symbolic) holding a whole number
	// ≥ 0; the result is a Float64 scalar.
	At(step *tensor.Tensor) *tensor.Tensor
}

// Eval evaluates s eagerly at a step, for printing and tests.
func Eval(s Schedule, step int) float64 {
	return s.At(tensor.Scalar(float64(step))).Item()
}

func scalarLike(x *tensor.Tensor, v float64) *tensor.Tensor { return ops.ScalarLike(x, v) }

// Constant is a fixed learning rate.
func Constant(lr float64) Schedule { return constant(lr) }

type constant float64

func (c constant) At(step *tensor.Tensor) *tensor.Tensor { return scalarLike(step, float64(c)) }

// floorDiv returns ⌊step/n⌋ for a whole step ≥ 0 and n ≥ 1, exactly:
// the float quotient truncated through Int64, then corrected by one where
// rounding of the division crossed an integer.
func floorDiv(step *tensor.Tensor, n float64) *tensor.Tensor {
	q := ops.Cast(ops.Cast(ops.DivScalar(step, n), tensor.Int64), step.DType())
	one, zero := scalarLike(step, 1), scalarLike(step, 0)
	// q·n > step: one too many.
	q = ops.Sub(q, ops.Select(ops.Greater(ops.MulScalar(q, n), step), one, zero))
	// (q+1)·n ≤ step: one too few.
	return ops.Add(q, ops.Select(ops.LessEqual(ops.MulScalar(ops.AddScalar(q, 1), n), step), one, zero))
}

// StepDecay multiplies lr by gamma every stepSize steps:
// lr·gamma^⌊step/stepSize⌋ — PyTorch's StepLR, and MindSpore's
// ExponentialDecayLR(lr, gamma, stepSize, is_stair=True).
func StepDecay(lr, gamma float64, stepSize int) Schedule {
	if stepSize < 1 {
		core.Panicf("optim.StepDecay", "step size %d must be at least 1", stepSize)
	}
	return ExponentialDecay(lr, gamma, stepSize, true)
}

// ExponentialDecay is MindSpore's ExponentialDecayLR: lr·rate^p with
// p = step/decaySteps, or ⌊step/decaySteps⌋ when stair is set.
func ExponentialDecay(lr, rate float64, decaySteps int, stair bool) Schedule {
	if decaySteps < 1 {
		core.Panicf("optim.ExponentialDecay", "decay steps %d must be at least 1", decaySteps)
	}
	return expDecay{lr, rate, float64(decaySteps), stair}
}

type expDecay struct {
	lr, rate, n float64
	stair       bool
}

func (e expDecay) At(step *tensor.Tensor) *tensor.Tensor {
	var p *tensor.Tensor
	if e.stair {
		p = floorDiv(step, e.n)
	} else {
		p = ops.DivScalar(step, e.n)
	}
	return ops.MulScalar(ops.Pow(scalarLike(step, e.rate), p), e.lr)
}

// MultiStepDecay multiplies lr by gamma at each milestone step:
// lr·gamma^(number of milestones ≤ step), PyTorch's MultiStepLR (MindSpore
// builds the same with piecewise_constant_lr).
func MultiStepDecay(lr, gamma float64, milestones ...int) Schedule {
	ms := make([]float64, len(milestones))
	for i, m := range milestones {
		if m < 0 || i > 0 && m <= milestones[i-1] {
			core.Panicf("optim.MultiStepDecay", "milestones %v must be increasing and ≥ 0", milestones)
		}
		ms[i] = float64(m)
	}
	return multiStep{lr, gamma, ms}
}

type multiStep struct {
	lr, gamma float64
	ms        []float64
}

func (m multiStep) At(step *tensor.Tensor) *tensor.Tensor {
	if len(m.ms) == 0 {
		return scalarLike(step, m.lr)
	}
	passed := ops.Sum(ops.Cast(ops.GreaterEqual(step, tensor.FromSlice(m.ms)), step.DType()))
	return ops.MulScalar(ops.Pow(scalarLike(step, m.gamma), passed), m.lr)
}

// CosineDecay is MindSpore's CosineDecayLR: from maxLR at step 0 down to
// minLR at decaySteps, following half a cosine, then flat:
// minLR + ½(maxLR−minLR)(1+cos(π·min(step, decaySteps)/decaySteps)).
// It equals PyTorch's CosineAnnealingLR(T_max=decaySteps, eta_min=minLR)
// up to decaySteps (PyTorch's then rises again; MindSpore's stays).
func CosineDecay(minLR, maxLR float64, decaySteps int) Schedule {
	if decaySteps < 1 {
		core.Panicf("optim.CosineDecay", "decay steps %d must be at least 1", decaySteps)
	}
	return cosine{minLR, maxLR, float64(decaySteps)}
}

type cosine struct{ min, max, n float64 }

func (c cosine) At(step *tensor.Tensor) *tensor.Tensor {
	p := ops.DivScalar(ops.Minimum(step, scalarLike(step, c.n)), c.n)
	cos := ops.AddScalar(ops.Cos(ops.MulScalar(p, math.Pi)), 1)
	return ops.AddScalar(ops.MulScalar(cos, 0.5*(c.max-c.min)), c.min)
}

// LinearWarmup is MindSpore's WarmUpLR: lr·min(step, warmupSteps)/warmupSteps,
// rising linearly from 0 at step 0 to lr at warmupSteps, then flat. Note
// MindSpore's convention that the first step (step 0) has rate 0; PyTorch's
// LinearLR starts at a start_factor instead.
func LinearWarmup(lr float64, warmupSteps int) Schedule {
	if warmupSteps < 1 {
		core.Panicf("optim.LinearWarmup", "warmup steps %d must be at least 1", warmupSteps)
	}
	return warmup{lr, float64(warmupSteps)}
}

type warmup struct{ lr, n float64 }

func (w warmup) At(step *tensor.Tensor) *tensor.Tensor {
	return ops.MulScalar(ops.Minimum(step, scalarLike(step, w.n)), w.lr/w.n)
}

// Sequential runs schedules one after another, PyTorch's SequentialLR:
// schedules[0] until step boundaries[0], then schedules[1] — which sees
// the step counted from its boundary, starting at 0 — until boundaries[1],
// and so on. Linear warmup followed by cosine decay over total steps:
//
//	optim.Sequential([]int{w}, optim.LinearWarmup(lr, w), optim.CosineDecay(0, lr, total-w))
func Sequential(boundaries []int, schedules ...Schedule) Schedule {
	if len(schedules) != len(boundaries)+1 {
		core.Panicf("optim.Sequential", "%d schedules need %d boundaries, got %d", len(schedules), len(schedules)-1, len(boundaries))
	}
	bs := make([]float64, len(boundaries))
	for i, b := range boundaries {
		if b < 1 || i > 0 && b <= boundaries[i-1] {
			core.Panicf("optim.Sequential", "boundaries %v must be increasing and ≥ 1", boundaries)
		}
		bs[i] = float64(b)
	}
	return sequential{bs, append([]Schedule(nil), schedules...)}
}

type sequential struct {
	bounds []float64
	scheds []Schedule
}

func (s sequential) At(step *tensor.Tensor) *tensor.Tensor {
	lr := s.scheds[0].At(step)
	// Later pieces override earlier ones from their boundary on. Every
	// piece is computed (a traced graph has no branches); the schedules
	// are scalar arithmetic, so that costs nothing worth a Cond.
	for i, b := range s.bounds {
		local := ops.Maximum(ops.SubScalar(step, b), scalarLike(step, 0))
		lr = ops.Select(ops.GreaterEqual(step, scalarLike(step, b)), s.scheds[i+1].At(local), lr)
	}
	return lr
}

// Scale multiplies a schedule by a constant factor.
func Scale(s Schedule, factor float64) Schedule { return scaled{s, factor} }

type scaled struct {
	s Schedule
	f float64
}

func (s scaled) At(step *tensor.Tensor) *tensor.Tensor { return ops.MulScalar(s.s.At(step), s.f) }
