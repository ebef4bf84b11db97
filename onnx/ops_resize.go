package onnx

import (
	"math"

	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Resize in nearest and (multi)linear modes. Interpolation is separable,
// so each resized axis is one Gather (nearest) or two Gathers and a
// weighted sum (linear) with index and weight tensors computed from the
// shapes alone: constants of the trace, so both modes run the same ops
// and gradients flow to the input. Coordinates are computed in float32,
// as ONNX Runtime computes them, so that ties round the same way.

func init() {
	register("Resize", 11, 0, resizeOp)
}

// resizeOp is Resize: the output extents from sizes or scales, then one
// interpolation per axis whose extent changes.
func resizeOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "X")
	if err != nil {
		return nil, err
	}
	mode := c.String("mode", "nearest")
	if mode != "nearest" && mode != "linear" {
		return nil, c.Errorf("mode %q is not supported (nearest and linear are)", mode)
	}
	ctm := c.String("coordinate_transformation_mode", "half_pixel")
	switch ctm {
	case "half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn":
	default:
		return nil, c.Errorf("coordinate_transformation_mode %q is not supported", ctm)
	}
	if c.Int("antialias", 0) != 0 {
		return nil, c.Errorf("antialias=1 is not supported")
	}
	if p := c.String("keep_aspect_ratio_policy", "stretch"); p != "stretch" {
		return nil, c.Errorf("keep_aspect_ratio_policy %q is not supported", p)
	}
	r := x.Rank()
	axes := make([]int, r)
	for i := range axes {
		axes[i] = i
	}
	if c.Has("axes") {
		if axes, err = c.axes(c.IntsAttr("axes", nil), r, "axes"); err != nil {
			return nil, err
		}
	}
	scales := make([]float32, r)
	out := append([]int(nil), x.Shape()...)
	for i := range scales {
		scales[i] = 1
	}
	// Empty scales or sizes tensors stand for absent ones (opsets 11 and
	// 12 require the inputs to be present).
	sc, sz := c.In(ins, 2), c.In(ins, 3)
	if sc != nil && sc.Size() == 0 {
		sc = nil
	}
	if sz != nil && sz.Size() == 0 {
		sz = nil
	}
	switch {
	case sz != nil && sc != nil:
		return nil, c.Errorf("scales and sizes are both given; ONNX allows one")
	case sz != nil:
		v, err := c.intsInput(sz, "sizes")
		if err != nil {
			return nil, err
		}
		if len(v) != len(axes) {
			return nil, c.Errorf("sizes %v must have one entry per resized axis (%d)", v, len(axes))
		}
		for i, a := range axes {
			if v[i] < 1 {
				return nil, c.Errorf("sizes %v must be positive", v)
			}
			out[a] = v[i]
			scales[a] = float32(v[i]) / float32(x.Dim(a))
		}
	case sc != nil:
		if _, err := c.Concrete(sc, "scales"); err != nil {
			return nil, err
		}
		if sc.DType() != tensor.Float32 && sc.DType() != tensor.Float64 {
			return nil, c.Errorf("scales have dtype %v, want float", sc.DType())
		}
		v := sc.Float64s()
		if len(v) != len(axes) {
			return nil, c.Errorf("scales %v must have one entry per resized axis (%d)", v, len(axes))
		}
		for i, a := range axes {
			if !(v[i] > 0 && v[i] <= 1<<20) {
				return nil, c.Errorf("scales %v must be positive", v)
			}
			scales[a] = float32(v[i])
			out[a] = int(math.Floor(float64(x.Dim(a)) * v[i]))
		}
	default:
		return nil, c.Errorf("neither scales nor sizes is given")
	}
	if err := c.checkMade(out, "output"); err != nil {
		return nil, err
	}
	nearest := c.String("nearest_mode", "round_prefer_floor")
	switch nearest {
	case "round_prefer_floor", "round_prefer_ceil", "floor", "ceil":
	default:
		return nil, c.Errorf("nearest_mode %q is not supported", nearest)
	}
	y := x
	for a := range r {
		in := x.Dim(a)
		if out[a] == in && scales[a] == 1 {
			continue
		}
		if out[a] == 0 || in == 0 {
			return nil, c.Errorf("axis %d: resizing %d to %d", a, in, out[a])
		}
		coord := func(o int) float32 {
			s, fo, fi, fn := scales[a], float32(o), float32(in), float32(out[a])
			switch ctm {
			case "half_pixel":
				return (fo+0.5)/s - 0.5
			case "pytorch_half_pixel":
				if out[a] > 1 {
					return (fo+0.5)/s - 0.5
				}
				return 0
			case "align_corners":
				// ONNX's length_resized is in·scale, not rounded: with
				// scales given it need not be the output's extent.
				if sc != nil {
					fn = fi * s
				}
				if fn == 1 {
					return 0
				}
				return fo * (fi - 1) / (fn - 1)
			case "tf_half_pixel_for_nn":
				return (fo + 0.5) / s
			}
			return fo / s // asymmetric
		}
		if mode == "nearest" {
			idx := make([]int64, out[a])
			for o := range idx {
				v := coord(o)
				var n float32
				switch nearest {
				case "round_prefer_floor":
					if v == float32(math.Floor(float64(v)))+0.5 {
						n = float32(math.Floor(float64(v)))
					} else {
						n = float32(math.Round(float64(v)))
					}
				case "round_prefer_ceil":
					n = float32(math.Round(float64(v)))
				case "floor":
					n = float32(math.Floor(float64(v)))
				case "ceil":
					n = float32(math.Ceil(float64(v)))
				}
				idx[o] = int64(max(0, min(float32(in-1), n)))
			}
			y = ops.Gather(y, tensor.FromSlice(idx, len(idx)), a)
			continue
		}
		i0, i1 := make([]int64, out[a]), make([]int64, out[a])
		w0, w1 := make([]float64, out[a]), make([]float64, out[a])
		for o := range i0 {
			v := max(0, min(float32(in-1), coord(o)))
			f := float32(math.Floor(float64(v)))
			i0[o] = int64(f)
			i1[o] = min(int64(f)+1, int64(in-1))
			d := v - f
			w0[o], w1[o] = float64(1-d), float64(d)
		}
		shape := make([]int, r)
		for i := range shape {
			shape[i] = 1
		}
		shape[a] = out[a]
		wt := func(w []float64) *tensor.Tensor {
			return ops.Cast(tensor.FromSlice(w, shape...), x.DType())
		}
		g0 := ops.Gather(y, tensor.FromSlice(i0, len(i0)), a)
		g1 := ops.Gather(y, tensor.FromSlice(i1, len(i1)), a)
		y = ops.Add(ops.Mul(g0, wt(w0)), ops.Mul(g1, wt(w1)))
	}
	return one(y)
}
