//go:build !linux

package ops

// processCPU is not measured off Linux; the benchmarks then report no CPU
// time.
func processCPU() float64 { return 0 }
