//go:build !unix

package ops

import "time"

// cpuTime is not measured here: the benchmarks' CPU-time metrics are
// reported only on Unix.
func cpuTime() time.Duration { return 0 }
