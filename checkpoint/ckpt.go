package checkpoint

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/sporeml/spore/tensor"
)

// MindSpore's checkpoint.proto (mindspore/ccsrc/utils/checkpoint.proto),
// proto2:
//
//	message Checkpoint {
//	    message Value {
//	        required string tag = 1;
//	        oneof value {
//	            TensorProto tensor = 2;
//	            MapTensorProto maptensor = 3;
//	        }
//	    }
//	    repeated Value value = 1;
//	}
//	message TensorProto {
//	    repeated int64 dims = 1;
//	    required string tensor_type = 2;
//	    required bytes tensor_content = 3;
//	}
//
// The encoder and decoder below handle just these messages.
const (
	fieldCheckpointValue = 1
	fieldValueTag        = 1
	fieldValueTensor     = 2
	fieldValueMapTensor  = 3
	fieldTensorDims      = 1
	fieldTensorType      = 2
	fieldTensorContent   = 3

	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireStart   = 3
	wireEnd     = 4
	wireFixed32 = 5
)

// ckptTypes maps spore dtypes to MindSpore's tensor_type strings (the str()
// of a mindspore dtype, as save_checkpoint writes them).
var ckptTypes = map[tensor.DType]string{
	tensor.Float32: "Float32",
	tensor.Float64: "Float64",
	tensor.Int32:   "Int32",
	tensor.Int64:   "Int64",
	tensor.Bool:    "Bool",
	tensor.Uint8:   "UInt8",
	// MindSpore's 16-bit floats: their raw bits, little-endian.
	tensor.Float16:  "Float16",
	tensor.BFloat16: "BFloat16",
}

// ckptTypeOf maps a tensor_type string to a spore dtype. MindSpore 1.x
// wrote "Uint8"; 2.x writes "UInt8".
func ckptTypeOf(s string) (tensor.DType, bool) {
	if s == "Uint8" {
		return tensor.Uint8, true
	}
	for dt, name := range ckptTypes {
		if name == s {
			return dt, true
		}
	}
	return tensor.Invalid, false
}

// internType returns s as a string, without allocating for the type names
// spore knows: a file of many small tensors would otherwise allocate one
// copy per entry.
func internType(s []byte) string {
	if string(s) == ckptStrType {
		return ckptStrType
	}
	if string(s) == "Uint8" {
		return "Uint8"
	}
	for _, name := range ckptTypes {
		if string(s) == name {
			return name
		}
	}
	return string(s)
}

// ckptStrType is the tensor_type MindSpore uses for string entries of
// save_checkpoint's append_dict: the content is the string as a NumPy
// unicode array (UTF-32LE), with dims [0].
const ckptStrType = "str"

// ckptSliceBytes is the largest tensor_content written in one Value; larger
// tensors are split into consecutive Values with the same tag, as MindSpore
// does (its SLICE_SIZE is 512 MiB), so that no single protobuf field
// approaches protobuf's 2 GiB limit. A variable so tests can shrink it.
var ckptSliceBytes = 512 << 20

// crcMarker introduces the CRC trailer MindSpore writes with
// save_checkpoint(..., crc_check=True): "crc_num" then the CRC-32 (IEEE) of
// everything before it as a 10-byte big-endian integer.
const crcMarker = "crc_num"

const crcTrailerLen = len(crcMarker) + 10

// CkptOptions adjusts how SaveCkpt writes a file.
type CkptOptions struct {
	// NoCRC omits the CRC trailer. MindSpore 2.x reads files with or
	// without it; older MindSpore releases (before crc_check existed)
	// need it off. Without the trailer, corrupted tensor data and a file
	// truncated exactly between two entries cannot be detected.
	NoCRC bool
}

// SaveCkpt writes params to path in MindSpore's .ckpt format, in the order
// given, followed by metadata (which may be nil) as string entries, the way
// MindSpore stores the strings of save_checkpoint's append_dict. A CRC
// trailer is appended (MindSpore's crc_check format) unless opts says not
// to. The write is atomic: path keeps its old contents unless the whole new
// file was written and synced.
func SaveCkpt(path string, params []Param, metadata map[string]string, opts *CkptOptions) error {
	if err := checkCkptSave(params, metadata); err != nil {
		return err
	}
	return writeAtomic(path, func(w io.Writer) error { return writeCkpt(w, params, metadata, opts) })
}

// MarshalCkpt returns the .ckpt encoding of params, as SaveCkpt would write
// it.
func MarshalCkpt(params []Param, metadata map[string]string, opts *CkptOptions) ([]byte, error) {
	if err := checkCkptSave(params, metadata); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := writeCkpt(&b, params, metadata, opts); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func checkCkptSave(params []Param, metadata map[string]string) error {
	keys := make(map[string]bool, len(metadata))
	for k := range metadata {
		keys[k] = true
	}
	if err := checkSave("ckpt", params, keys); err != nil {
		return err
	}
	for _, k := range sortedKeys(metadata) {
		if k == "" {
			return fmt.Errorf("checkpoint: ckpt: metadata has an empty key")
		}
		if !utf8.ValidString(k) || !utf8.ValidString(metadata[k]) {
			return fmt.Errorf("checkpoint: ckpt: metadata entry %q is not valid UTF-8", k)
		}
	}
	return nil
}

func appendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func appendKey(b []byte, field, wire int) []byte {
	return appendVarint(b, uint64(field)<<3|uint64(wire))
}

func appendBytesField(b []byte, field int, v []byte) []byte {
	b = appendKey(b, field, wireBytes)
	b = appendVarint(b, uint64(len(v)))
	return append(b, v...)
}

// ckptValue encodes one Checkpoint.value entry, wrapped as field 1 of a
// Checkpoint message: MindSpore writes each entry as its own serialized
// Checkpoint, and concatenated messages parse as one.
func ckptValue(tag string, dims []int, typ string, content []byte) []byte {
	var tp []byte
	for _, d := range dims {
		// proto2 repeated scalars are not packed unless declared so.
		tp = appendKey(tp, fieldTensorDims, wireVarint)
		tp = appendVarint(tp, uint64(d))
	}
	tp = appendBytesField(tp, fieldTensorType, []byte(typ))
	tp = appendBytesField(tp, fieldTensorContent, content)
	var v []byte
	v = appendBytesField(v, fieldValueTag, []byte(tag))
	v = appendBytesField(v, fieldValueTensor, tp)
	return appendBytesField(nil, fieldCheckpointValue, v)
}

func writeCkpt(w io.Writer, params []Param, metadata map[string]string, opts *CkptOptions) error {
	crc := crc32.NewIEEE()
	out := io.MultiWriter(w, crc)
	for _, p := range params {
		t := p.Tensor
		// A scalar has no dims, as MindSpore 2.x writes it. The empty
		// vector has dims [0], which MindSpore reads as a scalar; its
		// empty content tells this reader otherwise.
		dims := []int(t.Shape())
		content := encodeLE(t)
		es := t.DType().Size()
		step := max(ckptSliceBytes/es*es, es)
		for off := 0; ; off += step {
			end := min(off+step, len(content))
			if _, err := out.Write(ckptValue(p.Name, dims, ckptTypes[t.DType()], content[off:end])); err != nil {
				return err
			}
			if end >= len(content) {
				break
			}
		}
	}
	for _, k := range sortedKeys(metadata) {
		if _, err := out.Write(ckptValue(k, []int{0}, ckptStrType, encodeUTF32(metadata[k]))); err != nil {
			return err
		}
	}
	if opts != nil && opts.NoCRC {
		return nil
	}
	var tr [crcTrailerLen]byte
	copy(tr[:], crcMarker)
	binary.BigEndian.PutUint32(tr[crcTrailerLen-4:], crc.Sum32())
	_, err := w.Write(tr[:])
	return err
}

// encodeUTF32 encodes s as NumPy stores a unicode scalar: UTF-32LE. NumPy
// has no zero-width unicode type, so "" is one NUL code point.
func encodeUTF32(s string) []byte {
	var b []byte
	for _, r := range s {
		b = binary.LittleEndian.AppendUint32(b, uint32(r))
	}
	if len(b) == 0 {
		b = make([]byte, 4)
	}
	return b
}

// decodeUTF32 reverses encodeUTF32; trailing NULs are padding, as in NumPy.
func decodeUTF32(b []byte) (string, bool) {
	if len(b)%4 != 0 {
		return "", false
	}
	rs := make([]rune, 0, len(b)/4)
	for i := 0; i < len(b); i += 4 {
		r := rune(binary.LittleEndian.Uint32(b[i:]))
		if !utf8.ValidRune(r) {
			return "", false
		}
		rs = append(rs, r)
	}
	for len(rs) > 0 && rs[len(rs)-1] == 0 {
		rs = rs[:len(rs)-1]
	}
	return string(rs), true
}

// LoadCkpt reads a MindSpore .ckpt file. Tensors come back in file order;
// string entries (MindSpore's append_dict strings) come back as metadata
// (nil when there are none). Consecutive entries with one tag are the
// slices of one large tensor and are joined, as MindSpore does. A CRC
// trailer, when present, is verified. The whole file is validated before
// any tensor is built: a truncated, corrupted or unsupported file yields a
// *FormatError naming the file and, where there is one, the tensor.
func LoadCkpt(path string) ([]Param, map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("checkpoint: %w", err)
	}
	ps, md, err := UnmarshalCkpt(data)
	if err != nil {
		return nil, nil, withFile(err, path)
	}
	return ps, md, nil
}

// pbReader decodes protobuf wire format from a bounded slice.
type pbReader struct {
	b    []byte
	pos  int
	base int // offset of b within the file, for messages
	what string
}

func (r *pbReader) errf(format string, args ...any) error {
	return &FormatError{Format: "ckpt", Tensor: r.what, Msg: fmt.Sprintf(format, args...)}
}

func (r *pbReader) done() bool { return r.pos >= len(r.b) }

func (r *pbReader) varint() (uint64, error) {
	start := r.pos
	var v uint64
	for i := 0; i < 10; i++ {
		if r.pos >= len(r.b) {
			return 0, r.errf("truncated varint at byte %d", r.base+start)
		}
		c := r.b[r.pos]
		r.pos++
		if i == 9 && c > 1 {
			return 0, r.errf("varint at byte %d overflows 64 bits", r.base+start)
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, nil
		}
	}
	return 0, r.errf("varint at byte %d is longer than 10 bytes", r.base+start)
}

func (r *pbReader) key() (field, wire int, err error) {
	at := r.pos
	k, err := r.varint()
	if err != nil {
		return 0, 0, err
	}
	field, wire = int(k>>3), int(k&7)
	if k>>3 == 0 || k>>3 > 1<<29-1 {
		return 0, 0, r.errf("invalid field number %d at byte %d", k>>3, r.base+at)
	}
	return field, wire, nil
}

func (r *pbReader) bytes() ([]byte, int, error) {
	at := r.pos
	n, err := r.varint()
	if err != nil {
		return nil, 0, err
	}
	if n > uint64(len(r.b)-r.pos) {
		return nil, 0, r.errf("length %d at byte %d runs past the end of its message (%d bytes left; truncated?)", n, r.base+at, len(r.b)-r.pos)
	}
	start := r.pos
	r.pos += int(n)
	return r.b[start:r.pos], r.base + start, nil
}

// skip passes over one field of an unknown number, groups included.
func (r *pbReader) skip(field, wire, depth int) error {
	switch wire {
	case wireVarint:
		_, err := r.varint()
		return err
	case wireFixed64, wireFixed32:
		n := 8
		if wire == wireFixed32 {
			n = 4
		}
		if len(r.b)-r.pos < n {
			return r.errf("truncated fixed-width field %d at byte %d", field, r.base+r.pos)
		}
		r.pos += n
		return nil
	case wireBytes:
		_, _, err := r.bytes()
		return err
	case wireStart:
		if depth > 100 {
			return r.errf("groups nested too deeply at byte %d", r.base+r.pos)
		}
		for {
			if r.done() {
				return r.errf("group %d is not closed (truncated?)", field)
			}
			f, w, err := r.key()
			if err != nil {
				return err
			}
			if w == wireEnd {
				if f != field {
					return r.errf("group %d closed by end-group %d at byte %d", field, f, r.base+r.pos)
				}
				return nil
			}
			if err := r.skip(f, w, depth+1); err != nil {
				return err
			}
		}
	case wireEnd:
		return r.errf("unexpected end-group for field %d at byte %d", field, r.base+r.pos)
	}
	return r.errf("invalid wire type %d for field %d at byte %d", wire, field, r.base+r.pos)
}

// ckptRaw is one decoded Checkpoint.Value before slices are joined.
type ckptRaw struct {
	tag     string
	dims    []uint64
	typ     string
	content []byte
}

func decodeValue(b []byte, base int) (ckptRaw, error) {
	var v ckptRaw
	r := &pbReader{b: b, base: base}
	var haveTag, haveTensor bool
	var tensorMsg []byte
	var tensorBase int
	for !r.done() {
		f, w, err := r.key()
		if err != nil {
			return v, err
		}
		switch {
		case f == fieldValueTag && w == wireBytes:
			s, _, err := r.bytes()
			if err != nil {
				return v, err
			}
			if haveTag {
				return v, r.errf("entry has two tags (%q and %q)", v.tag, s)
			}
			if !utf8.Valid(s) {
				return v, r.errf("tag %q is not valid UTF-8", s)
			}
			v.tag, haveTag = string(s), true
			r.what = v.tag
		case f == fieldValueTensor && w == wireBytes:
			if haveTensor {
				return v, r.errf("entry has two tensors")
			}
			tensorMsg, tensorBase, err = r.bytes()
			if err != nil {
				return v, err
			}
			haveTensor = true
		case f == fieldValueMapTensor && w == wireBytes:
			return v, r.errf("entry is a MapParameter (maptensor), which spore does not support")
		case f == fieldValueTag || f == fieldValueTensor || f == fieldValueMapTensor:
			return v, r.errf("field %d has wire type %d, want 2 (corrupted?)", f, w)
		default:
			if err := r.skip(f, w, 0); err != nil {
				return v, err
			}
		}
	}
	if !haveTag {
		return v, r.errf("entry at byte %d has no tag", base)
	}
	if !haveTensor {
		return v, r.errf("entry has no tensor")
	}
	t := &pbReader{b: tensorMsg, base: tensorBase, what: v.tag}
	var haveType, haveContent bool
	for !t.done() {
		f, w, err := t.key()
		if err != nil {
			return v, err
		}
		switch {
		case f == fieldTensorDims && w == wireVarint:
			d, err := t.varint()
			if err != nil {
				return v, err
			}
			v.dims = append(v.dims, d)
		case f == fieldTensorDims && w == wireBytes: // packed
			p, pbase, err := t.bytes()
			if err != nil {
				return v, err
			}
			pr := &pbReader{b: p, base: pbase, what: v.tag}
			for !pr.done() {
				d, err := pr.varint()
				if err != nil {
					return v, err
				}
				v.dims = append(v.dims, d)
			}
		case f == fieldTensorType && w == wireBytes:
			s, _, err := t.bytes()
			if err != nil {
				return v, err
			}
			if haveType {
				return v, t.errf("tensor has two types")
			}
			v.typ, haveType = internType(s), true
		case f == fieldTensorContent && w == wireBytes:
			c, _, err := t.bytes()
			if err != nil {
				return v, err
			}
			if haveContent {
				return v, t.errf("tensor has two contents")
			}
			v.content, haveContent = c, true
		case f == fieldTensorDims || f == fieldTensorType || f == fieldTensorContent:
			return v, t.errf("tensor field %d has wire type %d (corrupted?)", f, w)
		default:
			if err := t.skip(f, w, 0); err != nil {
				return v, err
			}
		}
	}
	if !haveType {
		return v, t.errf("tensor has no tensor_type")
	}
	if !haveContent {
		return v, t.errf("tensor has no tensor_content")
	}
	for _, d := range v.dims {
		if d > math.MaxInt64 {
			return v, t.errf("dims %s contain a negative extent", fmtDims(v.dims, true))
		}
	}
	return v, nil
}

func equalDims(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// UnmarshalCkpt decodes a .ckpt file held in memory, with the same
// validation as LoadCkpt.
func UnmarshalCkpt(data []byte) ([]Param, map[string]string, error) {
	bad := func(name, format string, args ...any) error {
		return &FormatError{Format: "ckpt", Tensor: name, Msg: fmt.Sprintf(format, args...)}
	}
	body := data
	if n := len(data); n >= crcTrailerLen && string(data[n-crcTrailerLen:n-10]) == crcMarker {
		body = data[:n-crcTrailerLen]
		var hi [6]byte
		tr := data[n-10:]
		if !bytes.Equal(tr[:6], hi[:]) {
			return nil, nil, bad("", "CRC trailer %x does not hold a CRC-32 (corrupted?)", tr)
		}
		if want, got := binary.BigEndian.Uint32(tr[6:]), crc32.ChecksumIEEE(body); want != got {
			return nil, nil, bad("", "CRC mismatch: the trailer says %08x, the contents hash to %08x (corrupted or truncated)", want, got)
		}
	} else if len(data) == 0 {
		return nil, nil, bad("", "file is empty")
	}

	// Each entry is decoded and joined to the previous one when it is a
	// further slice of the same tensor; one record per name is all that
	// is kept, so that a file of many small entries costs little more than
	// its tensors.
	type entry struct {
		ckptRaw
		more  [][]byte // the content of further slices
		dt    tensor.DType
		shape tensor.Shape
	}
	var es []entry
	r := &pbReader{b: body}
	for !r.done() {
		f, w, err := r.key()
		if err != nil {
			return nil, nil, err
		}
		if f != fieldCheckpointValue {
			if err := r.skip(f, w, 0); err != nil {
				return nil, nil, err
			}
			continue
		}
		if w != wireBytes {
			return nil, nil, r.errf("Checkpoint.value has wire type %d, want 2 (not a .ckpt file?)", w)
		}
		vb, vbase, err := r.bytes()
		if err != nil {
			return nil, nil, err
		}
		v, err := decodeValue(vb, vbase)
		if err != nil {
			return nil, nil, err
		}
		if k := len(es) - 1; k >= 0 && es[k].tag == v.tag {
			if es[k].typ != v.typ || !equalDims(es[k].dims, v.dims) {
				return nil, nil, bad(v.tag, "slices disagree: %q %s then %q %s", es[k].typ, fmtDims(es[k].dims, true), v.typ, fmtDims(v.dims, true))
			}
			es[k].more = append(es[k].more, v.content)
			continue
		}
		es = append(es, entry{ckptRaw: v})
	}
	// A name may appear once (its slices being consecutive).
	byName := make([]int32, len(es))
	for i := range byName {
		byName[i] = int32(i)
	}
	slices.SortFunc(byName, func(a, b int32) int { return cmp.Or(strings.Compare(es[a].tag, es[b].tag), cmp.Compare(a, b)) })
	for i := 1; i < len(byName); i++ {
		if a, b := es[byName[i-1]], es[byName[i]]; a.tag == b.tag {
			return nil, nil, bad(b.tag, "name appears twice")
		}
	}

	// Validate every entry before building any tensor.
	var md map[string]string
	ntensors := 0
	for i := range es {
		e := &es[i]
		if len(e.more) > 0 {
			e.content = bytes.Join(append([][]byte{e.content}, e.more...), nil)
			e.more = nil
		}
		if e.typ == ckptStrType {
			s, ok := decodeUTF32(e.content)
			if !ok {
				return nil, nil, bad(e.tag, "string entry of %d bytes is not UTF-32", len(e.content))
			}
			if md == nil {
				md = map[string]string{}
			}
			md[e.tag] = s
			continue
		}
		dt, ok := ckptTypeOf(e.typ)
		if !ok {
			return nil, nil, bad(e.tag, "tensor_type %q is not supported by spore (supported: Float32, Float64, Int32, Int64, Bool, UInt8)", e.typ)
		}
		size := dt.Size()
		shape, nb, ok := shapeBytes(e.dims, size)
		if !ok {
			return nil, nil, bad(e.tag, "dims %s overflow", fmtDims(e.dims, true))
		}
		// MindSpore writes and reads dims [0] as a scalar; a [0] entry
		// with no content is the empty vector.
		if len(e.dims) == 1 && e.dims[0] == 0 && len(e.content) == size {
			shape, nb = tensor.Shape{}, size
		}
		if nb != len(e.content) {
			return nil, nil, bad(e.tag, "dims %s of %s need %d bytes but tensor_content holds %d", fmtDims(e.dims, true), e.typ, nb, len(e.content))
		}
		e.dt, e.shape = dt, shape
		ntensors++
	}
	out := make([]Param, 0, ntensors)
	for _, e := range es {
		if e.typ == ckptStrType {
			continue
		}
		t, msg := decodeLE(e.dt, e.shape, e.content)
		if msg != "" {
			return nil, nil, bad(e.tag, "%s", msg)
		}
		out = append(out, Param{Name: e.tag, Tensor: t})
	}
	return out, md, nil
}
