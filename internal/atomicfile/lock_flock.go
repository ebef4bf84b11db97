//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package atomicfile

import (
	"os"
	"syscall"
	"time"
)

// staleAge is how long a temporary file must have been left unmodified
// before removeStale may remove it. With file locks it only has to cover
// the moments between a writer's CreateTemp and its lock, and between its
// last write and its rename.
const staleAge = 10 * time.Second

// lockFile takes an exclusive advisory lock (flock) on f, best effort,
// held until f is closed or the process exits.
func lockFile(f *os.File) {
	syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// unlocked reports whether no process holds a lock on the file at path:
// it takes the lock without waiting, and lets it go.
func unlocked(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}
