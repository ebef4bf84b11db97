package compile_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/compile"
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/testkit"
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

// Convolution chains fuse into one pooled-convolution Anchor whose result is the
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
				fused := countFixed(after, convPoolSpec)
				// A float32 convolution with no pooling to absorb is left
				// to the anchor pass (TestConvEpilogueBatchNormAvgPool
				// runs both).
				pooled := c.chain.pool && !c.poolPad
				if want := map[bool]int{true: 1, false: 0}[c.fused && (pooled || dt != tensor.Float32)]; fused != want {
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

// ReLUGrad(a, MaxPool2DGrad(a, dy)) fuses into a pooled-gradient Anchor with the
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
				if n := countFixed(after, maxPoolReLUGradSpec); n != want {
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
		return ops.Sum(ops.Mul(core.Apply(compile.Anchor, fixed(t, convPoolSpec, ea), x, w, b), sens))
	}
	chain := func(x, w, b *tensor.Tensor) *tensor.Tensor {
		z := ops.Add(core.Apply(ops.Conv2DPrim, ca, x, w), b)
		return ops.Sum(ops.Mul(ops.MaxPool2D(ops.ReLU(z), pa.Kernel, pa.Stride), sens))
	}
	assertSame(t, "forward", fused(x, w, b), chain(x, w, b))
	pos := spore.GradPosition(0, 1, 2)
	got, want := spore.Grad(fused, pos)(x, w, b), spore.Grad(chain, pos)(x, w, b)
	for i := range want {
		testkit.AssertClose(t, fmt.Sprintf("gradient %d", i), got[i], want[i], 1e-12)
	}
}

// A compiled plan with fused convolutions (bias, ReLU and pooling, as in a
// LeNet-style network's inference) allocates nothing per call.
func TestConvEpilogueNoAllocs(t *testing.T) {
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
	if n := countFixed(res.Graph, convPoolSpec); n != 2 {
		t.Fatalf("%d fused convolutions, want 2:\n%s", n, res.Graph)
	}
	args := randArgs(res.Graph, 3)
	outs := []*tensor.Tensor{tensor.New(tensor.Float32, 8, 16, 4, 4)}
	res.Plan.RunInto(args, outs)
	if n := testing.AllocsPerRun(20, func() { res.Plan.RunInto(args, outs) }); n > 0 {
		t.Errorf("%v allocations per call", n)
	}
}

// An inference BatchNorm's per-channel scale and shift (ops.BatchNorm with
// training off) and an average pooling fuse into the convolution's
// epilogue too, with the unfused chain's result bit for bit; a padded
// average pooling, or a scale whose result is read elsewhere, stops the
// fusion there.
func TestConvEpilogueBatchNormAvgPool(t *testing.T) {
	cases := []struct {
		name       string
		xs, ws     []int
		opts       ops.Conv2DOpts
		bias, bn   bool
		relu       bool
		pool       string       // "", "max", "avg" or "avgpad"
		pk         [4]int       // kernel h, w, stride h, w
		shareScale bool         // the BatchNorm's scaled value is also returned
		left       []*core.Prim // of MaxPool2D, AvgPool2D and ReLU, those left unfused
		fuse       int          // fused convolutions
	}{
		{"CNN fixture conv1", []int{3, 1, 28, 28}, []int{8, 1, 3, 3}, ops.Conv2DOpts{Padding: ops.SamePad()}, true, true, true, "max", [4]int{2, 2, 2, 2}, false, nil, 1},
		{"CNN fixture conv2", []int{3, 8, 14, 14}, []int{16, 8, 3, 3}, ops.Conv2DOpts{Padding: ops.SamePad()}, true, false, true, "avg", [4]int{2, 2, 2, 2}, false, nil, 1},
		{"BN without bias or ReLU, overlapping avg", []int{2, 3, 9, 10}, []int{4, 3, 3, 3}, ops.Conv2DOpts{}, false, true, false, "avg", [4]int{3, 3, 2, 2}, false, nil, 1},
		{"BN, ReLU, groups, odd avg", []int{2, 4, 7, 9}, []int{6, 2, 3, 3}, ops.Conv2DOpts{Groups: 2, Padding: ops.SamePad()}, true, true, true, "avg", [4]int{2, 2, 2, 2}, false, nil, 1},
		{"BN then nothing", []int{2, 3, 6, 6}, []int{5, 3, 3, 3}, ops.Conv2DOpts{Dilation: [2]int{2, 1}}, true, true, false, "", [4]int{}, false, nil, 1},
		{"batch 1", []int{1, 8, 14, 14}, []int{16, 8, 3, 3}, ops.Conv2DOpts{Padding: ops.SamePad()}, true, true, true, "max", [4]int{2, 2, 2, 2}, false, nil, 1},
		{"batch 1, no pooling", []int{1, 4, 12, 12}, []int{12, 4, 3, 3}, ops.Conv2DOpts{Padding: ops.SamePad()}, true, true, true, "", [4]int{}, false, nil, 1},
		{"padded avg pool stays", []int{2, 3, 8, 8}, []int{4, 3, 3, 3}, ops.Conv2DOpts{}, true, true, true, "avgpad", [4]int{3, 3, 2, 2}, false, []*core.Prim{ops.AvgPoolPrim}, 1},
		{"shared scale stops at the bias", []int{2, 3, 8, 8}, []int{4, 3, 3, 3}, ops.Conv2DOpts{}, true, true, true, "max", [4]int{2, 2, 2, 2}, true, []*core.Prim{ops.ReluPrim, ops.MaxPoolPrim}, 1},
	}
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for ci, c := range cases {
			t.Run(fmt.Sprintf("%s/%v", c.name, dt), func(t *testing.T) {
				o := c.ws[0]
				w := tensor.RandNormal(dt, 0, 1, c.ws...)
				b := tensor.RandNormal(dt, 0, 1, 1, o, 1, 1)
				gamma := tensor.RandNormal(dt, 1, 0.5, o)
				beta := tensor.RandNormal(dt, 0, 1, o)
				mean := tensor.RandNormal(dt, 0, 1, o)
				variance := ops.Abs(tensor.RandNormal(dt, 1, 0.5, o))
				build := func() *graph.Graph {
					g, err := graph.Trace("conv", []tensor.Meta{{Shape: c.xs, DType: dt}}, func(in []*tensor.Tensor) []*tensor.Tensor {
						y := ops.Conv2D(in[0], w, c.opts)
						if c.bias {
							y = ops.Add(y, b)
						}
						var scaled *tensor.Tensor
						switch {
						case c.bn && c.shareScale:
							scaled = ops.Mul(y, ops.Reshape(gamma, 1, o, 1, 1))
							y = ops.Add(scaled, ops.Reshape(beta, 1, o, 1, 1))
						case c.bn:
							y, _, _ = ops.BatchNorm(y, gamma, beta, mean, variance, false, 0.9, 1e-5)
						}
						if c.relu {
							y = ops.ReLU(y)
						}
						k, s := [2]int{c.pk[0], c.pk[1]}, [2]int{c.pk[2], c.pk[3]}
						switch c.pool {
						case "max":
							y = ops.MaxPool2D(y, k, s)
						case "avg":
							y = ops.AvgPool2D(y, k, s)
						case "avgpad":
							y = ops.AvgPool2D(y, k, s, ops.ExplicitPad(1, 1, 1, 1))
						}
						if scaled != nil {
							return []*tensor.Tensor{y, scaled}
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
				applyPasses(t, after, "convepilogue", "anchor")
				if n := countConvFusions(after); n != c.fuse {
					t.Fatalf("%d fused convolutions, want %d:\n%s", n, c.fuse, after)
				}
				for _, p := range []*core.Prim{ops.MaxPoolPrim, ops.AvgPoolPrim, ops.ReluPrim} {
					want := 0
					for _, l := range c.left {
						if l == p {
							want = 1
						}
					}
					if n := countOps(after, p); n != want {
						t.Fatalf("%d %s left, want %d:\n%s", n, p.Name, want, after)
					}
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

// With a BatchNorm's scale and shift and either pooling, the fused
// convolution's gradients with respect to every operand still match the
// unfused chain's.
func TestConvEpilogueVJPBatchNorm(t *testing.T) {
	ca := ops.ConvAttrs{Stride: [2]int{1, 1}, Dilation: [2]int{1, 1}, Groups: 1, Pads: [4]int{1, 1, 1, 1}}
	pa := ops.PoolAttrs{Kernel: [2]int{2, 2}, Stride: [2]int{2, 2}}
	for _, c := range []struct {
		name            string
		bias, relu, avg bool
	}{
		{"bias BN ReLU avg", true, true, true},
		{"bias BN ReLU max", true, true, false},
		{"BN avg", false, false, true},
		{"BN max", false, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := tensor.RandNormal(tensor.Float64, 0, 1, 2, 3, 8, 8)
			w := tensor.RandNormal(tensor.Float64, 0, 1, 4, 3, 3, 3)
			ch := func() *tensor.Tensor { return tensor.RandNormal(tensor.Float64, 0, 1, 1, 4, 1, 1) }
			b, s, sh := ch(), ch(), ch()
			sens := tensor.RandNormal(tensor.Float64, 0, 1, 2, 4, 4, 4)
			ea := ops.ConvEpilogueAttrs{Conv: ca, Bias: c.bias, Scale: true, Shift: true, ReLU: c.relu, Pool: &pa, AvgPool: c.avg}
			operands := func(x, w, b, s, sh *tensor.Tensor) []*tensor.Tensor {
				if c.bias {
					return []*tensor.Tensor{x, w, b, s, sh}
				}
				return []*tensor.Tensor{x, w, s, sh}
			}
			fused := func(x, w, b, s, sh *tensor.Tensor) *tensor.Tensor {
				return ops.Sum(ops.Mul(core.Apply(compile.Anchor, fixed(t, convPoolSpec, ea), operands(x, w, b, s, sh)...), sens))
			}
			chain := func(x, w, b, s, sh *tensor.Tensor) *tensor.Tensor {
				z := core.Apply(ops.Conv2DPrim, ca, x, w)
				if c.bias {
					z = ops.Add(z, b)
				}
				z = ops.Add(ops.Mul(z, s), sh)
				if c.relu {
					z = ops.ReLU(z)
				}
				if c.avg {
					z = ops.AvgPool2D(z, pa.Kernel, pa.Stride)
				} else {
					z = ops.MaxPool2D(z, pa.Kernel, pa.Stride)
				}
				return ops.Sum(ops.Mul(z, sens))
			}
			assertSame(t, "forward", fused(x, w, b, s, sh), chain(x, w, b, s, sh))
			pos := spore.GradPosition(0, 1, 2, 3, 4)
			got, want := spore.Grad(fused, pos)(x, w, b, s, sh), spore.Grad(chain, pos)(x, w, b, s, sh)
			for i := range want {
				if !c.bias && i == 2 {
					continue // b is not an operand
				}
				testkit.AssertClose(t, fmt.Sprintf("gradient %d", i), got[i], want[i], 1e-12)
			}
		})
	}
}

// The CNN fixture's shape of network — convolution, bias, inference
// BatchNorm, ReLU, max pooling, then convolution, bias, ReLU, average
// pooling — compiles to two fused convolutions and allocates nothing per
// call.
func TestConvEpilogueBatchNormNoAllocs(t *testing.T) {
	w1 := tensor.RandNormal(tensor.Float32, 0, 1, 8, 1, 3, 3)
	b1 := tensor.RandNormal(tensor.Float32, 0, 1, 1, 8, 1, 1)
	gamma, beta := tensor.RandNormal(tensor.Float32, 1, 0.2, 8), tensor.RandNormal(tensor.Float32, 0, 1, 8)
	mean, variance := tensor.RandNormal(tensor.Float32, 0, 1, 8), ops.Abs(tensor.RandNormal(tensor.Float32, 1, 0.2, 8))
	w2 := tensor.RandNormal(tensor.Float32, 0, 1, 16, 8, 3, 3)
	b2 := tensor.RandNormal(tensor.Float32, 0, 1, 1, 16, 1, 1)
	same := ops.Conv2DOpts{Padding: ops.SamePad()}
	g, err := graph.Trace("cnn", []tensor.Meta{f32(4, 1, 28, 28)}, func(in []*tensor.Tensor) []*tensor.Tensor {
		y, _, _ := ops.BatchNorm(ops.Add(ops.Conv2D(in[0], w1, same), b1), gamma, beta, mean, variance, false, 0.9, 1e-5)
		y = ops.MaxPool2D(ops.ReLU(y), [2]int{2, 2}, [2]int{2, 2})
		y = ops.AvgPool2D(ops.ReLU(ops.Add(ops.Conv2D(y, w2, same), b2)), [2]int{2, 2}, [2]int{2, 2})
		return []*tensor.Tensor{y}
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := compile.Run(g, compile.Options{Level: compile.O1})
	if err != nil {
		t.Fatal(err)
	}
	if n := countFixed(res.Graph, convPoolSpec); n != 2 {
		t.Fatalf("%d fused convolutions, want 2:\n%s", n, res.Graph)
	}
	args := randArgs(res.Graph, 3)
	outs := []*tensor.Tensor{tensor.New(tensor.Float32, 4, 16, 7, 7)}
	res.Plan.RunInto(args, outs)
	if n := testing.AllocsPerRun(20, func() { res.Plan.RunInto(args, outs) }); n > 0 {
		t.Errorf("%v allocations per call", n)
	}
}

// countConvFusions counts the convolutions of g fused with what follows
// them: by convepilogue's pooled step, or, where no pooling follows a
// float32 convolution, by the anchor pass's epilogue program.
func countConvFusions(g *graph.Graph) int {
	n := countFixed(g, convPoolSpec)
	for _, v := range g.Values {
		if a, ok := v.Attrs.(*compile.AnchorAttrs); ok && v.Prim == compile.Anchor && a.Fused == nil && a.Op == ops.Conv2DPrim {
			n++
		}
	}
	return n
}
