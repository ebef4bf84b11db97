package checkpoint

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// testHookWriter, when set, wraps the writer a checkpoint is written to.
// Tests use it to inject write errors part-way through a file.
var testHookWriter func(io.Writer) io.Writer

// writeAtomic writes a file so that path either keeps its old contents or
// gets the complete new ones: the data goes to a temporary file in the same
// directory, is flushed and fsynced, and only then renamed over path. On any
// error the temporary file is removed and path is left untouched.
func writeAtomic(path string, write func(w io.Writer) error) (err error) {
	if fi, statErr := os.Stat(path); statErr == nil && fi.IsDir() {
		return fmt.Errorf("checkpoint: %s is a directory", path)
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("checkpoint: writing %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
			err = fmt.Errorf("checkpoint: writing %s: %w (the file was not changed)", path, err)
		}
	}()
	var w io.Writer = f
	if testHookWriter != nil {
		w = testHookWriter(w)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	if err = write(bw); err != nil {
		return err
	}
	if err = bw.Flush(); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	// CreateTemp makes the file private (0600); a checkpoint is an ordinary
	// file that other tools read.
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	// Make the rename itself durable. Not every file system supports
	// syncing a directory, and the data is already safe, so errors here
	// are ignored.
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
