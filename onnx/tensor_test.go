package onnx

import (
	"bytes"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Every element type spore holds decodes from both of ONNX's packings:
// raw_data (little-endian at the type's width) and the typed fields
// (int32_data for the types of 32 bits or fewer, FLOAT16 and BFLOAT16 as
// bit patterns; uint64_data for UINT32 and UINT64). Raw data encodes back
// to the same bytes.
func TestTensorProtoPackings(t *testing.T) {
	cases := []struct {
		name  string
		dt    onnxpb.TensorProto_DataType
		raw   []byte
		i32   []int32
		u64   []uint64
		want  any
		dtype tensor.DType
	}{
		{"int8 raw", onnxpb.TensorProto_INT8, []byte{0x80, 0xff, 0x7f}, nil, nil, []int8{-128, -1, 127}, tensor.Int8},
		{"int8 typed", onnxpb.TensorProto_INT8, nil, []int32{-128, -1, 127}, nil, []int8{-128, -1, 127}, tensor.Int8},
		{"int16 raw", onnxpb.TensorProto_INT16, []byte{0x00, 0x80, 0xff, 0x7f}, nil, nil, []int16{-32768, 32767}, tensor.Int16},
		{"int16 typed", onnxpb.TensorProto_INT16, nil, []int32{-32768, 32767}, nil, []int16{-32768, 32767}, tensor.Int16},
		{"uint8 typed", onnxpb.TensorProto_UINT8, nil, []int32{255, 0}, nil, []uint8{255, 0}, tensor.Uint8},
		{"uint16 raw", onnxpb.TensorProto_UINT16, []byte{0xff, 0xff, 0x01, 0x00}, nil, nil, []uint16{65535, 1}, tensor.Uint16},
		{"uint16 typed", onnxpb.TensorProto_UINT16, nil, []int32{65535, 1}, nil, []uint16{65535, 1}, tensor.Uint16},
		{"uint32 raw", onnxpb.TensorProto_UINT32, []byte{0xfe, 0xff, 0xff, 0xff}, nil, nil, []uint32{math.MaxUint32 - 1}, tensor.Uint32},
		{"uint32 typed", onnxpb.TensorProto_UINT32, nil, nil, []uint64{math.MaxUint32, 0}, []uint32{math.MaxUint32, 0}, tensor.Uint32},
		{"uint64 raw", onnxpb.TensorProto_UINT64, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, nil, nil, []uint64{math.MaxUint64}, tensor.Uint64},
		{"uint64 typed", onnxpb.TensorProto_UINT64, nil, nil, []uint64{math.MaxUint64, 1 << 63}, []uint64{math.MaxUint64, 1 << 63}, tensor.Uint64},
		{"float16 raw", onnxpb.TensorProto_FLOAT16, []byte{0x00, 0x3c, 0x00, 0xc1}, nil, nil, []tensor.F16{0x3c00, 0xc100}, tensor.Float16},
		{"float16 typed", onnxpb.TensorProto_FLOAT16, nil, []int32{0x3c00, 0xc100}, nil, []tensor.F16{0x3c00, 0xc100}, tensor.Float16},
		{"bfloat16 raw", onnxpb.TensorProto_BFLOAT16, []byte{0x80, 0x3f}, nil, nil, []tensor.BF16{0x3f80}, tensor.BFloat16},
		{"bfloat16 typed", onnxpb.TensorProto_BFLOAT16, nil, []int32{0x3f80}, nil, []tensor.BF16{0x3f80}, tensor.BFloat16},
		{"bool typed", onnxpb.TensorProto_BOOL, nil, []int32{1, 0}, nil, []bool{true, false}, tensor.Bool},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := reflect.ValueOf(c.want).Len()
			tp := &onnxpb.TensorProto{Name: proto.String("x"), DataType: proto.Int32(int32(c.dt)), Dims: []int64{int64(n)},
				RawData: c.raw, Int32Data: c.i32, Uint64Data: c.u64}
			x, err := tensorFromProto(tp, "")
			if err != nil {
				t.Fatal(err)
			}
			if x.DType() != c.dtype || !reflect.DeepEqual(x.Data(), c.want) {
				t.Fatalf("decoded %v %v, want %v %v", x.DType(), x.Data(), c.dtype, c.want)
			}
			if c.raw != nil {
				raw, err := rawOf(x)
				if err != nil || !bytes.Equal(raw, c.raw) {
					t.Errorf("rawOf = %v (%v), want %v", raw, err, c.raw)
				}
			}
			// The exporter writes the ONNX element type back.
			if et, err := exportDType(x.DType()); err != nil || et != c.dt {
				t.Errorf("exportDType(%v) = %v, %v; want %v", x.DType(), et, err, c.dt)
			}
		})
	}
}

// Data in the wrong field, too little data, and STRING are refused with an
// error naming the tensor.
func TestTensorProtoRefusals(t *testing.T) {
	cases := []struct {
		name string
		tp   *onnxpb.TensorProto
		want string
	}{
		{"uint32 in int32_data", &onnxpb.TensorProto{Name: proto.String("a"), DataType: proto.Int32(int32(onnxpb.TensorProto_UINT32)), Dims: []int64{1}, Int32Data: []int32{1}}, "holds 0 values, want 1"},
		{"short raw int16", &onnxpb.TensorProto{Name: proto.String("b"), DataType: proto.Int32(int32(onnxpb.TensorProto_INT16)), Dims: []int64{2}, RawData: []byte{1, 2, 3}}, "raw data holds 3 bytes, want 4"},
		{"string", &onnxpb.TensorProto{Name: proto.String("c"), DataType: proto.Int32(int32(onnxpb.TensorProto_STRING)), Dims: []int64{1}}, "element type STRING is not supported"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := tensorFromProto(c.tp, "")
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.tp.GetName()) {
				t.Fatalf("error %v, want one naming %q and saying %q", err, c.tp.GetName(), c.want)
			}
		})
	}
}

// A function over the integer and 16-bit dtypes exports (inputs, outputs,
// constants and Cast targets of those types) and loads back to the same
// results in both modes.
func TestExportNewDTypes(t *testing.T) {
	f := func(a, b, h *tensor.Tensor) []*tensor.Tensor {
		s := ops.Add(a, ops.ScalarLike(a, 3))       // Int16 wraps
		u := ops.Cast(ops.Mul(b, b), tensor.Uint16) // Uint8 wraps, then widens
		g := ops.Cast(ops.Add(ops.Cast(h, tensor.Float32), ops.ScalarLike(ops.Cast(h, tensor.Float32), 1)), tensor.Float16)
		return []*tensor.Tensor{s, u, g}
	}
	a := tensor.FromSlice([]int16{32766, -5})
	b := tensor.FromSlice([]uint8{16, 3})
	h := ops.Cast(tensor.FromSlice([]float32{0.5, 65000}), tensor.Float16)
	path := filepath.Join(t.TempDir(), "dtypes.onnx")
	if err := Export(f, []*tensor.Tensor{a, b, h}, path); err != nil {
		t.Fatalf("Export: %v", err)
	}
	m, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Float16 holds 65000 as 64992 (its spacing there is 32), and 64992+1
	// rounds back to it.
	want := []any{[]int16{-32767, -2}, []uint16{0, 9}, []tensor.F16{tensor.F16From(1.5), tensor.F16From(64992)}}
	eager, err := m.Run(a, b, h)
	if err != nil {
		t.Fatal(err)
	}
	graph, err := runGraph(m, []*tensor.Tensor{a, b, h})
	if err != nil {
		t.Fatal(err)
	}
	for mode, outs := range map[string][]*tensor.Tensor{"PyNative": eager, "Graph": graph} {
		for i, w := range want {
			if !reflect.DeepEqual(outs[i].Data(), w) {
				t.Errorf("%s output %d: %v %v, want %v", mode, i, outs[i].DType(), outs[i].Data(), w)
			}
		}
	}
}
