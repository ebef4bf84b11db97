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
// With SinkSize n > 0 a Model trains in data sink mode, MindSpore's
// dataset_sink_mode with sink_size: spore.DataSink runs n steps per call
// as one compiled Scan over a queue of n batches that another goroutine
// filled while the previous call ran. The weights come out as step-by-step
// training leaves them (bit for bit at O0); callbacks hear of the n steps
// after the call, one by one, with the step numbers, losses and batches
// step-by-step training gives them (see Model.SinkSize).
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
//
// # Data parallelism
//
// Under mpirun, with comm.Init and data parallelism asked for
// (spore.SetAutoParallelContext with spore.DataParallel, or
// StepConfig.Parallel), a Model trains one replica per rank, as
// MindSpore's does:
//
//   - Train first checks that every rank built the same parameters (names,
//     shapes, dtypes) and broadcasts rank 0's values, so that all start
//     alike; a mismatch is an error on every rank naming the first
//     parameter that differs (SyncReplicas);
//   - each rank should read its part of every global batch, the same
//     number of batches on every rank:
//     ds.Shuffle(n).ShardedBatch(globalBatch, true, comm.Size(), comm.Rank());
//   - the training cell averages the gradients across ranks, and the loss
//     each step reports is the global batch's;
//   - Eval adds the ranks' metric sums (Summable), so each rank evaluating
//     its shard (dataset's Shard) gets the metrics of the whole set;
//   - only rank 0 writes checkpoints (SaveCheckpoint, ModelCheckpoint);
//   - CheckReplicas verifies, whenever asked, that the ranks' parameters
//     are still bitwise identical.
//
// A callback that stops training must decide alike on every rank, or the
// ranks that go on wait for the others at their next gradient exchange.
// The callbacks here do: they read the global loss and the combined
// metrics.
package train
