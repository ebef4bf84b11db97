package onnx

import (
	"math"

	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Resize in nearest, (multi)linear and (multi)cubic modes. Interpolation
// is separable, so each resized axis is one Gather (nearest) or two or
// four Gathers and a weighted sum (linear, cubic) with index and weight
// tensors computed from the shapes alone: constants of the trace, so both
// modes run the same ops and gradients flow to the input. Cubic follows
// ONNX's reference: Keys' kernel with cubic_coeff_a, the four taps nearest
// the source coordinate (the left ones on a tie), edge-clamped, or with
// exclude_outside dropped and the rest renormalised. tf_crop_and_resize
// maps the output onto the roi box and gives extrapolation_value where the
// source coordinate falls outside the input. Coordinates are computed in float32,
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
	if mode != "nearest" && mode != "linear" && mode != "cubic" {
		return nil, c.Errorf("mode %q is not supported (nearest, linear and cubic are)", mode)
	}
	ctm := c.String("coordinate_transformation_mode", "half_pixel")
	switch ctm {
	case "half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize":
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
	// roiStart[a], roiEnd[a]: the box tf_crop_and_resize maps the output
	// onto, as fractions of the input's extent.
	roiStart, roiEnd := make([]float32, r), make([]float32, r)
	for i := range roiEnd {
		roiEnd[i] = 1
	}
	if ctm == "tf_crop_and_resize" {
		roi, err := c.Concrete(c.In(ins, 1), "roi")
		if err != nil {
			return nil, err
		}
		if !isFloat(roi.DType()) {
			return nil, c.Errorf("roi has dtype %v, want float", roi.DType())
		}
		v := roi.Float64s()
		if len(v) != 2*len(axes) {
			return nil, c.Errorf("roi %v must have two entries per resized axis (%d)", v, 2*len(axes))
		}
		for i, a := range axes {
			roiStart[a], roiEnd[a] = float32(v[i]), float32(v[len(axes)+i])
		}
	}
	extrapolation := float64(c.Float("extrapolation_value", 0))
	cubicA := float64(c.Float("cubic_coeff_a", -0.75))
	exclude := c.Int("exclude_outside", 0) != 0
	nearest := c.String("nearest_mode", "round_prefer_floor")
	switch nearest {
	case "round_prefer_floor", "round_prefer_ceil", "floor", "ceil":
	default:
		return nil, c.Errorf("nearest_mode %q is not supported", nearest)
	}
	// Nearest and linear resizes of float tensors run as one ops.Resize
	// over the tables the loop below computes; the per-axis Gathers and
	// weighted sums remain for cubic, tf_crop_and_resize (whose
	// extrapolation applies between axes) and other dtypes, and are the
	// reference the kernel is tested against.
	fast := !resizeByGather && (mode == "nearest" || mode == "linear") && ctm != "tf_crop_and_resize" &&
		(x.DType() == tensor.Float32 || x.DType() == tensor.Float64) && r <= 8
	var tabs []ops.ResizeAxis
	y := x
	for a := range r {
		in := x.Dim(a)
		if out[a] == in && scales[a] == 1 && (ctm != "tf_crop_and_resize" || roiStart[a] == 0 && roiEnd[a] == 1) {
			continue
		}
		if out[a] == 0 || in == 0 {
			return nil, c.Errorf("axis %d: resizing %d to %d", a, in, out[a])
		}
		// extrapolate puts extrapolation_value where tf_crop_and_resize's
		// source coordinate falls outside the input along axis a.
		extrapolate := func(y *tensor.Tensor) *tensor.Tensor { return y }
		coord := func(o int) float32 {
			// fn is the output extent as ONNX's reference takes it, scale·in:
			// not an integer when the scale came from scales.
			s, fo, fi := scales[a], float32(o), float32(in)
			fn := s * fi
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
			case "tf_crop_and_resize":
				r0, r1 := roiStart[a], roiEnd[a]
				if out[a] == 1 {
					return (r0 + r1) / 2 * (fi - 1)
				}
				return r0*(fi-1) + fo*(r1-r0)*(fi-1)/(fn-1)
			}
			return fo / s // asymmetric
		}
		if ctm == "tf_crop_and_resize" {
			outside, some := make([]bool, out[a]), false
			for o := range outside {
				v := coord(o)
				outside[o] = v < 0 || v > float32(in-1)
				some = some || outside[o]
			}
			if some {
				shape := make([]int, r)
				for i := range shape {
					shape[i] = 1
				}
				shape[a] = out[a]
				mask := tensor.FromSlice(outside, shape...)
				extrapolate = func(y *tensor.Tensor) *tensor.Tensor {
					return ops.Select(mask, scalarOf(y.DType(), extrapolation), y)
				}
			}
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
			if fast {
				t := ops.ResizeAxis{Axis: a, In: in, I0: make([]int32, len(idx))}
				for o, i := range idx {
					t.I0[o] = int32(i)
				}
				tabs = append(tabs, t)
				continue
			}
			y = extrapolate(ops.Gather(y, tensor.FromSlice(idx, len(idx)), a))
			continue
		}
		if mode == "cubic" {
			y = extrapolate(cubicAxis(y, a, out[a], coord, cubicA, exclude))
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
		if fast {
			t := ops.ResizeAxis{Axis: a, In: in, I0: make([]int32, len(i0)), I1: make([]int32, len(i0)), W0: make([]float32, len(i0)), W1: make([]float32, len(i0))}
			for o := range i0 {
				t.I0[o], t.I1[o] = int32(i0[o]), int32(i1[o])
				t.W0[o], t.W1[o] = float32(w0[o]), float32(w1[o])
			}
			tabs = append(tabs, t)
			continue
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
		y = extrapolate(ops.Add(ops.Mul(g0, wt(w0)), ops.Mul(g1, wt(w1))))
	}
	if len(tabs) > 0 {
		y = resizeChain(x, tabs, mode == "linear", "coordinate_transformation_mode="+ctm+" nearest_mode="+nearest)
	}
	return one(y)
}

// resizeChain applies the axes' tables as ops.Resize steps: the last two
// axes together (an image's height and width, one pass), any other axis
// alone. Axes that shrink go first, so that no intermediate is larger
// than it must be (growing an axis 2^20-fold before shrinking two others
// 12-fold made a 37-million-element intermediate for a 3-million-element
// result); the interpolation is separable, so the order changes only the
// rounding (by an ulp or so), and when the shrinking axes already come
// first, as in every single-direction resize, nothing changes at all.
func resizeChain(x *tensor.Tensor, tabs []ops.ResizeAxis, linear bool, desc string) *tensor.Tensor {
	r := x.Rank()
	var order []ops.ResizeAxis
	for _, shrink := range []bool{true, false} {
		for _, t := range tabs {
			if (len(t.I0) < t.In) == shrink {
				order = append(order, t)
			}
		}
	}
	y := x
	for i := 0; i < len(order); i++ {
		step := order[i : i+1]
		if i+1 < len(order) && order[i].Axis == r-2 && order[i+1].Axis == r-1 {
			step = order[i : i+2]
			i++
		}
		y = ops.Resize(y, ops.ResizeAttrs{Axes: step, Linear: linear, Desc: desc})
	}
	return y
}

// resizeByGather makes Resize build its per-axis Gathers for every mode,
// the reference the ops.Resize kernel is tested against.
var resizeByGather = false

// cubicAxis resizes axis a of y to n by cubic interpolation at the source
// coordinates coord(o), as ONNX's reference does: the four taps around
// the coordinate start one left of ceil(x)−1, so that the fraction t lies
// in (0, 1]; taps past the edges repeat the edge values, or with exclude
// are dropped and the weights renormalised.
func cubicAxis(y *tensor.Tensor, a, n int, coord func(int) float32, A float64, exclude bool) *tensor.Tensor {
	in := y.Dim(a)
	var idx [4][]int64
	var w [4][]float64
	for k := range idx {
		idx[k], w[k] = make([]int64, n), make([]float64, n)
	}
	kernel := func(d float64) float64 { // Keys' kernel at distance |d|
		d = math.Abs(d)
		if d <= 1 {
			return ((A+2)*d-(A+3))*d*d + 1
		}
		if d < 2 {
			return ((A*d-5*A)*d+8*A)*d - 4*A
		}
		return 0
	}
	for o := range n {
		x := float64(coord(o))
		base := int64(math.Ceil(x)) - 2 // the leftmost tap
		sum := 0.0
		for k := range 4 {
			p := base + int64(k)
			wk := kernel(x - float64(p))
			if exclude && (p < 0 || p >= int64(in)) {
				wk = 0
			}
			idx[k][o] = max(0, min(int64(in-1), p))
			w[k][o] = wk
			sum += wk
		}
		if exclude && sum != 0 {
			for k := range 4 {
				w[k][o] /= sum
			}
		}
	}
	shape := make([]int, y.Rank())
	for i := range shape {
		shape[i] = 1
	}
	shape[a] = n
	var z *tensor.Tensor
	for k := range 4 {
		term := ops.Mul(ops.Gather(y, tensor.FromSlice(idx[k], n), a), ops.Cast(tensor.FromSlice(w[k], shape...), y.DType()))
		if z == nil {
			z = term
		} else {
			z = ops.Add(z, term)
		}
	}
	return z
}
