package npy

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzRead feeds arbitrary bytes to Read. It must never panic; whatever it
// accepts must survive a Write and Read round trip unchanged. The seeds
// are NumPy's files in testdata and a few near misses.
func FuzzRead(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.npy")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(magic + "\x01\x00\x00\x00"))
	f.Add(npyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000, 1000000000), }", nil))
	f.Add(npyBytes(3, "{'descr': '|b1', 'fortran_order': True, 'shape': (2,), }", []byte{0, 7}))
	f.Fuzz(func(t *testing.T, data []byte) {
		x, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := Write(&buf, x); err != nil {
			t.Fatalf("read %v %v but cannot write it: %v", x.DType(), x.Shape(), err)
		}
		y, err := Read(&buf)
		if err != nil {
			t.Fatalf("cannot read back what Write wrote: %v", err)
		}
		if x.DType() != y.DType() || !reflect.DeepEqual(x.Shape(), y.Shape()) || !sameBits(x.Data(), y.Data()) {
			t.Fatalf("round trip changed %v %v into %v %v", x.DType(), x.Shape(), y.DType(), y.Shape())
		}
	})
}
