package ops

import "golang.org/x/sys/unix"

// processCPU returns the CPU time of the whole process in seconds, all
// threads together: on a busy shared machine wall time includes the time
// other processes take, CPU time does not.
func processCPU() float64 {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
