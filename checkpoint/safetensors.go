package checkpoint

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/sporeml/spore/tensor"
)

// maxHeaderSize bounds the JSON header, as the reference implementation
// does (100 MB).
const maxHeaderSize = 100_000_000

// stDType describes one safetensors dtype. rank is its position in the
// reference implementation's Dtype enum, which is in increasing alignment
// order; the writer lays tensors out by descending rank, then by name, as
// the reference does, so that every tensor is naturally aligned.
type stDType struct {
	name string
	size int
	rank int
	dt   tensor.DType // Invalid when spore has no such type
}

var stDTypes = []stDType{
	{"BOOL", 1, 0, tensor.Bool},
	{"U8", 1, 1, tensor.Uint8},
	{"I8", 1, 2, tensor.Invalid},
	{"F8_E5M2", 1, 3, tensor.Invalid},
	{"F8_E4M3", 1, 4, tensor.Invalid},
	{"I16", 2, 5, tensor.Invalid},
	{"U16", 2, 6, tensor.Invalid},
	{"F16", 2, 7, tensor.Float16},
	{"BF16", 2, 8, tensor.BFloat16},
	{"I32", 4, 9, tensor.Int32},
	{"U32", 4, 10, tensor.Invalid},
	{"F32", 4, 11, tensor.Float32},
	{"F64", 8, 12, tensor.Float64},
	{"I64", 8, 13, tensor.Int64},
	{"U64", 8, 14, tensor.Invalid},
}

func stByName(s string) (stDType, bool) {
	for _, d := range stDTypes {
		if d.name == s {
			return d, true
		}
	}
	return stDType{}, false
}

func stByDType(dt tensor.DType) stDType {
	for _, d := range stDTypes {
		if d.dt == dt && dt != tensor.Invalid {
			return d
		}
	}
	return stDType{}
}

// SaveSafetensors writes params to path in the safetensors format, with
// metadata (which may be nil) as the header's "__metadata__" map. The file
// is byte-for-byte what the reference implementation writes for the same
// tensors: tensors ordered by descending dtype alignment then by name, a
// compact JSON header padded with spaces to a multiple of 8 bytes, and
// little-endian data. The write is atomic: path keeps its old contents
// unless the whole new file was written and synced.
func SaveSafetensors(path string, params []Param, metadata map[string]string) error {
	if err := checkSave("safetensors", params, reservedST); err != nil {
		return err
	}
	if err := checkMetadata(metadata); err != nil {
		return err
	}
	return writeAtomic(path, func(w io.Writer) error { return writeSafetensors(w, params, metadata) })
}

// MarshalSafetensors returns the safetensors encoding of params, as
// SaveSafetensors would write it.
func MarshalSafetensors(params []Param, metadata map[string]string) ([]byte, error) {
	if err := checkSave("safetensors", params, reservedST); err != nil {
		return nil, err
	}
	if err := checkMetadata(metadata); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := writeSafetensors(&b, params, metadata); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// reservedST holds the header key that cannot name a tensor.
var reservedST = map[string]bool{"__metadata__": true}

func checkMetadata(m map[string]string) error {
	for k, v := range m {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return fmt.Errorf("checkpoint: metadata entry %q is not valid UTF-8", k)
		}
	}
	return nil
}

func writeSafetensors(w io.Writer, params []Param, metadata map[string]string) error {
	order := make([]Param, len(params))
	copy(order, params)
	sort.SliceStable(order, func(i, j int) bool {
		ri, rj := stByDType(order[i].Tensor.DType()).rank, stByDType(order[j].Tensor.DType()).rank
		if ri != rj {
			return ri > rj
		}
		return order[i].Name < order[j].Name
	})

	var h bytes.Buffer
	h.WriteByte('{')
	first := true
	if len(metadata) > 0 {
		h.WriteString(`"__metadata__":{`)
		for i, k := range sortedKeys(metadata) {
			if i > 0 {
				h.WriteByte(',')
			}
			writeJSONString(&h, k)
			h.WriteByte(':')
			writeJSONString(&h, metadata[k])
		}
		h.WriteByte('}')
		first = false
	}
	off := 0
	for _, p := range order {
		if !first {
			h.WriteByte(',')
		}
		first = false
		d := stByDType(p.Tensor.DType())
		n := p.Tensor.Size() * d.size
		writeJSONString(&h, p.Name)
		h.WriteString(`:{"dtype":"`)
		h.WriteString(d.name)
		h.WriteString(`","shape":[`)
		for i, x := range p.Tensor.Shape() {
			if i > 0 {
				h.WriteByte(',')
			}
			h.WriteString(strconv.Itoa(x))
		}
		fmt.Fprintf(&h, `],"data_offsets":[%d,%d]}`, off, off+n)
		off += n
	}
	h.WriteByte('}')
	for h.Len()%8 != 0 {
		h.WriteByte(' ')
	}

	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(h.Len()))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	if _, err := w.Write(h.Bytes()); err != nil {
		return err
	}
	for _, p := range order {
		if _, err := w.Write(encodeLE(p.Tensor)); err != nil {
			return err
		}
	}
	return nil
}

// writeJSONString quotes s as serde_json does: only '"', '\\' and control
// characters are escaped, so names come out byte-identical to the
// reference writer's.
func writeJSONString(b *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 {
				b.WriteString(`\u00`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&15])
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
}

// LoadSafetensors reads a safetensors file. The tensors come back in file
// order (by data offset) together with the header's metadata (nil when the
// file has none). The whole file is validated before any tensor is built: a
// truncated, corrupted or unsupported file yields a *FormatError naming the
// file and, where there is one, the tensor.
func LoadSafetensors(path string) ([]Param, map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("checkpoint: %w", err)
	}
	ps, md, err := UnmarshalSafetensors(data)
	if err != nil {
		return nil, nil, withFile(err, path)
	}
	return ps, md, nil
}

type stEntry struct {
	name       string
	dtype      stDType
	dims       []uint64
	start, end uint64
}

// UnmarshalSafetensors decodes a safetensors file held in memory, with the
// same validation as LoadSafetensors.
func UnmarshalSafetensors(data []byte) ([]Param, map[string]string, error) {
	bad := func(name, format string, args ...any) error {
		return &FormatError{Format: "safetensors", Tensor: name, Msg: fmt.Sprintf(format, args...)}
	}
	if len(data) < 8 {
		return nil, nil, bad("", "file is %d bytes, too short for the 8-byte header length (truncated?)", len(data))
	}
	n := binary.LittleEndian.Uint64(data)
	if n > maxHeaderSize {
		return nil, nil, bad("", "header length %d exceeds the %d-byte limit (corrupted?)", n, maxHeaderSize)
	}
	if n+8 > uint64(len(data)) {
		return nil, nil, bad("", "header length %d runs past the end of the %d-byte file (truncated?)", n, len(data))
	}
	hdr := data[8 : 8+n]
	body := data[8+n:]
	if !utf8.Valid(hdr) {
		return nil, nil, bad("", "header is not valid UTF-8")
	}
	entries, md, err := parseHeader(hdr)
	if err != nil {
		return nil, nil, err
	}

	byOff := make([]*stEntry, len(entries))
	for i := range entries {
		byOff[i] = &entries[i]
	}
	sort.SliceStable(byOff, func(i, j int) bool {
		a, b := byOff[i], byOff[j]
		if a.start != b.start {
			return a.start < b.start
		}
		return a.end < b.end
	})
	var pos uint64
	for _, e := range byOff {
		if e.end < e.start {
			return nil, nil, bad(e.name, "data_offsets [%d, %d] end before they start", e.start, e.end)
		}
		if e.start < pos {
			return nil, nil, bad(e.name, "data_offsets [%d, %d] overlap the previous tensor, which ends at %d", e.start, e.end, pos)
		}
		if e.start > pos {
			return nil, nil, bad(e.name, "data_offsets [%d, %d] leave a gap after byte %d; tensors must cover the data region contiguously", e.start, e.end, pos)
		}
		if e.end > uint64(len(body)) {
			return nil, nil, bad(e.name, "data_offsets [%d, %d] run past the %d-byte data region (truncated?)", e.start, e.end, len(body))
		}
		_, nb, ok := shapeBytes(e.dims, e.dtype.size)
		if !ok {
			return nil, nil, bad(e.name, "shape %s overflows", fmtDims(e.dims, false))
		}
		if uint64(nb) != e.end-e.start {
			return nil, nil, bad(e.name, "shape %s of %s needs %d bytes but data_offsets [%d, %d] hold %d", fmtDims(e.dims, false), e.dtype.name, nb, e.start, e.end, e.end-e.start)
		}
		pos = e.end
	}
	if pos != uint64(len(body)) {
		return nil, nil, bad("", "tensors cover %d bytes but the data region has %d (trailing garbage?)", pos, len(body))
	}
	for _, e := range byOff {
		if e.dtype.dt == tensor.Invalid {
			return nil, nil, bad(e.name, "dtype %s is not supported by spore (supported: F32, F64, I32, I64, BOOL, U8)", e.dtype.name)
		}
	}

	out := make([]Param, len(byOff))
	for i, e := range byOff {
		shape, _, _ := shapeBytes(e.dims, e.dtype.size)
		t, msg := decodeLE(e.dtype.dt, shape, body[e.start:e.end])
		if msg != "" {
			return nil, nil, bad(e.name, "%s", msg)
		}
		out[i] = Param{Name: e.name, Tensor: t}
	}
	return out, md, nil
}

// parseHeader parses the JSON header, keeping the order of its keys and
// rejecting duplicate names, which a map-based decoder would silently merge.
func parseHeader(hdr []byte) ([]stEntry, map[string]string, error) {
	bad := func(name, format string, args ...any) error {
		return &FormatError{Format: "safetensors", Tensor: name, Msg: fmt.Sprintf(format, args...)}
	}
	var entries []stEntry
	var md map[string]string
	seen := map[string]bool{}
	err := walkObject(hdr, func(key string, val json.RawMessage) error {
		if seen[key] {
			return bad(key, "name appears twice in the header")
		}
		seen[key] = true
		if key == "__metadata__" {
			if string(val) == "null" {
				return nil
			}
			md = map[string]string{}
			return walkObject(val, func(k string, v json.RawMessage) error {
				if _, dup := md[k]; dup {
					return bad("", "metadata key %q appears twice", k)
				}
				var s string
				if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
					return bad("", "metadata value for %q is not a string", k)
				}
				md[k] = s
				return nil
			}, "__metadata__")
		}
		e := stEntry{name: key}
		var haveDT, haveShape, haveOff bool
		err := walkObject(val, func(k string, v json.RawMessage) error {
			switch k {
			case "dtype":
				var s string
				if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
					return bad(key, "dtype is not a string")
				}
				d, ok := stByName(s)
				if !ok {
					return bad(key, "unknown dtype %q", s)
				}
				e.dtype, haveDT = d, true
			case "shape":
				if len(v) == 0 || v[0] != '[' || json.Unmarshal(v, &e.dims) != nil {
					return bad(key, "shape %s is not a list of non-negative integers", jsonSnippet(v))
				}
				haveShape = true
			case "data_offsets":
				var off []uint64
				if len(v) == 0 || v[0] != '[' || json.Unmarshal(v, &off) != nil || len(off) != 2 {
					return bad(key, "data_offsets %s is not a pair of non-negative integers", jsonSnippet(v))
				}
				e.start, e.end, haveOff = off[0], off[1], true
			}
			// Other keys are ignored, as the reference implementation does.
			return nil
		}, key)
		if err != nil {
			return err
		}
		switch {
		case !haveDT:
			return bad(key, "missing dtype")
		case !haveShape:
			return bad(key, "missing shape")
		case !haveOff:
			return bad(key, "missing data_offsets")
		}
		if e.dims == nil {
			e.dims = []uint64{}
		}
		entries = append(entries, e)
		return nil
	}, "")
	return entries, md, err
}

// walkObject calls fn for each member of the JSON object in src, in order.
// Only whitespace may follow the object (the header's padding).
func walkObject(src []byte, fn func(key string, val json.RawMessage) error, what string) error {
	bad := func(format string, args ...any) error {
		return &FormatError{Format: "safetensors", Tensor: what, Msg: fmt.Sprintf(format, args...)}
	}
	dec := json.NewDecoder(bytes.NewReader(src))
	tok, err := dec.Token()
	if err != nil {
		return bad("header is not valid JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		if s, ok := tok.(string); ok {
			return bad("expected a JSON object, found the string %s", jsonSnippet(strconv.AppendQuote(nil, s)))
		}
		return bad("expected a JSON object, found %v", tok)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return bad("header is not valid JSON: %v", err)
		}
		key, ok := tok.(string)
		if !ok {
			return bad("header is not valid JSON: object key %v", tok)
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return bad("header is not valid JSON at %q: %v", key, err)
		}
		if err := fn(key, val); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return bad("header is not valid JSON: %v", err)
	}
	rest := src[dec.InputOffset():]
	if len(bytes.TrimLeft(rest, " \t\r\n")) != 0 {
		return bad("unexpected bytes after the JSON object")
	}
	return nil
}
