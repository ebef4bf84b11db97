// Package exec turns an optimised graph into an execution plan and runs it.
//
// Compile resolves every value's kernel once and lays out all intermediate
// values in one arena per dtype, from value lifetimes: a linear scan over
// the steps places each buffer (best fit) in memory freed by values whose
// last use has passed, elementwise ops write in place over an operand that
// dies with them, and reshapes alias their input. Tensor headers for every
// value are built at compile time, so a run rebinds the argument slots and
// calls the kernels in order — no allocation per call for intermediates
// (RunInto allocates nothing for the seed network's inference and training
// step; Run allocates only the copies of the results it returns). The
// convolution and pooling kernels, which split their batch over the cores,
// still allocate the small closure they hand to the worker pool — about 18
// allocations of a few dozen bytes per LeNet-5 training step.
// Parameter assignments recorded in the graph are performed in place, after
// every read of the old values.
package exec
