package nn_test

import (
	"math"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

func TestLossValues(t *testing.T) {
	logits := tensor.FromSlice([]float64{1, 2, 3, 1, 1, 1}, 2, 3)
	labels := tensor.FromSlice([]int32{2, 0}, 2)
	lse0 := math.Log(math.Exp(1) + math.Exp(2) + math.Exp(3))
	ce := []float64{lse0 - 3, math.Log(3)}
	probs := tensor.FromSlice([]float64{0, 0, 1, 1, 0, 0}, 2, 3)
	logp := ops.LogSoftmax(logits, -1)
	x := tensor.FromSlice([]float64{0.5, -1, 2, 0})
	y := tensor.FromSlice([]float64{1, 0, 0.5, 1})
	sig := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	bce := make([]float64, 4)
	for i, v := range x.Float64s() {
		yy := y.Float64s()[i]
		bce[i] = -(yy*math.Log(sig(v)) + (1-yy)*math.Log(1-sig(v)))
	}
	tests := []struct {
		name string
		loss nn.Loss
		a, b *tensor.Tensor
		want []float64
	}{
		{"SCE sparse none", nn.NewSoftmaxCrossEntropyWithLogits(true, ""), logits, labels, ce},
		{"SCE sparse mean", nn.NewSoftmaxCrossEntropyWithLogits(true, nn.Mean), logits, labels, []float64{(ce[0] + ce[1]) / 2}},
		{"SCE dense sum", nn.NewSoftmaxCrossEntropyWithLogits(false, nn.Sum), logits, probs, []float64{ce[0] + ce[1]}},
		{"CrossEntropyLoss indices", nn.NewCrossEntropyLoss("", 0), logits, labels, []float64{(ce[0] + ce[1]) / 2}},
		{"CrossEntropyLoss probs none", nn.NewCrossEntropyLoss(nn.None, 0), logits, probs, ce},
		{"CrossEntropyLoss smoothing", nn.NewCrossEntropyLoss(nn.None, 0.3), logits, labels, []float64{
			-(0.8*(3-lse0) + 0.1*(1-lse0) + 0.1*(2-lse0)), math.Log(3)}},
		{"NLLLoss", nn.NewNLLLoss(""), logp, labels, []float64{(ce[0] + ce[1]) / 2}},
		{"NLLLoss none", nn.NewNLLLoss(nn.None), logp, labels, ce},
		{"MSELoss", nn.NewMSELoss(""), x, y, []float64{(0.25 + 1 + 2.25 + 1) / 4}},
		{"MSELoss none", nn.NewMSELoss(nn.None), x, y, []float64{0.25, 1, 2.25, 1}},
		{"L1Loss sum", nn.NewL1Loss(nn.Sum), x, y, []float64{0.5 + 1 + 1.5 + 1}},
		{"BCEWithLogitsLoss none", nn.NewBCEWithLogitsLoss(nn.None), x, y, bce},
		{"BCEWithLogitsLoss mean", nn.NewBCEWithLogitsLoss(""), x, y, []float64{(bce[0] + bce[1] + bce[2] + bce[3]) / 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.loss.Base().Call(tt.a, tt.b)
			want := tensor.FromSlice(tt.want)
			if len(tt.want) == 1 {
				want = tensor.Scalar(tt.want[0])
			}
			sameValues(t, tt.name, got, want, 1e-12)
		})
	}
}

func TestBCEWeights(t *testing.T) {
	l := nn.NewBCEWithLogitsLoss(nn.None)
	x := tensor.FromSlice([]float64{0.5, -1})
	y := tensor.FromSlice([]float64{1, 0})
	base := l.Call(x, y).Float64s()
	l.Weight = tensor.FromSlice([]float64{2, 3})
	l.PosWeight = tensor.FromSlice([]float64{5, 5})
	got := l.Call(x, y).Float64s()
	// The positive term of element 0 is weighted 5·2; element 1 (y = 0)
	// has only the negative term, weighted 3.
	if math.Abs(got[0]-10*base[0]) > 1e-12 || math.Abs(got[1]-3*base[1]) > 1e-12 {
		t.Fatalf("weighted %v, unweighted %v", got, base)
	}
}

func TestLossGradients(t *testing.T) {
	logits := randT(20, -2, 2, 3, 4)
	labels := tensor.FromSlice([]int64{3, 0, 2})
	probs := ops.Softmax(randT(21, -1, 1, 3, 4), -1)
	a, b := randT(22, -1, 1, 2, 3), randT(23, 0.1, 0.9, 2, 3)
	tests := []struct {
		name string
		loss nn.Loss
		a, b *tensor.Tensor
	}{
		{"SCE sparse", nn.NewSoftmaxCrossEntropyWithLogits(true, nn.Mean), logits, labels},
		{"SCE dense", nn.NewSoftmaxCrossEntropyWithLogits(false, nn.None), logits, probs},
		{"CrossEntropyLoss", nn.NewCrossEntropyLoss(nn.Sum, 0), logits, labels},
		{"CrossEntropyLoss smoothing", nn.NewCrossEntropyLoss(nn.Mean, 0.1), logits, labels},
		{"NLLLoss", nn.NewNLLLoss(nn.Mean), ops.LogSoftmax(logits, -1), labels},
		{"MSELoss", nn.NewMSELoss(nn.Mean), a, b},
		{"L1Loss", nn.NewL1Loss(nn.None), a, b},
		{"BCEWithLogitsLoss", nn.NewBCEWithLogitsLoss(nn.Mean), a, b},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkGrads(t, tt.name, nil, func(xs ...*tensor.Tensor) *tensor.Tensor { return tt.loss.Base().Call(xs...) }, tt.a, tt.b)
		})
	}
}

func TestLossErrors(t *testing.T) {
	logits := ops.Ones(2, 3)
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"bad reduction", func() { nn.NewMSELoss("avg") }, "avg"},
		{"label out of range", func() { nn.NewNLLLoss("").Call(logits, tensor.FromSlice([]int32{0, 3})) }, "out of range"},
		{"float labels for NLL", func() { nn.NewNLLLoss("").Call(logits, ops.Ones(2)) }, "Int32 or Int64"},
		{"shape mismatch", func() { nn.NewL1Loss("").Call(ops.Ones(2), ops.Ones(3)) }, "same shape"},
		{"smoothing range", func() { nn.NewCrossEntropyLoss("", 2) }, "label_smoothing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { testkit.MustPanic(t, tt.f, tt.want) })
	}
}

func TestWithLossCell(t *testing.T) {
	spore.SetSeed(11)
	net := nn.NewSequentialCell(nn.NewDense(3, 4, nn.DenseConfig{DType: f64}), nn.NewReLU(), nn.NewDense(4, 2, nn.DenseConfig{DType: f64}))
	wl := nn.NewWithLossCell(net, nn.NewSoftmaxCrossEntropyWithLogits(true, nn.Mean))
	x := randT(30, -1, 1, 5, 3)
	labels := tensor.FromSlice([]int32{0, 1, 1, 0, 1})
	if got := wl.Call(x, labels); got.Size() != 1 {
		t.Fatalf("WithLossCell returned %v, want a scalar", got.Shape())
	}
	checkGrads(t, "WithLossCell", wl, func(xs ...*tensor.Tensor) *tensor.Tensor { return wl.Call(xs...) }, x, labels)

	// The same loss and gradients compiled, as a training step would be.
	params := wl.TrainableParameters()
	step := func(x, y *spore.Tensor) []*spore.Tensor {
		loss, grads := spore.ValueAndGrad(wl.Construct, spore.GradPosition(), spore.Weights(params...))(x, y)
		return append([]*spore.Tensor{loss}, grads...)
	}
	eager := step(x, labels)
	compiled := spore.Jit(step, spore.JitConfig{Level: spore.O1})(x, labels)
	for i := range eager {
		sameValues(t, "compiled loss and gradients", compiled[i], eager[i], 1e-12)
	}
}
