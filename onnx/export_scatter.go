package onnx

import (
	"fmt"

	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
	"google.golang.org/protobuf/proto"
)

// The export of GatherGrad, spore's scatter-add: Gather's gradient, and
// the scatter of ScatterElements and ScatterND at indices computed from a
// model's inputs (runtime_scatter.go).

func init() {
	exportEmitters[ops.GatherGradPrim] = exEmitGatherGrad
}

// exEmitGatherGrad writes GatherGrad (g [A..., I..., B...] added into
// zeros [A..., extent, B...] at the positions idx [I...] name on the
// axis) as ScatterND with reduction "add" on the axis moved first: g
// becomes [m, A, B] rows, the zeros [extent, A, B], and the indices, with
// negative ones wrapped, [m, 1]. Under DynamicBatch it fails: the flat
// extents would depend on the batch.
func exEmitGatherGrad(x *exporter, v *graph.Value, in, outs []string) error {
	if x.baxOf(v) >= 0 || x.argBax(v, 0) >= 0 || x.argBax(v, 1) >= 0 {
		return fmt.Errorf("a scatter-add (GatherGrad) over a dynamic batch has no ONNX translation here; export with a fixed batch")
	}
	a := v.Attrs.(ops.ScatterAttrs)
	gs, is := v.Args[0].Meta.Shape, v.Args[1].Meta.Shape
	outer := int64(gs[:a.Axis].Size())
	m := int64(is.Size())
	inner := int64(gs[a.Axis+len(is):].Size())
	n := int64(a.Extent)
	idx := x.op1("Reshape", []string{in[1], x.constInts(m, 1)})
	if v.Args[1].Meta.DType != tensor.Int64 {
		idx = x.op1("Cast", []string{idx}, exAInt("to", int64(onnxpb.TensorProto_INT64)))
	}
	zero, err := x.constScalar(tensor.Int64, 0)
	if err != nil {
		return err
	}
	ext, err := x.constScalar(tensor.Int64, float64(n))
	if err != nil {
		return err
	}
	idx = x.op1("Where", []string{x.op1("Less", []string{idx, zero}), x.op1("Add", []string{idx, ext}), idx})
	rows := x.op1("Transpose", []string{x.op1("Reshape", []string{in[0], x.constInts(outer, m, inner)})}, exAInts("perm", 1, 0, 2))
	z, err := x.constScalar(v.Meta.DType, 0)
	if err != nil {
		return err
	}
	zeros := x.op1("Expand", []string{z, x.constInts(n, outer, inner)})
	sum := x.op1("ScatterND", []string{zeros, idx, rows}, exScatterAttrStr("reduction", "add"))
	back := x.op1("Transpose", []string{sum}, exAInts("perm", 1, 0, 2))
	x.node("Reshape", []string{back, x.constInts(exInts64(v.Meta.Shape)...)}, outs)
	return nil
}

// exScatterAttrStr is a string attribute.
func exScatterAttrStr(name, v string) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_STRING.Enum(), S: []byte(v)}
}
