package gemm

import "golang.org/x/sys/unix"

// threadCPU returns the calling OS thread's CPU time in seconds. With the
// goroutine locked to its thread it measures single-threaded work without
// the time other processes steal on a shared machine.
func threadCPU() float64 {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// processCPU returns the CPU time of the whole process in seconds, all
// threads together.
func processCPU() float64 {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
