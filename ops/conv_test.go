package ops_test

import (
	"math"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// naiveConv is the textbook direct loop over output positions, the
// reference the im2col implementation is checked against.
func naiveConv(x, w *tensor.Tensor, a ops.ConvAttrs) *tensor.Tensor {
	xs, ws := x.Shape(), w.Shape()
	n, c, h, wd := xs[0], xs[1], xs[2], xs[3]
	o, cg, kh, kw := ws[0], ws[1], ws[2], ws[3]
	groups := c / cg
	og := o / groups
	oh := (h+a.Pads[0]+a.Pads[1]-(kh-1)*a.Dilation[0]-1)/a.Stride[0] + 1
	ow := (wd+a.Pads[2]+a.Pads[3]-(kw-1)*a.Dilation[1]-1)/a.Stride[1] + 1
	xv, wv := x.Float64s(), w.Float64s()
	out := make([]float64, n*o*oh*ow)
	for b := range n {
		for oc := range o {
			gi := oc / og
			for oy := range oh {
				for ox := range ow {
					var s float64
					for ic := range cg {
						for i := range kh {
							for j := range kw {
								iy := oy*a.Stride[0] - a.Pads[0] + i*a.Dilation[0]
								ix := ox*a.Stride[1] - a.Pads[2] + j*a.Dilation[1]
								if iy < 0 || iy >= h || ix < 0 || ix >= wd {
									continue
								}
								s += xv[((b*c+gi*cg+ic)*h+iy)*wd+ix] * wv[((oc*cg+ic)*kh+i)*kw+j]
							}
						}
					}
					out[((b*o+oc)*oh+oy)*ow+ox] = s
				}
			}
		}
	}
	return tensor.FromSlice(out, n, o, oh, ow)
}

func TestConv2DHandComputed(t *testing.T) {
	// 1×1×3×3 input, 2×2 filter, stride 1, valid: each output is the dot
	// product of the filter with one 2×2 patch.
	x := f64([]float64{1, 2, 3, 4, 5, 6, 7, 8, 9}, 1, 1, 3, 3)
	w := f64([]float64{1, 0, 0, -1}, 1, 1, 2, 2)
	assertClose(t, "valid", ops.Conv2D(x, w, ops.Conv2DOpts{}), []int{1, 1, 2, 2}, []float64{1 - 5, 2 - 6, 4 - 8, 5 - 9}, 1e-12)
	// Explicit padding of 1 all round with stride 2: windows at (−1,−1),
	// (−1,1), (1,−1), (1,1) of the padded image.
	assertClose(t, "pad stride", ops.Conv2D(x, w, ops.Conv2DOpts{Stride: [2]int{2, 2}, Padding: ops.ExplicitPad(1, 1, 1, 1)}),
		[]int{1, 1, 2, 2}, []float64{-1, -3, -7, 5 - 9}, 1e-12)
	// Dilation 2 with a 2×2 filter reads the four corners.
	assertClose(t, "dilation", ops.Conv2D(x, w, ops.Conv2DOpts{Dilation: [2]int{2, 2}}), []int{1, 1, 1, 1}, []float64{1 - 9}, 1e-12)
	// Same padding, stride 1: a 3×3 box filter sums the neighbourhood.
	box := tensor.Ones(tensor.Float64, 1, 1, 3, 3)
	assertClose(t, "same box", ops.Conv2D(x, box, ops.Conv2DOpts{Padding: ops.SamePad()}), []int{1, 1, 3, 3},
		[]float64{12, 21, 16, 27, 45, 33, 24, 39, 28}, 1e-12)
	// float32 agrees.
	got := ops.Conv2D(tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6, 7, 8, 9}, 1, 1, 3, 3), tensor.Ones(tensor.Float32, 1, 1, 3, 3), ops.Conv2DOpts{Padding: ops.SamePad()})
	if got.DType() != tensor.Float32 {
		t.Fatalf("dtype %v", got.DType())
	}
	assertClose(t, "same box f32", got, []int{1, 1, 3, 3}, []float64{12, 21, 16, 27, 45, 33, 24, 39, 28}, 1e-6)
}

func TestConv2DAgainstNaive(t *testing.T) {
	cases := []struct {
		name   string
		xs, ws []int
		opts   ops.Conv2DOpts
		pads   [4]int // resolved, for the reference
	}{
		{"plain", []int{2, 3, 6, 5}, []int{4, 3, 3, 3}, ops.Conv2DOpts{}, [4]int{}},
		{"stride2", []int{2, 3, 7, 6}, []int{4, 3, 3, 2}, ops.Conv2DOpts{Stride: [2]int{2, 2}}, [4]int{}},
		{"explicit asym", []int{1, 2, 5, 5}, []int{3, 2, 3, 3}, ops.Conv2DOpts{Padding: ops.ExplicitPad(1, 0, 2, 1)}, [4]int{1, 0, 2, 1}},
		{"implicit pads", []int{1, 2, 5, 5}, []int{3, 2, 3, 3}, ops.Conv2DOpts{Padding: ops.Padding{Pads: [4]int{1, 1, 1, 1}}}, [4]int{1, 1, 1, 1}},
		{"dilation", []int{1, 2, 8, 7}, []int{2, 2, 3, 2}, ops.Conv2DOpts{Dilation: [2]int{2, 3}}, [4]int{}},
		{"groups", []int{2, 4, 5, 5}, []int{6, 2, 3, 3}, ops.Conv2DOpts{Groups: 2}, [4]int{}},
		{"depthwise", []int{1, 3, 4, 4}, []int{3, 1, 2, 2}, ops.Conv2DOpts{Groups: 3, Stride: [2]int{1, 2}}, [4]int{}},
		// same, stride 2, in 7: out 4, total pad (4−1)·2+3−7 = 2 → 1/1;
		// in 6: out 3, total 1 → 0 top, 1 bottom.
		{"same stride2", []int{1, 1, 7, 6}, []int{2, 1, 3, 3}, ops.Conv2DOpts{Stride: [2]int{2, 2}, Padding: ops.SamePad()}, [4]int{1, 1, 0, 1}},
		{"all", []int{2, 4, 9, 8}, []int{4, 2, 3, 3}, ops.Conv2DOpts{Stride: [2]int{2, 1}, Padding: ops.SamePad(), Dilation: [2]int{2, 2}, Groups: 2}, [4]int{2, 2, 2, 2}},
		{"empty batch", []int{0, 2, 4, 4}, []int{1, 2, 3, 3}, ops.Conv2DOpts{}, [4]int{}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := randT(uint64(10+i), -1, 1, c.xs...)
			w := randT(uint64(30+i), -1, 1, c.ws...)
			a := ops.ConvAttrs{Stride: c.opts.Stride, Pads: c.pads, Dilation: c.opts.Dilation, Groups: max(c.opts.Groups, 1)}
			for k := range 2 {
				a.Stride[k] = max(a.Stride[k], 1)
				a.Dilation[k] = max(a.Dilation[k], 1)
			}
			want := naiveConv(x, w, a)
			got := ops.Conv2D(x, w, c.opts)
			assertClose(t, c.name, got, want.Shape(), want.Float64s(), 1e-12)
		})
	}
}

func TestConv2DSameShapes(t *testing.T) {
	// MindSpore/TensorFlow "same": out = ⌈in/stride⌉ whatever the kernel.
	for _, in := range []int{1, 5, 6, 7, 28} {
		for _, s := range []int{1, 2, 3} {
			for _, k := range []int{1, 3, 5} {
				x := tensor.Zeros(tensor.Float32, 1, 1, in, in+1)
				w := tensor.Zeros(tensor.Float32, 1, 1, k, k)
				y := ops.Conv2D(x, w, ops.Conv2DOpts{Stride: [2]int{s, s}, Padding: ops.SamePad()})
				want := tensor.Shape{1, 1, (in + s - 1) / s, (in + s) / s}
				if !y.Shape().Equal(want) {
					t.Fatalf("in %d stride %d kernel %d: shape %v, want %v", in, s, k, y.Shape(), want)
				}
			}
		}
	}
}

func TestConv2DErrors(t *testing.T) {
	x := tensor.Zeros(tensor.Float32, 1, 3, 5, 5)
	testkit.MustPanic(t, func() { ops.Conv2D(x, tensor.Zeros(tensor.Float32, 2, 2, 3, 3), ops.Conv2DOpts{}) }, "Conv2D", "[1 3 5 5]", "[2 2 3 3]")
	testkit.MustPanic(t, func() { ops.Conv2D(x, tensor.Zeros(tensor.Float32, 2, 3, 6, 3), ops.Conv2DOpts{}) }, "Conv2D", "larger than the padded input")
	testkit.MustPanic(t, func() {
		ops.Conv2D(x, tensor.Zeros(tensor.Float32, 2, 3, 3, 3), ops.Conv2DOpts{Dilation: [2]int{3, 3}})
	}, "larger than the padded input")
	testkit.MustPanic(t, func() { ops.Conv2D(x, tensor.Zeros(tensor.Float32, 2, 1, 3, 3), ops.Conv2DOpts{Groups: 2}) }, "groups=2")
	testkit.MustPanic(t, func() { ops.Conv2D(x, tensor.Zeros(tensor.Float64, 2, 3, 3, 3), ops.Conv2DOpts{}) }, "Conv2D", "Float64")
	testkit.MustPanic(t, func() {
		ops.Conv2D(tensor.Zeros(tensor.Int32, 1, 3, 5, 5), tensor.Zeros(tensor.Int32, 2, 3, 3, 3), ops.Conv2DOpts{})
	}, "Int32")
	testkit.MustPanic(t, func() {
		ops.Conv2D(tensor.Zeros(tensor.Float32, 3, 5, 5), tensor.Zeros(tensor.Float32, 2, 3, 3, 3), ops.Conv2DOpts{})
	}, "4-D")
	testkit.MustPanic(t, func() {
		ops.Conv2D(x, tensor.Zeros(tensor.Float32, 2, 3, 3, 3), ops.Conv2DOpts{Padding: ops.Padding{Mode: ops.PadSame, Pads: [4]int{1, 1, 1, 1}}})
	}, "pad mode")
	testkit.MustPanic(t, func() {
		ops.Conv2D(x, tensor.Zeros(tensor.Float32, 2, 3, 3, 3), ops.Conv2DOpts{Padding: ops.Padding{Mode: "full"}})
	}, "unknown pad mode")
	testkit.MustPanic(t, func() { ops.Conv2D(x, tensor.Zeros(tensor.Float32, 2, 3, 3, 3), ops.Conv2DOpts{Stride: [2]int{-1, 1}}) }, "positive")
	a := ops.ConvGradAttrs{ConvAttrs: ops.ConvAttrs{Stride: [2]int{1, 1}, Dilation: [2]int{1, 1}, Groups: 1}, Shape: tensor.Shape{1, 3, 5, 5}}
	testkit.MustPanic(t, func() {
		ops.Conv2DBackpropInput(tensor.Zeros(tensor.Float32, 1, 2, 4, 4), tensor.Zeros(tensor.Float32, 2, 3, 3, 3), a)
	}, "Conv2DBackpropInput", "[1 2 4 4]", "[1 2 3 3]")
}

func TestConvGradients(t *testing.T) {
	cases := []struct {
		name   string
		xs, ws []int
		opts   ops.Conv2DOpts
		ord2   bool
	}{
		{"plain", []int{1, 2, 4, 4}, []int{2, 2, 2, 2}, ops.Conv2DOpts{}, true},
		{"stride2 pad", []int{2, 2, 5, 6}, []int{3, 2, 3, 3}, ops.Conv2DOpts{Stride: [2]int{2, 2}, Padding: ops.ExplicitPad(1, 0, 1, 2)}, false},
		{"stride2 same dropped rows", []int{1, 1, 6, 5}, []int{2, 1, 2, 2}, ops.Conv2DOpts{Stride: [2]int{3, 2}}, false},
		{"dilation2", []int{1, 2, 6, 6}, []int{2, 2, 2, 3}, ops.Conv2DOpts{Dilation: [2]int{2, 2}, Padding: ops.SamePad()}, false},
		{"groups2", []int{2, 4, 4, 4}, []int{4, 2, 3, 3}, ops.Conv2DOpts{Groups: 2, Padding: ops.SamePad()}, true},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := randT(uint64(50+i), -1, 1, c.xs...)
			w := randT(uint64(70+i), -1, 1, c.ws...)
			f := func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Conv2D(v[0], v[1], c.opts) }
			checkGrad(t, c.name, f, x, w)
			if c.ord2 {
				checkGrad2(t, c.name, f, x, w)
			}
		})
	}
}

// The backprop prims are differentiable in their own right (transposed
// convolutions use them forward), so their VJPs get their own checks.
func TestConvBackpropGradients(t *testing.T) {
	ca := ops.ConvAttrs{Stride: [2]int{2, 1}, Pads: [4]int{1, 0, 1, 1}, Dilation: [2]int{1, 2}, Groups: 2}
	xs := tensor.Shape{2, 4, 5, 5}
	ws := tensor.Shape{2, 2, 2, 2}
	y := ops.Conv2D(tensor.Zeros(tensor.Float64, xs...), tensor.Zeros(tensor.Float64, ws...),
		ops.Conv2DOpts{Stride: ca.Stride, Padding: ops.ExplicitPad(1, 0, 1, 1), Dilation: ca.Dilation, Groups: 2})
	dy := randT(90, -1, 1, y.Shape()...)
	x := randT(91, -1, 1, xs...)
	w := randT(92, -1, 1, ws...)
	bi := func(v ...*tensor.Tensor) *tensor.Tensor {
		return ops.Conv2DBackpropInput(v[0], v[1], ops.ConvGradAttrs{ConvAttrs: ca, Shape: xs})
	}
	bf := func(v ...*tensor.Tensor) *tensor.Tensor {
		return ops.Conv2DBackpropFilter(v[0], v[1], ops.ConvGradAttrs{ConvAttrs: ca, Shape: ws})
	}
	checkGrad(t, "backprop input", bi, dy, w)
	checkGrad(t, "backprop filter", bf, x, dy)
	checkGrad2(t, "backprop input", bi, dy, w)
	checkGrad2(t, "backprop filter", bf, x, dy)
}

func TestMaxPool2D(t *testing.T) {
	x := f64([]float64{
		1, 5, 2, 0,
		3, 4, 8, 7,
		9, 1, 6, 6,
		2, 2, 3, 1,
	}, 1, 1, 4, 4)
	k2, s2, s1 := [2]int{2, 2}, [2]int{2, 2}, [2]int{1, 1}
	assertClose(t, "2x2/2", ops.MaxPool2D(x, k2, s2), []int{1, 1, 2, 2}, []float64{5, 8, 9, 6}, 0)
	assertClose(t, "3x3/1", ops.MaxPool2D(x, [2]int{3, 3}, s1), []int{1, 1, 2, 2}, []float64{9, 8, 9, 8}, 0)
	// Same, kernel 3, stride 2: out 2×2, pads 0/1 — padding never wins,
	// even against negative values.
	neg := ops.Neg(x)
	assertClose(t, "same neg", ops.MaxPool2D(neg, [2]int{3, 3}, s2, ops.SamePad()), []int{1, 1, 2, 2}, []float64{-1, 0, -1, -1}, 0)
	assertClose(t, "explicit", ops.MaxPool2D(x, k2, s2, ops.ExplicitPad(1, 1, 1, 1)), []int{1, 1, 3, 3},
		[]float64{1, 5, 0, 9, 8, 7, 2, 3, 1}, 0)
	// Gradient goes to the argmax, summing where windows share it.
	dy := f64([]float64{1, 2, 3, 4}, 1, 1, 2, 2)
	_, gx := maxPoolVJP(x, [2]int{3, 3}, s1, dy)
	assertClose(t, "routed", gx, []int{1, 1, 4, 4}, []float64{
		0, 0, 0, 0,
		0, 0, 2 + 4, 0,
		1 + 3, 0, 0, 0,
		0, 0, 0, 0,
	}, 0)
	// Channels and batch are independent planes; float32 works.
	xb := tensor.FromSlice([]float32{1, 2, 3, 4, 8, 7, 6, 5}, 2, 1, 2, 2)
	assertClose(t, "planes f32", ops.MaxPool2D(xb, k2, s2), []int{2, 1, 1, 1}, []float64{4, 8}, 0)

	testkit.MustPanic(t, func() { ops.MaxPool2D(tensor.Zeros(tensor.Float32, 1, 4, 4), k2, s2) }, "MaxPool2D", "4-D")
	testkit.MustPanic(t, func() { ops.MaxPool2D(tensor.Zeros(tensor.Float32, 1, 1, 1, 4), k2, s2) }, "larger than the padded input")
	testkit.MustPanic(t, func() { ops.MaxPool2D(tensor.Zeros(tensor.Float32, 1, 1, 4, 4), k2, s2, ops.ExplicitPad(2, 0, 0, 0)) }, "smaller than the kernel")
	testkit.MustPanic(t, func() { ops.MaxPool2D(tensor.Zeros(tensor.Bool, 1, 1, 4, 4), k2, s2) }, "Bool")
	testkit.MustPanic(t, func() { ops.AvgPool2D(tensor.Zeros(tensor.Int32, 1, 1, 4, 4), k2, s2) }, "Int32")
	testkit.MustPanic(t, func() { ops.MaxPool2D(tensor.Zeros(tensor.Float32, 1, 1, 4, 4), [2]int{0, 2}, s2) }, "positive")
	testkit.MustPanic(t, func() { ops.AvgPool2D(tensor.Zeros(tensor.Float32, 1, 1, 4, 4), k2, s2, ops.SamePad(), ops.SamePad()) }, "at most one")
}

// maxPoolVJP returns MaxPool2D(x) and the gradient of Σ dy·MaxPool2D(x).
func maxPoolVJP(x *tensor.Tensor, k, s [2]int, dy *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor) {
	y := ops.MaxPool2D(x, k, s)
	L := func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Sum(ops.Mul(ops.MaxPool2D(v[0], k, s), dy)) }
	return y, gradOf(L, x)
}

func TestAvgPool2D(t *testing.T) {
	x := f64([]float64{
		1, 2, 3, 4,
		5, 6, 7, 8,
		9, 10, 11, 12,
	}, 1, 1, 3, 4)
	assertClose(t, "2x2/2", ops.AvgPool2D(x, [2]int{2, 2}, [2]int{2, 2}), []int{1, 1, 1, 2}, []float64{3.5, 5.5}, 1e-12)
	// Same, kernel 2, stride 2: out 2×2, pads 0/1 rows, 0/0 columns. The
	// bottom windows hold only the last row: padding is not counted.
	assertClose(t, "same", ops.AvgPool2D(x, [2]int{2, 2}, [2]int{2, 2}, ops.SamePad()), []int{1, 1, 2, 2}, []float64{3.5, 5.5, 9.5, 11.5}, 1e-12)
	// Explicit pad 1 all round, kernel 2, stride 2, padding left out of the
	// count: corner windows hold one element each.
	assertClose(t, "explicit", ops.AvgPool2D(x, [2]int{2, 2}, [2]int{2, 2}, ops.ExplicitPad(1, 1, 1, 1), ops.CountIncludePad(false)), []int{1, 1, 2, 3},
		[]float64{1, 2.5, 4, 7, 8.5, 10}, 1e-12)
}

func TestPoolGradients(t *testing.T) {
	// Distinct values spaced well apart keep the maxima away from ties.
	perm := func(seed uint64, shape ...int) *tensor.Tensor {
		v := randT(seed, 0, 1, shape...).Float64s()
		for i := range v {
			v[i] = float64((i*37)%len(v)) + 0.1*v[i]
		}
		return tensor.FromSlice(v, shape...)
	}
	cases := []struct {
		name string
		f    func(...*tensor.Tensor) *tensor.Tensor
		x    *tensor.Tensor
		ord2 bool
	}{
		{"max 2x2/2", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.MaxPool2D(v[0], [2]int{2, 2}, [2]int{2, 2}) }, perm(1, 2, 2, 4, 4), false},
		{"max overlap", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.MaxPool2D(v[0], [2]int{3, 3}, [2]int{1, 2}) }, perm(2, 1, 2, 5, 5), false},
		{"max same", func(v ...*tensor.Tensor) *tensor.Tensor {
			return ops.MaxPool2D(v[0], [2]int{3, 2}, [2]int{2, 2}, ops.SamePad())
		}, perm(3, 1, 1, 5, 6), true},
		{"avg 2x2/2", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.AvgPool2D(v[0], [2]int{2, 2}, [2]int{2, 2}) }, randT(4, -1, 1, 2, 2, 4, 4), false},
		{"avg same overlap", func(v ...*tensor.Tensor) *tensor.Tensor {
			return ops.AvgPool2D(v[0], [2]int{3, 3}, [2]int{2, 1}, ops.SamePad())
		}, randT(5, -1, 1, 1, 2, 5, 4), true},
		{"avg explicit", func(v ...*tensor.Tensor) *tensor.Tensor {
			return ops.AvgPool2D(v[0], [2]int{2, 3}, [2]int{1, 2}, ops.ExplicitPad(1, 0, 2, 1))
		}, randT(6, -1, 1, 1, 1, 4, 5), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkGrad(t, c.name, c.f, c.x)
			if c.ord2 {
				// Composed with a smooth op so that the second derivative is
				// not identically zero.
				sq := func(v ...*tensor.Tensor) *tensor.Tensor { y := c.f(v...); return ops.Mul(y, y) }
				checkGrad2(t, c.name, sq, c.x)
			}
		})
	}
}

// The max-pool gradient prims' own VJPs: MaxPool2DGrad is linear in dy, and
// its adjoint gathers at the argmax.
func TestMaxPoolGradGradient(t *testing.T) {
	x := tensor.FromSlice([]float64{
		1, 9, 2, 7,
		3, 4, 8, 0,
		6, 5, 11, 10,
		12, 2, 3, 1,
	}, 1, 1, 4, 4)
	k, s := [2]int{2, 2}, [2]int{1, 1}
	dy := randT(7, -1, 1, 1, 1, 3, 3)
	// d/dx of Σ dy·MaxPool(x) is linear in dy; differentiate that with
	// respect to dy (the second input) through MaxPool2DGrad's VJP.
	f := func(v ...*tensor.Tensor) *tensor.Tensor {
		L := func(u ...*tensor.Tensor) *tensor.Tensor { return ops.Sum(ops.Mul(ops.MaxPool2D(u[0], k, s), v[0])) }
		return gradOf(L, x)
	}
	checkGrad(t, "maxpool grad wrt dy", f, dy)
}

func TestDropout(t *testing.T) {
	x := randT(8, 0.5, 1.5, 40, 50)
	if ops.Dropout(x, 0.3, false) != x || ops.Dropout(x, 0, true) != x {
		t.Fatal("dropout is not the identity in inference or with p=0")
	}
	tensor.SetSeed(42)
	y1 := ops.Dropout(x, 0.25, true)
	tensor.SetSeed(42)
	y2 := ops.Dropout(x, 0.25, true)
	y3 := ops.Dropout(x, 0.25, true)
	a, b, c, xv := y1.Float64s(), y2.Float64s(), y3.Float64s(), x.Float64s()
	dropped, differ := 0, 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed, different masks at %d", i)
		}
		if a[i] != c[i] {
			differ++
		}
		switch {
		case a[i] == 0:
			dropped++
		case math.Abs(a[i]-xv[i]/0.75) > 1e-12:
			t.Fatalf("element %d = %v, want 0 or %v", i, a[i], xv[i]/0.75)
		}
	}
	if frac := float64(dropped) / float64(len(a)); math.Abs(frac-0.25) > 0.04 {
		t.Fatalf("dropped fraction %v, want about 0.25", frac)
	}
	if differ == 0 {
		t.Fatal("two calls drew the same mask")
	}
	// The gradient is g·mask: with the seed fixed the mask is the same on
	// every call, so finite differences apply.
	m := func() *tensor.Tensor { tensor.SetSeed(7); return ops.RandomMask(x, 0.5) }().Float64s()
	for _, v := range m {
		if v != 0 && v != 2 {
			t.Fatalf("mask value %v, want 0 or 2", v)
		}
	}
	f := func(v ...*tensor.Tensor) *tensor.Tensor { tensor.SetSeed(7); return ops.Dropout(v[0], 0.5, true) }
	g := gradOf(f, x)
	for i, v := range g.Float64s() {
		if v != m[i] {
			t.Fatalf("gradient %d = %v, want mask %v", i, v, m[i])
		}
	}
	checkGrad(t, "dropout", f, randT(9, -1, 1, 3, 4))
	all := ops.Dropout(tensor.Ones(tensor.Float32, 5), 1, true)
	assertClose(t, "p=1", all, []int{5}, []float64{0, 0, 0, 0, 0}, 0)
	testkit.MustPanic(t, func() { ops.Dropout(x, 1.5, true) }, "Dropout", "1.5")
	testkit.MustPanic(t, func() { ops.Dropout(tensor.Ones(tensor.Int32, 3), 0.5, true) }, "RandomMask", "Int32")
}

// gradOf returns the gradient of Σ f(x) with respect to x.
func gradOf(f func(...*tensor.Tensor) *tensor.Tensor, x *tensor.Tensor) *tensor.Tensor {
	return spore.Grad(func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Sum(f(v...)) })(x)[0]
}
