package onnx

import (
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// exportResize writes the table-driven Resize primitive back as the
// per-axis Gathers (and, for linear interpolation, the weighted sum of two
// Gathers) that its tables stand for: out = x[I0]·W0 + x[I1]·W1 along
// each resized axis in turn, in the primitive's order. The ONNX Resize
// op is not used because the tables may come from any coordinate
// transform, and the Gathers reproduce them exactly.
func exportResize(x *exporter, v *graph.Value, in, outs []string) error {
	a := v.Attrs.(ops.ResizeAttrs)
	rank := v.Args[0].Meta.Shape.Rank()
	dt := v.Args[0].Meta.DType
	cur := in[0]
	for k, ax := range a.Axes {
		dst := x.tmp()
		if k == len(a.Axes)-1 {
			dst = outs[0]
		}
		i0, err := x.initializer(tensor.FromSlice(append([]int32(nil), ax.I0...)), "resize_i0")
		if err != nil {
			return err
		}
		if !a.Linear {
			x.node("Gather", []string{cur, i0}, []string{dst}, exAInt("axis", int64(ax.Axis)))
			cur = dst
			continue
		}
		i1, err := x.initializer(tensor.FromSlice(append([]int32(nil), ax.I1...)), "resize_i1")
		if err != nil {
			return err
		}
		shape := make(tensor.Shape, rank)
		for d := range shape {
			shape[d] = 1
		}
		shape[ax.Axis] = len(ax.I0)
		var ws [2]string
		for j, w := range [][]float32{ax.W0, ax.W1} {
			t := tensor.FromSlice(append([]float32(nil), w...), shape...)
			if dt == tensor.Float64 {
				f := make([]float64, len(w))
				for i, v := range w {
					f[i] = float64(v)
				}
				t = tensor.FromSlice(f, shape...)
			}
			if ws[j], err = x.initializer(t, "resize_w"); err != nil {
				return err
			}
		}
		g0, g1, p0, p1 := x.tmp(), x.tmp(), x.tmp(), x.tmp()
		x.node("Gather", []string{cur, i0}, []string{g0}, exAInt("axis", int64(ax.Axis)))
		x.node("Gather", []string{cur, i1}, []string{g1}, exAInt("axis", int64(ax.Axis)))
		x.node("Mul", []string{g0, ws[0]}, []string{p0})
		x.node("Mul", []string{g1, ws[1]}, []string{p1})
		x.node("Add", []string{p0, p1}, []string{dst})
		cur = dst
	}
	if len(a.Axes) == 0 {
		x.node("Identity", []string{in[0]}, outs)
	}
	return nil
}
