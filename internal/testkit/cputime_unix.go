//go:build unix

package testkit

import (
	"syscall"
	"time"
)

// ProcessCPU returns the CPU time (user and system, all threads) the
// process has used so far, or 0 where it is not known. Benchmarks on the
// shared machines report work per CPU-second beside wall time, because
// wall time there includes what other processes took.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
