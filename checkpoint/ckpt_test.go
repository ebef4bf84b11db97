package checkpoint

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sporeml/spore/tensor"
)

// Small protobuf builders for hand-made test files.
func pbVarint(v uint64) []byte { return appendVarintTest(nil, v) }

func appendVarintTest(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func pbKey(field, wire int) []byte { return pbVarint(uint64(field)<<3 | uint64(wire)) }

func pbLen(field int, body ...[]byte) []byte {
	b := concat(body...)
	return concat(pbKey(field, 2), pbVarint(uint64(len(b))), b)
}

func pbTensor(typ string, content []byte, dims ...uint64) []byte {
	var b []byte
	for _, d := range dims {
		b = concat(b, pbKey(1, 0), pbVarint(d))
	}
	return concat(b, pbLen(2, []byte(typ)), pbLen(3, content))
}

func pbValue(tag string, tensorMsg []byte) []byte {
	return pbLen(1, pbLen(1, []byte(tag)), pbLen(2, tensorMsg))
}

func withCRC(body []byte) []byte {
	tr := make([]byte, 17)
	copy(tr, "crc_num")
	binary.BigEndian.PutUint32(tr[13:], crc32.ChecksumIEEE(body))
	return concat(body, tr)
}

func TestCkptGolden(t *testing.T) {
	body := concat(
		// value { tag: "w" tensor { dims: 2 tensor_type: "Float32" tensor_content: 1.0f, 2.0f } }
		[]byte{0x0a, 0x1a, 0x0a, 0x01, 'w', 0x12, 0x15, 0x08, 0x02, 0x12, 0x07},
		[]byte("Float32"),
		[]byte{0x1a, 0x08, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x40},
		// value { tag: "s" tensor { tensor_type: "Int64" tensor_content: 7 } } — a scalar has no dims
		[]byte{0x0a, 0x16, 0x0a, 0x01, 's', 0x12, 0x11, 0x12, 0x05},
		[]byte("Int64"),
		[]byte{0x1a, 0x08, 7, 0, 0, 0, 0, 0, 0, 0},
		// value { tag: "k" tensor { dims: 0 tensor_type: "str" tensor_content: UTF-32LE "ab" } }
		[]byte{0x0a, 0x16, 0x0a, 0x01, 'k', 0x12, 0x11, 0x08, 0x00, 0x12, 0x03},
		[]byte("str"),
		[]byte{0x1a, 0x08, 'a', 0, 0, 0, 'b', 0, 0, 0},
	)
	params := []Param{
		{Name: "w", Tensor: tensor.FromSlice([]float32{1, 2})},
		{Name: "s", Tensor: tensor.Scalar(int64(7))},
	}
	meta := map[string]string{"k": "ab"}
	for _, crc := range []bool{false, true} {
		want := body
		if crc {
			want = concat(body, []byte("crc_num\x00\x00\x00\x00\x00\x00"), binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(body)))
		}
		got, err := MarshalCkpt(params, meta, &CkptOptions{NoCRC: !crc})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("crc=%v: bytes differ\n got % x\nwant % x", crc, got, want)
		}
		ps, md, err := UnmarshalCkpt(want)
		if err != nil {
			t.Fatal(err)
		}
		checkSameParams(t, ps, params)
		if len(md) != 1 || md["k"] != "ab" {
			t.Errorf("metadata %v, want %v", md, meta)
		}
	}
}

func TestCkptRoundTrip(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name   string
		params []Param
		meta   map[string]string
		opts   *CkptOptions
		slice  int
	}{
		{"no tensors", nil, nil, nil, 0},
		{"all dtypes and shapes", sampleParams(), map[string]string{"epoch": "3", "empty": "", "uni": "名前 ü 😀"}, nil, 0},
		{"no crc", sampleParams(), nil, &CkptOptions{NoCRC: true}, 0},
		{"sliced", sampleParams(), nil, nil, 8},
		{"sliced odd", sampleParams(), nil, &CkptOptions{NoCRC: true}, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.slice > 0 {
				old := ckptSliceBytes
				ckptSliceBytes = tc.slice
				defer func() { ckptSliceBytes = old }()
			}
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".ckpt")
			if err := SaveCkpt(path, tc.params, tc.meta, tc.opts); err != nil {
				t.Fatal(err)
			}
			got, meta, err := LoadCkpt(path)
			if err != nil {
				t.Fatal(err)
			}
			checkSameParams(t, got, tc.params)
			if len(meta) != len(tc.meta) {
				t.Errorf("metadata %v, want %v", meta, tc.meta)
			}
			for k, v := range tc.meta {
				if got, ok := meta[k]; !ok || got != v {
					t.Errorf("metadata[%q] = %q, want %q", k, got, v)
				}
			}
		})
	}
}

func TestCkptSlicesWritten(t *testing.T) {
	old := ckptSliceBytes
	ckptSliceBytes = 8
	defer func() { ckptSliceBytes = old }()
	b, err := MarshalCkpt([]Param{{Name: "x", Tensor: sampleTensor(tensor.Float32, 5)}}, nil, &CkptOptions{NoCRC: true})
	if err != nil {
		t.Fatal(err)
	}
	// 20 bytes in slices of 8, 8, 4: three values tagged "x", each with dims [5].
	want := concat(
		pbValue("x", pbTensor("Float32", encodeLE(sampleTensor(tensor.Float32, 5))[:8], 5)),
		pbValue("x", pbTensor("Float32", encodeLE(sampleTensor(tensor.Float32, 5))[8:16], 5)),
		pbValue("x", pbTensor("Float32", encodeLE(sampleTensor(tensor.Float32, 5))[16:], 5)),
	)
	if !bytes.Equal(b, want) {
		t.Fatalf("got % x\nwant % x", b, want)
	}
}

func TestCkptDecodeVariants(t *testing.T) {
	f32 := encodeLE(tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}))
	group := concat(pbKey(20, 3), pbKey(1, 0), pbVarint(5), pbKey(21, 3), pbKey(21, 4), pbKey(20, 4))
	tests := []struct {
		name  string
		file  []byte
		want  []Param
		check func(t *testing.T, ps []Param, md map[string]string)
	}{
		{
			name: "packed dims",
			file: pbValue("p", concat(pbLen(1, pbVarint(2), pbVarint(3)), pbLen(2, []byte("Float32")), pbLen(3, f32))),
			want: []Param{{Name: "p", Tensor: tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)}},
		},
		{
			name: "unknown fields everywhere",
			file: concat(
				pbKey(5, 0), pbVarint(300),
				pbKey(9, 1), make([]byte, 8),
				group,
				pbLen(1,
					pbKey(7, 5), make([]byte, 4),
					pbLen(1, []byte("u")),
					pbLen(9, []byte("junk")),
					pbLen(2, concat(pbKey(15, 0), pbVarint(1), pbTensor("Int32", []byte{1, 0, 0, 0}, 1), pbLen(15, []byte("more")), group)),
				),
				pbLen(2, []byte("model_type")),
			),
			want: []Param{{Name: "u", Tensor: tensor.FromSlice([]int32{1})}},
		},
		{
			name: "dims [0] scalar (MindSpore 1.x)",
			file: pbValue("s", pbTensor("Float64", make([]byte, 8), 0)),
			want: []Param{{Name: "s", Tensor: tensor.Scalar(float64(0))}},
		},
		{
			name: "dims [0] empty",
			file: pbValue("e", pbTensor("Int64", nil, 0)),
			want: []Param{{Name: "e", Tensor: tensor.New(tensor.Int64, 0)}},
		},
		{
			name: "joined slices",
			file: concat(pbValue("j", pbTensor("Float32", f32[:8], 3, 2)), pbValue("j", pbTensor("Float32", f32[8:], 3, 2)), pbValue("k", pbTensor("UInt8", []byte{7}, 1))),
			want: []Param{{Name: "j", Tensor: tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 3, 2)}, {Name: "k", Tensor: tensor.FromSlice([]uint8{7})}},
		},
		{
			name: "Uint8 spelling",
			file: pbValue("u", pbTensor("Uint8", []byte{1, 2}, 2)),
			want: []Param{{Name: "u", Tensor: tensor.FromSlice([]uint8{1, 2})}},
		},
		{
			name: "string entry",
			file: concat(pbValue("b", pbTensor("Bool", []byte{1, 0}, 2)), pbValue("note", pbTensor("str", []byte{'h', 0, 0, 0, 'i', 0, 0, 0, 0, 0, 0, 0}, 0))),
			want: []Param{{Name: "b", Tensor: tensor.FromSlice([]bool{true, false})}},
			check: func(t *testing.T, ps []Param, md map[string]string) {
				if md["note"] != "hi" {
					t.Errorf("metadata %q, want note=hi", md)
				}
			},
		},
		{
			name: "crc trailer with no entries",
			file: withCRC(nil),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps, md, err := UnmarshalCkpt(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			checkSameParams(t, ps, tc.want)
			if tc.check != nil {
				tc.check(t, ps, md)
			}
		})
	}
}

func TestCkptCorrupt(t *testing.T) {
	ok := pbValue("a", pbTensor("Float32", make([]byte, 8), 2))
	crcFile := withCRC(ok)
	flipped := append([]byte(nil), crcFile...)
	flipped[len(ok)-1] ^= 1
	badHigh := append([]byte(nil), crcFile...)
	badHigh[len(ok)+7] = 1
	tests := []struct {
		name string
		file []byte
		want []string
	}{
		{"empty", nil, []string{"empty"}},
		{"truncated varint", []byte{0x0a, 0x80}, []string{"truncated varint"}},
		{"length past end", []byte{0x0a, 0x05, 0x0a}, []string{"runs past the end"}},
		{"varint overflow", concat([]byte{0x18}, bytes.Repeat([]byte{0xff}, 9), []byte{0x02}), []string{"overflows 64 bits"}},
		{"field zero", []byte{0x00, 0x01}, []string{"invalid field number 0"}},
		{"wire type 6", []byte{0x16}, []string{"invalid wire type 6"}},
		{"wire type 7", []byte{0x1f}, []string{"invalid wire type 7"}},
		{"stray end group", []byte{0x14}, []string{"unexpected end-group"}},
		{"unclosed group", concat(pbKey(20, 3), pbKey(1, 0), pbVarint(1)), []string{"not closed"}},
		{"mismatched group", concat(pbKey(20, 3), pbKey(21, 4)), []string{"closed by end-group 21"}},
		{"truncated fixed64", concat(pbKey(9, 1), []byte{1, 2, 3}), []string{"truncated fixed-width"}},
		{"value as varint", []byte{0x08, 0x01}, []string{"wire type 0"}},
		{"tag as varint", pbLen(1, pbKey(1, 0), pbVarint(3)), []string{"wire type 0"}},
		{"no tag", pbLen(1, pbLen(2, pbTensor("Float32", nil, 0))), []string{"no tag"}},
		{"no tensor", pbLen(1, pbLen(1, []byte("a"))), []string{`"a"`, "no tensor"}},
		{"no type", pbValue("a", concat(pbKey(1, 0), pbVarint(0), pbLen(3, nil))), []string{`"a"`, "no tensor_type"}},
		{"no content", pbValue("a", concat(pbKey(1, 0), pbVarint(0), pbLen(2, []byte("Float32")))), []string{`"a"`, "no tensor_content"}},
		{"two tags", pbLen(1, pbLen(1, []byte("a")), pbLen(1, []byte("b")), pbLen(2, pbTensor("UInt8", nil, 0))), []string{"two tags"}},
		{"map tensor", pbLen(1, pbLen(1, []byte("m")), pbLen(3, nil)), []string{`"m"`, "MapParameter"}},
		{"int16", pbValue("h", pbTensor("Int16", make([]byte, 4), 2)), []string{`"h"`, "Int16", "not supported"}},
		{"wrong size", pbValue("w", pbTensor("Float32", make([]byte, 12), 2)), []string{`"w"`, "need 8 bytes", "holds 12"}},
		{"wrong size scalar", pbValue("w", pbTensor("Float32", make([]byte, 8))), []string{`"w"`, "need 4 bytes", "holds 8"}},
		{"dims [0] with two elements", pbValue("w", pbTensor("Int32", make([]byte, 8), 0)), []string{`"w"`, "need 0 bytes"}},
		{"negative dim", pbValue("n", pbTensor("Float32", nil, 1<<64-1)), []string{`"n"`, "negative", "-1"}},
		{"dims overflow", pbValue("o", pbTensor("Float64", nil, 1<<40, 1<<40, 0)), []string{`"o"`, "overflow"}},
		{"duplicate", concat(ok, pbValue("b", pbTensor("UInt8", nil, 0)), ok), []string{`"a"`, "twice"}},
		{"slices disagree", concat(ok, pbValue("a", pbTensor("Float32", make([]byte, 8), 4))), []string{`"a"`, "slices disagree"}},
		{"slices of other types", concat(pbValue("a", pbTensor("X\nY", nil, 2)), pbValue("a", pbTensor("Float32", nil, 2))), []string{`"a"`, `slices disagree: "X\nY" [2] then "Float32" [2]`}},
		{"bool byte", pbValue("b", pbTensor("Bool", []byte{0, 3}, 2)), []string{`"b"`, "byte value 3"}},
		{"bad string", pbValue("s", pbTensor("str", []byte{1, 2, 3}, 0)), []string{`"s"`, "UTF-32"}},
		{"bad code point", pbValue("s", pbTensor("str", []byte{0, 0xd8, 0, 0}, 0)), []string{`"s"`, "UTF-32"}},
		{"crc mismatch", flipped, []string{"CRC mismatch"}},
		{"crc high bytes", badHigh, []string{"does not hold a CRC-32"}},
		{"not a checkpoint", []byte("hello, world"), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps, _, err := UnmarshalCkpt(tc.file)
			if err == nil {
				t.Fatalf("loaded %v, want an error", Names(ps))
			}
			wantFormatError(t, err, tc.want...)
		})
	}
}

func TestCkptTruncated(t *testing.T) {
	params := sampleParams()[:14]
	meta := map[string]string{"epoch": "7"}
	for _, opts := range []*CkptOptions{nil, {NoCRC: true}} {
		file, err := MarshalCkpt(params, meta, opts)
		if err != nil {
			t.Fatal(err)
		}
		// Entry boundaries: a file cut exactly there is itself a
		// well-formed checkpoint with fewer entries (see the package
		// documentation); everywhere else a cut must be rejected.
		boundary := map[int]int{} // offset -> entries before it
		off := 0
		for i, p := range params {
			off += len(ckptValue(p.Name, p.Tensor.Shape(), ckptTypes[p.Tensor.DType()], encodeLE(p.Tensor)))
			boundary[off] = i + 1
		}
		off += len(ckptValue("epoch", []int{0}, ckptStrType, encodeUTF32("7")))
		boundary[off] = len(params)
		for n := 0; n < len(file); n++ {
			ps, _, err := UnmarshalCkpt(file[:n])
			if k, ok := boundary[n]; ok {
				if err != nil {
					t.Fatalf("crc=%v: cut at entry boundary %d: %v", opts == nil, n, err)
				}
				checkSameParams(t, ps, params[:k])
				continue
			}
			if err == nil {
				t.Fatalf("crc=%v: prefix of %d/%d bytes loaded %v, want an error", opts == nil, n, len(file), Names(ps))
			}
			if _, ok := err.(*FormatError); !ok {
				t.Fatalf("prefix %d: error %T %v, want *FormatError", n, err, err)
			}
		}
		if _, _, err := UnmarshalCkpt(file); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCkptSaveRejects(t *testing.T) {
	x := sampleTensor(tensor.Float32, 2)
	path := filepath.Join(t.TempDir(), "x.ckpt")
	for _, tc := range []struct {
		name   string
		params []Param
		meta   map[string]string
		want   string
	}{
		{"metadata clash", []Param{{Name: "a", Tensor: x}}, map[string]string{"a": "1"}, "already taken"},
		{"empty metadata key", nil, map[string]string{"": "1"}, "empty key"},
		{"duplicate", []Param{{Name: "a", Tensor: x}, {Name: "a", Tensor: x}}, nil, "twice"},
	} {
		if err := SaveCkpt(path, tc.params, tc.meta, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
}
