package nn_test

import (
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// In one process SyncBatchNorm is BatchNorm: the same output, gradients
// (input, gamma, beta) and running statistics, eagerly and compiled.
func TestSyncBatchNormSingleProcess(t *testing.T) {
	cases := []struct {
		name  string
		shape []int
	}{
		{"1d", []int{6, 4}},
		{"2d", []int{3, 4, 2, 3}},
	}
	for _, c := range cases {
		for _, mode := range []spore.Mode{spore.PyNativeMode, spore.GraphMode} {
			t.Run(c.name+"/"+mode.String(), func(t *testing.T) {
				x := randT(3, -2, 3, c.shape...)
				w := randT(4, -1, 1, c.shape...)
				cfg := nn.BatchNormConfig{DType: tensor.Float64}
				plain := nn.NewBatchNorm2d(4, cfg)
				if len(c.shape) == 2 {
					plain = nn.NewBatchNorm1d(4, cfg)
				}
				sync := nn.NewSyncBatchNorm(4, cfg)
				plain.SetTrain(true)
				sync.SetTrain(true)
				// Distinct gamma and beta, the same in both.
				for _, p := range [][2]*tensor.Tensor{{plain.Gamma, sync.Gamma}, {plain.Beta, sync.Beta}} {
					v := randT(5, 0.5, 1.5, 4)
					p[0].Assign(v)
					p[1].Assign(v)
				}
				run := func(cell nn.Module, params ...*tensor.Tensor) (*tensor.Tensor, []*tensor.Tensor) {
					f := func(x *tensor.Tensor) *tensor.Tensor { return ops.Sum(ops.Mul(cell.Base().Call(x), w)) }
					var y *tensor.Tensor
					var g []*tensor.Tensor
					withMode(mode, spore.O1, func() {
						y = cell.Base().Call(x)
						_, g = spore.ValueAndGrad(f, spore.GradPosition(0), spore.Weights(params...))(x)
					})
					return y, g
				}
				yp, gp := run(plain, plain.Gamma, plain.Beta)
				ys, gs := run(sync, sync.Gamma, sync.Beta)
				sameValues(t, "output", ys, yp, 1e-12)
				for i, name := range []string{"dx", "dgamma", "dbeta"} {
					sameValues(t, name, gs[i], gp[i], 1e-12)
				}
				if maxDiff(sync.MovingMean, tensor.Zeros(tensor.Float64, 4)) == 0 {
					t.Fatal("training left the moving mean at zero")
				}
				sameValues(t, "moving mean", sync.MovingMean, plain.MovingMean, 1e-12)
				sameValues(t, "moving variance", sync.MovingVariance, plain.MovingVariance, 1e-12)
				sync.SetTrain(false)
				plain.SetTrain(false)
				sameValues(t, "inference", sync.Base().Call(x), plain.Base().Call(x), 1e-12)
			})
		}
	}
}

func TestSyncBatchNormErrors(t *testing.T) {
	b := nn.NewSyncBatchNorm(3)
	b.SetTrain(true)
	testkit.MustPanic(t, func() { b.Base().Call(tensor.New(tensor.Float32, 2, 3, 4)) }, "nn.SyncBatchNorm", "[N C] or [N C H W]")
	testkit.MustPanic(t, func() { b.Base().Call(tensor.New(tensor.Float32, 2, 4)) }, "want 3 channels")
	testkit.MustPanic(t, func() { b.Base().Call(tensor.New(tensor.Float32, 1, 3)) }, "more than one value per channel")
}
