package npy

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sporeml/spore/internal/atomicfile"
	"github.com/sporeml/spore/tensor"
)

// ReadNPZ reads the arrays of an .npz file (a zip archive of .npy files,
// stored as np.savez writes them or deflated as np.savez_compressed does).
// names are the entry names without their ".npy" suffix, in archive order,
// as np.load's keys are. Each entry's header must agree with the entry's
// size in the archive's directory, which is checked before its data is
// read, and every entry's checksum is verified.
func ReadNPZ(path string) (names []string, ts []*tensor.Tensor, err error) {
	zr, err := zip.OpenReader(path)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		// Entry names are keys here, never paths to extract to, so a name
		// such as "../x.npy" is harmless and is read like any other.
		return nil, nil, fmt.Errorf("%s: not an .npz file: %w", path, err)
	}
	defer zr.Close()
	seen := map[string]bool{}
	for _, f := range zr.File {
		name := strings.TrimSuffix(f.Name, ".npy")
		if seen[name] {
			return nil, nil, fmt.Errorf("%s: array %q appears twice", path, name)
		}
		seen[name] = true
		t, err := readEntry(f)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: entry %q: %w", path, f.Name, err)
		}
		names = append(names, name)
		ts = append(ts, t)
	}
	return names, ts, nil
}

// readEntry reads one .npy entry of an archive.
func readEntry(f *zip.File) (*tensor.Tensor, error) {
	if f.Method != zip.Store && f.Method != zip.Deflate {
		return nil, fmt.Errorf("compression method %d is not supported (stored and deflated are)", f.Method)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	k, shape, used, err := readHeader(rc)
	if err != nil {
		return nil, err
	}
	need, _ := dataBytes(k, shape)
	if uint64(used)+uint64(need) != f.UncompressedSize64 {
		return nil, fmt.Errorf("the header declares shape %v of %v (%d data bytes) but the entry holds %d", shape, k.dt, need, int64(f.UncompressedSize64)-used)
	}
	t, err := readData(rc, k, shape)
	if err != nil {
		return nil, err
	}
	// Reading to the end makes the zip reader check the entry's CRC.
	if n, err := io.Copy(io.Discard, rc); err != nil {
		return nil, err
	} else if n != 0 {
		return nil, fmt.Errorf("%d bytes after the array's data", n)
	}
	return t, nil
}

// WriteNPZ writes ts to path as an .npz archive of uncompressed .npy
// entries named names[i]+".npy", as np.savez does; np.load(path)[name]
// gives each array back. The file is written whole or not at all.
func WriteNPZ(path string, names []string, ts []*tensor.Tensor) error {
	return writeNPZ(path, names, ts, zip.Store)
}

// WriteNPZCompressed is WriteNPZ with deflated entries, as
// np.savez_compressed writes them.
func WriteNPZCompressed(path string, names []string, ts []*tensor.Tensor) error {
	return writeNPZ(path, names, ts, zip.Deflate)
}

func writeNPZ(path string, names []string, ts []*tensor.Tensor, method uint16) error {
	if len(names) != len(ts) {
		return fmt.Errorf("%s: %d names for %d arrays", path, len(names), len(ts))
	}
	seen := map[string]bool{}
	for i, n := range names {
		if n == "" {
			return fmt.Errorf("%s: array %d has an empty name", path, i)
		}
		if seen[n] {
			return fmt.Errorf("%s: name %q is given twice", path, n)
		}
		seen[n] = true
	}
	err := atomicfile.Write(path, func(w io.Writer) error {
		zw := zip.NewWriter(w)
		for i, t := range ts {
			ew, err := zw.CreateHeader(&zip.FileHeader{Name: names[i] + ".npy", Method: method})
			if err != nil {
				return err
			}
			if err := Write(ew, t); err != nil {
				return fmt.Errorf("array %q: %w", names[i], err)
			}
		}
		return zw.Close()
	})
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
