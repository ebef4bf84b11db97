package profile_test

import "golang.org/x/sys/unix"

// processCPU returns the CPU time of the whole process in seconds, all
// threads together: on a shared machine it counts only this process's
// work, not the time other processes take from it.
func processCPU() float64 {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
