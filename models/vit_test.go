package models_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/models"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/tensor"
)

func ExampleNewViT() {
	spore.SetSeed(1)
	net := models.NewViT(10)
	fmt.Println(net.Call(models.Ones(2)).Shape())
	c := net.Config
	fmt.Printf("%d×%d patches of %d×%d, dim %d, depth %d, %d heads\n", 28/c.PatchSize, 28/c.PatchSize, c.PatchSize, c.PatchSize, c.Dim, c.Depth, c.Heads)
	// Output:
	// [2 10]
	// 4×4 patches of 7×7, dim 64, depth 4, 4 heads
}

// randImages returns n [1, 28, 28] images with pixels drawn from the
// framework seed.
func randImages(n int) *spore.Tensor {
	return spore.RandNormal(spore.Float32, 0, 1, n, 1, 28, 28)
}

func TestViTShapesAndNames(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  models.ViTConfig
	}{
		{"defaults", models.ViTConfig{}},
		{"patch 4, depth 1", models.ViTConfig{PatchSize: 4, Dim: 32, Depth: 1, Heads: 2, MLPDim: 48}},
	} {
		t.Run(c.name, func(t *testing.T) {
			spore.SetSeed(1)
			net := models.NewViT(10, c.cfg)
			cfg := net.Config
			if got := net.Call(randImages(3)).Shape(); !got.Equal(spore.Shape{3, 10}) {
				t.Fatalf("output %v, want [3 10]", got)
			}
			d, m, p := cfg.Dim, cfg.MLPDim, cfg.PatchSize
			tokens := (28/p)*(28/p) + 1
			perLayer := 3*d*d + 3*d + d*d + d + // attention: packed in-projection, out-projection
				m*d + m + d*m + d + // feed-forward
				4*d // two layer norms
			want := p*p*d + d + d + tokens*d + cfg.Depth*perLayer + 2*d + d*10 + 10
			n := 0
			names := map[string]bool{}
			for _, np := range net.NamedParameters() {
				n += np.Tensor.Size()
				names[np.Name] = true
			}
			if n != want {
				t.Errorf("%d parameters, want %d", n, want)
			}
			for _, name := range []string{"patch_embed.weight", "cls_token", "pos_embed.embedding_table",
				"encoder.layers.0.self_attn.in_proj_weight", "encoder.norm.gamma", "head.bias"} {
				if !names[name] {
					t.Errorf("no parameter %s among %v", name, names)
				}
			}
		})
	}
}

// The patch embedding, a reshape and one GEMM, is the strided convolution
// of the usual ViT code with the same weights.
func TestViTPatchEmbedIsConv(t *testing.T) {
	spore.SetSeed(2)
	net := models.NewViT(10)
	p, d := net.Config.PatchSize, net.Config.Dim
	conv := nn.NewConv2d(1, d, p, nn.Conv2dConfig{Stride: p, PadMode: "valid", HasBias: true})
	conv.Weight.Assign(ops.Reshape(net.PatchEmbed.Weight, d, 1, p, p))
	conv.Bias.Assign(net.PatchEmbed.Bias)
	x := randImages(2)
	// Conv2d: [2, d, 4, 4] → tokens [2, 16, d].
	want := ops.Transpose(ops.Reshape(conv.Call(x), 2, d, 16), 0, 2, 1)
	g := 28 / p
	got := ops.Reshape(ops.Transpose(ops.Reshape(x, 2, 1, g, p, g, p), 0, 2, 4, 1, 3, 5), 2*g*g, p*p)
	got = ops.Reshape(net.PatchEmbed.Call(got), 2, g*g, d)
	if diff := maxAbsDiff(got, want); diff > 1e-5 {
		t.Fatalf("patch embedding differs from the strided convolution by %g", diff)
	}
}

// A few AdamW training steps on one batch: both modes give the same
// losses and the loss falls.
func TestViTTrainsSameInBothModes(t *testing.T) {
	var losses [2][]float64
	for i, mode := range []nn.StepMode{nn.StepEager, nn.StepCompiled} {
		spore.SetSeed(3)
		net := models.NewViT(10, models.ViTConfig{Dim: 32, Depth: 2, Heads: 2})
		x := randImages(16)
		y := tensor.FromSlice([]int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5}, 16)
		opt := optim.NewAdamW(net.TrainableParameters(), optim.AdamConfig{Common: optim.Common{LR: optim.Constant(3e-3)}})
		step := nn.NewTrainOneStepCell(nn.NewWithLossCell(net, nn.NewSoftmaxCrossEntropyWithLogits(true, nn.Mean)), opt, nn.TrainOneStepConfig{Mode: mode})
		for range 8 {
			losses[i] = append(losses[i], step.Step(x, y))
		}
	}
	for s := range losses[0] {
		if d := math.Abs(losses[0][s] - losses[1][s]); d > 1e-4*math.Max(1, math.Abs(losses[0][s])) {
			t.Errorf("step %d: PyNative loss %v, Graph %v", s, losses[0][s], losses[1][s])
		}
	}
	if first, last := losses[1][0], losses[1][len(losses[1])-1]; !(last < 0.7*first) {
		t.Errorf("loss %v → %v over 8 steps on one batch; want it at least 30%% lower", first, last)
	}
}

func TestViTBadInput(t *testing.T) {
	for _, c := range []struct {
		name string
		run  func()
		want string
	}{
		{"patch does not divide", func() { models.NewViT(10, models.ViTConfig{PatchSize: 5}) }, "patch size 5 does not divide image size 28"},
		{"heads do not divide", func() { models.NewViT(10, models.ViTConfig{Dim: 30, Heads: 4}) }, "4 heads do not divide dim 30"},
		{"negative size", func() { models.NewViT(10, models.ViTConfig{Depth: -1}) }, "sizes must be positive"},
		{"no classes", func() { models.NewViT(0) }, "classes must be positive"},
		{"wrong image size", func() { models.NewViT(10).Call(tensor.Ones(spore.Float32, 2, 1, 16, 16)) }, "input [2 1 16 16] is not [N, 1, 28, 28]"},
		{"no channel axis", func() { models.NewViT(10).Call(tensor.Ones(spore.Float32, 2, 28, 28)) }, "input [2 28 28] is not [N, 1, 28, 28]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil {
					t.Fatalf("no panic, want %q", c.want)
				}
				if msg := fmt.Sprint(r); !strings.Contains(msg, c.want) {
					t.Fatalf("panic %q, want it to contain %q", msg, c.want)
				}
			}()
			c.run()
		})
	}
}

func maxAbsDiff(a, b *spore.Tensor) float64 {
	x, y := a.Float64s(), b.Float64s()
	m := 0.0
	for i := range x {
		m = math.Max(m, math.Abs(x[i]-y[i]))
	}
	return m
}

// BenchmarkViTTrainStep times one training step of the CLI's default ViT
// (forward, cross-entropy, backward, AdamW update) on a batch of 128, in
// PyNative mode and compiled (Graph mode), as bench/vit.sh compares with
// PyTorch. Compare the two within one run.
func BenchmarkViTTrainStep(b *testing.B) {
	for _, m := range []struct {
		name string
		mode nn.StepMode
	}{{"PyNative", nn.StepEager}, {"Graph", nn.StepCompiled}} {
		b.Run(m.name, func(b *testing.B) {
			spore.SetSeed(1)
			net := models.NewViT(10)
			x := randImages(128)
			labels := make([]int32, 128)
			for i := range labels {
				labels[i] = int32(i % 10)
			}
			y := tensor.FromSlice(labels, 128)
			opt := optim.NewAdamW(net.TrainableParameters(), optim.AdamConfig{Common: optim.Common{LR: optim.Constant(1e-3)}})
			step := nn.NewTrainOneStepCell(nn.NewWithLossCell(net, nn.NewSoftmaxCrossEntropyWithLogits(true, nn.Mean)), opt, nn.TrainOneStepConfig{Mode: m.mode})
			step.Step(x, y)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				step.Step(x, y)
			}
		})
	}
}
