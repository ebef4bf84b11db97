package dataset

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/sporeml/spore/tensor"
)

// idx builds IDX bytes: magic type code, dims, then raw element bytes.
func idx(code byte, dims []uint32, data ...byte) []byte {
	b := []byte{0, 0, code, byte(len(dims))}
	for _, d := range dims {
		b = append(b, byte(d>>24), byte(d>>16), byte(d>>8), byte(d))
	}
	return append(b, data...)
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

func TestReadIDX(t *testing.T) {
	tests := []struct {
		name  string
		in    []byte
		dt    tensor.DType
		shape tensor.Shape
		vals  []float64
	}{
		{"ubyte", idx(0x08, []uint32{2, 3}, 0, 1, 2, 253, 254, 255), tensor.Uint8, tensor.Shape{2, 3}, []float64{0, 1, 2, 253, 254, 255}},
		{"byte", idx(0x09, []uint32{3}, 0x7f, 0x80, 0xff), tensor.Int32, tensor.Shape{3}, []float64{127, -128, -1}},
		{"short", idx(0x0B, []uint32{2}, 0x01, 0x02, 0xff, 0xfe), tensor.Int32, tensor.Shape{2}, []float64{258, -2}},
		{"int", idx(0x0C, []uint32{1, 2}, 0x00, 0x01, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff), tensor.Int32, tensor.Shape{1, 2}, []float64{65536, -1}},
		{"float", idx(0x0D, []uint32{2}, 0x3f, 0x80, 0, 0, 0xc0, 0x40, 0, 0), tensor.Float32, tensor.Shape{2}, []float64{1, -3}},
		{"double", idx(0x0E, []uint32{1}, 0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18), tensor.Float64, tensor.Shape{1}, []float64{math.Pi}},
		{"empty", idx(0x08, []uint32{0, 28, 28}), tensor.Uint8, tensor.Shape{0, 28, 28}, []float64{}},
		{"4-d", idx(0x08, []uint32{1, 1, 1, 2}, 7, 9), tensor.Uint8, tensor.Shape{1, 1, 1, 2}, []float64{7, 9}},
	}
	for _, tc := range tests {
		for _, z := range []bool{false, true} {
			in := tc.in
			name := tc.name
			if z {
				in, name = gz(in), name+".gz"
			}
			t.Run(name, func(t *testing.T) {
				x, err := ReadIDX(bytes.NewReader(in))
				if err != nil {
					t.Fatal(err)
				}
				if x.DType() != tc.dt || !x.Shape().Equal(tc.shape) {
					t.Fatalf("got %v %v, want %v %v", x.DType(), x.Shape(), tc.dt, tc.shape)
				}
				got := x.Float64s()
				for i := range tc.vals {
					if got[i] != tc.vals[i] && !(tc.dt == tensor.Float64 && got[i] == tc.vals[i]) {
						t.Errorf("element %d = %v, want %v", i, got[i], tc.vals[i])
					}
				}
			})
		}
	}
}

func TestReadIDXMalformed(t *testing.T) {
	valid := idx(0x08, []uint32{2, 2}, 1, 2, 3, 4)
	corruptCRC := gz(valid)
	corruptCRC[len(corruptCRC)-5] ^= 0xff // last byte of the CRC-32
	badDeflate := gz(valid)
	badDeflate[10] = 0xff // the first deflate block header: reserved type
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "truncated header: 0 of 4 magic bytes"},
		{"bad magic", []byte{0x12, 0x34, 0x08, 0x01, 0, 0, 0, 0}, "bad magic 0x12340801"},
		{"text", []byte("hello, world"), "bad magic 0x68656c6c"},
		{"zero type", idx(0x00, []uint32{1}, 0), "unknown element type 0x00"},
		{"unknown type", idx(0x0A, []uint32{1}, 0), "unknown element type 0x0a"},
		{"no dims", idx(0x08, nil), "no dimensions"},
		{"too many dims", idx(0x08, make([]uint32, 17)), "17 dimensions; at most 16"},
		{"overflow", idx(0x0E, []uint32{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}), "too large"},
		{"over cap", idx(0x08, []uint32{1 << 16, 1 << 16, 2}), "too large"},
		{"truncated dims", idx(0x08, []uint32{2, 2})[:9], "truncated header: 5 of 8 bytes of dimensions"},
		{"truncated data", valid[:len(valid)-1], "truncated data: 3 of 4 bytes for shape [2 2] of ubyte"},
		{"huge claim, no data", idx(0x0D, []uint32{1 << 20, 1 << 9}), "truncated data: 0 of 2147483648 bytes"},
		{"trailing", append(append([]byte{}, valid...), 9, 9), "trailing data: 2 byte(s) after the 4 bytes"},
		{"trailing after empty", idx(0x08, []uint32{0}, 1), "trailing data: 1 byte(s)"},
		{"gzip truncated data", gz(valid[:len(valid)-1]), "truncated data"},
		{"gzip cut short", gz(valid)[:20], "truncated"},
		{"gzip bad crc", corruptCRC, "corrupt or truncated gzip stream"},
		{"gzip bad deflate", badDeflate, "corrupt or truncated gzip stream"},
		{"gzip bad header", []byte{0x1f, 0x8b, 0x99, 0, 0, 0, 0, 0, 0, 0}, "corrupt gzip header"},
		{"gzip trailing garbage", append(gz(valid), 1, 2, 3), "corrupt or truncated gzip stream"},
		{"gzip trailing data", gz(append(append([]byte{}, valid...), 0)), "trailing data"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x, err := ReadIDX(bytes.NewReader(tc.in))
			var ie *IDXError
			if err == nil || !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ReadIDX = %v, %v; want an *IDXError containing %q", x, err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "dataset: IDX: ") {
				t.Errorf("error %q lacks the IDX prefix", err)
			}
		})
	}
}

func TestReadIDXEveryTruncation(t *testing.T) {
	for _, full := range [][]byte{
		idx(0x08, []uint32{2, 3}, 1, 2, 3, 4, 5, 6),
		idx(0x0D, []uint32{2}, 0x3f, 0x80, 0, 0, 0xc0, 0x40, 0, 0),
	} {
		for _, z := range []bool{false, true} {
			in := full
			if z {
				in = gz(full)
			}
			if _, err := ReadIDX(bytes.NewReader(in)); err != nil {
				t.Fatalf("full file: %v", err)
			}
			for n := range len(in) {
				_, err := ReadIDX(bytes.NewReader(in[:n]))
				var ie *IDXError
				if !errors.As(err, &ie) {
					t.Errorf("gzip %v, prefix of %d of %d bytes: error %v, want *IDXError", z, n, len(in), err)
				}
				if !z && !strings.Contains(err.Error(), "truncated") {
					t.Errorf("prefix of %d bytes: %v, want truncated", n, err)
				}
			}
		}
	}
}

func TestIDXRoundTrip(t *testing.T) {
	dir := t.TempDir()
	tests := []*tensor.Tensor{
		tensor.FromSlice([]uint8{0, 1, 255, 7, 8, 9}, 2, 3),
		tensor.FromSlice([]int32{math.MinInt32, -1, 0, math.MaxInt32}, 4),
		tensor.FromSlice([]float32{0, -1.5, float32(math.Inf(1)), 3e38}, 2, 1, 2),
		tensor.FromSlice([]float64{math.Pi, -0.0, math.SmallestNonzeroFloat64}, 3),
		tensor.Zeros(tensor.Uint8, 0, 5),
	}
	for i, x := range tests {
		for _, name := range []string{"a.idx", "b.idx.gz"} {
			path := filepath.Join(dir, name)
			if err := WriteIDXFile(path, x); err != nil {
				t.Fatal(err)
			}
			y, err := ReadIDXFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if y.DType() != x.DType() || !y.Shape().Equal(x.Shape()) || y.String() != x.String() {
				t.Errorf("case %d %s: read back %v, wrote %v", i, name, y, x)
			}
		}
	}
	// No temporary files are left behind.
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("directory holds %d entries", len(ents))
	}
	for _, bad := range []*tensor.Tensor{tensor.Scalar[float32](1), tensor.FromSlice([]int64{1}), tensor.FromSlice([]bool{true})} {
		if err := WriteIDX(&bytes.Buffer{}, bad); err == nil {
			t.Errorf("WriteIDX(%v %v) succeeded", bad.DType(), bad.Shape())
		}
	}
}

func TestReadIDXFileErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.idx")
	os.WriteFile(bad, []byte{0, 0, 0x08, 1, 0, 0, 0, 5, 1}, 0o644)
	huge := filepath.Join(dir, "huge.idx")
	os.WriteFile(huge, append(idx(0x0D, []uint32{1 << 20, 1 << 9}), make([]byte, 88)...), 0o644)
	tests := []struct{ path, want string }{
		{bad, "dataset: IDX file " + bad + ": truncated data: 1 of 5 bytes"},
		{huge, "dataset: IDX file " + huge + ": truncated data: 88 of 2147483648 bytes for shape [1048576 512] of float"},
		{filepath.Join(dir, "missing"), "dataset: IDX file " + filepath.Join(dir, "missing") + ": cannot open: no such file or directory"},
	}
	for _, tc := range tests {
		_, err := ReadIDXFile(tc.path)
		var ie *IDXError
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || !errors.As(err, &ie) || ie.Name != tc.path {
			t.Errorf("ReadIDXFile(%s) error %v, want %q", tc.path, err, tc.want)
		}
	}
}

// unsized hides a reader's Len method, so that ReadIDX cannot know how many
// bytes follow, as with a pipe or a network stream.
type unsized struct{ io.Reader }

// heapAllocated returns the bytes allocated on the heap while f ran: the
// least over three runs, so that a goroutine left running by another test
// cannot inflate the count.
func heapAllocated(f func()) uint64 {
	best := uint64(math.MaxUint64)
	var before, after runtime.MemStats
	for range 3 {
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		best = min(best, after.TotalAlloc-before.TotalAlloc)
	}
	return best
}

// TestReadIDXLyingHeader checks that a header claiming far more data than
// follows fails with a clear error having allocated no more than a small
// multiple of the input: the claimed size is never trusted beyond the data.
func TestReadIDXLyingHeader(t *testing.T) {
	pad := func(b []byte, n int) []byte { return append(b, make([]byte, n-len(b))...) }
	trillion := pad(idx(0x08, []uint32{1e6, 1e6}), 100)     // 10^12 elements, over MaxIDXBytes
	twoGB := pad(idx(0x0D, []uint32{1 << 20, 1 << 9}), 100) // 2^29 floats, under it
	mib := pad(idx(0x08, []uint32{1 << 16, 1 << 15}), 12+1<<20)
	tests := []struct {
		name   string
		in     []byte
		stream bool // hide the input's length, as a pipe would
		size   int  // bytes the parser sees: the file, or the gzip stream's contents
		want   string
	}{
		{"1e12 elements in 100 bytes", trillion, false, 100, "shape [1000000 1000000] of ubyte is too large"},
		{"1e12 elements in 100 bytes, gzip", gz(trillion), false, 100, "too large"},
		{"2 GB claimed in 100 bytes", twoGB, false, 100, "truncated data: 88 of 2147483648 bytes for shape [1048576 512] of float"},
		{"2 GB claimed in 100 bytes, stream", twoGB, true, 100, "truncated data: 88 of 2147483648 bytes"},
		{"2 GB claimed in 100 bytes, gzip", gz(twoGB), false, 100, "truncated data: 88 of 2147483648 bytes"},
		{"2 GB claimed in 1 MiB, stream", mib, true, len(mib), "truncated data: 1048576 of 2147483648 bytes"},
		{"2 GB claimed in 1 MiB, gzip", gz(mib), false, len(mib), "truncated data: 1048576 of 2147483648 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			got := heapAllocated(func() {
				var r io.Reader = bytes.NewReader(tc.in)
				if tc.stream {
					r = unsized{r}
				}
				_, err = ReadIDX(r)
			})
			var ie *IDXError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ReadIDX error %v, want an *IDXError containing %q", err, tc.want)
			}
			// The gzip reader's own state (window, tables) is about 50 KiB.
			if bound := uint64(8*tc.size + 256<<10); got > bound {
				t.Errorf("allocated %d bytes for a %d-byte input; want at most %d", got, tc.size, bound)
			}
		})
	}
}
