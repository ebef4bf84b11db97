package train_test

import (
	"math"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/dataset/mnist"
	"github.com/sporeml/spore/models"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/tensor"
	"github.com/sporeml/spore/train"
)

// TestModelAmpLevelMNIST trains the seed network on MNIST from the same
// seed, on the same batches, at O0, at an explicit O0 and at O2, in Graph
// mode, and checks what mixed precision promises: the explicit O0 is the
// plain run bit for bit; at O2 the parameters stay Float32, are moved by
// the optimizer (and differ from fp32's, so bfloat16 did run), and the
// test accuracy is fp32's within a few tenths of a point. The run is
// short (100 steps, 1000 test images) for the suite; `spore train
// --amp-level O2` against O0 is the full comparison.
func TestModelAmpLevelMNIST(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on MNIST")
	}
	defer spore.SetContext(spore.WithMode(spore.GetContext().Mode))
	spore.SetContext(spore.WithMode(spore.GraphMode))
	trainSet, err := mnist.Train(mnist.Normalize())
	if err != nil {
		t.Fatal(err)
	}
	testSet, err := mnist.Test(mnist.Normalize())
	if err != nil {
		t.Fatal(err)
	}
	run := func(level nn.AmpLevel) (float64, []*tensor.Tensor) {
		spore.SetSeed(1)
		net := models.NewNetwork()
		init := make([]*tensor.Tensor, 0)
		for _, p := range net.Parameters() {
			init = append(init, p.Clone())
		}
		opt := optim.NewSGD(net.TrainableParameters(), optim.SGDConfig{Momentum: 0.9, Common: optim.Common{LR: optim.Constant(0.01)}})
		m := train.NewModel(net, nn.NewSoftmaxCrossEntropyWithLogits(true, nn.Mean), opt, train.NewAccuracy())
		m.AmpLevel = level
		if err := m.Train(1, trainSet.ShuffleSeed(60000, 7).Batch(64, true).Take(100)); err != nil {
			t.Fatal(err)
		}
		res, err := m.Eval(testSet.Take(1000).Batch(500, false))
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range net.Parameters() {
			if p.DType() != tensor.Float32 {
				t.Fatalf("%s: parameter %s is %v, want Float32 master weights", level, p.Name(), p.DType())
			}
			if maxAbsDiff(p, init[i]) == 0 {
				t.Fatalf("%s: parameter %s was not updated", level, p.Name())
			}
		}
		return 100 * res["accuracy"], net.Parameters()
	}
	plain, plainPs := run("")
	o0, o0Ps := run(nn.O0)
	o2, o2Ps := run(nn.O2)
	t.Logf("test accuracy after 100 steps: fp32 %.2f%%, O0 %.2f%%, O2 %.2f%%", plain, o0, o2)
	for i := range plainPs {
		if !sameFloat32Bits(plainPs[i], o0Ps[i]) {
			t.Errorf("O0: parameter %s differs from the plain run", plainPs[i].Name())
		}
		if maxAbsDiff(plainPs[i], o2Ps[i]) == 0 {
			t.Errorf("O2: parameter %s is the fp32 run's: bfloat16 did not run", plainPs[i].Name())
		}
	}
	if o0 != plain {
		t.Errorf("O0 accuracy %.2f%%, plain %.2f%%", o0, plain)
	}
	if math.Abs(o2-plain) > 0.5 {
		t.Errorf("O2 accuracy %.2f%% is more than 0.5 points from fp32's %.2f%%", o2, plain)
	}
}

func maxAbsDiff(a, b *tensor.Tensor) float64 {
	x, y := a.Float32s(), b.Float32s()
	d := 0.0
	for i := range x {
		d = max(d, math.Abs(float64(x[i]-y[i])))
	}
	return d
}

func sameFloat32Bits(a, b *tensor.Tensor) bool {
	x, y := a.Float32s(), b.Float32s()
	for i := range x {
		if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
			return false
		}
	}
	return len(x) == len(y)
}
