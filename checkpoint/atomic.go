package checkpoint

import (
	"fmt"
	"io"
	"os"

	"github.com/sporeml/spore/internal/atomicfile"
)

// testHookWriter, when set, wraps the writer a checkpoint is written to.
// Tests use it to inject write errors part-way through a file.
var testHookWriter func(io.Writer) io.Writer

// writeAtomic writes a file so that path either keeps its old contents or
// gets the complete new ones (see atomicfile.Write).
func writeAtomic(path string, write func(w io.Writer) error) error {
	if fi, statErr := os.Stat(path); statErr == nil && fi.IsDir() {
		return fmt.Errorf("checkpoint: %s is a directory", path)
	}
	err := atomicfile.Write(path, func(w io.Writer) error {
		if testHookWriter != nil {
			w = testHookWriter(w)
		}
		return write(w)
	})
	if err != nil {
		return fmt.Errorf("checkpoint: writing %s: %w (the file was not changed)", path, err)
	}
	return nil
}
