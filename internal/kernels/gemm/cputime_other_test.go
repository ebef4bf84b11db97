//go:build !linux

package gemm

// threadCPU is unavailable here; benchmarks then skip the CPU-time metric.
func threadCPU() float64 { return 0 }

// processCPU is unavailable here.
func processCPU() float64 { return 0 }
