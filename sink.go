package spore

import "github.com/sporeml/spore/train/sink"

// SinkDataset is what DataSink reads batches from; see sink.Dataset.
type SinkDataset = sink.Dataset

// SinkConfig configures DataSink; see sink.Config.
type SinkConfig = sink.Config

// ErrSinkDone is what Sink.Run returns after the last epoch that
// SinkConfig.Epochs asked for.
var ErrSinkDone = sink.ErrDone

// SinkPosition says where in the dataset a Sink.Run call's steps came from.
type SinkPosition = sink.Position

// Sink runs a training step over a dataset n steps per call, MindSpore's
// data sink mode; see package train/sink.
type Sink = sink.Sink

// DataSink returns step sunk over ds, n steps per Sink.Run, MindSpore's
// mindspore.data_sink: each Run stacks the next n batches into one queue
// and runs step over it as one call, a single compiled plan in Graph mode.
// See sink.New for the whole contract.
func DataSink(step func(batch ...*Tensor) *Tensor, ds SinkDataset, n int, cfg ...SinkConfig) *Sink {
	return sink.New(step, ds, n, cfg...)
}
