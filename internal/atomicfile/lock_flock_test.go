//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package atomicfile

// lockless is whether this platform's removeStale goes by age alone.
const lockless = false
