// Package atomicfile writes files whole or not at all: everything spore
// writes for other programs to read (checkpoints, summaries, graphs, logs,
// datasets) goes through it, so that a reader, or a crash mid-write, never
// sees half a file.
package atomicfile

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Write writes path through write: the bytes go, buffered, to a temporary
// file in path's directory, which is flushed, synced, made readable by
// others (0644, where CreateTemp makes it private) and only then renamed
// over path. On any error the temporary file is removed, path keeps its
// old contents, and the error is returned as it came, for the caller to
// name its file.
//
// The temporary file is named ".BASE.tmp-NNN" (BASE being path's base
// name, NNN digits). A writer that dies mid-write (kill -9, a crash, a
// power cut) leaves its temporary behind; the next successful Write of the
// same path removes such leftovers (see removeStale): only files of that
// exact pattern, and none that a live writer may still be writing.
func Write(path string, write func(w io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, tempPrefix(base)+"*")
	if err != nil {
		return err
	}
	// Held until the file is closed, or the process ends however it
	// ends: it tells other writers' removeStale that this one is alive.
	lockFile(f)
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	if err = write(bw); err != nil {
		return err
	}
	if err = bw.Flush(); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	removeStale(dir, base, time.Now())
	// Make the rename itself durable. Not every file system can sync a
	// directory, and the data is already safe, so errors here are ignored.
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// WriteFile writes data to path as Write does.
func WriteFile(path string, data []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// tempPrefix is the name of base's temporary files up to their random
// digits.
func tempPrefix(base string) string { return "." + base + ".tmp-" }

// isTemp reports whether name is one of base's temporary files: the
// prefix, then only the digits os.CreateTemp puts for its "*".
func isTemp(name, base string) bool {
	digits, ok := strings.CutPrefix(name, tempPrefix(base))
	if !ok || digits == "" {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// removeStale removes the temporary files of base in dir that no writer
// can still be writing, best effort (errors are ignored: the file just
// written is what matters). The rule, under which no writer waits for
// another:
//
//   - only regular files named as isTemp says, so that nothing else, nor
//     another target's temporaries, is touched;
//   - none modified in the last staleAge: a live writer's file changes as
//     it is written (every 1 MiB flush, and last just before its rename),
//     so this covers a writer that has not yet taken its lock or has
//     just closed its file;
//   - where file locks exist (lockFile), none that is locked: a live
//     writer holds its lock however long it pauses between writes, and a
//     dead one's lock went with its process.
func removeStale(dir, base string, now time.Time) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !isTemp(e.Name(), base) {
			continue
		}
		info, err := e.Info()
		if err != nil || now.Sub(info.ModTime()) < staleAge {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if unlocked(p) {
			os.Remove(p)
		}
	}
}
