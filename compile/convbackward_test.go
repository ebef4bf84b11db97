package compile_test

import (
	"fmt"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/compile"
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// The gradient of a ReLU and a max pooling moves into the gradients of the
// stride-1 convolution before them, with the unfused graph's results bit
// for bit, in float32 and float64, over padding, dilation, groups and
// planes that the windows do not cover; overlapping windows, strided
// convolutions and a pooling gradient read elsewhere are left alone.
func TestConvBackward(t *testing.T) {
	cases := []struct {
		name   string
		xs, ws []int
		a      ops.ConvAttrs // zero strides, dilations and groups mean 1
		pool   [4]int        // kernel h, w, stride h, w
		share  bool          // the pooling gradient is also returned
		fused  bool
	}{
		{"lenet conv1", []int{5, 1, 28, 28}, []int{6, 1, 5, 5}, ops.ConvAttrs{}, [4]int{2, 2, 2, 2}, false, true},
		{"lenet conv2", []int{5, 6, 12, 12}, []int{16, 6, 5, 5}, ops.ConvAttrs{}, [4]int{2, 2, 2, 2}, false, true},
		{"padded groups odd plane", []int{2, 4, 7, 9}, []int{6, 2, 3, 3}, ops.ConvAttrs{Groups: 2, Pads: [4]int{1, 0, 2, 1}}, [4]int{2, 2, 2, 2}, false, true},
		{"dilated 3x3 pool", []int{2, 2, 12, 11}, []int{3, 2, 2, 3}, ops.ConvAttrs{Dilation: [2]int{2, 1}}, [4]int{3, 3, 3, 3}, false, true},
		{"gapped pool", []int{2, 3, 10, 10}, []int{4, 3, 3, 3}, ops.ConvAttrs{Pads: [4]int{1, 1, 1, 1}}, [4]int{2, 1, 3, 2}, false, true},
		{"wide pitch", []int{2, 2, 6, 40}, []int{3, 2, 3, 3}, ops.ConvAttrs{Pads: [4]int{1, 1, 1, 1}}, [4]int{2, 2, 2, 2}, false, true},
		{"overlapping pool", []int{2, 3, 9, 9}, []int{4, 3, 2, 2}, ops.ConvAttrs{}, [4]int{3, 3, 2, 2}, false, false},
		{"strided conv", []int{2, 3, 9, 9}, []int{4, 3, 3, 3}, ops.ConvAttrs{Stride: [2]int{2, 2}}, [4]int{2, 2, 2, 2}, false, false},
		{"shared pooling gradient", []int{2, 3, 8, 8}, []int{4, 3, 3, 3}, ops.ConvAttrs{}, [4]int{2, 2, 2, 2}, true, false},
	}
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for ci, c := range cases {
			t.Run(fmt.Sprintf("%s/%v", c.name, dt), func(t *testing.T) {
				w := tensor.RandNormal(dt, 0, 1, c.ws...)
				a := c.a
				for k := range 2 {
					a.Stride[k], a.Dilation[k] = max(a.Stride[k], 1), max(a.Dilation[k], 1)
				}
				a.Groups = max(a.Groups, 1)
				pa := ops.PoolAttrs{Kernel: [2]int{c.pool[0], c.pool[1]}, Stride: [2]int{c.pool[2], c.pool[3]}}
				p := ops.MaxPool2D(core.Apply(ops.Conv2DPrim, a, tensor.Zeros(dt, c.xs...), w), pa.Kernel, pa.Stride)
				build := func() *graph.Graph {
					metas := []tensor.Meta{{Shape: c.xs, DType: dt}, {Shape: p.Shape(), DType: dt}}
					g, err := graph.Trace("convgrad", metas, func(in []*tensor.Tensor) []*tensor.Tensor {
						x, gp := in[0], in[1]
						act := ops.ReLU(core.Apply(ops.Conv2DPrim, a, x, w))
						mg := core.Apply(ops.MaxPoolGradPrim, pa, act, gp)
						dy := core.Apply(ops.ReluGradPrim, nil, act, mg)
						dx := ops.Conv2DBackpropInput(dy, w, ops.ConvGradAttrs{ConvAttrs: a, Shape: x.Shape().Clone()})
						dw := ops.Conv2DBackpropFilter(x, dy, ops.ConvGradAttrs{ConvAttrs: a, Shape: w.Shape().Clone()})
						out := []*tensor.Tensor{dx, dw}
						if c.share {
							out = append(out, dy)
						}
						return out
					})
					if err != nil {
						t.Fatal(err)
					}
					return g
				}
				before, after := build(), build()
				before.CountUses()
				applyPasses(t, after, "convepilogue", "convbackward")
				want := map[bool]int{true: 1, false: 0}[c.fused]
				if n, m := countFixed(after, convInputPoolSpec), countFixed(after, convFilterPoolSpec); n != want || m != want {
					t.Fatalf("%d fused input and %d fused filter gradients, want %d of each:\n%s", n, m, want, after)
				}
				if c.fused && countFixed(after, maxPoolReLUGradSpec) != 0 {
					t.Fatalf("the pooling gradient is left:\n%s", after)
				}
				for seed := uint64(1); seed <= 2; seed++ {
					args := randArgs(before, seed+uint64(ci))
					want, got := runGraph(t, before, args), runGraph(t, after, args)
					for i := range want {
						assertSame(t, fmt.Sprintf("seed %d output %d", seed, i), got[i], want[i])
					}
				}
			})
		}
	}
}

// The fused gradients' VJPs are the unfused chain's: the gradients of a
// scalar function of each (the transposed convolutions of a second-order
// gradient) match those of the chain differentiated op by op.
func TestConvBackwardVJP(t *testing.T) {
	a := ops.ConvAttrs{Stride: [2]int{1, 1}, Dilation: [2]int{1, 1}, Groups: 1, Pads: [4]int{1, 1, 1, 1}}
	pa := ops.PoolAttrs{Kernel: [2]int{2, 2}, Stride: [2]int{2, 2}}
	xs, ws := tensor.Shape{2, 3, 8, 8}, tensor.Shape{4, 3, 3, 3}
	x := tensor.RandNormal(tensor.Float64, 0, 1, xs...)
	w := tensor.RandNormal(tensor.Float64, 0, 1, ws...)
	act := ops.ReLU(core.Apply(ops.Conv2DPrim, a, x, w))
	gp := tensor.RandNormal(tensor.Float64, 0, 1, 2, 4, 4, 4)
	ga := ops.ConvGradPoolAttrs{Grad: ops.ConvGradAttrs{ConvAttrs: a, Shape: xs}, Pool: pa}
	fa := ops.ConvGradPoolAttrs{Grad: ops.ConvGradAttrs{ConvAttrs: a, Shape: ws}, Pool: pa}
	sx, sw := tensor.RandNormal(tensor.Float64, 0, 1, xs...), tensor.RandNormal(tensor.Float64, 0, 1, ws...)
	dy := func(gp *tensor.Tensor) *tensor.Tensor {
		return core.Apply(compile.Anchor, fixed(t, maxPoolReLUGradSpec, pa), act, gp)
	}
	cases := []struct {
		name         string
		fused, chain func(v, u *tensor.Tensor) *tensor.Tensor
		v, u         *tensor.Tensor
	}{
		{"input", func(gp, w *tensor.Tensor) *tensor.Tensor {
			return ops.Sum(ops.Mul(core.Apply(compile.Anchor, fixed(t, convInputPoolSpec, ga), act, gp, w), sx))
		}, func(gp, w *tensor.Tensor) *tensor.Tensor {
			return ops.Sum(ops.Mul(ops.Conv2DBackpropInput(dy(gp), w, ga.Grad), sx))
		}, gp, w},
		{"filter", func(x, gp *tensor.Tensor) *tensor.Tensor {
			return ops.Sum(ops.Mul(core.Apply(compile.Anchor, fixed(t, convFilterPoolSpec, fa), x, act, gp), sw))
		}, func(x, gp *tensor.Tensor) *tensor.Tensor {
			return ops.Sum(ops.Mul(ops.Conv2DBackpropFilter(x, dy(gp), fa.Grad), sw))
		}, x, gp},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assertSame(t, "value", c.fused(c.v, c.u), c.chain(c.v, c.u))
			pos := spore.GradPosition(0, 1)
			got, want := spore.Grad(c.fused, pos)(c.v, c.u), spore.Grad(c.chain, pos)(c.v, c.u)
			for i := range want {
				testkit.AssertClose(t, fmt.Sprintf("gradient %d", i), got[i], want[i], 1e-12)
			}
		})
	}
}
