//go:build race

package gemm

// raceEnabled: the race detector makes sync.Pool drop items on purpose, so
// allocation counts are meaningless.
const raceEnabled = true
