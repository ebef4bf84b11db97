package npy

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/sporeml/spore/tensor"
)

// TestReadNumPyFiles reads files NumPy wrote (testdata/make_testdata.py)
// and compares them with the values the script put in them. Where NumPy
// wrote a little-endian version 1.0 file, Write must give the same bytes.
func TestReadNumPyFiles(t *testing.T) {
	tests := []struct {
		file      string
		dt        tensor.DType
		shape     []int
		want      any // the buffer's expected contents
		sameBytes bool
	}{
		{"f4.npy", tensor.Float32, []int{2, 3}, []float32{-0.5, -0.25, 0, 0.25, 0.5, 0.75}, true},
		{"f8.npy", tensor.Float64, []int{3}, []float64{0.1, -2.5, 1e300}, true},
		{"i8.npy", tensor.Int64, []int{2, 2}, []int64{-1, 1 << 40, 3, -1 << 62}, true},
		{"i4.npy", tensor.Int32, []int{4}, []int32{math.MinInt32, 0, 7, math.MaxInt32}, true},
		{"b1.npy", tensor.Bool, []int{2, 2}, []bool{true, false, false, true}, true},
		{"u1.npy", tensor.Uint8, []int{1, 2, 3}, []uint8{250, 251, 252, 253, 254, 255}, true},
		{"f2.npy", tensor.Float16, []int{2}, []tensor.F16{0x3c00, 0x4000}, true}, // 1 and 2
		{"i1.npy", tensor.Int8, []int{4}, []int8{-128, -1, 0, 127}, true},
		{"i2.npy", tensor.Int16, []int{2, 2}, []int16{-32768, -1, 2, 32767}, true},
		{"u2.npy", tensor.Uint16, []int{3}, []uint16{0, 1, 65535}, true},
		{"u4.npy", tensor.Uint32, []int{3}, []uint32{0, 1 << 31, math.MaxUint32}, true},
		{"u8.npy", tensor.Uint64, []int{3}, []uint64{0, 1 << 63, math.MaxUint64}, true},
		{"big_u4.npy", tensor.Uint32, []int{2}, []uint32{1, math.MaxUint32 - 1}, false},
		{"big_i2.npy", tensor.Int16, []int{2}, []int16{-2, 300}, false},
		{"scalar.npy", tensor.Float64, []int{}, []float64{3.5}, true},
		{"empty.npy", tensor.Float32, []int{0, 3}, []float32{}, true},
		{"big_f4.npy", tensor.Float32, []int{3}, []float32{1.5, -2, 3.25}, false},
		{"big_i8.npy", tensor.Int64, []int{2}, []int64{-5, 1 << 40}, false},
		{"v2.npy", tensor.Float32, []int{2, 2}, []float32{1, 2, 3, 4}, false},
		{"v3.npy", tensor.Float32, []int{2, 2}, []float32{1, 2, 3, 4}, false},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join("testdata", tc.file)
			got, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got.DType() != tc.dt || !reflect.DeepEqual([]int(got.Shape()), tc.shape) {
				t.Fatalf("got %v %v, want %v %v", got.DType(), got.Shape(), tc.dt, tc.shape)
			}
			if !reflect.DeepEqual(got.Data(), tc.want) {
				t.Fatalf("got %v, want %v", got.Data(), tc.want)
			}
			// Read from a plain stream agrees with ReadFile.
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			again, err := Read(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(again.Data(), tc.want) {
				t.Fatalf("Read gave %v, ReadFile %v", again.Data(), tc.want)
			}
			var buf bytes.Buffer
			if err := Write(&buf, got); err != nil {
				t.Fatal(err)
			}
			if tc.sameBytes && !bytes.Equal(buf.Bytes(), raw) {
				t.Fatalf("Write differs from NumPy's file:\n got %q\nwant %q", buf.Bytes(), raw)
			}
			back, err := Read(&buf)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back.Data(), tc.want) || !reflect.DeepEqual([]int(back.Shape()), tc.shape) {
				t.Fatalf("round trip gave %v %v", back.Shape(), back.Data())
			}
		})
	}
}

// TestRefusedNumPyFiles checks that files spore cannot hold are refused
// with an error that says why.
func TestRefusedNumPyFiles(t *testing.T) {
	tests := []struct {
		file, want string
	}{
		{"fortran.npy", "Fortran"},
		{"obj.npy", "pickled Python objects"},
		{"arrays.npz", "not an .npy file"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			_, err := ReadFile(filepath.Join("testdata", tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.file) {
				t.Fatalf("got error %v, want one naming %s and saying %q", err, tc.file, tc.want)
			}
		})
	}
}

// npyBytes builds an .npy stream with the given version and header text.
func npyBytes(major byte, hdr string, data []byte) []byte {
	b := []byte(magic)
	b = append(b, major, 0)
	if major == 1 {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(hdr)))
	} else {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(hdr)))
	}
	b = append(b, hdr...)
	return append(b, data...)
}

// TestHostile feeds malformed and hostile streams to Read: each must fail
// with an error that names the problem, and none may allocate for a
// declared size it does not hold.
func TestHostile(t *testing.T) {
	f4 := "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }\n"
	hdr := func(shape string) string { return strings.Replace(f4, "%s", shape, 1) }
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "truncated before the end of the magic"},
		{"not npy", []byte("PK\x03\x04 a zip file"), "not an .npy file"},
		{"bad version", npyBytes(4, hdr("2,"), nil), "version 4.0 is not supported"},
		{"truncated length", []byte(magic + "\x01\x00\x10"), "truncated before the end of the header length"},
		{"truncated header", npyBytes(1, hdr("2,"), nil)[:20], "truncated before the end of the"},
		{"huge header", append([]byte(magic+"\x02\x00"), 0xff, 0xff, 0xff, 0x7f), "no array header needs more"},
		{"truncated data", npyBytes(1, hdr("4,"), make([]byte, 10)), "truncated: 10 of 16 data bytes"},
		{"huge shape, no data", npyBytes(1, hdr("1000000000, 1000000000"), make([]byte, 8)), "truncated: 8 of 4000000000000000000 data bytes"},
		{"overflowing shape", npyBytes(1, hdr("4611686018427387904, 4"), nil), "more bytes than can be addressed"},
		{"extent too large", npyBytes(1, hdr("99999999999999999999999,"), nil), "too large"},
		{"negative extent", npyBytes(1, hdr("-1,"), nil), "negative extent"},
		{"not a tuple", npyBytes(1, hdr("3"), nil), "not a tuple"},
		{"too many axes", npyBytes(1, hdr(strings.Repeat("1, ", 65)), nil), "more than 64 axes"},
		{"missing key", npyBytes(1, "{'descr': '<f4', 'shape': (1,)}", nil), `no "fortran_order" key`},
		{"extra key", npyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", nil), `unexpected key "x"`},
		{"duplicate key", npyBytes(1, "{'descr': '<f4', 'descr': '<f4'}", nil), "appears twice"},
		{"structured", npyBytes(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}", nil), "structured dtypes"},
		{"native order", npyBytes(1, "{'descr': '=f4', 'fortran_order': False, 'shape': (1,)}", nil), "native byte order"},
		{"bad order", npyBytes(1, "{'descr': '|f4', 'fortran_order': False, 'shape': (1,)}", nil), "no byte order"},
		{"bad bool", npyBytes(1, "{'descr': '<f4', 'fortran_order': Nope, 'shape': (1,)}", nil), "want True or False"},
		{"unterminated", npyBytes(1, "{'descr': '<f4", nil), "unterminated string"},
		{"garbage after", npyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} junk", nil), "unexpected text"},
		{"no brace", npyBytes(1, "descr", nil), "want '{'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Read(bytes.NewReader(tc.in))
			if err == nil {
				t.Fatalf("read %v, want an error saying %q", got, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

// TestHostileMemory checks that a stream declaring 4 GB of data but
// holding 8 bytes is refused without allocating for the declared size.
func TestHostileMemory(t *testing.T) {
	in := npyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000,), }\n", make([]byte, 8))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Read(bytes.NewReader(in))
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("no error")
	}
	if d := after.TotalAlloc - before.TotalAlloc; d > 16<<20 {
		t.Fatalf("allocated %d bytes for an 8-byte payload", d)
	}
}

// TestReadFileSize checks that ReadFile compares the file's size with its
// header before reading the data, in both directions.
func TestReadFileSize(t *testing.T) {
	raw, err := os.ReadFile("testdata/f4.npy")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"short", raw[:len(raw)-1], "(24 data bytes) but the file holds 23"},
		{"long", append(append([]byte{}, raw...), 0), "(24 data bytes) but the file holds 25"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name+".npy")
			if err := os.WriteFile(p, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ReadFile(p)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("got %v, want an error naming %s and saying %q", err, p, tc.want)
			}
		})
	}
}

// TestWriteRoundTrip writes every dtype and a few shapes and reads them
// back, through files.
func TestWriteRoundTrip(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		t    *tensor.Tensor
	}{
		{"f32", tensor.FromSlice([]float32{1, float32(math.Inf(-1)), float32(math.NaN()), -0.0}, 2, 2)},
		{"f64", tensor.FromSlice([]float64{math.MaxFloat64, math.SmallestNonzeroFloat64}, 2, 1)},
		{"i32", tensor.FromSlice([]int32{1, -2, 3})},
		{"i64", tensor.Scalar(int64(-7))},
		{"bool", tensor.FromSlice([]bool{false, true, true}, 1, 3, 1)},
		{"u8", tensor.FromSlice([]uint8{0, 128, 255})},
		{"empty", tensor.Zeros(tensor.Float64, 3, 0, 2)},
		{"large", tensor.RandNormal(tensor.Float32, 0, 1, 600, 1000)}, // several write chunks
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name+".npy")
			if err := WriteFile(p, tc.t); err != nil {
				t.Fatal(err)
			}
			got, err := ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if got.DType() != tc.t.DType() || !reflect.DeepEqual(got.Shape(), tc.t.Shape()) {
				t.Fatalf("got %v %v, want %v %v", got.DType(), got.Shape(), tc.t.DType(), tc.t.Shape())
			}
			if !sameBits(got.Data(), tc.t.Data()) {
				t.Fatalf("values differ")
			}
		})
	}
}

// sameBits compares buffers bit for bit, so that NaN equals NaN and -0
// differs from 0.
func sameBits(a, b any) bool {
	switch x := a.(type) {
	case []float32:
		y := b.([]float32)
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
				return false
			}
		}
		return true
	case []float64:
		y := b.([]float64)
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if math.Float64bits(x[i]) != math.Float64bits(y[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// TestWriteErrors checks what Write refuses, and that a failed WriteFile
// leaves the old file in place.
func TestWriteErrors(t *testing.T) {
	if err := Write(&bytes.Buffer{}, nil); err == nil || !strings.Contains(err.Error(), "nil tensor") {
		t.Fatalf("nil tensor: got %v", err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "keep.npy")
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, nil); err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("got %v, want an error naming %s", err, p)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Fatalf("failed write changed the file to %q", b)
	}
	if err := WriteFile(filepath.Join(dir, "no", "such", "dir.npy"), tensor.Scalar(1.0)); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
}
