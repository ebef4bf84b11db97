//go:build race

package nn_test

// tsRace: the race detector makes sync.Pool drop items on purpose, so
// allocation counts mean nothing under it.
const tsRace = true
