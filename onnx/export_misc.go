package onnx

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Export of the primitives the ONNX ops of ops_misc.go are built from:
// RandomUniformLike, and the unsigned shifts as BitShift.

func init() {
	exportEmitters[ops.RandomUniformLikePrim] = exEmitRandomUniformLike
	exportEmitters[ops.ShiftLeftPrim] = exEmitBitShift("LEFT")
	exportEmitters[ops.ShiftRightPrim] = exEmitBitShift("RIGHT")
}

// exEmitBitShift writes BitShift, which ONNX defines on unsigned integers
// only; a signed shift has no translation.
func exEmitBitShift(dir string) exportEmit {
	return func(x *exporter, v *graph.Value, in, outs []string) error {
		switch v.Meta.DType {
		case tensor.Uint8, tensor.Uint16, tensor.Uint32, tensor.Uint64:
		default:
			return fmt.Errorf("no ONNX translation for %v shifts (BitShift takes unsigned integers)", v.Meta.DType)
		}
		x.node("BitShift", in, outs, &onnxpb.AttributeProto{Name: proto.String("direction"), Type: onnxpb.AttributeProto_STRING.Enum(), S: []byte(dir)})
		return nil
	}
}

// exEmitRandomUniformLike writes RandomUniformLike with the draw's range,
// and its seed when it has one; the dtype is the input's, ONNX's default.
func exEmitRandomUniformLike(x *exporter, v *graph.Value, in, outs []string) error {
	a := v.Attrs.(ops.RandomUniformAttrs)
	attrs := []*onnxpb.AttributeProto{exAFloat("low", float32(a.Lo)), exAFloat("high", float32(a.Hi))}
	if a.Seeded {
		attrs = append(attrs, exAFloat("seed", a.Seed))
	}
	x.node("RandomUniformLike", in, outs, attrs...)
	return nil
}
