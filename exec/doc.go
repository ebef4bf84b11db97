// Package exec turns an optimised graph into an execution plan and runs it.
//
// Compile resolves every value's kernel once and lays out all intermediate
// values in one arena per dtype, from value lifetimes: a linear scan over
// the steps places each buffer (best fit) in memory freed by values whose
// last use has passed, elementwise ops write in place over an operand that
// dies with them, and reshapes alias their input. A collective's bucket
// (core.Traits ArgsInResult, ResultsInArg) has the tensors it packs
// computed straight into it and its unpacked results read from it, at
// their offsets, instead of copies; so does a Concat along an axis with
// only 1s before it (core.Prim.PacksArgs), whose producers then write their
// slices of its buffer (an argument that is a graph input, a parameter or
// a constant, is read after the Concat, or shares its buffer with an
// in-place update stays where it is and is copied, and a Concat left with
// nothing to copy runs no step). Tensor headers for every
// value are built at compile time, so a run rebinds the argument slots and
// calls the kernels in order — no allocation per call (RunInto allocates
// nothing at all; Run allocates only the copies of the results it returns).
// Kernels that split their work over the cores hand the worker pool a
// pooled loop value, not a closure, to keep it so.
// Parameter assignments recorded in the graph are performed in place, after
// every read of the old values.
//
// A plan compiled at the bounds of dynamic dimensions serves every smaller
// size after MakeDynamic: given the same function traced at a few other
// sizes, it checks that the graphs agree but for integers affine in the
// sizes (dimensions, attribute fields such as a reshape's target), fits
// them, and before a run at new sizes points each header at a prefix of
// its buffer, with the actual shape, and gives each size-dependent step
// its attributes for those sizes — built once per sizes and cached, so a
// run at sizes seen before allocates no more than any run. A contiguous
// value with a smaller dimension fits in its buffer's prefix; values that
// share a buffer are checked to have equal sizes at every size.
package exec
