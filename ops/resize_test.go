package ops

import (
	"math"
	"testing"

	"github.com/sporeml/spore/tensor"
)

// linearTable is a linear table resizing an axis of extent in to out with
// align_corners coordinates.
func linearTable(axis, in, out int) ResizeAxis {
	t := ResizeAxis{Axis: axis, In: in}
	for o := range out {
		v := float32(0)
		if out > 1 {
			v = float32(o) * float32(in-1) / float32(out-1)
		}
		f := float32(math.Floor(float64(v)))
		t.I0 = append(t.I0, int32(f))
		t.I1 = append(t.I1, int32(min(int(f)+1, in-1)))
		t.W0, t.W1 = append(t.W0, 1-(v-f)), append(t.W1, v-f)
	}
	return t
}

// TestResizeKernelsAgree checks every kernel path of Resize (several
// axes at once, the last two as planes, one axis alone) against the same
// interpolation applied one axis at a time, bit for bit, and ResizeGrad
// against the transpose: <Resize(x), g> = <x, ResizeGrad(g)>.
func TestResizeKernelsAgree(t *testing.T) {
	cases := []struct {
		in   tensor.Shape
		axes []ResizeAxis
	}{
		{tensor.Shape{2, 3, 4}, []ResizeAxis{linearTable(0, 2, 3), linearTable(1, 3, 7), linearTable(2, 4, 1)}},
		{tensor.Shape{3, 5, 7}, []ResizeAxis{linearTable(1, 5, 2), linearTable(2, 7, 17)}},
		{tensor.Shape{1, 1, 3}, []ResizeAxis{linearTable(0, 1, 4), linearTable(2, 3, 5)}},
		{tensor.Shape{4, 3, 2, 5}, []ResizeAxis{linearTable(1, 3, 6)}},
		{tensor.Shape{17}, []ResizeAxis{linearTable(0, 17, 16)}},
	}
	for _, c := range cases {
		for _, linear := range []bool{true, false} {
			x := tensor.RandNormal(tensor.Float32, 0, 1, c.in...)
			got := Resize(x, ResizeAttrs{Axes: c.axes, Linear: linear})
			want := x
			for _, a := range c.axes {
				want = Resize(want, ResizeAttrs{Axes: []ResizeAxis{a}, Linear: linear})
			}
			if !got.Shape().Equal(want.Shape()) {
				t.Fatalf("%v %v: shape %v, want %v", c.in, linear, got.Shape(), want.Shape())
			}
			a, b := got.Float32s(), want.Float32s()
			for i := range b {
				if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
					t.Fatalf("%v linear=%v: element %d is %v axis by axis %v", c.in, linear, i, a[i], b[i])
				}
			}
			g := tensor.RandNormal(tensor.Float32, 0, 1, got.Shape()...)
			gx := resizeGradOf(ResizeAttrs{Axes: c.axes, Linear: linear}, g)
			l, r := dot64(got, g), dot64(x, gx)
			if math.Abs(l-r) > 1e-4*(1+math.Abs(l)) {
				t.Fatalf("%v linear=%v: <Rx, g> = %v but <x, Rᵀg> = %v", c.in, linear, l, r)
			}
		}
	}
}

func dot64(a, b *tensor.Tensor) float64 {
	s := 0.0
	for i, v := range a.Float32s() {
		s += float64(v) * float64(b.Float32s()[i])
	}
	return s
}
