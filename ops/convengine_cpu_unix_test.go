//go:build unix

package ops

import (
	"syscall"
	"time"
)

// cpuTime is the process's user and system time so far. On a machine
// shared with other work, GFLOP/s per CPU second (at one thread, where
// no worker spins) is steadier than per wall-clock second.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
