package dataset

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/sporeml/spore/internal/atomicfile"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// The IDX format (LeCun's, used by MNIST and its descendants) is a header
// followed by the elements, row-major, big-endian:
//
//	bytes 0-1   zero
//	byte  2     element type: 0x08 ubyte, 0x09 byte, 0x0B short,
//	            0x0C int, 0x0D float, 0x0E double
//	byte  3     number of dimensions d
//	then        d big-endian uint32 extents
//	then        the elements
//
// Files are often gzipped; ReadIDX sniffs the gzip magic (1f 8b).

// MaxIDXBytes caps the size of the element data that ReadIDX accepts, so
// that a corrupt header cannot claim an absurd size. It is far above any
// IDX data set in use (MNIST's training images are 47 MB).
const MaxIDXBytes = 1 << 32

// maxIDXDims caps the number of dimensions; real files have 1 to 4.
const maxIDXDims = 16

// IDX element type codes.
const (
	idxUbyte  = 0x08
	idxByte   = 0x09
	idxShort  = 0x0B
	idxInt    = 0x0C
	idxFloat  = 0x0D
	idxDouble = 0x0E
)

// idxType describes an element type code: its width in the file and the
// tensor dtype it is read into.
func idxType(code byte) (width int, dt tensor.DType, name string, ok bool) {
	switch code {
	case idxUbyte:
		return 1, tensor.Uint8, "ubyte", true
	case idxByte:
		return 1, tensor.Int32, "byte", true
	case idxShort:
		return 2, tensor.Int32, "short", true
	case idxInt:
		return 4, tensor.Int32, "int", true
	case idxFloat:
		return 4, tensor.Float32, "float", true
	case idxDouble:
		return 8, tensor.Float64, "double", true
	}
	return 0, tensor.Invalid, "", false
}

// IDXError reports a malformed or unreadable IDX file. Match it with
// errors.As; Unwrap gives the underlying I/O or gzip error, if any.
type IDXError struct {
	Name string // the file's path, or "" when read from a bare io.Reader
	Msg  string // what is wrong, e.g. "bad magic 0x12345678: ..."
	Err  error  // underlying error, if any
}

// Error formats the error as one line.
func (e *IDXError) Error() string {
	var b strings.Builder
	b.WriteString("dataset: IDX")
	if e.Name != "" {
		fmt.Fprintf(&b, " file %s", e.Name)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *IDXError) Unwrap() error { return e.Err }

// ReadIDXFile reads the IDX file at path, gzipped or not, as ReadIDX does;
// errors name the file.
func ReadIDXFile(path string) (*tensor.Tensor, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &IDXError{Name: path, Msg: "cannot open", Err: unwrapPathError(err)}
	}
	defer f.Close()
	return readIDX(f, path)
}

// unwrapPathError drops the *os.PathError layer, whose message would repeat
// the path.
func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ReadIDX reads one IDX array from r, which may be gzipped, into a tensor
// of the array's shape: ubyte data becomes Uint8, byte, short and int data
// Int32 (tensors have no narrower signed type), float Float32 and double
// Float64.
//
// The stream must hold exactly one array: ReadIDX rejects a bad magic
// number, an unknown element type, no or too many dimensions, a size beyond
// MaxIDXBytes, truncated data and trailing bytes, and for gzip a corrupt
// stream or checksum, with an *IDXError that says which. Memory follows
// the data actually present, not the size the header claims: when r's
// length is known (a file, a bytes.Reader) a claim beyond it fails before
// anything is allocated, and otherwise (a gzip stream, a pipe) the buffer
// grows only with the data actually read.
func ReadIDX(r io.Reader) (*tensor.Tensor, error) { return readIDX(r, "") }

func readIDX(r io.Reader, name string) (*tensor.Tensor, error) {
	fail := func(err error, format string, args ...any) (*tensor.Tensor, error) {
		return nil, &IDXError{Name: name, Msg: fmt.Sprintf(format, args...), Err: err}
	}
	// When the input's length is known (a file, a buffer), the size the
	// header claims is checked against it before anything is allocated.
	avail, sized := knownLen(r)
	bufSize := 1 << 16
	if sized {
		bufSize = int(min(avail, int64(bufSize))) // bufio rounds up to 16
	}
	br := bufio.NewReaderSize(r, bufSize)
	in := io.Reader(br)
	compressed := false
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fail(err, "corrupt gzip header")
		}
		defer zr.Close()
		in = zr
		compressed = true
	}
	// ioFail classifies a read error: gzip corruption, or an I/O error.
	ioFail := func(err error, what string) (*tensor.Tensor, error) {
		if compressed && (errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) ||
			errors.Is(err, io.ErrUnexpectedEOF) || isFlateError(err)) {
			return fail(err, "corrupt or truncated gzip stream while reading %s", what)
		}
		return fail(err, "read error in %s", what)
	}

	var hdr [4]byte
	if n, err := io.ReadFull(in, hdr[:]); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return fail(nil, "truncated header: %d of 4 magic bytes", n)
		}
		return ioFail(err, "the header")
	}
	if hdr[0] != 0 || hdr[1] != 0 {
		return fail(nil, "bad magic 0x%08x: an IDX file starts with two zero bytes, a type code and a dimension count",
			binary.BigEndian.Uint32(hdr[:]))
	}
	width, dt, tname, ok := idxType(hdr[2])
	if !ok {
		return fail(nil, "unknown element type 0x%02x (want 0x08 ubyte, 0x09 byte, 0x0B short, 0x0C int, 0x0D float or 0x0E double)", hdr[2])
	}
	nd := int(hdr[3])
	if nd == 0 {
		return fail(nil, "no dimensions")
	}
	if nd > maxIDXDims {
		return fail(nil, "%d dimensions; at most %d supported", nd, maxIDXDims)
	}
	dimBuf := make([]byte, 4*nd)
	if n, err := io.ReadFull(in, dimBuf); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return fail(nil, "truncated header: %d of %d bytes of dimensions", n, len(dimBuf))
		}
		return ioFail(err, "the dimensions")
	}
	shape := make(tensor.Shape, nd)
	zero := false
	for i := range shape {
		shape[i] = int(binary.BigEndian.Uint32(dimBuf[4*i:]))
		zero = zero || shape[i] == 0
	}
	// Element data size, checked against the cap before each product so
	// that it cannot overflow.
	var nbytes uint64
	if !zero {
		nbytes = uint64(width)
		for _, d := range shape {
			if nbytes > MaxIDXBytes/uint64(d) {
				return fail(nil, "shape %v of %s is too large (over %d bytes)", shape, tname, uint64(MaxIDXBytes))
			}
			nbytes *= uint64(d)
		}
	}

	if left := avail - int64(4+len(dimBuf)); sized && !compressed && uint64(left) < nbytes {
		return fail(nil, "truncated data: %d of %d bytes for shape %v of %s", left, nbytes, shape, tname)
	}
	data, err := readFull(in, int(nbytes))
	if err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return fail(nil, "truncated data: %d of %d bytes for shape %v of %s", len(data), nbytes, shape, tname)
		}
		return ioFail(err, "the data")
	}
	// The end of the stream must follow. For gzip, reading to the end is
	// also what verifies the checksum.
	var one [1]byte
	if n, err := io.ReadFull(in, one[:]); n > 0 {
		extra := 1
		if rest, err := io.Copy(io.Discard, io.LimitReader(in, 1<<20)); err == nil {
			extra += int(rest)
		}
		more := ""
		if extra > 1<<20 {
			more = " or more"
		}
		return fail(nil, "trailing data: %d byte(s)%s after the %d bytes of shape %v of %s", extra, more, nbytes, shape, tname)
	} else if err != io.EOF {
		return ioFail(err, "the end of the stream")
	}
	return decodeIDX(data, hdr[2], dt, shape), nil
}

// isFlateError reports compressed-data corruption. (A gzip stream cut short
// reads as io.ErrUnexpectedEOF, which is reported as truncation.)
func isFlateError(err error) bool {
	var ce flate.CorruptInputError
	return errors.As(err, &ce)
}

// knownLen reports how many bytes r has left, when r can tell: an
// in-memory reader (bytes.Reader, strings.Reader, bytes.Buffer) or a
// regular file.
func knownLen(r io.Reader) (int64, bool) {
	switch r := r.(type) {
	case interface{ Len() int }:
		return int64(r.Len()), true
	case *os.File:
		fi, err := r.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			return 0, false
		}
		off, err := r.Seek(0, io.SeekCurrent)
		if err != nil || off > fi.Size() {
			return 0, false
		}
		return fi.Size() - off, true
	}
	return 0, false
}

// readFull reads exactly n bytes. It trusts the size a header claims only
// as far as the data bears it out: the buffer starts at 64 KiB and at most
// doubles each time it fills, so that it never holds more than twice the
// bytes actually read. A short stream with a lying header (a gzip stream,
// whose length is unknown) thus costs little, and a real file of n bytes
// about 2n in all, spread over log2(n/64Ki) copies.
func readFull(r io.Reader, n int) ([]byte, error) {
	const first = 64 << 10
	buf := make([]byte, 0, min(n, first))
	for len(buf) < n {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(n, 2*len(buf))-len(buf))
		}
		end := min(n, cap(buf))
		m, err := io.ReadFull(r, buf[len(buf):end])
		buf = buf[:len(buf)+m]
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return buf, err
		}
	}
	return buf, nil
}

// decodeIDX converts big-endian element data into a tensor.
func decodeIDX(data []byte, code byte, dt tensor.DType, shape tensor.Shape) *tensor.Tensor {
	n := shape.Size()
	switch code {
	case idxUbyte:
		return core.FromBuffer(data[:n:n], shape)
	case idxByte:
		out := make([]int32, n)
		for i, b := range data[:n] {
			out[i] = int32(int8(b))
		}
		return core.FromBuffer(out, shape)
	case idxShort:
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(int16(binary.BigEndian.Uint16(data[2*i:])))
		}
		return core.FromBuffer(out, shape)
	case idxInt:
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(binary.BigEndian.Uint32(data[4*i:]))
		}
		return core.FromBuffer(out, shape)
	case idxFloat:
		out := make([]float32, n)
		for i := range out {
			out[i] = math.Float32frombits(binary.BigEndian.Uint32(data[4*i:]))
		}
		return core.FromBuffer(out, shape)
	case idxDouble:
		out := make([]float64, n)
		for i := range out {
			out[i] = math.Float64frombits(binary.BigEndian.Uint64(data[8*i:]))
		}
		return core.FromBuffer(out, shape)
	}
	panic(fmt.Sprintf("dataset: IDX type 0x%02x (%v) has no decoder", code, dt))
}

// WriteIDX writes t to w in the IDX format, uncompressed: Uint8 as ubyte,
// Int32 as int, Float32 as float and Float64 as double. Other dtypes, rank
// 0, rank above 16 and extents beyond uint32 are errors.
func WriteIDX(w io.Writer, t *tensor.Tensor) error {
	if t.IsSymbolic() {
		return fmt.Errorf("dataset: WriteIDX: symbolic tensor")
	}
	var code byte
	switch t.DType() {
	case tensor.Uint8:
		code = idxUbyte
	case tensor.Int32:
		code = idxInt
	case tensor.Float32:
		code = idxFloat
	case tensor.Float64:
		code = idxDouble
	default:
		return fmt.Errorf("dataset: WriteIDX: dtype %v has no IDX element type", t.DType())
	}
	if t.Rank() == 0 || t.Rank() > maxIDXDims {
		return fmt.Errorf("dataset: WriteIDX: rank %d; IDX holds 1 to %d dimensions", t.Rank(), maxIDXDims)
	}
	hdr := []byte{0, 0, code, byte(t.Rank())}
	for _, d := range t.Shape() {
		if uint64(d) > math.MaxUint32 {
			return fmt.Errorf("dataset: WriteIDX: extent %d of shape %v does not fit in uint32", d, t.Shape())
		}
		hdr = binary.BigEndian.AppendUint32(hdr, uint32(d))
	}
	var body []byte
	switch b := t.Data().(type) {
	case []uint8:
		body = b
	case []int32:
		body = make([]byte, 0, 4*len(b))
		for _, v := range b {
			body = binary.BigEndian.AppendUint32(body, uint32(v))
		}
	case []float32:
		body = make([]byte, 0, 4*len(b))
		for _, v := range b {
			body = binary.BigEndian.AppendUint32(body, math.Float32bits(v))
		}
	case []float64:
		body = make([]byte, 0, 8*len(b))
		for _, v := range b {
			body = binary.BigEndian.AppendUint64(body, math.Float64bits(v))
		}
	}
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	_, err := w.Write(body)
	return err
}

// WriteIDXFile writes t to path in the IDX format, gzipped if the path ends
// in ".gz", whole or not at all: through a temporary file in the same
// directory, renamed over path once complete.
func WriteIDXFile(path string, t *tensor.Tensor) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		if !strings.HasSuffix(path, ".gz") {
			return WriteIDX(w, t)
		}
		zw := gzip.NewWriter(w)
		if err := WriteIDX(zw, t); err != nil {
			return err
		}
		return zw.Close()
	})
}
