//go:build !unix

package testkit

import "time"

// ProcessCPU reports 0: the process's CPU time is not known here.
func ProcessCPU() time.Duration { return 0 }
