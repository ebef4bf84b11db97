//go:build race

package spore_test

// raceEnabled: the race detector makes sync.Pool drop items on purpose.
// The kernels keep their scratch in free lists, so a plan's steady state
// allocates nothing under it too, but a compilation formats strings, and
// fmt's printers come from a sync.Pool: its allocation count varies.
const raceEnabled = true
