package npy

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sporeml/spore/tensor"
)

// TestReadNPZ reads archives NumPy wrote with np.savez (stored entries)
// and np.savez_compressed (deflated entries).
func TestReadNPZ(t *testing.T) {
	tests := []struct {
		file  string
		names []string
		want  []any
	}{
		{"arrays.npz", []string{"x", "y"}, []any{[]float32{-0.5, -0.25, 0, 0.25, 0.5, 0.75}, []int64{7, 8, 9}}},
		{"compressed.npz", []string{"a", "b"}, []any{[]float64{0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25}, []bool{true, false, true}}},
		{"positional.npz", []string{"arr_0"}, []any{[]int32{1, 2}}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			names, ts, err := ReadNPZ(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(names, tc.names) {
				t.Fatalf("names %v, want %v", names, tc.names)
			}
			for i, x := range ts {
				if !reflect.DeepEqual(x.Data(), tc.want[i]) {
					t.Errorf("%s = %v, want %v", names[i], x.Data(), tc.want[i])
				}
			}
		})
	}
}

// TestWriteNPZ writes archives both ways and reads them back; the stored
// form's entries are byte for byte the .npy files Write makes.
func TestWriteNPZ(t *testing.T) {
	dir := t.TempDir()
	names := []string{"weight", "label", "mask"}
	ts := []*tensor.Tensor{
		tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3),
		tensor.Scalar(int64(4)),
		tensor.FromSlice([]bool{true, false}),
	}
	for _, tc := range []struct {
		name  string
		write func(string, []string, []*tensor.Tensor) error
	}{{"stored", WriteNPZ}, {"deflated", WriteNPZCompressed}} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name+".npz")
			if err := tc.write(p, names, ts); err != nil {
				t.Fatal(err)
			}
			gotNames, got, err := ReadNPZ(p)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(gotNames, names) {
				t.Fatalf("names %v, want %v", gotNames, names)
			}
			for i := range ts {
				if !reflect.DeepEqual(got[i].Data(), ts[i].Data()) || !reflect.DeepEqual(got[i].Shape(), ts[i].Shape()) {
					t.Errorf("%s: got %v, want %v", names[i], got[i], ts[i])
				}
			}
		})
	}
}

func TestWriteNPZErrors(t *testing.T) {
	dir := t.TempDir()
	one := []*tensor.Tensor{tensor.Scalar(1.0)}
	tests := []struct {
		name  string
		names []string
		ts    []*tensor.Tensor
		want  string
	}{
		{"count", []string{"a", "b"}, one, "2 names for 1 arrays"},
		{"empty name", []string{""}, one, "array 0 has an empty name"},
		{"duplicate", []string{"a", "a"}, append(one, one...), `name "a" is given twice`},
		{"nil tensor", []string{"a"}, []*tensor.Tensor{nil}, `array "a": npy: cannot write a nil tensor`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, "out.npz")
			err := WriteNPZ(p, tc.names, tc.ts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
			if _, serr := os.Stat(p); serr == nil {
				t.Fatal("a failed write left a file behind")
			}
		})
	}
}

// zipOf builds a zip archive of the given entries.
func zipOf(t *testing.T, entries map[string][]byte, order ...string) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range order {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(entries[name])
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestHostileNPZ checks that broken archives give errors naming the file
// and the entry.
func TestHostileNPZ(t *testing.T) {
	good, err := os.ReadFile("testdata/f4.npy")
	if err != nil {
		t.Fatal(err)
	}
	arrays, err := os.ReadFile("testdata/arrays.npz")
	if err != nil {
		t.Fatal(err)
	}
	// Flip a data byte of the first, stored, entry: the CRC must catch it.
	corrupt := append([]byte{}, arrays...)
	i := bytes.Index(corrupt, []byte("\n\x00\x00\x00\xbf")) // the header's end, then -0.5
	if i < 0 {
		t.Fatal("cannot find the first array's data in arrays.npz")
	}
	corrupt[i+4] ^= 0x40
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"not zip", []byte("hello"), "not an .npz file"},
		{"truncated", arrays[:len(arrays)/2], "not an .npz file"},
		{"crc", corrupt, "checksum error"},
		{"not npy", zipOf(t, map[string][]byte{"a.npy": []byte("text")}, "a.npy"), `entry "a.npy": not an .npy file`},
		{"short entry", zipOf(t, map[string][]byte{"a.npy": good[:len(good)-4]}, "a.npy"), "(24 data bytes) but the entry holds 20"},
		{"duplicate", zipOf(t, map[string][]byte{"a.npy": good, "a": good}, "a.npy", "a"), `array "a" appears twice`},
	}
	dir := t.TempDir()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, "x.npz")
			if err := os.WriteFile(p, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, _, err := ReadNPZ(p)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("got %v, want an error naming %s and saying %q", err, p, tc.want)
			}
		})
	}
}
