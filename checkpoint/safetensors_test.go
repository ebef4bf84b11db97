package checkpoint

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/sporeml/spore/tensor"
)

// stOrder sorts ps as the safetensors writer lays them out.
func stOrder(ps []Param) []Param {
	out := append([]Param(nil), ps...)
	sort.SliceStable(out, func(i, j int) bool {
		ri, rj := stByDType(out[i].Tensor.DType()).rank, stByDType(out[j].Tensor.DType()).rank
		if ri != rj {
			return ri > rj
		}
		return out[i].Name < out[j].Name
	})
	return out
}

func TestSafetensorsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name   string
		params []Param
		meta   map[string]string
	}{
		{"empty", nil, nil},
		{"metadata only", nil, map[string]string{"format": "pt"}},
		{"all dtypes and shapes", sampleParams(), map[string]string{"epoch": "3", "b": "x\"y\\z\n"}},
		{"odd names", []Param{
			{Name: "a\"b", Tensor: sampleTensor(tensor.Float32, 2)},
			{Name: "ünï\tcode/名前", Tensor: sampleTensor(tensor.Uint8, 3)},
			{Name: "ctl\x01", Tensor: sampleTensor(tensor.Bool, 1)},
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".safetensors")
			if err := SaveSafetensors(path, tc.params, tc.meta); err != nil {
				t.Fatal(err)
			}
			got, meta, err := LoadSafetensors(path)
			if err != nil {
				t.Fatal(err)
			}
			checkSameParams(t, got, stOrder(tc.params))
			if len(meta) != len(tc.meta) {
				t.Errorf("metadata %v, want %v", meta, tc.meta)
			}
			for k, v := range tc.meta {
				if meta[k] != v {
					t.Errorf("metadata[%q] = %q, want %q", k, meta[k], v)
				}
			}
		})
	}
}

func TestSafetensorsGolden(t *testing.T) {
	f32 := func(vs ...float32) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
		return b
	}
	tests := []struct {
		name   string
		params []Param
		meta   map[string]string
		want   []byte
	}{
		{
			// The reference implementation's own empty-file output.
			name: "empty",
			want: []byte{8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' '},
		},
		{
			// One F32 [1,2,3] tensor "attn.0": a 64-byte header needs no padding.
			name:   "attn",
			params: []Param{{Name: "attn.0", Tensor: tensor.FromSlice([]float32{0, 1, 2, 3, 4, 5}, 1, 2, 3)}},
			want: concat(
				[]byte{64, 0, 0, 0, 0, 0, 0, 0},
				[]byte(`{"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}}`),
				f32(0, 1, 2, 3, 4, 5),
			),
		},
		{
			// Mixed dtypes given in the "wrong" order: the writer puts I64
			// first, then F32, U8, BOOL (descending alignment), writes the
			// metadata first, and pads the 249-byte header to 256.
			name: "mixed",
			params: []Param{
				{Name: "f", Tensor: tensor.FromSlice([]bool{true, false})},
				{Name: "bb", Tensor: tensor.FromSlice([]uint8{1, 2, 3})},
				{Name: "a", Tensor: tensor.FromSlice([]float32{1, -2})},
				{Name: "s", Tensor: tensor.Scalar(int64(7))},
			},
			meta: map[string]string{"format": "pt"},
			want: concat(
				[]byte{0, 1, 0, 0, 0, 0, 0, 0},
				[]byte(`{"__metadata__":{"format":"pt"},`+
					`"s":{"dtype":"I64","shape":[],"data_offsets":[0,8]},`+
					`"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]},`+
					`"bb":{"dtype":"U8","shape":[3],"data_offsets":[16,19]},`+
					`"f":{"dtype":"BOOL","shape":[2],"data_offsets":[19,21]}}`),
				[]byte("       "),
				[]byte{7, 0, 0, 0, 0, 0, 0, 0},
				[]byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0},
				[]byte{1, 2, 3},
				[]byte{1, 0},
			),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := MarshalSafetensors(tc.params, tc.meta)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("bytes differ\n got %q\nwant %q", got, tc.want)
			}
			ps, meta, err := UnmarshalSafetensors(tc.want)
			if err != nil {
				t.Fatal(err)
			}
			checkSameParams(t, ps, stOrder(tc.params))
			if meta["format"] != tc.meta["format"] {
				t.Errorf("metadata %v, want %v", meta, tc.meta)
			}
		})
	}
}

func concat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// stFile assembles a safetensors file from a header and data, padding the
// header as the writer does.
func stFile(header string, data []byte) []byte {
	for len(header)%8 != 0 {
		header += " "
	}
	return concat(le64(uint64(len(header))), []byte(header), data)
}

func TestSafetensorsTruncated(t *testing.T) {
	file, err := MarshalSafetensors(sampleParams()[:20], map[string]string{"k": "v"})
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < len(file); n++ {
		if ps, _, err := UnmarshalSafetensors(file[:n]); err == nil {
			t.Fatalf("prefix of %d/%d bytes loaded %d tensors, want an error", n, len(file), len(ps))
		} else if _, ok := err.(*FormatError); !ok {
			t.Fatalf("prefix %d: error %T %v, want *FormatError", n, err, err)
		}
	}
	if _, _, err := UnmarshalSafetensors(file); err != nil {
		t.Fatal(err)
	}
}

func TestSafetensorsCorrupt(t *testing.T) {
	four := []byte{1, 2, 3, 4}
	tests := []struct {
		name string
		file []byte
		want []string
	}{
		{"short", []byte{1, 2, 3}, []string{"too short"}},
		{"huge header length", concat(le64(1<<63), []byte("{}")), []string{"exceeds"}},
		{"header over limit", concat(le64(maxHeaderSize+1), make([]byte, 16)), []string{"exceeds"}},
		{"header past end", concat(le64(100), []byte("{}      ")), []string{"runs past the end", "truncated"}},
		{"bad json", stFile(`{"a":{"dtype":"U8",`, nil), []string{"not valid JSON"}},
		{"not an object", stFile(`[1,2]`, nil), []string{"expected a JSON object"}},
		{"junk after json", stFile(`{}x`, nil), []string{"after the JSON object"}},
		{"invalid utf8", stFile("{\"\xff\":1}", nil), []string{"UTF-8"}},
		{"entry a multi-line string", stFile(`{"a":"x\ny"}`, nil), []string{`"a"`, `expected a JSON object, found the string "x\ny"`}},
		{"entry not an object", stFile(`{"a":5}`, nil), []string{"expected a JSON object"}},
		{"duplicate name", stFile(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"a":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}}`, four), []string{`"a"`, "twice"}},
		{"unknown dtype", stFile(`{"a":{"dtype":"Q9","shape":[4],"data_offsets":[0,4]}}`, four), []string{`"a"`, `unknown dtype "Q9"`}},
		{"unsupported dtype", stFile(`{"a":{"dtype":"I16","shape":[2],"data_offsets":[0,4]}}`, four), []string{`"a"`, "I16", "not supported"}},
		{"missing dtype", stFile(`{"a":{"shape":[4],"data_offsets":[0,4]}}`, four), []string{"missing dtype"}},
		{"missing shape", stFile(`{"a":{"dtype":"U8","data_offsets":[0,4]}}`, four), []string{"missing shape"}},
		{"missing offsets", stFile(`{"a":{"dtype":"U8","shape":[4]}}`, four), []string{"missing data_offsets"}},
		{"negative shape", stFile(`{"a":{"dtype":"U8","shape":[-4],"data_offsets":[0,4]}}`, four), []string{"non-negative"}},
		{"multi-line shape", stFile("{\"a\":{\"dtype\":\"U8\",\"shape\":[\n1,\n-1],\"data_offsets\":[0,4]}}", four), []string{`"a"`, "shape [1,-1] is not a list"}},
		{"long bad shape", stFile(`{"a":{"dtype":"U8","shape":[`+strings.Repeat("1,", 100)+`-1],"data_offsets":[0,4]}}`, four), []string{"shape [1,1,1,", ",1... is not a list"}},
		{"fractional shape", stFile(`{"a":{"dtype":"U8","shape":[4.5],"data_offsets":[0,4]}}`, four), []string{"non-negative"}},
		{"null shape", stFile(`{"a":{"dtype":"U8","shape":null,"data_offsets":[0,4]}}`, four), []string{"shape"}},
		{"three offsets", stFile(`{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,2,4]}}`, four), []string{"pair"}},
		{"dtype not string", stFile(`{"a":{"dtype":7,"shape":[4],"data_offsets":[0,4]}}`, four), []string{"dtype is not a string"}},
		{"wrong size", stFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, four), []string{`"a"`, "needs 8 bytes", "hold 4"}},
		{"overlap", stFile(`{"a":{"dtype":"U8","shape":[3],"data_offsets":[0,3]},"b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}}`, four), []string{`"b"`, "overlap"}},
		{"gap", stFile(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}}`, four), []string{`"b"`, "gap"}},
		{"reversed offsets", stFile(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[4,0]}}`, four), []string{`"a"`, "end before"}},
		{"past data", stFile(`{"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]}}`, four), []string{"run past"}},
		{"trailing data", stFile(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`, four), []string{"cover 2 bytes", "has 4"}},
		{"shape overflow", stFile(`{"a":{"dtype":"F64","shape":[4294967296,4294967296,0],"data_offsets":[0,0]}}`, nil), []string{"overflows"}},
		{"bool byte", stFile(`{"a":{"dtype":"BOOL","shape":[4],"data_offsets":[0,4]}}`, []byte{0, 1, 2, 0}), []string{`"a"`, "byte value 2"}},
		{"metadata not string", stFile(`{"__metadata__":{"k":1}}`, nil), []string{"metadata", "not a string"}},
		{"metadata duplicate key", stFile(`{"__metadata__":{"k":"1","k":"2"}}`, nil), []string{"metadata key", "twice"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps, _, err := UnmarshalSafetensors(tc.file)
			if err == nil {
				t.Fatalf("loaded %v, want an error", Names(ps))
			}
			wantFormatError(t, err, tc.want...)
		})
	}
}

func TestSafetensorsAccepts(t *testing.T) {
	// Files other writers may produce: unknown keys in an entry, a null
	// __metadata__, names in any header order, zero-size tensors anywhere.
	tests := []struct {
		name  string
		file  []byte
		names []string
	}{
		{"extra keys", stFile(`{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4],"extra":[1]}}`, []byte{1, 2, 3, 4}), []string{"a"}},
		{"null metadata", stFile(`{"__metadata__":null}`, nil), nil},
		{"header order differs from offsets", stFile(`{"b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]},"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`, []byte{1, 2, 3, 4}), []string{"a", "b"}},
		{"zero-size", stFile(`{"z":{"dtype":"F32","shape":[0,3],"data_offsets":[4,4]},"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}`, []byte{1, 2, 3, 4}), []string{"a", "z"}},
		{"whitespace", stFile(" {\n\"a\" : {\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]}}\n", []byte{9}), []string{"a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps, _, err := UnmarshalSafetensors(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			if got := Names(ps); strings.Join(got, ",") != strings.Join(tc.names, ",") {
				t.Fatalf("names %v, want %v", got, tc.names)
			}
		})
	}
}

func TestSafetensorsFileErrorNamesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.safetensors")
	if err := writeAtomic(path, func(w io.Writer) error { return nil }); err != nil {
		t.Fatal(err)
	}
	_, _, err := LoadSafetensors(path)
	wantFormatError(t, err, path, "too short")
}

func TestSaveRejects(t *testing.T) {
	x := sampleTensor(tensor.Float32, 2)
	tests := []struct {
		name   string
		params []Param
		meta   map[string]string
		want   string
	}{
		{"empty name", []Param{{Name: "", Tensor: x}}, nil, "empty name"},
		{"duplicate", []Param{{Name: "a", Tensor: x}, {Name: "a", Tensor: x}}, nil, "twice"},
		{"nil", []Param{{Name: "a"}}, nil, "nil"},
		{"bad utf8", []Param{{Name: "\xff", Tensor: x}}, nil, "UTF-8"},
		{"reserved", []Param{{Name: "__metadata__", Tensor: x}}, nil, "reserved"},
		{"bad metadata", nil, map[string]string{"k": "\xff"}, "UTF-8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.safetensors")
			err := SaveSafetensors(path, tc.params, tc.meta)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
			if _, _, err := LoadSafetensors(path); err == nil {
				t.Fatal("a file was written")
			}
		})
	}
}
