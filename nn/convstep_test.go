package nn_test

import (
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/models"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/tensor"
)

// A compiled LeNet-5 training step — convolutions and pooling split over
// the cores — allocates nothing once compiled.
func TestCompiledConvStepAllocatesNothing(t *testing.T) {
	spore.SetSeed(1)
	net := models.NewLeNet5(10)
	opt := optim.NewSGD(net.TrainableParameters(), optim.SGDConfig{Common: optim.Common{LR: optim.Constant(0.01)}, Momentum: 0.9})
	step := nn.NewTrainOneStepCell(nn.NewWithLossCell(net, nn.NewSoftmaxCrossEntropyWithLogits(true, nn.Mean)), opt, nn.TrainOneStepConfig{Mode: nn.StepCompiled})
	x := tensor.RandNormal(tensor.Float32, 0, 1, 16, 1, 28, 28)
	y := tensor.FromSlice(make([]int32, 16), 16)
	step.Step(x, y)
	if n := testing.AllocsPerRun(50, func() { step.Step(x, y) }); n != 0 {
		t.Fatalf("a compiled LeNet-5 step allocates %v times", n)
	}
}
