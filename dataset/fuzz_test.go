package dataset

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/tensor"
)

// The fuzz targets below run over their seeds and testdata/fuzz/<name> in
// every plain `go test`; `go test -fuzz '^FuzzReadIDX$' ./dataset` explores
// further.

// fuzzAllocBound is the most a parse may allocate for n bytes of IDX data
// (for gzip, n is the decompressed size): the element bytes with their
// growth slack, the decoded tensor (four bytes per element for byte data),
// and fixed buffers (bufio, the gzip window) under 1 MiB.
func fuzzAllocBound(n int) uint64 { return 64*uint64(n) + 1<<20 }

// idxSeeds returns real files written by WriteIDX and WriteIDXFile (plain
// and gzipped), files of the types only other writers produce (byte,
// short), and broken variants of them: truncated, lying about their size,
// with trailing bytes.
func idxSeeds(f *testing.F) [][]byte {
	dir := f.TempDir()
	var seeds [][]byte
	for i, x := range []*tensor.Tensor{
		tensor.FromSlice([]uint8{0, 1, 255, 7, 8, 9}, 2, 3),
		tensor.FromSlice([]int32{math.MinInt32, -1, 0, math.MaxInt32}, 4),
		tensor.FromSlice([]float32{float32(math.NaN()), -1.5, float32(math.Inf(1)), 3e38}, 2, 1, 2),
		tensor.FromSlice([]float64{math.Pi, math.Copysign(0, -1), math.SmallestNonzeroFloat64}, 3, 1, 1, 1),
		tensor.Zeros(tensor.Uint8, 0, 5),
	} {
		var b bytes.Buffer
		if err := WriteIDX(&b, x); err != nil {
			f.Fatal(err)
		}
		path := filepath.Join(dir, "seed.idx.gz")
		if err := WriteIDXFile(path, x); err != nil {
			f.Fatal(err)
		}
		z, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, b.Bytes(), z)
		if i == 0 {
			seeds = append(seeds, z[:len(z)-3]) // gzip trailer cut
		}
		full := b.Bytes()
		seeds = append(seeds,
			full[:len(full)-1],                    // last element cut
			full[:4+4*int(full[3])],               // header only
			append(full[:len(full):len(full)], 0)) // one byte too many
	}
	seeds = append(seeds,
		idx(0x09, []uint32{3}, 0x7f, 0x80, 0xff),
		idx(0x0B, []uint32{2}, 0x01, 0x02, 0xff, 0xfe),
		idx(0x0D, []uint32{1 << 20, 1 << 9}, 1, 2, 3), // 2 GB claimed
		idx(0x08, []uint32{1e6, 1e6}, 1, 2, 3),        // 10^12 elements claimed
		[]byte{},
	)
	return seeds
}

// checkIDXError checks the properties of every ReadIDX error: an
// *IDXError with a message, naming the file, on one line.
func checkIDXError(t *testing.T, err error, name string) {
	t.Helper()
	var ie *IDXError
	if !errors.As(err, &ie) {
		t.Fatalf("error %v (%T) is not an *IDXError", err, err)
	}
	if ie.Msg == "" || ie.Name != name {
		t.Fatalf("error %#v: empty message or wrong name (want %q)", ie, name)
	}
	if s := err.Error(); !strings.HasPrefix(s, "dataset: IDX file "+name+": ") || strings.Contains(s, "\n") {
		t.Fatalf("error %q does not name the file on one line", s)
	}
}

// sameIDX reports whether x and y have the same dtype, shape and element
// bits, by comparing their IDX encodings.
func sameIDX(t *testing.T, x, y *tensor.Tensor) bool {
	var a, b bytes.Buffer
	if err := WriteIDX(&a, x); err != nil {
		t.Fatalf("WriteIDX of a tensor ReadIDX returned: %v", err)
	}
	if err := WriteIDX(&b, y); err != nil {
		t.Fatalf("WriteIDX of a tensor ReadIDX returned: %v", err)
	}
	return x.DType() == y.DType() && x.Shape().Equal(y.Shape()) && bytes.Equal(a.Bytes(), b.Bytes())
}

// FuzzReadIDX feeds arbitrary bytes, plain or gzipped, to the IDX reader.
// Every input either fails with an *IDXError naming the file, or reads as a
// tensor that writes back and reads again unchanged (and, for the types
// WriteIDX writes, writes back as the very bytes read); either way the
// reader allocates no more than fuzzAllocBound of the data, and agrees with
// itself whether or not it can see the input's length.
func FuzzReadIDX(f *testing.F) {
	for _, s := range idxSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		const name = "fuzz.idx"
		size := len(in)
		compressed := len(in) >= 2 && in[0] == 0x1f && in[1] == 0x8b
		if compressed {
			// Bound by what the stream holds, as far as the reader would go.
			if zr, err := gzip.NewReader(bytes.NewReader(in)); err == nil {
				n, _ := io.Copy(io.Discard, io.LimitReader(zr, MaxIDXBytes+1<<21))
				size = max(size, int(n))
			}
		}
		var x *tensor.Tensor
		var err error
		bound := fuzzAllocBound(size)
		if got := testkit.AllocatedBy(func() { x, err = readIDX(bytes.NewReader(in), name) }, bound); got > bound {
			t.Fatalf("allocated %d bytes for %d bytes of data; bound %d", got, size, bound)
		}
		// A stream of unknown length gives the same answer.
		xs, errs := readIDX(unsized{bytes.NewReader(in)}, name)
		if err != nil {
			checkIDXError(t, err, name)
			if errs == nil || errs.Error() != err.Error() {
				t.Fatalf("sized input: %v; as a stream: %v", err, errs)
			}
			return
		}
		if errs != nil || !sameIDX(t, x, xs) {
			t.Fatalf("sized input reads as %v %v; as a stream: %v, %v", x.DType(), x.Shape(), xs, errs)
		}
		var w bytes.Buffer
		if err := WriteIDX(&w, x); err != nil {
			t.Fatalf("WriteIDX of a tensor ReadIDX returned: %v", err)
		}
		if code := in[2]; !compressed && code != idxByte && code != idxShort && !bytes.Equal(w.Bytes(), in) {
			t.Fatalf("read %d bytes of type 0x%02x, wrote back %d different ones", len(in), code, w.Len())
		}
		y, err := ReadIDX(&w)
		if err != nil {
			t.Fatalf("WriteIDX output does not read back: %v", err)
		}
		if !sameIDX(t, x, y) {
			t.Fatalf("round trip changed %v %v into %v %v", x.DType(), x.Shape(), y.DType(), y.Shape())
		}
	})
}

// FuzzReadIDXGzip gzips each input before reading it, so that the fuzzer
// explores the IDX structure behind a valid gzip stream (mutating
// compressed bytes rarely yields one). A gzipped file must read exactly as
// the plain file does: the same tensor, or the same error; and the gzip
// path allocates within fuzzAllocBound of the decompressed size.
func FuzzReadIDXGzip(f *testing.F) {
	for _, s := range idxSeeds(f) {
		if len(s) < 2 || s[0] != 0x1f || s[1] != 0x8b {
			f.Add(s)
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) >= 2 && in[0] == 0x1f && in[1] == 0x8b {
			return // a plain read would decompress it; the gzipped one would not
		}
		const name = "fuzz.idx.gz"
		z := gz(in)
		var xz *tensor.Tensor
		var errz error
		bound := fuzzAllocBound(max(len(in), len(z)))
		if got := testkit.AllocatedBy(func() { xz, errz = readIDX(bytes.NewReader(z), name) }, bound); got > bound {
			t.Fatalf("allocated %d bytes for %d bytes of data; bound %d", got, len(in), bound)
		}
		x, err := readIDX(bytes.NewReader(in), name)
		switch {
		case err != nil && errz != nil:
			checkIDXError(t, errz, name)
			if err.Error() != errz.Error() {
				t.Fatalf("plain: %v\ngzipped: %v", err, errz)
			}
		case err != nil || errz != nil:
			t.Fatalf("plain: %v, %v\ngzipped: %v, %v", x, err, xz, errz)
		case !sameIDX(t, x, xz):
			t.Fatalf("plain reads as %v %v, gzipped as %v %v", x.DType(), x.Shape(), xz.DType(), xz.Shape())
		}
	})
}
