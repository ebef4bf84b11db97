// Package onnx brings ONNX models into spore and takes spore models out as
// ONNX.
//
// # Loading
//
// LoadFile (or Load, from an io.Reader) turns a .onnx file — from
// torch.onnx.export, tf2onnx or any other exporter — into a *Model, an nn
// cell. Call runs it in PyNative mode, its ops one by one; nn.Jit traces
// and compiles it once per input shapes (Graph mode):
//
//	m, err := onnx.LoadFile("testdata/torch/cnn.onnx")
//
//	eager := m.Call(x)
//	compiled := nn.Jit(m).Call(x)
//
// Call panics on bad input, as every cell does; Run returns every output,
// and an error instead of panicking.
//
// Everything is checked before Load returns: the ai.onnx opset (MinOpset
// to MaxOpset), that each node reads only values defined by the graph's
// inputs, initializers, earlier nodes or an enclosing graph, that the
// graph has no cycle (nodes are put in dependency order when the file is
// not), that every initializer decodes to the size its dimensions claim,
// and that spore implements every op the model uses — when it does not,
// the error is an *UnsupportedError listing every missing op type with
// the first node that uses it, sub-graphs included. Check does the same
// without loading the weights and describes the model in a Report (what
// `spore onnx check` prints).
//
// A hostile file fails cleanly: a truncated or random one, a huge declared
// dimension with little data behind it, a cycle, an undefined value, an
// external data path leaving the model's directory. Memory is allocated in
// proportion to the bytes actually present, never to declared sizes.
//
// # The model as a cell
//
// A Model runs its graph with spore's ops, so it behaves as any cell: the
// same code runs eagerly and traced, and gradients flow through it. Its
// float initializers are parameters named by their ONNX names
// (NamedParameters gives "fc1.weight", "onnx::MatMul_123", ...), so they
// train, and they save and load with the checkpoint package under those
// names; BatchNormalization's running statistics are parameters that do
// not require gradients. Integer and boolean initializers are constants.
// To fine-tune, wrap the model's one-input view:
//
//	net := nn.NewWithLossCell(m.Layer(), nn.NewSoftmaxCrossEntropyWithLogits(true, nn.Mean))
//	step := nn.NewTrainOneStepCell(net, optim.NewAdam(net.TrainableParameters(), optim.AdamConfig{}))
//
// step.Call(images, labels) then runs a training step; in Graph mode the
// forward pass, the backward pass and the update are one compiled plan.
//
// Dynamic dimensions (a batch declared as dim_param "batch") work because
// Graph mode compiles once per input shapes; shape computations in the
// graph (Shape → Gather → Concat → Reshape) then run on concrete values at
// trace time and fold away. Inputs and OutputInfo describe the graph's
// inputs and outputs, dynamic dimensions as -1 with their names.
//
// A graph input read as a value (a Reshape's shape, a Slice's starts, a
// TopK's k, a Loop's trip count given as an input) is read when the model
// is called, in both modes: Graph mode specialises its plan on the value,
// compiling once per value in a bounded cache (see Model.Outputs). Indices
// of Gather and scatter ops stay data, checked when the plan runs.
//
// Control flow maps onto spore's: If onto spore.Cond (a branch is picked
// at once when the condition is known at trace time), Loop onto spore.Scan
// when it has scan outputs or is differentiated (a constant number of
// trips) and onto spore.While otherwise, whose memory does not grow with
// the trip count, Scan onto spore.Scan. In Graph mode they are
// control-flow nodes holding their bodies, not unrolled. Their limits are
// spore's: both branches of a staged If, and every trip of a While, must
// keep the same shapes, and a Loop with scan outputs needs a constant trip
// count.
//
// Sequences and optionals are values too: NewSequence and NewOptional
// make the handles that Run and Outputs take for such inputs, and
// SequenceElements and OptionalElement read the ones they return
// (ValueInfo.Kind says which inputs and outputs are which). A sequence's
// length is known when the graph runs, also while Graph mode traces it, so
// the sequence ops are list operations at trace time and Graph mode
// compiles a plan per structure of the sequences given; a Loop carrying a
// sequence runs its steps at trace time. The optimizers of the
// ai.onnx.preview.training domain (Adagrad, Adam, Momentum) and its
// Gradient, by spore's autodiff, run too.
//
// External data — the weights that large models keep in files beside the
// .onnx — is read from the model's directory (LoadFile) or the
// ExternalDataDir option; absolute paths and paths that leave that
// directory are refused.
//
// # Exporting
//
// Export traces a function or a cell in Graph mode on example inputs and
// writes an ONNX model with its parameters as initializers (see Export).
package onnx
