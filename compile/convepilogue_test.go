package compile_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/compile"
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// assertSame fails unless got and want are equal element for element (NaN
// matching NaN): the fused kernels do the unfused chain's arithmetic.
func assertSame(t *testing.T, what string, got, want *tensor.Tensor) {
	t.Helper()
	if !got.Shape().Equal(want.Shape()) || got.DType() != want.DType() {
		t.Fatalf("%s: got %v %v, want %v %v", what, got.DType(), got.Shape(), want.DType(), want.Shape())
	}
	g, w := got.Float64s(), want.Float64s()
	for i := range w {
		if g[i] != w[i] && !(math.IsNaN(g[i]) && math.IsNaN(w[i])) {
			t.Fatalf("%s: element %d: got %v, want %v", what, i, g[i], w[i])
		}
	}
}

// Convolution chains fuse into one Conv2DBiasReLUPool whose result is the
// unfused chain's exactly, in float32 and float64, with and without bias,
// ReLU and pooling, over padding, dilation and groups; chains that must not
// fuse (a shared intermediate, a stride, a padded pooling) are left alone.
func TestConvEpilogue(t *testing.T) {
	type chain struct{ bias, relu, pool bool }
	cases := []struct {
		name      string
		xs, ws    []int
		opts      ops.Conv2DOpts
		chain     chain
		pool      [4]int // kernel h, w, stride h, w
		poolPad   bool
		shareConv bool // the convolution's output is also returned
		fused     bool
	}{
		{"lenet conv1", []int{3, 1, 28, 28}, []int{6, 1, 5, 5}, ops.Conv2DOpts{}, chain{false, true, true}, [4]int{2, 2, 2, 2}, false, false, true},
		{"lenet conv2 bias", []int{3, 6, 12, 12}, []int{16, 6, 5, 5}, ops.Conv2DOpts{}, chain{true, true, true}, [4]int{2, 2, 2, 2}, false, false, true},
		{"relu only", []int{2, 3, 7, 6}, []int{4, 3, 3, 3}, ops.Conv2DOpts{Padding: ops.ExplicitPad(1, 0, 2, 1)}, chain{false, true, false}, [4]int{}, false, false, true},
		{"bias only, groups", []int{2, 4, 6, 6}, []int{6, 2, 3, 3}, ops.Conv2DOpts{Groups: 2, Padding: ops.SamePad()}, chain{true, false, false}, [4]int{}, false, false, true},
		{"pool only, dilated", []int{2, 2, 9, 9}, []int{3, 2, 3, 3}, ops.Conv2DOpts{Dilation: [2]int{2, 2}}, chain{false, false, true}, [4]int{3, 2, 2, 1}, false, false, true},
		{"overlapping pool odd plane", []int{1, 2, 8, 9}, []int{5, 2, 2, 2}, ops.Conv2DOpts{}, chain{true, true, true}, [4]int{3, 3, 2, 2}, false, false, true},
		{"strided conv", []int{2, 3, 9, 9}, []int{4, 3, 3, 3}, ops.Conv2DOpts{Stride: [2]int{2, 2}}, chain{false, true, true}, [4]int{2, 2, 2, 2}, false, false, false},
		{"shared conv output", []int{2, 3, 8, 8}, []int{4, 3, 3, 3}, ops.Conv2DOpts{}, chain{false, true, false}, [4]int{}, false, true, false},
		{"padded pool stops at ReLU", []int{2, 3, 8, 8}, []int{4, 3, 3, 3}, ops.Conv2DOpts{}, chain{false, true, true}, [4]int{3, 3, 2, 2}, true, false, true},
	}
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for ci, c := range cases {
			t.Run(fmt.Sprintf("%s/%v", c.name, dt), func(t *testing.T) {
				w := tensor.RandNormal(dt, 0, 1, c.ws...)
				b := tensor.RandNormal(dt, 0, 1, 1, c.ws[0], 1, 1)
				build := func() *graph.Graph {
					g, err := graph.Trace("conv", []tensor.Meta{{Shape: c.xs, DType: dt}}, func(in []*tensor.Tensor) []*tensor.Tensor {
						conv := ops.Conv2D(in[0], w, c.opts)
						y := conv
						if c.chain.bias {
							y = ops.Add(b, y) // either operand order
						}
						if c.chain.relu {
							y = ops.ReLU(y)
						}
						if c.chain.pool {
							var pad []ops.Padding
							if c.poolPad {
								pad = append(pad, ops.ExplicitPad(1, 1, 1, 1))
							}
							y = ops.MaxPool2D(y, [2]int{c.pool[0], c.pool[1]}, [2]int{c.pool[2], c.pool[3]}, pad...)
						}
						if c.shareConv {
							return []*tensor.Tensor{y, conv}
						}
						return []*tensor.Tensor{y}
					})
					if err != nil {
						t.Fatal(err)
					}
					return g
				}
				before, after := build(), build()
				before.CountUses()
				applyPasses(t, after, "convepilogue")
				fused := countOps(after, compile.Conv2DBiasReLUPool)
				if want := map[bool]int{true: 1, false: 0}[c.fused]; fused != want {
					t.Fatalf("%d fused convolutions, want %d:\n%s", fused, want, after)
				}
				if c.fused && c.chain.pool && !c.poolPad && countOps(after, ops.MaxPoolPrim) != 0 {
					t.Fatalf("the pooling was not fused:\n%s", after)
				}
				if c.poolPad && countOps(after, ops.MaxPoolPrim) != 1 {
					t.Fatalf("a padded pooling was fused:\n%s", after)
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

// ReLUGrad(a, MaxPool2DGrad(a, dy)) fuses into MaxPool2DReLUGrad with the
// same result, bit for bit, on inputs where many windows' winners are
// zero or negative; a pooling gradient read elsewhere is left alone.
func TestMaxPoolReLUGradFusion(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for _, shared := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/shared=%v", dt, shared), func(t *testing.T) {
				pa := ops.PoolAttrs{Kernel: [2]int{2, 2}, Stride: [2]int{2, 2}}
				build := func() *graph.Graph {
					metas := []tensor.Meta{{Shape: tensor.Shape{2, 3, 8, 7}, DType: dt}, {Shape: tensor.Shape{2, 3, 4, 3}, DType: dt}}
					g, err := graph.Trace("pool", metas, func(in []*tensor.Tensor) []*tensor.Tensor {
						a := ops.ReLU(in[0])
						mg := core.Apply(ops.MaxPoolGradPrim, pa, a, in[1])
						out := []*tensor.Tensor{core.Apply(ops.ReluGradPrim, nil, a, mg)}
						if shared {
							out = append(out, mg)
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
				applyPasses(t, after, "convepilogue")
				want := 1
				if shared {
					want = 0
				}
				if n := countOps(after, compile.MaxPool2DReLUGrad); n != want {
					t.Fatalf("%d fused pooling gradients, want %d:\n%s", n, want, after)
				}
				args := randArgs(before, 7)
				w, g := runGraph(t, before, args), runGraph(t, after, args)
				for i := range w {
					assertSame(t, fmt.Sprintf("output %d", i), g[i], w[i])
				}
			})
		}
	}
}

// The fused convolution's VJP is the unfused chain's: its gradients with
// respect to the input, the filter and the bias match those of the chain
// differentiated op by op, within rounding.
func TestConvEpilogueVJP(t *testing.T) {
	x := tensor.RandNormal(tensor.Float64, 0, 1, 2, 3, 8, 8)
	w := tensor.RandNormal(tensor.Float64, 0, 1, 4, 3, 3, 3)
	b := tensor.RandNormal(tensor.Float64, 0, 1, 1, 4, 1, 1)
	ca := ops.ConvAttrs{Stride: [2]int{1, 1}, Dilation: [2]int{1, 1}, Groups: 1, Pads: [4]int{1, 1, 1, 1}}
	pa := ops.PoolAttrs{Kernel: [2]int{2, 2}, Stride: [2]int{2, 2}}
	ea := ops.ConvEpilogueAttrs{Conv: ca, Bias: true, ReLU: true, Pool: &pa}
	sens := tensor.RandNormal(tensor.Float64, 0, 1, 2, 4, 4, 4)
	fused := func(x, w, b *tensor.Tensor) *tensor.Tensor {
		return ops.Sum(ops.Mul(core.Apply(compile.Conv2DBiasReLUPool, ea, x, w, b), sens))
	}
	chain := func(x, w, b *tensor.Tensor) *tensor.Tensor {
		z := ops.Add(core.Apply(ops.Conv2DPrim, ca, x, w), b)
		return ops.Sum(ops.Mul(ops.MaxPool2D(ops.ReLU(z), pa.Kernel, pa.Stride), sens))
	}
	assertSame(t, "forward", fused(x, w, b), chain(x, w, b))
	pos := spore.GradPosition(0, 1, 2)
	got, want := spore.Grad(fused, pos)(x, w, b), spore.Grad(chain, pos)(x, w, b)
	for i := range want {
		assertClose(t, fmt.Sprintf("gradient %d", i), got[i], want[i], 1e-12)
	}
}

// A compiled plan with fused convolutions (bias, ReLU and pooling, as in a
// LeNet-style network's inference) allocates nothing per call.
func TestConvEpilogueNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	w1 := tensor.RandNormal(tensor.Float32, 0, 1, 6, 1, 5, 5)
	w2 := tensor.RandNormal(tensor.Float32, 0, 1, 16, 6, 5, 5)
	b2 := tensor.RandNormal(tensor.Float32, 0, 1, 1, 16, 1, 1)
	g, err := graph.Trace("lenet", []tensor.Meta{f32(8, 1, 28, 28)}, func(in []*tensor.Tensor) []*tensor.Tensor {
		y := ops.MaxPool2D(ops.ReLU(ops.Conv2D(in[0], w1, ops.Conv2DOpts{})), [2]int{2, 2}, [2]int{2, 2})
		y = ops.MaxPool2D(ops.ReLU(ops.Add(ops.Conv2D(y, w2, ops.Conv2DOpts{}), b2)), [2]int{2, 2}, [2]int{2, 2})
		return []*tensor.Tensor{y}
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := compile.Run(g, compile.Options{Level: compile.O1})
	if err != nil {
		t.Fatal(err)
	}
	if n := countOps(res.Graph, compile.Conv2DBiasReLUPool); n != 2 {
		t.Fatalf("%d fused convolutions, want 2:\n%s", n, res.Graph)
	}
	args := randArgs(res.Graph, 3)
	outs := []*tensor.Tensor{tensor.New(tensor.Float32, 8, 16, 4, 4)}
	res.Plan.RunInto(args, outs)
	if n := testing.AllocsPerRun(20, func() { res.Plan.RunInto(args, outs) }); n > 0 {
		t.Errorf("%v allocations per call", n)
	}
}
