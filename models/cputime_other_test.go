//go:build !linux

package models_test

// processCPU is unavailable here; benchmarks then skip the CPU-time metric.
func processCPU() float64 { return 0 }
