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
)

// Write writes path through write: the bytes go, buffered, to a temporary
// file in path's directory, which is flushed, synced, made readable by
// others (0644, where CreateTemp makes it private) and only then renamed
// over path. On any error the temporary file is removed, path keeps its
// old contents, and the error is returned as it came, for the caller to
// name its file.
func Write(path string, write func(w io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return err
	}
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
