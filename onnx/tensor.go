package onnx

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// maxDims bounds a tensor's rank, so that a hostile file cannot make the
// loader build absurd shapes.
const maxDims = 32

// elemCount returns the number of elements of dims, or an error when a
// dimension is negative or the product overflows what an int can index.
func elemCount(dims []int64) (int, error) {
	if len(dims) > maxDims {
		return 0, fmt.Errorf("rank %d exceeds %d", len(dims), maxDims)
	}
	n := int64(1)
	for _, d := range dims {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension %d in %v", d, dims)
		}
		if d != 0 && n > math.MaxInt32*int64(64)/d {
			return 0, fmt.Errorf("dimensions %v hold too many elements", dims)
		}
		n *= d
	}
	return int(n), nil
}

// onnxDTypes maps the ONNX element types spore holds to its dtypes.
// STRING (and the 8-bit floats and complex types) have no spore dtype.
var onnxDTypes = map[onnxpb.TensorProto_DataType]tensor.DType{
	onnxpb.TensorProto_FLOAT:    tensor.Float32,
	onnxpb.TensorProto_DOUBLE:   tensor.Float64,
	onnxpb.TensorProto_INT8:     tensor.Int8,
	onnxpb.TensorProto_INT16:    tensor.Int16,
	onnxpb.TensorProto_INT32:    tensor.Int32,
	onnxpb.TensorProto_INT64:    tensor.Int64,
	onnxpb.TensorProto_UINT8:    tensor.Uint8,
	onnxpb.TensorProto_UINT16:   tensor.Uint16,
	onnxpb.TensorProto_UINT32:   tensor.Uint32,
	onnxpb.TensorProto_UINT64:   tensor.Uint64,
	onnxpb.TensorProto_BOOL:     tensor.Bool,
	onnxpb.TensorProto_FLOAT16:  tensor.Float16,
	onnxpb.TensorProto_BFLOAT16: tensor.BFloat16,
}

// dtypeOf maps an ONNX element type to spore's dtype.
func dtypeOf(dt int32) (tensor.DType, error) {
	if d, ok := onnxDTypes[onnxpb.TensorProto_DataType(dt)]; ok {
		return d, nil
	}
	return tensor.Invalid, fmt.Errorf("element type %s is not supported", onnxpb.TensorProto_DataType(dt))
}

// onnxDTypeOf is the ONNX element type of a spore dtype.
func onnxDTypeOf(dt tensor.DType) (onnxpb.TensorProto_DataType, bool) {
	for o, d := range onnxDTypes {
		if d == dt {
			return o, true
		}
	}
	return 0, false
}

// tensorFromProto decodes an ONNX tensor (an initializer or a Constant's
// value) into a concrete spore tensor. Data may be raw little-endian bytes
// or the typed repeated fields; its length must match the dimensions, which
// is checked before anything is allocated, so a huge declared shape with
// little data fails without allocating. dir is the directory external
// data files are resolved against ("" when the model came from a reader).
func tensorFromProto(tp *onnxpb.TensorProto, dir string) (*tensor.Tensor, error) {
	t, err := decodeTensorProto(tp, dir, false)
	if err == nil && len(tp.GetDims()) == 0 && t.Rank() != 0 {
		// No dims is a scalar; tensor.FromSlice without a shape makes a
		// vector, so reshape to rank 0.
		t = ops.Reshape(t)
	}
	return t, err
}

// checkTensorProto makes every check tensorFromProto makes — element
// type, dimensions against the data present, external data's location and
// size (when dir is known) — without decoding or reading any data: Check's
// test of the initializers.
func checkTensorProto(tp *onnxpb.TensorProto, dir string) error {
	_, err := decodeTensorProto(tp, dir, true)
	return err
}

// decodeTensorProto is tensorFromProto before the rank-0 fix-up; with
// checkOnly it stops before allocating and returns a nil tensor.
func decodeTensorProto(tp *onnxpb.TensorProto, dir string, checkOnly bool) (*tensor.Tensor, error) {
	name := tp.GetName()
	wrap := func(err error) error {
		if name == "" {
			return err
		}
		return fmt.Errorf("tensor %q: %w", name, err)
	}
	n, err := elemCount(tp.GetDims())
	if err != nil {
		return nil, wrap(err)
	}
	dt, err := dtypeOf(tp.GetDataType())
	if err != nil {
		return nil, wrap(err)
	}
	shape := make([]int, len(tp.GetDims()))
	for i, d := range tp.GetDims() {
		shape[i] = int(d)
	}
	raw := tp.GetRawData()
	width := dt.Size()
	if tp.GetDataLocation() == onnxpb.TensorProto_EXTERNAL {
		if checkOnly && dir == "" {
			return nil, nil // nothing to check the location against
		}
		raw, err = readExternal(tp, dir, n*width, !checkOnly)
		if err != nil {
			return nil, wrap(err)
		}
		if checkOnly {
			return nil, nil
		}
	}
	if raw != nil {
		if len(raw) != n*width {
			return nil, wrap(fmt.Errorf("raw data holds %d bytes, want %d for %v %v", len(raw), n*width, dt, tp.GetDims()))
		}
		if checkOnly {
			return nil, nil
		}
		return fromRaw(dt, raw, n, shape), nil
	}
	var have int
	switch dt {
	case tensor.Float32:
		have = len(tp.GetFloatData())
	case tensor.Float64:
		have = len(tp.GetDoubleData())
	case tensor.Int64:
		have = len(tp.GetInt64Data())
	case tensor.Uint32, tensor.Uint64:
		have = len(tp.GetUint64Data())
	default: // the types of 32 bits or fewer are stored in int32_data
		have = len(tp.GetInt32Data())
	}
	if have != n {
		return nil, wrap(fmt.Errorf("holds %d values, want %d for %v %v", have, n, dt, tp.GetDims()))
	}
	if checkOnly {
		return nil, nil
	}
	return fromTyped(tp, dt, n, shape), nil
}

// fromTyped decodes a tensor held in the typed fields of a TensorProto,
// as ONNX packs them: float_data, double_data and int64_data hold their
// own types; uint64_data holds UINT32 and UINT64; int32_data holds every
// other type, one element per value — INT8, INT16, UINT8, UINT16 and BOOL
// as their values, FLOAT16 and BFLOAT16 as their bit patterns in the low
// 16 bits. Values are converted as C converts them (truncated to the
// type's width).
func fromTyped(tp *onnxpb.TensorProto, dt tensor.DType, n int, shape []int) *tensor.Tensor {
	i32 := tp.GetInt32Data()
	u64 := tp.GetUint64Data()
	switch dt {
	case tensor.Float32:
		return tensor.FromSlice(append([]float32(nil), tp.GetFloatData()...), shape...)
	case tensor.Float64:
		return tensor.FromSlice(append([]float64(nil), tp.GetDoubleData()...), shape...)
	case tensor.Int64:
		return tensor.FromSlice(append([]int64(nil), tp.GetInt64Data()...), shape...)
	case tensor.Int32:
		return tensor.FromSlice(append([]int32(nil), i32...), shape...)
	case tensor.Int16:
		return tensor.FromSlice(convertSlice[int16](i32), shape...)
	case tensor.Int8:
		return tensor.FromSlice(convertSlice[int8](i32), shape...)
	case tensor.Uint16:
		return tensor.FromSlice(convertSlice[uint16](i32), shape...)
	case tensor.Uint8:
		return tensor.FromSlice(convertSlice[uint8](i32), shape...)
	case tensor.Uint32:
		return tensor.FromSlice(convertSlice[uint32](u64), shape...)
	case tensor.Uint64:
		return tensor.FromSlice(append([]uint64(nil), u64...), shape...)
	case tensor.Float16:
		v := make([]tensor.F16, n)
		for i, x := range i32 {
			v[i] = tensor.F16(uint16(x))
		}
		return tensor.FromSlice(v, shape...)
	case tensor.BFloat16:
		v := make([]tensor.BF16, n)
		for i, x := range i32 {
			v[i] = tensor.BF16(uint16(x))
		}
		return tensor.FromSlice(v, shape...)
	}
	v := make([]bool, n) // Bool
	for i, x := range i32 {
		v[i] = x != 0
	}
	return tensor.FromSlice(v, shape...)
}

// convertSlice converts integers to the integer type T, truncating.
func convertSlice[T tensor.Int, S int32 | uint64](s []S) []T {
	out := make([]T, len(s))
	for i, x := range s {
		out[i] = T(x)
	}
	return out
}

// fromRaw decodes n little-endian elements of dt.
func fromRaw(dt tensor.DType, raw []byte, n int, shape []int) *tensor.Tensor {
	le := binary.LittleEndian
	switch dt {
	case tensor.Float32:
		v := make([]float32, n)
		for i := range v {
			v[i] = math.Float32frombits(le.Uint32(raw[4*i:]))
		}
		return tensor.FromSlice(v, shape...)
	case tensor.Float64:
		v := make([]float64, n)
		for i := range v {
			v[i] = math.Float64frombits(le.Uint64(raw[8*i:]))
		}
		return tensor.FromSlice(v, shape...)
	case tensor.Int64:
		return tensor.FromSlice(rawInts(raw, n, func(b []byte) int64 { return int64(le.Uint64(b)) }), shape...)
	case tensor.Uint64:
		return tensor.FromSlice(rawInts(raw, n, le.Uint64), shape...)
	case tensor.Int32:
		return tensor.FromSlice(rawInts(raw, n, func(b []byte) int32 { return int32(le.Uint32(b)) }), shape...)
	case tensor.Uint32:
		return tensor.FromSlice(rawInts(raw, n, le.Uint32), shape...)
	case tensor.Int16:
		return tensor.FromSlice(rawInts(raw, n, func(b []byte) int16 { return int16(le.Uint16(b)) }), shape...)
	case tensor.Uint16:
		return tensor.FromSlice(rawInts(raw, n, le.Uint16), shape...)
	case tensor.Float16:
		return tensor.FromSlice(rawInts(raw, n, func(b []byte) tensor.F16 { return tensor.F16(le.Uint16(b)) }), shape...)
	case tensor.BFloat16:
		return tensor.FromSlice(rawInts(raw, n, func(b []byte) tensor.BF16 { return tensor.BF16(le.Uint16(b)) }), shape...)
	case tensor.Int8:
		return tensor.FromSlice(rawInts(raw, n, func(b []byte) int8 { return int8(b[0]) }), shape...)
	case tensor.Bool:
		v := make([]bool, n)
		for i := range v {
			v[i] = raw[i] != 0
		}
		return tensor.FromSlice(v, shape...)
	default:
		return tensor.FromSlice(append([]uint8(nil), raw[:n]...), shape...)
	}
}

// rawInts decodes n elements of T's width from raw with get.
func rawInts[T any](raw []byte, n int, get func([]byte) T) []T {
	v := make([]T, n)
	if n == 0 {
		return v
	}
	w := len(raw) / n
	for i := range v {
		v[i] = get(raw[w*i:])
	}
	return v
}

// rawOf encodes a concrete tensor's elements as ONNX's raw_data holds
// them: little-endian, at the dtype's width, Bool as bytes 0 and 1,
// FLOAT16 and BFLOAT16 as their bit patterns.
func rawOf(t *tensor.Tensor) ([]byte, error) {
	le := binary.LittleEndian
	switch d := t.Data().(type) {
	case []float32:
		return putRaw(d, 4, func(b []byte, v float32) { le.PutUint32(b, math.Float32bits(v)) }), nil
	case []float64:
		return putRaw(d, 8, func(b []byte, v float64) { le.PutUint64(b, math.Float64bits(v)) }), nil
	case []int64:
		return putRaw(d, 8, func(b []byte, v int64) { le.PutUint64(b, uint64(v)) }), nil
	case []uint64:
		return putRaw(d, 8, le.PutUint64), nil
	case []int32:
		return putRaw(d, 4, func(b []byte, v int32) { le.PutUint32(b, uint32(v)) }), nil
	case []uint32:
		return putRaw(d, 4, le.PutUint32), nil
	case []int16:
		return putRaw(d, 2, func(b []byte, v int16) { le.PutUint16(b, uint16(v)) }), nil
	case []uint16:
		return putRaw(d, 2, le.PutUint16), nil
	case []tensor.F16:
		return putRaw(d, 2, func(b []byte, v tensor.F16) { le.PutUint16(b, uint16(v)) }), nil
	case []tensor.BF16:
		return putRaw(d, 2, func(b []byte, v tensor.BF16) { le.PutUint16(b, uint16(v)) }), nil
	case []int8:
		return putRaw(d, 1, func(b []byte, v int8) { b[0] = byte(v) }), nil
	case []uint8:
		return append([]byte(nil), d...), nil
	case []bool:
		return putRaw(d, 1, func(b []byte, v bool) {
			if v {
				b[0] = 1
			}
		}), nil
	}
	return nil, fmt.Errorf("elements of dtype %v cannot be written", t.DType())
}

// putRaw encodes the elements of d, w bytes each, with put.
func putRaw[T any](d []T, w int, put func([]byte, T)) []byte {
	raw := make([]byte, w*len(d))
	for i, v := range d {
		put(raw[w*i:], v)
	}
	return raw
}

// readExternal reads the want bytes of a tensor stored outside the model
// (external_data: location, offset, length); without read it only checks
// that they are there. The location must be a
// relative path that stays inside dir: a model file must not be able to
// read /etc/passwd or ../../secrets. Offset and length are checked
// against the file's size before anything is allocated.
func readExternal(tp *onnxpb.TensorProto, dir string, want int, read bool) ([]byte, error) {
	var loc string
	offset, length := int64(0), int64(-1)
	for _, kv := range tp.GetExternalData() {
		var err error
		switch kv.GetKey() {
		case "location":
			loc = kv.GetValue()
		case "offset":
			offset, err = strconv.ParseInt(kv.GetValue(), 10, 64)
		case "length":
			length, err = strconv.ParseInt(kv.GetValue(), 10, 64)
		}
		if err != nil {
			return nil, fmt.Errorf("external data: %s %q is not an integer", kv.GetKey(), kv.GetValue())
		}
	}
	if loc == "" {
		return nil, fmt.Errorf("external data has no location")
	}
	if dir == "" {
		return nil, fmt.Errorf("external data in %q: the model was read from a stream; use LoadFile or the ExternalDataDir option", loc)
	}
	if filepath.IsAbs(loc) || strings.HasPrefix(loc, "/") || strings.HasPrefix(loc, "\\") || filepath.VolumeName(loc) != "" {
		return nil, fmt.Errorf("external data location %q is an absolute path; it must be relative to the model's directory", loc)
	}
	clean := filepath.Clean(filepath.FromSlash(loc))
	if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return nil, fmt.Errorf("external data location %q leaves the model's directory", loc)
	}
	if offset < 0 || length < -1 {
		return nil, fmt.Errorf("external data in %q: negative offset %d or length %d", loc, offset, length)
	}
	path := filepath.Join(dir, clean)
	// A symbolic link inside dir must not lead out of it either.
	if realDir, err := filepath.EvalSymlinks(dir); err == nil {
		if realPath, err := filepath.EvalSymlinks(path); err == nil {
			if rel, err := filepath.Rel(realDir, realPath); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				return nil, fmt.Errorf("external data location %q leads out of the model's directory through a symbolic link", loc)
			}
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("external data: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("external data: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("external data %s is not a regular file", path)
	}
	if length == -1 {
		length = st.Size() - offset
	}
	if length != int64(want) {
		return nil, fmt.Errorf("external data in %s holds %d bytes at offset %d, want %d for dims %v", loc, length, offset, want, tp.GetDims())
	}
	if offset > st.Size() || length > st.Size()-offset {
		return nil, fmt.Errorf("external data %s is %d bytes, too short for %d bytes at offset %d", loc, st.Size(), length, offset)
	}
	if !read {
		return nil, nil
	}
	buf := make([]byte, length)
	if _, err := f.ReadAt(buf, offset); err != nil && err != io.EOF {
		return nil, fmt.Errorf("external data %s: %w", loc, err)
	}
	return buf, nil
}
