//go:build !linux

package profile_test

// processCPU is unavailable here; the overhead test then compares wall
// times alone.
func processCPU() float64 { return 0 }
