package ops

import (
	"fmt"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// ShapeAttr is the attribute of ops parameterised by a target shape.
type ShapeAttr struct{ Shape tensor.Shape }

// String prints every attribute, for IR dumps and CSE keys.
func (a ShapeAttr) String() string { return fmt.Sprintf("shape=%v", a.Shape) }

var ReshapePrim, BroadcastToPrim *core.Prim

func init() {
	ReshapePrim = core.Define(&core.Prim{
		Name:   "Reshape",
		Batch:  batchReshape,
		Traits: core.Traits{View: true},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			return tensor.Meta{Shape: attrs.(ShapeAttr).Shape, DType: in[0].DType()}
		},
		JVP: linearJVP(&ReshapePrim, 0),
		VJP: func(_ any, in []*tensor.Tensor, _, g *tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{Reshape(g, in[0].Shape()...)}
		},
	})
	registerCopy(ReshapePrim)
}

// Reshape returns x's elements in row-major order with a new shape. One
// extent may be -1: it is inferred from the others.
func Reshape(x *tensor.Tensor, shape ...int) *tensor.Tensor {
	s := tensor.Shape(shape).Clone()
	infer, known := -1, 1
	for i, d := range s {
		switch {
		case d == -1 && infer < 0:
			infer = i
		case d < 0:
			core.Panicf("Reshape", "bad target shape %v for input %v", shape, x.Shape())
		default:
			known *= d
		}
	}
	if infer >= 0 {
		if known == 0 || x.Size()%known != 0 {
			core.Panicf("Reshape", "cannot infer -1 in %v from input %v", shape, x.Shape())
		}
		s[infer] = x.Size() / known
	}
	if s.Size() != x.Size() {
		core.Panicf("Reshape", "cannot reshape %v (%d elements) to %v", x.Shape(), x.Size(), shape)
	}
	if s.Equal(x.Shape()) {
		return x
	}
	return core.Apply(ReshapePrim, ShapeAttr{s}, x)
}

func init() {
	BroadcastToPrim = core.Define(&core.Prim{
		Name:   "BroadcastTo",
		Batch:  batchBroadcastTo,
		Traits: core.Traits{Elementwise: true, Cost: 0},
		// A fused loop reads the operand broadcast: nothing to compute.
		Elementwise: &core.Elementwise{Copy: true},
		Infer: func(attrs any, in []*tensor.Tensor) tensor.Meta {
			s := attrs.(ShapeAttr).Shape
			if b := BroadcastShapes("BroadcastTo", in[0].Shape(), s); !b.Equal(s) {
				core.Panicf("BroadcastTo", "cannot broadcast %v to %v", in[0].Shape(), s)
			}
			return tensor.Meta{Shape: s, DType: in[0].DType()}
		},
		JVP: linearJVP(&BroadcastToPrim, 0),
		VJP: func(_ any, in []*tensor.Tensor, _, g *tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{sumTo(g, in[0].Shape())}
		},
	})
	registerElems(BroadcastToPrim, broadcastToKernel[float32], broadcastToKernel[float64], broadcastToKernel[int32], broadcastToKernel[int64], broadcastToKernel[bool], broadcastToKernel[uint8])
}

// BroadcastTo returns x repeated along axes to the given shape, by NumPy's
// broadcasting rules.
func BroadcastTo(x *tensor.Tensor, shape ...int) *tensor.Tensor {
	s := tensor.Shape(shape).Clone()
	if s.Equal(x.Shape()) {
		return x
	}
	return core.Apply(BroadcastToPrim, ShapeAttr{s}, x)
}

// broadcastToKernel is BroadcastTo's kernel for T.
func broadcastToKernel[T core.Elem](_ any, in []*tensor.Tensor, out *tensor.Tensor) {
	broadcastCopy(out.Data().([]T), in[0].Data().([]T), in[0].Shape(), out.Shape())
}
