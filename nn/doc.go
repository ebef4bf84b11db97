// Package nn builds neural networks from cells, as MindSpore's
// mindspore.nn: the Cell base, layers (Dense, Conv2d, pooling, BatchNorm,
// LayerNorm, Embedding, Dropout, activations, SequentialCell, CellList,
// the recurrent RNN, LSTM and GRU with their single-step cells, whose
// time loop is one spore.Scan, and the attention layers
// MultiheadAttention, TransformerEncoderLayer, TransformerDecoderLayer
// and their stacks, with learned and sinusoidal positional encodings),
// losses, WithLossCell and the training cell TrainOneStepCell. Initial
// values come from package nn/initializer and draw from the framework
// seed (spore.SetSeed).
//
// # Cells
//
// A network is a struct embedding Cell, built with Init:
//
//	type Network struct {
//		nn.Cell
//		Flatten             *nn.Flatten
//		DenseReluSequential *nn.SequentialCell
//	}
//
//	func (n *Network) Construct(x *spore.Tensor) *spore.Tensor {
//		return n.DenseReluSequential.Call(n.Flatten.Call(x))
//	}
//
//	net := nn.Init(&Network{
//		Flatten: nn.NewFlatten(),
//		DenseReluSequential: nn.NewSequentialCell(
//			nn.NewDense(28*28, 512), nn.NewReLU(),
//			nn.NewDense(512, 512), nn.NewReLU(),
//			nn.NewDense(512, 10),
//		),
//	})
//	logits := net.Call(x)
//
// The exported fields are the cell tree: children (any Module), parameters
// and slices of either. Parameters are named by their paths in snake_case,
// dense_relu_sequential.0.weight, .0.bias, .2.weight, ..., as in MindSpore
// and PyTorch; Init sets those names on the parameter tensors, so
// Tensor.Name, NamedParameters and checkpoints agree.
//
// # Calling a cell
//
// Call is MindSpore's Cell.__call__. In PyNative mode (the default) it
// runs Construct at once: an interface call, no reflection, no
// allocation of its own. In Graph mode
// (spore.SetContext(spore.WithMode(spore.GraphMode))) it traces the whole
// Construct once per input signature, compiles it with spore.Jit and runs
// the compiled plan; the plan is cached in the Cell, per compile level and
// training state, so later calls only look it up. Jit(cell) compiles a
// cell whatever the mode, as MindSpore's @jit on construct. Inside a
// Construct, children may be called with Call or directly with Construct:
// under a trace both are inlined into the enclosing graph.
//
// Parameters are captured by reference, so a compiled plan sees every
// update of their values; in-place updates inside Construct (BatchNorm's
// running statistics, through Tensor.Assign) are performed by the plan.
//
// Plain Go fields (a Dropout's probability, a Softmax axis, the tree's
// shape) are fixed when a plan is traced; call ResetJit after changing
// them. SetTrain is tracked automatically.
//
// # Training
//
// WithLossCell joins a network and a loss; its TrainableParameters are
// what an optimiser updates:
//
//	train := nn.NewWithLossCell(net, nn.NewSoftmaxCrossEntropyWithLogits(true, nn.Mean))
//	train.SetTrain(true)
//	loss, grads := spore.ValueAndGrad(train.Construct, spore.GradPosition(),
//		spore.Weights(train.TrainableParameters()...))(x, labels)
//
// TrainOneStepCell does that and the optimiser's update in one call
// (MindSpore's TrainOneStepCell), with optional gradient clipping by global
// norm (ClipByGlobalNorm); in Graph mode the whole step — forward,
// backward and the in-place update — is one compiled plan:
//
//	step := nn.NewTrainOneStepCell(train, opt)
//	loss := step.Step(x, labels)
//
// # Mixed precision
//
// AutoMixedPrecision(net, level) is MindSpore's auto_mixed_precision with
// its level names: O0 runs in float32; O2 runs every matmul and
// convolution in bfloat16 with float32 accumulation, and the rest — bias
// adds, activations, softmax, BatchNorm and LayerNorm, the loss — in
// float32; O3 runs every op that has a bfloat16 kernel in bfloat16. The
// parameters stay Float32 (master weights): the casts to bfloat16 are ops
// of the forward pass, so gradients come back Float32 through them and
// optimisers update in float32. In Graph mode an inference plan fuses
// each Dense at O2 into one bfloat16 GEMM (AMX or AVX512-BF16 where the
// CPU has them) on weights packed once per update, with the same bits as
// PyNative mode. train.Model's AmpLevel and spore.JitConfig's Precision
// set the same levels.
package nn
