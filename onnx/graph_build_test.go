package onnx

import (
	"encoding/binary"
	"math"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sporeml/spore/onnx/internal/onnxpb"
)

// This file builds small ONNX models in Go for the loader's tests.

// node returns a NodeProto; attrs are built with the attr helpers.
func node(op, name string, ins, outs []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
	return &onnxpb.NodeProto{OpType: proto.String(op), Name: proto.String(name), Input: ins, Output: outs, Attribute: attrs}
}

func attrInt(name string, v int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(v)}
}

func attrInts(name string, v ...int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v}
}

func attrGraph(name string, g *onnxpb.GraphProto) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_GRAPH.Enum(), G: g}
}

func attrTensor(name string, t *onnxpb.TensorProto) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_TENSOR.Enum(), T: t}
}

// floatTensor returns a float32 TensorProto in raw little-endian bytes.
func floatTensor(name string, dims []int64, v []float32) *onnxpb.TensorProto {
	raw := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(x))
	}
	return &onnxpb.TensorProto{Name: proto.String(name), Dims: dims, DataType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)), RawData: raw}
}

// int64Tensor returns an int64 TensorProto in the typed field.
func int64Tensor(name string, dims []int64, v []int64) *onnxpb.TensorProto {
	return &onnxpb.TensorProto{Name: proto.String(name), Dims: dims, DataType: proto.Int32(int32(onnxpb.TensorProto_INT64)), Int64Data: v}
}

func boolTensor(name string, v bool) *onnxpb.TensorProto {
	b := int32(0)
	if v {
		b = 1
	}
	return &onnxpb.TensorProto{Name: proto.String(name), DataType: proto.Int32(int32(onnxpb.TensorProto_BOOL)), Int32Data: []int32{b}}
}

// valueInfoProto declares a tensor value; a dim of -1 becomes a dim_param
// called "batch".
func valueInfoProto(name string, et onnxpb.TensorProto_DataType, dims ...int64) *onnxpb.ValueInfoProto {
	shape := &onnxpb.TensorShapeProto{}
	for _, d := range dims {
		if d < 0 {
			shape.Dim = append(shape.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: "batch"}})
		} else {
			shape.Dim = append(shape.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}})
		}
	}
	return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(et)), Shape: shape}}}}
}

func graphProto(name string, nodes []*onnxpb.NodeProto, inits []*onnxpb.TensorProto, ins, outs []*onnxpb.ValueInfoProto) *onnxpb.GraphProto {
	return &onnxpb.GraphProto{Name: proto.String(name), Node: nodes, Initializer: inits, Input: ins, Output: outs}
}

func modelProto(opset int64, g *onnxpb.GraphProto) *onnxpb.ModelProto {
	return &onnxpb.ModelProto{
		IrVersion:       proto.Int64(8),
		ProducerName:    proto.String("spore-test"),
		ProducerVersion: proto.String("1"),
		OpsetImport:     []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(opset)}},
		Graph:           g,
	}
}

func marshal(t testing.TB, m *onnxpb.ModelProto) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mlpModel is y = relu(x·W1 + b1)·W2 + b2 with x [batch, 3], 4 hidden
// units and 2 outputs, and known weights.
func mlpModel() *onnxpb.ModelProto {
	w1 := []float32{0.1, -0.2, 0.3, 0.4, 0.5, -0.6, 0.7, 0.8, -0.9, 1.0, 1.1, -1.2}
	b1 := []float32{0.01, 0.02, -0.03, 0.04}
	w2 := []float32{1, -1, 0.5, 0.25, -0.5, 2, 0.125, -0.75}
	b2 := []float32{0.1, -0.1}
	nodes := []*onnxpb.NodeProto{
		node("MatMul", "fc1/matmul", []string{"x", "fc1.weight"}, []string{"h0"}),
		node("Add", "fc1/add", []string{"h0", "fc1.bias"}, []string{"h1"}),
		node("Relu", "relu", []string{"h1"}, []string{"h2"}),
		node("MatMul", "fc2/matmul", []string{"h2", "fc2.weight"}, []string{"h3"}),
		node("Add", "fc2/add", []string{"h3", "fc2.bias"}, []string{"y"}),
	}
	inits := []*onnxpb.TensorProto{
		floatTensor("fc1.weight", []int64{3, 4}, w1),
		floatTensor("fc1.bias", []int64{4}, b1),
		floatTensor("fc2.weight", []int64{4, 2}, w2),
		floatTensor("fc2.bias", []int64{2}, b2),
	}
	g := graphProto("mlp", nodes, inits,
		[]*onnxpb.ValueInfoProto{valueInfoProto("x", onnxpb.TensorProto_FLOAT, -1, 3)},
		[]*onnxpb.ValueInfoProto{valueInfoProto("y", onnxpb.TensorProto_FLOAT, -1, 2)})
	return modelProto(17, g)
}

// mlpRef computes mlpModel's output in plain Go (float64).
func mlpRef(x []float32, batch int) []float64 {
	m := mlpModel()
	get := func(i int) []float32 {
		raw := m.GetGraph().GetInitializer()[i].GetRawData()
		v := make([]float32, len(raw)/4)
		for k := range v {
			v[k] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*k:]))
		}
		return v
	}
	w1, b1, w2, b2 := get(0), get(1), get(2), get(3)
	out := make([]float64, batch*2)
	for b := range batch {
		h := make([]float64, 4)
		for j := range 4 {
			s := float64(b1[j])
			for i := range 3 {
				s += float64(x[b*3+i]) * float64(w1[i*4+j])
			}
			h[j] = math.Max(s, 0)
		}
		for k := range 2 {
			s := float64(b2[k])
			for j := range 4 {
				s += h[j] * float64(w2[j*2+k])
			}
			out[b*2+k] = s
		}
	}
	return out
}
