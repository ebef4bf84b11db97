package dataset

import (
	"bytes"
	"compress/gzip"
	"errors"
	"math"
	"os"
	"path/filepath"
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
	tests := []struct{ path, want string }{
		{bad, "dataset: IDX file " + bad + ": truncated data: 1 of 5 bytes"},
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

func FuzzReadIDX(f *testing.F) {
	f.Add(idx(0x08, []uint32{2, 3}, 1, 2, 3, 4, 5, 6))
	f.Add(idx(0x0B, []uint32{2}, 1, 2, 3, 4))
	f.Add(idx(0x0E, []uint32{1}, 0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18))
	f.Add(gz(idx(0x0D, []uint32{1, 1}, 0x3f, 0x80, 0, 0)))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		x, err := ReadIDX(bytes.NewReader(in))
		if err != nil {
			var ie *IDXError
			if !errors.As(err, &ie) {
				t.Fatalf("error %v is not an *IDXError", err)
			}
			return
		}
		// What was read writes back and reads again as the same tensor.
		var buf bytes.Buffer
		if err := WriteIDX(&buf, x); err != nil {
			t.Fatal(err)
		}
		y, err := ReadIDX(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if y.DType() != x.DType() || !y.Shape().Equal(x.Shape()) {
			t.Fatalf("round trip %v %v -> %v %v", x.DType(), x.Shape(), y.DType(), y.Shape())
		}
		a, b := x.Float64s(), y.Float64s()
		for i := range a {
			if a[i] != b[i] && !(math.IsNaN(a[i]) && math.IsNaN(b[i])) {
				t.Fatalf("element %d: %v then %v", i, a[i], b[i])
			}
		}
	})
}
