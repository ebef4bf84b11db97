package compile_test

import (
	"testing"
	"time"

	"github.com/sporeml/spore/compile"
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// BenchmarkAnchor compares, side by side in one run, the anchor fusion
// with what the graph got without it: the bespoke fused primitives where
// they apply (bespoke: the pooled convolution Anchor (ConvEpilogue) of stride-1
// convolutions) and with no epilogue fusion at all (plain: loop fusion
// only), on the seed MLP, LeNet's second convolution, ResNet-style
// convolutions with BatchNorm and ReLU and a ViT dense layer with GELU.
//
//	go test -run NONE -bench Anchor -benchtime=100x ./compile
func BenchmarkAnchor(b *testing.B) {
	conv := func(xs []int, w *tensor.Tensor, opts ops.Conv2DOpts, tail func(*tensor.Tensor) *tensor.Tensor) func() (*graph.Graph, []*tensor.Tensor) {
		return func() (*graph.Graph, []*tensor.Tensor) {
			g, err := graph.Trace("conv", []tensor.Meta{f32(xs...)}, func(in []*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{tail(ops.Conv2D(in[0], w, opts))}
			})
			if err != nil {
				b.Fatal(err)
			}
			return g, []*tensor.Tensor{tensor.RandNormal(tensor.Float32, 0, 1, xs...)}
		}
	}
	// momentum is SGD momentum's buffer update of a 784×512 weight from
	// its gradient Xᵀ·dY over a batch of k, as the seed network's first
	// layer computes it (gemmmomentum fuses k ≤ 64 only).
	momentum := func(k int) func() (*graph.Graph, []*tensor.Tensor) {
		return func() (*graph.Graph, []*tensor.Tensor) {
			buf := tensor.NewParameter("accum.w", tensor.RandNormal(tensor.Float32, 0, 0.01, 784, 512))
			mu := tensor.Scalar(float32(0.9))
			g, err := graph.Trace("momentum", []tensor.Meta{f32(k, 784), f32(k, 512)}, func(in []*tensor.Tensor) []*tensor.Tensor {
				nb := ops.FlushSubnormal(ops.Add(ops.Mul(buf, mu), ops.MatMulT(in[0], in[1], true, false)))
				buf.Assign(nb)
				return []*tensor.Tensor{ops.Sum(nb)}
			})
			if err != nil {
				b.Fatal(err)
			}
			return g, []*tensor.Tensor{tensor.RandNormal(tensor.Float32, 0, 1, k, 784), tensor.RandNormal(tensor.Float32, 0, 1, k, 512)}
		}
	}
	lenetW, lenetB := tensor.RandNormal(tensor.Float32, 0, 0.2, 16, 6, 5, 5), perChannel(16)
	resW, bnS, bnT := tensor.RandNormal(tensor.Float32, 0, 0.1, 128, 64, 3, 3), perChannel(128), perChannel(128)
	res1W, bn1S, bn1T := tensor.RandNormal(tensor.Float32, 0, 0.1, 64, 64, 3, 3), perChannel(64), perChannel(64)
	effW, effB := tensor.RandNormal(tensor.Float32, 0, 0.1, 144, 96, 1, 1), perChannel(144)
	dwW, dwB := tensor.RandNormal(tensor.Float32, 0, 0.1, 96, 1, 3, 3), perChannel(96)
	vitW, vitB := tensor.RandNormal(tensor.Float32, 0, 0.05, 192, 768), tensor.RandNormal(tensor.Float32, 0, 0.1, 768)
	cases := []struct {
		name  string
		build func() (*graph.Graph, []*tensor.Tensor)
		// without is the pass the comparison disables to run the graph
		// as it was compiled before anchor fusion (or anchor itself).
		base, without string
	}{
		{"mlp infer b64", func() (*graph.Graph, []*tensor.Tensor) {
			args := mlpInputs(64)
			return traceMLP(b, newMLP(), false, args), args[:1]
		}, "plain", "anchor"},
		{"mlp train b64", func() (*graph.Graph, []*tensor.Tensor) {
			args := mlpInputs(64)
			return traceMLP(b, newMLP(), true, args), args
		}, "plain", "anchor"},
		{"lenet conv2 b64 bias relu pool", conv([]int{64, 6, 12, 12}, lenetW, ops.Conv2DOpts{}, func(y *tensor.Tensor) *tensor.Tensor {
			return ops.MaxPool2D(ops.ReLU(ops.Add(y, lenetB)), [2]int{2, 2}, [2]int{2, 2})
		}), "bespoke", "convepilogue"},
		{"resnet stride-2 conv BN ReLU b4", conv([]int{4, 64, 56, 56}, resW, ops.Conv2DOpts{Stride: [2]int{2, 2}, Padding: ops.ExplicitPad(1, 1, 1, 1)}, func(y *tensor.Tensor) *tensor.Tensor {
			return ops.ReLU(ops.Add(ops.Mul(y, bnS), bnT))
		}), "plain", "anchor"},
		{"resnet conv BN ReLU b4", conv([]int{4, 64, 56, 56}, res1W, ops.Conv2DOpts{Padding: ops.SamePad()}, func(y *tensor.Tensor) *tensor.Tensor {
			return ops.ReLU(ops.Add(ops.Mul(y, bn1S), bn1T))
		}), "bespoke", "convepilogue"},
		{"effnet 1x1 conv bias SiLU b1", conv([]int{1, 96, 56, 56}, effW, ops.Conv2DOpts{}, func(y *tensor.Tensor) *tensor.Tensor {
			y = ops.Add(y, effB)
			return ops.Mul(y, ops.Sigmoid(y))
		}), "bespoke", "convepilogue"},
		{"effnet depthwise conv bias SiLU b1", conv([]int{1, 96, 56, 56}, dwW, ops.Conv2DOpts{Groups: 96, Padding: ops.SamePad()}, func(y *tensor.Tensor) *tensor.Tensor {
			y = ops.Add(y, dwB)
			return ops.Mul(y, ops.Sigmoid(y))
		}), "bespoke", "convepilogue"},
		{"resnet conv bias residual ReLU b1", func() (*graph.Graph, []*tensor.Tensor) {
			g, err := graph.Trace("block", []tensor.Meta{f32(1, 64, 56, 56)}, func(in []*tensor.Tensor) []*tensor.Tensor {
				y := ops.Add(ops.Conv2D(in[0], res1W, ops.Conv2DOpts{Padding: ops.SamePad()}), bn1T)
				return []*tensor.Tensor{ops.ReLU(ops.Add(y, in[0]))}
			})
			if err != nil {
				b.Fatal(err)
			}
			return g, []*tensor.Tensor{tensor.RandNormal(tensor.Float32, 0, 1, 1, 64, 56, 56)}
		}, "bespoke", "convepilogue"},
		{"momentum 784x512 weight gradient k128", momentum(128), "plain", "anchor"},
		{"momentum 784x512 weight gradient k256", momentum(256), "plain", "anchor"},
		{"vit mlp dense GELU b2", func() (*graph.Graph, []*tensor.Tensor) {
			g, err := graph.Trace("dense", []tensor.Meta{f32(2, 197, 192)}, func(in []*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{ops.GELU(ops.Add(ops.MatMul(in[0], vitW), vitB))}
			})
			if err != nil {
				b.Fatal(err)
			}
			return g, []*tensor.Tensor{tensor.RandNormal(tensor.Float32, 0, 1, 2, 197, 192)}
		}, "plain", "anchor"},
	}
	for _, c := range cases {
		sides := []string{"plain", "anchor"}
		if c.base != "plain" {
			sides = []string{"plain", c.base, "anchor"}
		}
		b.Run(c.name, func(b *testing.B) {
			// Each side's plan, run in turn so that a busy machine slows
			// them alike; each side's best time is reported, and its ratio
			// to the first side's.
			type plan struct {
				run  func()
				best time.Duration
			}
			var plans []*plan
			for _, side := range sides {
				g, args := c.build()
				opt := compile.Options{Level: compile.O1}
				switch {
				case side == "plain":
					opt.Disable = []string{"anchor", c.without}
				case side != "anchor":
					opt.Disable = []string{"anchor"}
				case c.without != "anchor":
					opt.Disable = []string{c.without}
				}
				res, err := compile.Run(g, opt)
				if err != nil {
					b.Fatal(err)
				}
				outs := make([]*tensor.Tensor, len(res.Graph.Outputs))
				for i, o := range res.Graph.Outputs {
					outs[i] = tensor.New(o.Meta.DType, o.Meta.Shape...)
				}
				plans = append(plans, &plan{run: func() { res.Plan.RunInto(args, outs) }, best: time.Hour})
			}
			for r := 0; b.Loop(); r++ {
				for k := range plans { // rotated, so no side always runs first
					p := plans[(r+k)%len(plans)]
					t0 := time.Now()
					p.run()
					p.best = min(p.best, time.Since(t0))
				}
			}
			for i, p := range plans {
				b.ReportMetric(float64(p.best.Microseconds()), sides[i]+"-µs")
				if i > 0 {
					b.ReportMetric(float64(p.best)/float64(plans[0].best), sides[i]+"/plain")
				}
			}
		})
	}
}
