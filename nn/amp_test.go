package nn_test

import (
	"math"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/tensor"
)

// ampTrain trains the blobs MLP for steps SGD steps at level in mode and
// returns the losses and the network.
func ampTrain(t *testing.T, level nn.AmpLevel, mode spore.Mode, steps int) ([]float64, *nn.SequentialCell) {
	t.Helper()
	x, y := blobs(3, 64, 8, 3)
	net, wl := tsMLP(8, 16, 3)
	if level != "" {
		nn.AutoMixedPrecision(net, level)
	}
	cell := nn.NewTrainOneStepCell(wl, optim.NewSGD(wl.TrainableParameters(), optim.SGDConfig{Common: optim.Common{LR: optim.Constant(0.01)}, Momentum: 0.9}))
	var losses []float64
	tsRunMode(mode, func() {
		for range steps {
			losses = append(losses, cell.Step(x, y))
		}
	})
	return losses, net
}

// bitsEqual reports whether two Float32 tensors hold the same bits.
func bitsEqual(a, b *tensor.Tensor) bool {
	x, y := a.Float32s(), b.Float32s()
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
			return false
		}
	}
	return true
}

// TestAutoMixedPrecisionTrains trains at each level in both modes: O0 is
// bit for bit the plain network; at O2 and O3 the parameters stay Float32,
// the optimizer moves them, the loss falls as at O0, and PyNative and
// Graph mode agree within bfloat16's tolerance.
func TestAutoMixedPrecisionTrains(t *testing.T) {
	const steps = 12
	plain, plainNet := ampTrain(t, "", spore.PyNativeMode, steps)
	for _, tc := range []struct {
		level nn.AmpLevel
		// tol bounds |PyNative − Graph| / |loss| and |level − fp32| / |loss|
		// per step: bfloat16 keeps 8 significand bits (2^-8 ≈ 0.4%).
		tol float64
	}{
		{nn.O0, 0},
		{nn.O2, 0.03},
		{nn.O3, 0.03},
	} {
		t.Run(string(tc.level), func(t *testing.T) {
			eager, eagerNet := ampTrain(t, tc.level, spore.PyNativeMode, steps)
			graph, graphNet := ampTrain(t, tc.level, spore.GraphMode, steps)
			for _, p := range append(eagerNet.Parameters(), graphNet.Parameters()...) {
				if p.DType() != tensor.Float32 {
					t.Fatalf("parameter %s is %v, want Float32 master weights", p.Name(), p.DType())
				}
			}
			worstModes, worstFP32 := 0.0, 0.0
			for k := range eager {
				worstModes = max(worstModes, math.Abs(eager[k]-graph[k])/math.Abs(eager[k]))
				worstFP32 = max(worstFP32, math.Abs(eager[k]-plain[k])/math.Abs(plain[k]))
			}
			t.Logf("loss %.4f → %.4f (fp32 %.4f → %.4f); worst relative difference PyNative/Graph %.2g, level/fp32 %.2g",
				eager[0], eager[steps-1], plain[0], plain[steps-1], worstModes, worstFP32)
			if worstModes > tc.tol || worstFP32 > tc.tol {
				t.Fatalf("losses differ beyond %g:\nfp32     %v\nPyNative %v\nGraph    %v", tc.tol, plain, eager, graph)
			}
			if eager[steps-1] > 0.5*eager[0] {
				t.Errorf("loss did not fall: %v", eager)
			}
			ps, pe := plainNet.Parameters(), eagerNet.Parameters()
			for i := range ps {
				same := bitsEqual(ps[i], pe[i])
				if tc.level == nn.O0 && !same {
					t.Errorf("O0: parameter %s differs from the plain fp32 run", ps[i].Name())
				}
				if tc.level != nn.O0 && same {
					t.Errorf("%s: parameter %s is bit for bit the fp32 run's: no bfloat16 rounding took place", tc.level, ps[i].Name())
				}
			}
		})
	}
}

// TestAutoMixedPrecisionRefuses checks the levels it does not build.
func TestAutoMixedPrecisionRefuses(t *testing.T) {
	net, _ := tsMLP(8, 16, 3)
	for _, tc := range []struct {
		level nn.AmpLevel
		want  string
	}{
		{"O1", "O1 is not supported"},
		{"O4", `unknown amp level "O4"`},
	} {
		testkit.MustPanic(t, func() { nn.AutoMixedPrecision(net, tc.level) }, "nn.AutoMixedPrecision", tc.want)
	}
	if _, err := spore.ParseAmpLevel("o2"); err == nil || !strings.Contains(err.Error(), "want O0, O2 or O3") {
		t.Errorf("ParseAmpLevel(o2): %v", err)
	}
}

// TestAutoMixedPrecisionGraph checks what each level compiles for
// inference: at O2 every Dense is one fused bfloat16 GEMM on its packed
// weight with the bias and ReLU in float32; at O3 the bias adds and ReLUs
// run on BFloat16 tensors too; at O0 nothing is cast.
func TestAutoMixedPrecisionGraph(t *testing.T) {
	x, _ := blobs(3, 8, 8, 3)
	for _, tc := range []struct {
		level     nn.AmpLevel
		want, not []string
	}{
		{nn.O0, []string{"Anchor("}, []string{"BFloat16"}},
		{nn.O2, []string{"Anchor(%0, %1, %2) {op=MatMul precision=BFloat16 update=none fused={tb=true bias=true act=relu packed}} : f32[8,16]"}, []string{"ReLU(", "Cast("}},
		{nn.O3, []string{"ReLU(", ": BFloat16[8,16]", "Cast("}, nil},
	} {
		t.Run(string(tc.level), func(t *testing.T) {
			net, _ := tsMLP(8, 16, 3)
			nn.AutoMixedPrecision(net, tc.level)
			if got := nn.AmpLevelOf(net); got != tc.level {
				t.Errorf("AmpLevelOf = %v, want %v", got, tc.level)
			}
			ir, err := spore.IR(func(x *spore.Tensor) *spore.Tensor { return net.Call(x) }, []any{x})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(ir, w) {
					t.Errorf("IR lacks %q:\n%s", w, ir)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(ir, w) {
					t.Errorf("IR has %q:\n%s", w, ir)
				}
			}
			// The compiled plan computes what PyNative mode does, bit for
			// bit: the fused GEMM keeps the unfused chain's rounding points.
			var eager, graph *tensor.Tensor
			tsRunMode(spore.PyNativeMode, func() { eager = net.Call(x) })
			tsRunMode(spore.GraphMode, func() { graph = net.Call(x) })
			if eager.DType() != tensor.Float32 || !bitsEqual(eager, graph) {
				t.Errorf("PyNative %v %v and Graph %v differ", eager.DType(), eager, graph)
			}
		})
	}
}

// TestAutoMixedPrecisionConv trains a small convolutional network at O2 in
// both modes: the convolutions run in bfloat16 (their BFloat16 kernels,
// forward and backward), the loss falls as at fp32, and the modes agree.
func TestAutoMixedPrecisionConv(t *testing.T) {
	x := randT(5, -1, 1, 8, 1, 6, 6)
	x32 := tensor.FromSlice(toF32(x.Float64s()), 8, 1, 6, 6)
	y := tensor.FromSlice([]int32{0, 1, 2, 0, 1, 2, 0, 1}, 8)
	curve := func(level nn.AmpLevel, mode spore.Mode) ([]float64, string) {
		spore.SetSeed(9)
		net := nn.NewSequentialCell(nn.NewConv2d(1, 4, 3, nn.Conv2dConfig{HasBias: true}), nn.NewReLU(), nn.NewFlatten(), nn.NewDense(4*6*6, 3))
		nn.AutoMixedPrecision(net, level)
		wl := nn.NewWithLossCell(net, nn.NewCrossEntropyLoss("", 0))
		cell := nn.NewTrainOneStepCell(wl, optim.NewSGD(wl.TrainableParameters(), optim.SGDConfig{Common: optim.Common{LR: optim.Constant(0.3)}}))
		var losses []float64
		tsRunMode(mode, func() {
			for range 8 {
				losses = append(losses, cell.Step(x32, y))
			}
		})
		ir, err := cell.StepIR(x32, y)
		if err != nil {
			t.Fatal(err)
		}
		return losses, ir
	}
	fp32, _ := curve(nn.O0, spore.PyNativeMode)
	eager, _ := curve(nn.O2, spore.PyNativeMode)
	graph, ir := curve(nn.O2, spore.GraphMode)
	for _, op := range []string{"Conv2D(", "Conv2DBackpropFilter("} {
		if !strings.Contains(ir, op) || !strings.Contains(ir, "BFloat16") {
			t.Errorf("the O2 step has no bfloat16 %s:\n%s", op, ir)
		}
	}
	for k := range eager {
		if math.Abs(eager[k]-graph[k]) > 1e-6*math.Abs(eager[k]) || math.Abs(eager[k]-fp32[k]) > 0.03*math.Abs(fp32[k]) {
			t.Fatalf("step %d:\nfp32     %v\nPyNative %v\nGraph    %v", k, fp32, eager, graph)
		}
	}
	if eager[len(eager)-1] > 0.8*eager[0] {
		t.Errorf("loss did not fall: %v", eager)
	}
	t.Logf("O2 loss %.4f → %.4f, fp32 %.4f → %.4f", eager[0], eager[len(eager)-1], fp32[0], fp32[len(fp32)-1])
}

func toF32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}
