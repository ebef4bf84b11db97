package onnx

import (
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/ops"
)

// Export of the primitives added for the ONNX ops of ops_misc.go.

func init() {
	exportEmitters[ops.RandomUniformLikePrim] = exEmitRandomUniformLike
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
