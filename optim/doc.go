// Package optim holds spore's optimisers and learning-rate schedules, as
// MindSpore's mindspore.nn optimisers and LearningRateSchedule classes:
// SGD (momentum, Nesterov, dampening, weight decay), Adam and AdamW, with
// parameter groups, and schedules (step, exponential and multi-step decay,
// cosine decay, linear warmup, and Sequential to chain them).
//
// # Updates are explicit assignments
//
// An optimiser's Step is ordinary op code that ends in Assign: it writes
// the new parameter values and its own state — momentum buffers
// ("accum.<name>"), Adam's moments ("moment1.<name>", "moment2.<name>")
// and the step counter ("global_step") — in place. Everything that changes
// from step to step is computed inside Step from that state with ops: the
// scheduled learning rate is Schedule.At(global_step), Adam's bias
// corrections are β^t with t from global_step, SGD's first-step dampening
// rule reads global_step too. Nothing is a Go value captured when a
// function is traced, so the same Step runs eagerly (PyNative) and, inside
// spore.Jit, records into the graph; a whole training step — forward,
// backward and update — compiles into one plan that updates every
// parameter and every state slot in place on each run:
//
//	opt := optim.NewSGD(net.TrainableParameters(), optim.SGDConfig{
//		Common:   optim.Common{LR: optim.CosineDecay(0, 0.1, 1000)},
//		Momentum: 0.9,
//	})
//	step := spore.Jit(func(x, y *spore.Tensor) *spore.Tensor {
//		loss, grads := lossAndGrads(x, y)
//		opt.Step(grads)
//		return loss
//	})
//
// nn.TrainOneStepCell packages exactly that.
//
// State that decays geometrically — a momentum buffer or an Adam moment
// whose gradient stays zero, as for the weights of a ReLU unit that no
// longer fires — is flushed to zero once it falls below the smallest
// normal float (2⁻¹²⁶ in float32), as under PyTorch's set_flush_denormal:
// arithmetic on subnormal numbers is some thirty times slower on x86, and
// such state made up most of a small network's training step. Both modes
// flush alike.
//
// State slots are non-trainable parameters (tensor.NewParameter with
// RequiresGrad false). State lists them, named, so that checkpoints save
// and restore them with the network and training resumes where it
// stopped.
//
// # Schedules
//
// A Schedule maps the number of completed steps (a Float64 scalar tensor)
// to a rate with ops, so it runs inside a compiled step. Schedules are
// computed in float64 and cast to each parameter's dtype. They follow
// MindSpore where it differs from PyTorch: the step starts at 0 on the
// first update (so LinearWarmup, MindSpore's WarmUpLR, gives rate 0 on the
// very first step), CosineDecay stays at its minimum after decaySteps.
//
// # Parameter groups and weight decay
//
// Common.Groups give subsets of the parameters their own schedule and
// weight decay, as MindSpore's group_params. Without a group setting,
// weight decay skips parameters whose names contain "beta" or "gamma", as
// MindSpore's optimisers do by default; SplitBiases prepares the usual
// "no decay on biases" split.
//
// # MindSpore and PyTorch semantics
//
// SGD is MindSpore's nn.SGD, which is PyTorch's torch.optim.SGD. Adam is
// MindSpore's nn.Adam (ApplyAdam): ε is added to √v before bias
// correction, unlike PyTorch, which adds it after. AdamW follows PyTorch's
// torch.optim.AdamW (and mindspore.experimental.optim.AdamW), with bias
// correction; MindSpore's older nn.AdamWeightDecay has none.
package optim
