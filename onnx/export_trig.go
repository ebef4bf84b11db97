package onnx

import (
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
)

// Export of the inverse trigonometric, tangent and hyperbolic primitives:
// each is one ONNX op of the same name and meaning.
func init() {
	for p, op := range map[*core.Prim]string{
		ops.TanPrim: "Tan", ops.AsinPrim: "Asin", ops.AcosPrim: "Acos", ops.AtanPrim: "Atan",
		ops.SinhPrim: "Sinh", ops.CoshPrim: "Cosh",
		ops.AsinhPrim: "Asinh", ops.AcoshPrim: "Acosh", ops.AtanhPrim: "Atanh",
	} {
		exportEmitters[p] = exSame1(op)
	}
}
