package ops

import (
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

var UnstackPrim *core.Prim

func init() {
	// Unstack is one multi-result primitive rather than a Slice per piece:
	// the gradient of a slice is a zero tensor as large as the input, so
	// slicing a sequence step by step (a Scan in PyNative mode) would cost
	// time and memory quadratic in its length. Unstack's gradient is one
	// Stack of the pieces' gradients.
	UnstackPrim = core.Define(&core.Prim{
		Name:   "Unstack",
		BatchN: batchUnstack,
		Traits: core.Traits{Cost: 1},
		InferN: func(attrs any, in []*tensor.Tensor) []tensor.Meta {
			x := in[0]
			ax := attrs.(AxisAttr).Axis
			xs := x.Shape()
			piece := append(xs[:ax:ax].Clone(), xs[ax+1:]...)
			ms := make([]tensor.Meta, xs[ax])
			for i := range ms {
				ms[i] = tensor.Meta{Shape: piece, DType: x.DType()}
			}
			return ms
		},
		JVPN: func(attrs any, _, t, _ []*tensor.Tensor) []*tensor.Tensor {
			return core.ApplyN(UnstackPrim, attrs, t[0])
		},
		VJPN: func(attrs any, _ []*tensor.Tensor, _, gs []*tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{Stack(attrs.(AxisAttr).Axis, gs...)}
		},
	})
	for _, t := range elemTypes {
		UnstackPrim.RegisterN(t.dtype(), core.CPU, t.unstack())
	}
}

// unstackInto copies each slice of in[0] along the axis into its result.
func unstackInto[T core.Elem](attrs any, in []*tensor.Tensor, outs []*tensor.Tensor) {
	x := in[0].Data().([]T)
	ax := attrs.(AxisAttr).Axis
	xs := in[0].Shape()
	outer := xs[:ax].Size()
	inner := xs[ax+1:].Size()
	n := xs[ax]
	for k, o := range outs {
		od := o.Data().([]T)
		for i := range outer {
			copy(od[i*inner:(i+1)*inner], x[(i*n+k)*inner:(i*n+k+1)*inner])
		}
	}
}

// Unstack splits x along axis into its x.Dim(axis) slices, each without
// that axis (NumPy's list(x) along an axis, MindSpore's ops.unstack). Its
// gradient is the Stack of the slices' gradients.
func Unstack(x *tensor.Tensor, axis int) []*tensor.Tensor {
	ax := core.NormAxis("Unstack", axis, x.Rank())
	if x.Dim(ax) == 0 {
		return nil
	}
	return core.ApplyN(UnstackPrim, AxisAttr{ax}, x)
}
