//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package atomicfile

import (
	"os"
	"time"
)

// staleAge is how long a temporary file must have been left unmodified
// before removeStale may remove it. Without file locks the age is the only
// sign that its writer is gone, so it is long.
const staleAge = time.Hour

// lockFile does nothing where spore uses no file locks.
func lockFile(*os.File) {}

// unlocked reports true: without locks, only the age counts.
func unlocked(string) bool { return true }
