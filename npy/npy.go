package npy

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/sporeml/spore/internal/atomicfile"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// magic opens every .npy file.
const magic = "\x93NUMPY"

// maxHeader bounds the header length a file may declare. A version 1.0
// header cannot be longer; the 2.0 and 3.0 formats allow 4 GiB, which no
// plain array needs (64 axes of 20 digits fit in under 2 KiB), so a larger
// declaration is refused before anything is allocated for it.
const maxHeader = 1 << 16

// chunk is how many data bytes are read at a time. Data is read in chunks
// and the element buffer grows with what has arrived, so a file that
// declares a huge shape but holds little data fails at its end without
// having allocated for the declared size.
const chunk = 1 << 20

// kind is an element type as it sits in a file.
type kind struct {
	dt        tensor.DType
	size      int
	bigEndian bool
}

// parseDescr maps a NumPy type string to a spore dtype. Big-endian data
// is converted as it is read; types spore has no dtype for are refused
// with the list of those it reads.
func parseDescr(descr string) (kind, error) {
	unsupported := func(why string) (kind, error) {
		return kind{}, fmt.Errorf("dtype %q %s; spore reads <f2, <f4, <f8, |i1, <i2, <i4, <i8, |u1, <u2, <u4, <u8 and |b1 (and big-endian >f2, >f4, ..., >u8)", descr, why)
	}
	if len(descr) >= 2 && descr[1] == 'O' {
		return unsupported("holds pickled Python objects, which are not supported")
	}
	if len(descr) < 3 {
		return unsupported("is not a NumPy type string")
	}
	order, code := descr[0], descr[1:]
	k := kind{bigEndian: order == '>'}
	switch code {
	case "f4":
		k.dt, k.size = tensor.Float32, 4
	case "f8":
		k.dt, k.size = tensor.Float64, 8
	case "f2":
		k.dt, k.size = tensor.Float16, 2
	case "i1":
		k.dt, k.size = tensor.Int8, 1
	case "i2":
		k.dt, k.size = tensor.Int16, 2
	case "i4":
		k.dt, k.size = tensor.Int32, 4
	case "i8":
		k.dt, k.size = tensor.Int64, 8
	case "b1":
		k.dt, k.size = tensor.Bool, 1
	case "u1":
		k.dt, k.size = tensor.Uint8, 1
	case "u2":
		k.dt, k.size = tensor.Uint16, 2
	case "u4":
		k.dt, k.size = tensor.Uint32, 4
	case "u8":
		k.dt, k.size = tensor.Uint64, 8
	default:
		return unsupported("is not supported")
	}
	switch order {
	case '<', '>':
	case '|':
		if k.size != 1 {
			return unsupported("has no byte order ('|') but elements of several bytes")
		}
	case '=':
		return unsupported("is in the native byte order of the machine that wrote it, which is unknown here")
	default:
		return unsupported(fmt.Sprintf("has an unknown byte-order mark %q", order))
	}
	return k, nil
}

// descrOf is the type string Write records for dt.
func descrOf(dt tensor.DType) (string, error) {
	switch dt {
	case tensor.Float32:
		return "<f4", nil
	case tensor.Float64:
		return "<f8", nil
	case tensor.Int32:
		return "<i4", nil
	case tensor.Int64:
		return "<i8", nil
	case tensor.Bool:
		return "|b1", nil
	case tensor.Uint8:
		return "|u1", nil
	case tensor.Float16:
		return "<f2", nil
	case tensor.Int8:
		return "|i1", nil
	case tensor.Int16:
		return "<i2", nil
	case tensor.Uint16:
		return "<u2", nil
	case tensor.Uint32:
		return "<u4", nil
	case tensor.Uint64:
		return "<u8", nil
	case tensor.BFloat16:
		// NumPy has no bfloat16: a file of raw bits ('<u2', or ml_dtypes'
		// '<V2') would read back in NumPy as integers or opaque bytes,
		// never as the values. Refuse, and say how to keep the values.
		return "", fmt.Errorf("dtype BFloat16 has no .npy type (NumPy has no bfloat16); cast the tensor to Float32 first (ops.Cast), which holds its values exactly")
	}
	return "", fmt.Errorf("dtype %v has no .npy type", dt)
}

// readHeader reads the magic string, version and header of an .npy
// stream, and returns the element kind, the shape, and how many bytes
// the header took.
func readHeader(r io.Reader) (kind, []int, int64, error) {
	var pre [10]byte
	if _, err := io.ReadFull(r, pre[:8]); err != nil {
		return kind{}, nil, 0, fmt.Errorf("not an .npy file: %s", shortRead(err, "magic string and version"))
	}
	if string(pre[:6]) != magic {
		return kind{}, nil, 0, fmt.Errorf("not an .npy file: it starts with %q, not %q", pre[:6], magic)
	}
	major, minor := pre[6], pre[7]
	var hlen int64
	used := int64(8)
	switch {
	case major == 1 && minor == 0:
		if _, err := io.ReadFull(r, pre[8:10]); err != nil {
			return kind{}, nil, 0, fmt.Errorf(".npy header: %s", shortRead(err, "header length"))
		}
		hlen = int64(binary.LittleEndian.Uint16(pre[8:10]))
		used += 2
	case (major == 2 || major == 3) && minor == 0:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return kind{}, nil, 0, fmt.Errorf(".npy header: %s", shortRead(err, "header length"))
		}
		hlen = int64(binary.LittleEndian.Uint32(b[:]))
		used += 4
	default:
		return kind{}, nil, 0, fmt.Errorf(".npy format version %d.%d is not supported (1.0, 2.0 and 3.0 are)", major, minor)
	}
	if hlen > maxHeader {
		return kind{}, nil, 0, fmt.Errorf(".npy header declares %d bytes; no array header needs more than %d", hlen, maxHeader)
	}
	hb := make([]byte, hlen)
	if _, err := io.ReadFull(r, hb); err != nil {
		return kind{}, nil, 0, fmt.Errorf(".npy header: %s", shortRead(err, fmt.Sprintf("%d-byte header", hlen)))
	}
	used += hlen
	h, err := parseHeader(string(hb))
	if err != nil {
		return kind{}, nil, 0, fmt.Errorf(".npy header: %w", err)
	}
	k, err := parseDescr(h.descr)
	if err != nil {
		return kind{}, nil, 0, fmt.Errorf(".npy header: %w", err)
	}
	if h.fortran && len(h.shape) > 1 {
		return kind{}, nil, 0, fmt.Errorf(".npy header: the array of shape %v is in Fortran (column-major) order, which is not supported; save it with np.ascontiguousarray", h.shape)
	}
	if _, err := dataBytes(k, h.shape); err != nil {
		return kind{}, nil, 0, fmt.Errorf(".npy header: %w", err)
	}
	return k, h.shape, used, nil
}

// dataBytes is the size of the data a shape of kind k needs, or an error
// when it cannot be counted in an int.
func dataBytes(k kind, shape []int) (int64, error) {
	n := int64(k.size)
	for _, d := range shape {
		if d == 0 {
			return 0, nil
		}
	}
	for _, d := range shape {
		if n > math.MaxInt64/int64(d) || n*int64(d) > math.MaxInt {
			return 0, fmt.Errorf("shape %v of %d-byte elements holds more bytes than can be addressed", shape, k.size)
		}
		n *= int64(d)
	}
	return n, nil
}

// shortRead words an error from io.ReadFull.
func shortRead(err error, what string) string {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "truncated before the end of the " + what
	}
	return fmt.Sprintf("reading the %s: %v", what, err)
}

// Read reads one array in .npy format (versions 1.0, 2.0 and 3.0) from r,
// and leaves r just past its data. The element types are float16,
// float32, float64, the signed and unsigned integers of 8 to 64 bits and
// bool, in either byte order; the data
// must be in C (row-major) order. A truncated stream, a malformed header
// or a type spore cannot hold is an error that says which.
func Read(r io.Reader) (*tensor.Tensor, error) {
	k, shape, _, err := readHeader(r)
	if err != nil {
		return nil, err
	}
	return readData(r, k, shape)
}

// readData reads the elements of an array whose header has been read.
func readData(r io.Reader, k kind, shape []int) (*tensor.Tensor, error) {
	n := 1
	for _, d := range shape {
		n *= d // cannot overflow: readHeader checked the byte count
	}
	var buf any
	var err error
	var order binary.ByteOrder = binary.LittleEndian
	if k.bigEndian {
		order = binary.BigEndian
	}
	switch k.dt {
	case tensor.Float32:
		buf, err = readElems(r, n, 4, func(b []byte) float32 { return math.Float32frombits(order.Uint32(b)) })
	case tensor.Float64:
		buf, err = readElems(r, n, 8, func(b []byte) float64 { return math.Float64frombits(order.Uint64(b)) })
	case tensor.Int32:
		buf, err = readElems(r, n, 4, func(b []byte) int32 { return int32(order.Uint32(b)) })
	case tensor.Int64:
		buf, err = readElems(r, n, 8, func(b []byte) int64 { return int64(order.Uint64(b)) })
	case tensor.Bool:
		buf, err = readElems(r, n, 1, func(b []byte) bool { return b[0] != 0 })
	case tensor.Uint8:
		buf, err = readElems(r, n, 1, func(b []byte) uint8 { return b[0] })
	case tensor.Float16:
		buf, err = readElems(r, n, 2, func(b []byte) tensor.F16 { return tensor.F16(order.Uint16(b)) })
	case tensor.Int8:
		buf, err = readElems(r, n, 1, func(b []byte) int8 { return int8(b[0]) })
	case tensor.Int16:
		buf, err = readElems(r, n, 2, func(b []byte) int16 { return int16(order.Uint16(b)) })
	case tensor.Uint16:
		buf, err = readElems(r, n, 2, order.Uint16)
	case tensor.Uint32:
		buf, err = readElems(r, n, 4, order.Uint32)
	case tensor.Uint64:
		buf, err = readElems(r, n, 8, order.Uint64)
	}
	if err != nil {
		return nil, fmt.Errorf(".npy data of shape %v (%v): %w", shape, k.dt, err)
	}
	return core.FromBuffer(buf, tensor.Shape(shape)), nil
}

// readElems reads n elements of size bytes each, decoding them with conv,
// a chunk at a time: the result grows only as data arrives.
func readElems[T any](r io.Reader, n, size int, conv func([]byte) T) ([]T, error) {
	per := chunk / size
	out := make([]T, 0, min(n, per))
	scratch := make([]byte, min(n, per)*size)
	for len(out) < n {
		m := min(n-len(out), per)
		b := scratch[:m*size]
		if got, err := io.ReadFull(r, b); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, fmt.Errorf("truncated: %d of %d data bytes present", int64(len(out))*int64(size)+int64(got), int64(n)*int64(size))
			}
			return nil, err
		}
		for i := 0; i < m; i++ {
			out = append(out, conv(b[i*size:]))
		}
	}
	return out, nil
}

// ReadFile reads the .npy file at path. Unlike Read, it also refuses a
// file whose size does not match its header (checked before the data is
// read) and names the file in every error.
func ReadFile(path string) (*tensor.Tensor, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	br := bufio.NewReader(f)
	k, shape, used, err := readHeader(br)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	need, _ := dataBytes(k, shape)
	if fi.Mode().IsRegular() {
		if have := fi.Size() - used; have != need {
			return nil, fmt.Errorf("%s: the header declares shape %v of %v (%d data bytes) but the file holds %d", path, shape, k.dt, need, have)
		}
	}
	t, err := readData(br, k, shape)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Write writes t to w in .npy format, version 1.0 (2.0 only if the header
// would not fit), exactly as NumPy's np.save writes the same array. t must
// be concrete; a symbolic tensor (one being traced) has no values to write.
func Write(w io.Writer, t *tensor.Tensor) error {
	if t == nil {
		return errors.New("npy: cannot write a nil tensor")
	}
	if t.IsSymbolic() {
		return errors.New("npy: cannot write a symbolic tensor (a value being traced in Graph mode has no data yet)")
	}
	descr, err := descrOf(t.DType())
	if err != nil {
		return fmt.Errorf("npy: %w", err)
	}
	if _, err := io.WriteString(w, headerBytes(descr, t.Shape())); err != nil {
		return err
	}
	return writeData(w, t.Data())
}

// headerBytes frames a header as NumPy's _wrap_header does: the total
// length up to the data is a multiple of 64, padded with spaces and ended
// by a newline.
func headerBytes(descr string, shape []int) string {
	h := formatHeader(descr, shape)
	const align = 64
	for _, v := range []struct {
		major   byte
		lenSize int
	}{{1, 2}, {2, 4}} {
		hlen := len(h) + 1
		pad := align - (len(magic)+2+v.lenSize+hlen)%align
		total := hlen + pad
		if v.lenSize == 2 && total > math.MaxUint16 {
			continue
		}
		pre := []byte(magic)
		pre = append(pre, v.major, 0)
		if v.lenSize == 2 {
			pre = binary.LittleEndian.AppendUint16(pre, uint16(total))
		} else {
			pre = binary.LittleEndian.AppendUint32(pre, uint32(total))
		}
		return string(pre) + h + spaces(pad) + "\n"
	}
	panic("unreachable: a version 2.0 header holds any shape")
}

func spaces(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = ' '
	}
	return string(b)
}

// writeData writes a tensor buffer little-endian, a chunk at a time.
func writeData(w io.Writer, buf any) error {
	switch b := buf.(type) {
	case []float32:
		return writeElems(w, b, 4, func(d []byte, v float32) { binary.LittleEndian.PutUint32(d, math.Float32bits(v)) })
	case []float64:
		return writeElems(w, b, 8, func(d []byte, v float64) { binary.LittleEndian.PutUint64(d, math.Float64bits(v)) })
	case []int32:
		return writeElems(w, b, 4, func(d []byte, v int32) { binary.LittleEndian.PutUint32(d, uint32(v)) })
	case []int64:
		return writeElems(w, b, 8, func(d []byte, v int64) { binary.LittleEndian.PutUint64(d, uint64(v)) })
	case []bool:
		return writeElems(w, b, 1, func(d []byte, v bool) {
			d[0] = 0
			if v {
				d[0] = 1
			}
		})
	case []uint8:
		_, err := w.Write(b)
		return err
	case []tensor.F16:
		return writeElems(w, b, 2, func(d []byte, v tensor.F16) { binary.LittleEndian.PutUint16(d, uint16(v)) })
	case []int8:
		return writeElems(w, b, 1, func(d []byte, v int8) { d[0] = byte(v) })
	case []int16:
		return writeElems(w, b, 2, func(d []byte, v int16) { binary.LittleEndian.PutUint16(d, uint16(v)) })
	case []uint16:
		return writeElems(w, b, 2, binary.LittleEndian.PutUint16)
	case []uint32:
		return writeElems(w, b, 4, binary.LittleEndian.PutUint32)
	case []uint64:
		return writeElems(w, b, 8, binary.LittleEndian.PutUint64)
	}
	return fmt.Errorf("npy: unsupported buffer type %T", buf)
}

func writeElems[T any](w io.Writer, xs []T, size int, put func([]byte, T)) error {
	per := chunk / size
	scratch := make([]byte, min(len(xs), per)*size)
	for len(xs) > 0 {
		m := min(len(xs), per)
		b := scratch[:m*size]
		for i, v := range xs[:m] {
			put(b[i*size:], v)
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		xs = xs[m:]
	}
	return nil
}

// WriteFile writes t to path in .npy format, whole or not at all: the
// bytes go to a temporary file in the same directory that is renamed over
// path only once complete.
func WriteFile(path string, t *tensor.Tensor) error {
	if err := atomicfile.Write(path, func(w io.Writer) error { return Write(w, t) }); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
