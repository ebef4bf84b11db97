package checkpoint

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// Param is one named tensor in a checkpoint: a network parameter, an
// optimiser state slot, or any other tensor worth keeping.
type Param struct {
	Name   string
	Tensor *tensor.Tensor
}

// Named is anything that can list its named parameters, in a deterministic
// order. Params is one; an nn cell becomes one through train.NetParams
// (nn's NamedParameters returns nn.Param, as this package does not import
// nn).
type Named interface {
	NamedParameters() []Param
}

// Params is a list of named tensors. It implements Named, so a plain list
// can be passed wherever a Named is expected.
type Params []Param

// NamedParameters returns p itself.
func (p Params) NamedParameters() []Param { return p }

// FromTensors lists parameter tensors under their own names (Tensor.Name),
// in the order given. It adapts a cell's Parameters() to Named.
func FromTensors(ts ...*tensor.Tensor) Params {
	out := make(Params, len(ts))
	for i, t := range ts {
		out[i] = Param{Name: t.Name(), Tensor: t}
	}
	return out
}

// WithPrefix returns ps with prefix+"." put before every name, so that
// several sets of tensors (two networks, say) can share one file; SplitPrefix
// takes them apart again.
func WithPrefix(prefix string, ps []Param) []Param {
	out := make([]Param, len(ps))
	for i, p := range ps {
		out[i] = Param{Name: prefix + "." + p.Name, Tensor: p.Tensor}
	}
	return out
}

// SplitPrefix separates the entries whose names start with prefix+"." from
// the rest. The matched entries come back with the prefix removed, ready for
// LoadInto against the optimiser's own state; the order of both lists is the
// order of ps.
func SplitPrefix(ps []Param, prefix string) (matched, rest []Param) {
	pre := prefix + "."
	for _, p := range ps {
		if name, ok := strings.CutPrefix(p.Name, pre); ok {
			matched = append(matched, Param{Name: name, Tensor: p.Tensor})
		} else {
			rest = append(rest, p)
		}
	}
	return matched, rest
}

// Names returns the names of ps, in order.
func Names(ps []Param) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name
	}
	return out
}

// FormatError reports a checkpoint file (or buffer) that is malformed,
// truncated or uses something this package cannot represent. Nothing is
// loaded from a file that produces one.
type FormatError struct {
	File   string // the file name; "" for an in-memory buffer
	Format string // "safetensors" or "ckpt"
	Tensor string // the tensor concerned; "" when the problem is not about one tensor
	Msg    string
}

// Error formats the error as one line.
func (e *FormatError) Error() string {
	var b strings.Builder
	b.WriteString("checkpoint: ")
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	b.WriteString(e.Format)
	b.WriteString(": ")
	if e.Tensor != "" {
		fmt.Fprintf(&b, "tensor %q: ", e.Tensor)
	}
	b.WriteString(e.Msg)
	return b.String()
}

func withFile(err error, file string) error {
	if fe, ok := err.(*FormatError); ok && fe.File == "" {
		c := *fe
		c.File = file
		return &c
	}
	return err
}

// checkSave validates params for writing: names present and unique, tensors
// concrete. It returns the problems as one error.
func checkSave(format string, params []Param, extraNames map[string]bool) error {
	seen := make(map[string]bool, len(params))
	for i, p := range params {
		switch {
		case p.Name == "":
			return fmt.Errorf("checkpoint: %s: entry %d has an empty name", format, i)
		case !utf8.ValidString(p.Name):
			return fmt.Errorf("checkpoint: %s: name %q is not valid UTF-8", format, p.Name)
		case seen[p.Name]:
			return fmt.Errorf("checkpoint: %s: name %q appears twice", format, p.Name)
		case extraNames[p.Name]:
			return fmt.Errorf("checkpoint: %s: name %q is already taken (by a metadata key, or reserved by the format)", format, p.Name)
		case p.Tensor == nil:
			return fmt.Errorf("checkpoint: %s: tensor %q is nil", format, p.Name)
		case p.Tensor.IsSymbolic():
			return fmt.Errorf("checkpoint: %s: tensor %q is symbolic (a value inside a traced function); save concrete tensors, outside Jit", format, p.Name)
		}
		if p.Tensor.DType().Size() == 0 {
			return fmt.Errorf("checkpoint: %s: tensor %q has unsupported dtype %v", format, p.Name, p.Tensor.DType())
		}
		seen[p.Name] = true
	}
	return nil
}

// encodeLE returns t's elements as little-endian bytes.
func encodeLE(t *tensor.Tensor) []byte {
	n := t.Size()
	out := make([]byte, n*t.DType().Size())
	switch b := t.Data().(type) {
	case []float32:
		for i, v := range b {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
		}
	case []float64:
		for i, v := range b {
			binary.LittleEndian.PutUint64(out[8*i:], math.Float64bits(v))
		}
	case []int32:
		for i, v := range b {
			binary.LittleEndian.PutUint32(out[4*i:], uint32(v))
		}
	case []int64:
		for i, v := range b {
			binary.LittleEndian.PutUint64(out[8*i:], uint64(v))
		}
	case []bool:
		for i, v := range b {
			if v {
				out[i] = 1
			}
		}
	case []uint8:
		copy(out, b)
	case []tensor.BF16:
		for i, v := range b {
			binary.LittleEndian.PutUint16(out[2*i:], uint16(v))
		}
	case []tensor.F16:
		for i, v := range b {
			binary.LittleEndian.PutUint16(out[2*i:], uint16(v))
		}
	}
	return out
}

// decodeLE builds a tensor of type dt and the given shape from little-endian
// bytes. The caller has checked len(b) == shape.Size()*dt.Size(). Bool
// bytes other than 0 and 1 are rejected: no writer produces them, so they
// mean corruption.
func decodeLE(dt tensor.DType, shape tensor.Shape, b []byte) (*tensor.Tensor, string) {
	n := len(b) / dt.Size()
	var buf any
	switch dt {
	case tensor.Float32:
		v := make([]float32, n)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		buf = v
	case tensor.Float64:
		v := make([]float64, n)
		for i := range v {
			v[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
		}
		buf = v
	case tensor.Int32:
		v := make([]int32, n)
		for i := range v {
			v[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
		}
		buf = v
	case tensor.Int64:
		v := make([]int64, n)
		for i := range v {
			v[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
		}
		buf = v
	case tensor.Bool:
		v := make([]bool, n)
		for i, c := range b {
			if c > 1 {
				return nil, fmt.Sprintf("bool element %d has byte value %d, want 0 or 1", i, c)
			}
			v[i] = c == 1
		}
		buf = v
	case tensor.Uint8:
		buf = append([]uint8(nil), b...)
	case tensor.BFloat16:
		v := make([]tensor.BF16, n)
		for i := range v {
			v[i] = tensor.BF16(binary.LittleEndian.Uint16(b[2*i:]))
		}
		buf = v
	case tensor.Float16:
		v := make([]tensor.F16, n)
		for i := range v {
			v[i] = tensor.F16(binary.LittleEndian.Uint16(b[2*i:]))
		}
		buf = v
	default:
		return nil, fmt.Sprintf("unsupported dtype %v", dt)
	}
	return core.FromBuffer(buf, shape), ""
}

// shapeBytes multiplies dims and the element size, reporting overflow (as the
// reference safetensors implementation does, even when a later extent is 0).
func shapeBytes(dims []uint64, elem int) (tensor.Shape, int, bool) {
	shape := make(tensor.Shape, len(dims))
	n := uint64(1)
	for i, d := range dims {
		if d > math.MaxInt64 {
			return nil, 0, false
		}
		if d != 0 && n > math.MaxInt64/d {
			return nil, 0, false
		}
		n *= d
		shape[i] = int(d)
	}
	if n > math.MaxInt64/uint64(elem) {
		return nil, 0, false
	}
	return shape, int(n) * elem, true
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// fmtDims formats a shape read from a file for an error message, as
// [2 3], or [1 1 1 1 1 1 1 1 ... (100000 dims)] when it is long, so that a
// corrupt file cannot turn its error into megabytes. signed shows extents
// as int64, as MindSpore's dims are declared.
func fmtDims(dims []uint64, signed bool) string {
	const show = 8
	var b strings.Builder
	b.WriteByte('[')
	for i, d := range dims[:min(len(dims), show)] {
		if i > 0 {
			b.WriteByte(' ')
		}
		if signed {
			fmt.Fprint(&b, int64(d))
		} else {
			fmt.Fprint(&b, d)
		}
	}
	if len(dims) > show {
		fmt.Fprintf(&b, " ... (%d dims)", len(dims))
	}
	b.WriteByte(']')
	return b.String()
}

// jsonSnippet formats a JSON value from a header for an error message: on
// one line, and cut short when long.
func jsonSnippet(v []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		b.Reset()
		b.Write(v)
	}
	s := b.String()
	if len(s) > 64 {
		s = strings.ToValidUTF8(s[:64], "") + "..."
	}
	// Compact JSON holds no control characters, but a value that failed
	// to compact may.
	return strings.Map(func(r rune) rune {
		if r < 0x20 {
			return ' '
		}
		return r
	}, s)
}
