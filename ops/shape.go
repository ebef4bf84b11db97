package ops

import (
	"fmt"
	"math"
	"slices"

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
	registerMoves(ReshapePrim)
}

// Reshape returns x's elements in row-major order with a new shape. One
// extent may be -1: it is inferred from the others.
func Reshape(x *tensor.Tensor, shape ...int) *tensor.Tensor {
	s := reshapeTarget(shape, x.Shape())
	if s.Equal(x.Shape()) {
		return x
	}
	return core.Apply(ReshapePrim, ShapeAttr{s}, x)
}

// reshapeTarget resolves Reshape's target shape for an input of shape in:
// a copy of shape with its -1, if any, inferred. Each way a target can be
// wrong gets its own message saying why, since "bad shape" leaves the
// caller to work out which extent is at fault.
func reshapeTarget(shape []int, in tensor.Shape) tensor.Shape {
	const op = "Reshape"
	s := tensor.Shape(shape).Clone()
	n := in.Size()
	infer := -1
	for i, d := range s {
		switch {
		case d == -1 && infer >= 0:
			core.Panicf(op, "target shape %v has more than one -1 (axes %d and %d): only one extent can be inferred", shape, infer, i)
		case d == -1:
			infer = i
		case d < 0:
			core.Panicf(op, "target shape %v has extent %d at axis %d: an extent must be non-negative, or -1 to be inferred", shape, d, i)
		}
	}
	// The product of the known extents, refusing one that overflows (it
	// could wrap around to the input's size and pass the check below). A
	// zero extent makes the product 0 whatever the others, as in
	// core.CheckShape.
	known := 0
	if !slices.Contains(s, 0) {
		known = 1
		for i, d := range s {
			if i == infer {
				continue
			}
			if known > math.MaxInt/d {
				core.Panicf(op, "target shape %v has too many elements: its size overflows", shape)
			}
			known *= d
		}
	}
	if infer >= 0 {
		switch {
		case known == 0 && n == 0:
			core.Panicf(op, "cannot infer the -1 at axis %d of target shape %v: the other extents multiply to 0, so any extent would fit input %v (0 elements)", infer, shape, in)
		case known == 0:
			core.Panicf(op, "cannot infer the -1 at axis %d of target shape %v: the other extents multiply to 0, so no extent gives input %v's %d elements", infer, shape, in, n)
		case n%known != 0:
			core.Panicf(op, "cannot infer the -1 at axis %d of target shape %v: input %v's %d elements are not a multiple of %d, the product of the other extents", infer, shape, in, n, known)
		}
		s[infer] = n / known
		known = n
	}
	if known != n {
		core.Panicf(op, "cannot reshape %v to %v: element counts differ: %d vs %d", in, shape, n, known)
	}
	return s
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
	registerMoves(BroadcastToPrim)
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
