// Package examples holds the five programs of MindSpore's execution-mode
// tutorial written with spore, one per directory: PyNative mode through the
// context, Graph mode through the context, Jit as a decorator-style package
// variable, Jit as a function transform, and Jit on a cell's Construct.
// Each builds the tutorial's network (models.Network) from the same seed,
// feeds ones(64, 1, 28, 28) and prints the (64, 10) output; the test in
// this directory runs all five and checks that they agree.
//
// charlm is a larger program: a small character-level GPT trained in Graph
// mode on the Go standard library's source and sampled in PyNative mode.
package examples
