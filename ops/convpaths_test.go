package ops_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// naiveConvAll returns the convolution of x by w and, for the output
// gradient dy, the input and filter gradients, by the textbook loops over
// every (output, tap) pair, in float64.
func naiveConvAll(xs, ws []int, x, w, dy []float64, a ops.ConvAttrs) (y, dx, dw []float64) {
	n, c, h, wd := xs[0], xs[1], xs[2], xs[3]
	o, cg, kh, kw := ws[0], ws[1], ws[2], ws[3]
	og := o / (c / cg)
	oh := (h+a.Pads[0]+a.Pads[1]-(kh-1)*a.Dilation[0]-1)/a.Stride[0] + 1
	ow := (wd+a.Pads[2]+a.Pads[3]-(kw-1)*a.Dilation[1]-1)/a.Stride[1] + 1
	y, dx, dw = make([]float64, n*o*oh*ow), make([]float64, len(x)), make([]float64, len(w))
	for b := range n {
		for oc := range o {
			gi := oc / og
			for oy := range oh {
				for ox := range ow {
					yi := ((b*o+oc)*oh+oy)*ow + ox
					for ic := range cg {
						for i := range kh {
							for j := range kw {
								iy := oy*a.Stride[0] - a.Pads[0] + i*a.Dilation[0]
								ix := ox*a.Stride[1] - a.Pads[2] + j*a.Dilation[1]
								if iy < 0 || iy >= h || ix < 0 || ix >= wd {
									continue
								}
								xi := ((b*c+gi*cg+ic)*h+iy)*wd + ix
								wi := ((oc*cg+ic)*kh+i)*kw + j
								y[yi] += x[xi] * w[wi]
								dx[xi] += dy[yi] * w[wi]
								dw[wi] += dy[yi] * x[xi]
							}
						}
					}
				}
			}
		}
	}
	return y, dx, dw
}

// Every kernel path of Conv2D, Conv2DBackpropInput and Conv2DBackpropFilter
// (direct, pitched stride-1, im2col for strides) agrees with the textbook
// loops in float32 and float64, on odd shapes, strides, asymmetric pads,
// groups and dilations, and on LeNet's two layers at a batch large enough
// to be split over the cores.
func TestConvPathsAgainstNaive(t *testing.T) {
	cases := []struct {
		name   string
		xs, ws []int
		a      ops.ConvAttrs
	}{
		{"lenet conv1", []int{9, 1, 28, 28}, []int{6, 1, 5, 5}, ops.ConvAttrs{}},
		{"lenet conv2", []int{9, 6, 12, 12}, []int{16, 6, 5, 5}, ops.ConvAttrs{}},
		{"1 channel padded", []int{2, 1, 7, 9}, []int{3, 1, 3, 3}, ops.ConvAttrs{Pads: [4]int{1, 2, 0, 1}}},
		{"odd pads", []int{3, 3, 7, 5}, []int{5, 3, 3, 2}, ops.ConvAttrs{Pads: [4]int{2, 0, 1, 3}}},
		{"1x1", []int{2, 5, 4, 3}, []int{7, 5, 1, 1}, ops.ConvAttrs{}},
		{"dilated", []int{2, 2, 9, 8}, []int{3, 2, 3, 2}, ops.ConvAttrs{Dilation: [2]int{2, 3}, Pads: [4]int{1, 1, 2, 0}}},
		{"groups", []int{3, 4, 6, 7}, []int{6, 2, 3, 3}, ops.ConvAttrs{Groups: 2, Pads: [4]int{1, 1, 1, 1}}},
		{"depthwise", []int{2, 3, 5, 5}, []int{3, 1, 3, 3}, ops.ConvAttrs{Groups: 3, Pads: [4]int{1, 1, 1, 1}}},
		{"stride2", []int{2, 3, 9, 8}, []int{4, 3, 3, 3}, ops.ConvAttrs{Stride: [2]int{2, 2}, Pads: [4]int{1, 0, 1, 1}}},
		{"stride (1,2)", []int{2, 2, 6, 9}, []int{2, 2, 2, 3}, ops.ConvAttrs{Stride: [2]int{1, 2}}},
		{"stride (2,1) dilated groups", []int{2, 4, 9, 8}, []int{4, 2, 3, 3}, ops.ConvAttrs{Stride: [2]int{2, 1}, Pads: [4]int{2, 2, 2, 2}, Dilation: [2]int{2, 2}, Groups: 2}},
		{"kernel past the image", []int{1, 2, 3, 3}, []int{2, 2, 5, 5}, ops.ConvAttrs{Pads: [4]int{1, 1, 1, 1}}},
		{"one row", []int{2, 2, 1, 13}, []int{3, 2, 1, 4}, ops.ConvAttrs{Pads: [4]int{0, 0, 1, 2}, Dilation: [2]int{1, 2}}},
	}
	for ci, c := range cases {
		a := c.a
		for k := range 2 {
			a.Stride[k] = max(a.Stride[k], 1)
			a.Dilation[k] = max(a.Dilation[k], 1)
		}
		a.Groups = max(a.Groups, 1)
		r := rand.New(rand.NewPCG(uint64(ci), 11))
		rnd := func(n int) []float64 {
			v := make([]float64, n)
			for i := range v {
				v[i] = r.Float64()*2 - 1
			}
			return v
		}
		x, w := rnd(tensor.Shape(c.xs).Size()), rnd(tensor.Shape(c.ws).Size())
		oh := (c.xs[2]+a.Pads[0]+a.Pads[1]-(c.ws[2]-1)*a.Dilation[0]-1)/a.Stride[0] + 1
		ow := (c.xs[3]+a.Pads[2]+a.Pads[3]-(c.ws[3]-1)*a.Dilation[1]-1)/a.Stride[1] + 1
		yshape := []int{c.xs[0], c.ws[0], oh, ow}
		dy := rnd(tensor.Shape(yshape).Size())
		wantY, wantDx, wantDw := naiveConvAll(c.xs, c.ws, x, w, dy, a)
		for _, dt := range []string{"float32", "float64"} {
			t.Run(fmt.Sprintf("%s/%s", c.name, dt), func(t *testing.T) {
				tol := 1e-12
				mk := func(v []float64, shape []int) *tensor.Tensor { return tensor.FromSlice(v, shape...) }
				if dt == "float32" {
					tol = 2e-5
					mk = func(v []float64, shape []int) *tensor.Tensor {
						f := make([]float32, len(v))
						for i, e := range v {
							f[i] = float32(e)
						}
						return tensor.FromSlice(f, shape...)
					}
				}
				xt, wt, dyt := mk(x, c.xs), mk(w, c.ws), mk(dy, yshape)
				check := func(what string, got *tensor.Tensor, shape []int, want []float64) {
					t.Helper()
					if !got.Shape().Equal(shape) {
						t.Fatalf("%s: shape %v, want %v", what, got.Shape(), shape)
					}
					for i, g := range got.Float64s() {
						if math.Abs(g-want[i]) > tol*(1+math.Abs(want[i]))*float64(c.ws[1]*c.ws[2]*c.ws[3]) {
							t.Fatalf("%s: element %d = %v, want %v", what, i, g, want[i])
						}
					}
				}
				check("Conv2D", applyConv(xt, wt, a), yshape, wantY)
				check("Conv2DBackpropInput", ops.Conv2DBackpropInput(dyt, wt, ops.ConvGradAttrs{ConvAttrs: a, Shape: c.xs}), c.xs, wantDx)
				check("Conv2DBackpropFilter", ops.Conv2DBackpropFilter(xt, dyt, ops.ConvGradAttrs{ConvAttrs: a, Shape: c.ws}), c.ws, wantDw)
			})
		}
	}
}

// applyConv runs Conv2D with resolved attributes.
func applyConv(x, w *tensor.Tensor, a ops.ConvAttrs) *tensor.Tensor {
	return ops.Conv2D(x, w, ops.Conv2DOpts{Stride: a.Stride, Dilation: a.Dilation, Groups: a.Groups,
		Padding: ops.ExplicitPad(a.Pads[0], a.Pads[1], a.Pads[2], a.Pads[3])})
}
