//go:build unix

package train_test

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system) the process has used
// so far, on every thread. Beside wall-clock time it shows the work a
// benchmark did, whatever other processes took of the machine.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
