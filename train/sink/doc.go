// Package sink is data sink mode, MindSpore's dataset_sink_mode and
// mindspore.data_sink: a training step runs over a dataset n steps per
// call, the n batches stacked into one queue and looped over by a Scan,
// which under Graph mode is one compiled plan that does not return to Go
// between steps. A goroutine fills the next queue while the current one
// runs.
//
// train.Model uses it when SinkSize is set; spore.DataSink is New, for a
// step written by hand.
package sink
