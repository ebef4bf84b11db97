// Package train is spore's high-level training API, as MindSpore's
// mindspore.train: Model (Train, Fit, Eval, Predict, checkpoints),
// metrics (Accuracy, Loss, TopKCategoricalAccuracy) and callbacks
// (LossMonitor, TimeMonitor, ModelCheckpoint, EarlyStopping,
// SummaryCollector for TensorBoard and spore's dashboard, and your own
// through the Callback interface).
//
//	model := train.NewModel(net, nn.NewCrossEntropyLoss("", 0), opt, train.NewAccuracy())
//	err := model.Train(10, ds, train.NewLossMonitor(100),
//		train.NewModelCheckpoint(train.CheckpointConfig{Dir: dir, SaveEpochs: 1, KeepLast: 3}))
//	if err != nil {
//		return nil, err
//	}
//	return model.Eval(testSet) // map[accuracy:0.97]
//
// # Execution
//
// Training steps run through nn.TrainOneStepCell, so a Model follows the
// global mode: in PyNative mode each step runs eagerly; in Graph mode
// (spore.SetContext(spore.WithMode(spore.GraphMode))) each step — forward,
// backward and the optimiser's update — is one compiled graph, compiled
// once per batch shape and then run without allocating. Eval and Predict
// call the network in inference mode (SetTrain(false)), compiled in Graph
// mode too, and restore training mode afterwards.
//
// # Datasets
//
// Train, Fit and Eval read any Dataset: a value whose All method yields
// one epoch of batches, each (data, label, ...). *dataset.Dataset is one:
//
//	ds := dataset.FromTensors(images, labels).Shuffle(60000).Batch(64, true)
//
// # Checkpoints and resuming
//
// A checkpoint holds the network's parameters under their names and the
// optimiser's state ("global_step", "moment1.<name>", ...), so
// LoadCheckpoint resumes training exactly where it stopped: same
// parameters, same moments, same step count and so the same scheduled
// learning rate. Files are safetensors or MindSpore .ckpt by extension
// (package checkpoint), written atomically.
package train
