package nn_test

import (
	"math"
	"strings"
	"testing"

	"github.com/sporeml/spore"
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
	cell := nn.NewTrainOneStepCell(wl, optim.NewSGD(wl.TrainableParameters(), optim.SGDConfig{Common: optim.Common{LR: optim.Constant(0.05)}, Momentum: 0.9}))
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
	const steps = 20
	plain, plainNet := ampTrain(t, "", spore.PyNativeMode, steps)
	for _, tc := range []struct {
		level nn.AmpLevel
		// tol bounds |PyNative − Graph| / |loss| and |level − fp32| / |loss|
		// per step: bfloat16 keeps 8 significand bits (2^-8 ≈ 0.4%).
		tol float64
	}{
		{nn.O0, 0},
		{nn.O2, 0.05},
		{nn.O3, 0.1},
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
		mustPanic(t, func() { nn.AutoMixedPrecision(net, tc.level) }, "nn.AutoMixedPrecision", tc.want)
	}
	if _, err := spore.ParseAmpLevel("o2"); err == nil || !strings.Contains(err.Error(), "want O0, O2 or O3") {
		t.Errorf("ParseAmpLevel(o2): %v", err)
	}
}
