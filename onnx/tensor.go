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

// dtypeOf maps an ONNX element type to spore's dtype.
func dtypeOf(dt int32) (tensor.DType, error) {
	switch onnxpb.TensorProto_DataType(dt) {
	case onnxpb.TensorProto_FLOAT:
		return tensor.Float32, nil
	case onnxpb.TensorProto_DOUBLE:
		return tensor.Float64, nil
	case onnxpb.TensorProto_INT64:
		return tensor.Int64, nil
	case onnxpb.TensorProto_INT32:
		return tensor.Int32, nil
	case onnxpb.TensorProto_BOOL:
		return tensor.Bool, nil
	case onnxpb.TensorProto_UINT8:
		return tensor.Uint8, nil
	}
	return tensor.Invalid, fmt.Errorf("element type %s is not supported", onnxpb.TensorProto_DataType(dt))
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
	width := map[tensor.DType]int{tensor.Float32: 4, tensor.Float64: 8, tensor.Int64: 8, tensor.Int32: 4, tensor.Bool: 1, tensor.Uint8: 1}[dt]
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
	default: // int32, bool and uint8 are stored in int32_data
		have = len(tp.GetInt32Data())
	}
	if have != n {
		return nil, wrap(fmt.Errorf("holds %d values, want %d for %v %v", have, n, dt, tp.GetDims()))
	}
	if checkOnly {
		return nil, nil
	}
	switch dt {
	case tensor.Float32:
		return tensor.FromSlice(append([]float32(nil), tp.GetFloatData()...), shape...), nil
	case tensor.Float64:
		return tensor.FromSlice(append([]float64(nil), tp.GetDoubleData()...), shape...), nil
	case tensor.Int64:
		return tensor.FromSlice(append([]int64(nil), tp.GetInt64Data()...), shape...), nil
	case tensor.Int32:
		return tensor.FromSlice(append([]int32(nil), tp.GetInt32Data()...), shape...), nil
	case tensor.Bool:
		v := make([]bool, n)
		for i, x := range tp.GetInt32Data() {
			v[i] = x != 0
		}
		return tensor.FromSlice(v, shape...), nil
	default:
		v := make([]uint8, n)
		for i, x := range tp.GetInt32Data() {
			v[i] = uint8(x)
		}
		return tensor.FromSlice(v, shape...), nil
	}
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
		v := make([]int64, n)
		for i := range v {
			v[i] = int64(le.Uint64(raw[8*i:]))
		}
		return tensor.FromSlice(v, shape...)
	case tensor.Int32:
		v := make([]int32, n)
		for i := range v {
			v[i] = int32(le.Uint32(raw[4*i:]))
		}
		return tensor.FromSlice(v, shape...)
	case tensor.Bool:
		v := make([]bool, n)
		for i := range v {
			v[i] = raw[i] != 0
		}
		return tensor.FromSlice(v, shape...)
	default:
		return tensor.FromSlice(append([]uint8(nil), raw...), shape...)
	}
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
