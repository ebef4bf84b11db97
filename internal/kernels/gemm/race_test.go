//go:build race

package gemm

// raceEnabled: the race detector slows the reference loops down by an
// order of magnitude, so the conformance sweep takes fewer shapes under it.
const raceEnabled = true
