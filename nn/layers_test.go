package nn_test

import (
	"math"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/nn/initializer"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

const f64 = tensor.Float64

func TestLayerGradients(t *testing.T) {
	spore.SetSeed(7)
	one := func(l nn.Layer) func(xs ...*tensor.Tensor) *tensor.Tensor {
		return func(xs ...*tensor.Tensor) *tensor.Tensor { return l.Base().Call(xs[0]) }
	}
	bnTrain := nn.NewBatchNorm2d(3, nn.BatchNormConfig{DType: f64, GammaInit: initializer.Uniform(1), BetaInit: initializer.Uniform(1)})
	bnTrain.SetTrain(true)
	bnEval := nn.NewBatchNorm1d(3, nn.BatchNormConfig{DType: f64, MovingMeanInit: initializer.Uniform(1), MovingVarInit: initializer.Constant(0.7)})
	tests := []struct {
		name string
		cell nn.Layer
		x    *tensor.Tensor
	}{
		{"Dense", nn.NewDense(4, 3, nn.DenseConfig{DType: f64}), randT(1, -1, 1, 2, 4)},
		{"Dense rank 3 with activation", nn.NewDense(4, 3, nn.DenseConfig{DType: f64, Activation: nn.NewTanh()}), randT(2, -1, 1, 2, 2, 4)},
		{"Dense no bias", nn.NewDense(4, 3, nn.DenseConfig{DType: f64, NoBias: true}), randT(3, -1, 1, 2, 4)},
		{"Conv2d same bias", nn.NewConv2d(2, 3, 3, nn.Conv2dConfig{DType: f64, HasBias: true}), randT(4, -1, 1, 2, 2, 5, 5)},
		{"Conv2d valid stride 2", nn.NewConv2d(2, 2, 3, nn.Conv2dConfig{DType: f64, PadMode: "valid", Stride: 2}), randT(5, -1, 1, 1, 2, 6, 6)},
		{"Conv2d pad group dilation", nn.NewConv2d(4, 2, 2, nn.Conv2dConfig{DType: f64, PadMode: "pad", Padding: [4]int{1, 0, 0, 1}, Group: 2, Dilation: 2}), randT(6, -1, 1, 1, 4, 5, 5)},
		{"BatchNorm2d training", bnTrain, randT(7, -1, 2, 3, 3, 2, 2)},
		{"BatchNorm1d inference", bnEval, randT(8, -1, 1, 4, 3)},
		{"LayerNorm", nn.NewLayerNorm([]int{2, 3}, nn.LayerNormConfig{DType: f64, GammaInit: initializer.Uniform(1), BetaInit: initializer.Uniform(1), Eps: 1e-5}), randT(9, -1, 1, 2, 2, 3)},
		{"GELU tanh", nn.NewGELU(true), randT(10, -2, 2, 3, 4)},
		{"GELU exact", nn.NewGELU(false), randT(11, -2, 2, 3, 4)},
		{"Softmax", nn.NewSoftmax(0), randT(12, -2, 2, 3, 4)},
		{"LogSoftmax", nn.NewLogSoftmax(-1), randT(13, -2, 2, 3, 4)},
		{"Sigmoid", nn.NewSigmoid(), randT(14, -2, 2, 5)},
		{"AvgPool2d", nn.NewAvgPool2d(2, 2, ""), randT(15, -1, 1, 1, 2, 4, 4)},
		{"MaxPool2d", nn.NewMaxPool2d(2, 1, "same"), randT(16, -1, 1, 1, 1, 3, 3)},
		{"SequentialCell", nn.NewSequentialCell(
			nn.NewDense(3, 4, nn.DenseConfig{DType: f64}), nn.NewTanh(),
			nn.NewLayerNorm([]int{4}, nn.LayerNormConfig{DType: f64}),
			nn.NewDense(4, 2, nn.DenseConfig{DType: f64})), randT(17, -1, 1, 3, 3)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkGrads(t, tt.name, tt.cell, one(tt.cell), tt.x)
		})
	}
	t.Run("Embedding", func(t *testing.T) {
		e := nn.NewEmbedding(5, 3, nn.EmbeddingConfig{DType: f64})
		ids := tensor.FromSlice([]int32{1, 4, 1, 0, -1, 2}, 2, 3)
		checkGrads(t, "Embedding", e, func(xs ...*tensor.Tensor) *tensor.Tensor { return e.Call(xs[0]) }, ids)
	})
}

func TestLayerShapes(t *testing.T) {
	spore.SetSeed(8)
	tests := []struct {
		name string
		cell nn.Layer
		in   []int
		out  []int
	}{
		{"Dense", nn.NewDense(784, 512), []int{64, 784}, []int{64, 512}},
		{"Dense rank 3", nn.NewDense(4, 2), []int{3, 5, 4}, []int{3, 5, 2}},
		{"Flatten", nn.NewFlatten(), []int{64, 1, 28, 28}, []int{64, 784}},
		{"Flatten middle", nn.Init(&nn.Flatten{StartDim: 1, EndDim: 2}), []int{2, 3, 4, 5}, []int{2, 12, 5}},
		{"Conv2d same", nn.NewConv2d(3, 8, 3), []int{2, 3, 7, 7}, []int{2, 8, 7, 7}},
		{"Conv2d same stride 2", nn.NewConv2d(3, 8, 3, nn.Conv2dConfig{Stride: 2}), []int{2, 3, 7, 7}, []int{2, 8, 4, 4}},
		{"Conv2d valid", nn.NewConv2d(3, 8, 3, nn.Conv2dConfig{PadMode: "valid"}), []int{2, 3, 7, 7}, []int{2, 8, 5, 5}},
		{"Conv2d rectangular", nn.NewConv2d(3, 8, 0, nn.Conv2dConfig{KernelSize: [2]int{1, 3}, PadMode: "valid"}), []int{1, 3, 4, 4}, []int{1, 8, 4, 2}},
		{"MaxPool2d", nn.NewMaxPool2d(2, 2, "valid"), []int{2, 3, 7, 7}, []int{2, 3, 3, 3}},
		{"AvgPool2d same", nn.NewAvgPool2d(2, 2, "same"), []int{2, 3, 7, 7}, []int{2, 3, 4, 4}},
		{"BatchNorm2d", nn.NewBatchNorm2d(3), []int{2, 3, 4, 4}, []int{2, 3, 4, 4}},
		{"Dropout", nn.NewDropout(0.5), []int{4, 4}, []int{4, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y := tt.cell.Base().Call(tensor.Ones(tensor.Float32, tt.in...))
			if !y.Shape().Equal(tt.out) {
				t.Fatalf("output %v, want %v", y.Shape(), tensor.Shape(tt.out))
			}
		})
	}
}

func TestLayerValues(t *testing.T) {
	d := nn.NewDense(2, 2, nn.DenseConfig{WeightInit: initializer.Constant(0.5), BiasInit: initializer.Constant(-1), Activation: nn.Activation("relu")})
	y := d.Call(tensor.FromSlice([]float32{1, 2, 3, 4}, 2, 2))
	sameValues(t, "Dense relu", y, tensor.FromSlice([]float32{0.5, 0.5, 2.5, 2.5}, 2, 2), 0)

	g := nn.NewGELU(true).Call(tensor.FromSlice([]float64{-1, 0, 1.5}))
	want := []float64{-0.15880800939172324, 0, 1.3995715769802328}
	sameValues(t, "GELU tanh", g, tensor.FromSlice(want), 1e-12)

	padIdx := 2
	e := nn.NewEmbedding(4, 3, nn.EmbeddingConfig{PaddingIdx: &padIdx})
	row := e.Call(tensor.FromSlice([]int64{2}))
	sameValues(t, "padding row", row, tensor.Zeros(tensor.Float32, 1, 3), 0)
}

func TestDropoutTrainEval(t *testing.T) {
	spore.SetSeed(9)
	d := nn.NewDropout(0.5)
	x := ops.Ones(1000)
	if y := d.Call(x); maxDiff(y, x) != 0 {
		t.Fatalf("Dropout must be the identity in inference")
	}
	d.SetTrain(true)
	y := d.Call(x).Float64s()
	zeros := 0
	for _, v := range y {
		switch v {
		case 0:
			zeros++
		case 2:
		default:
			t.Fatalf("kept values must be scaled to 2, got %v", v)
		}
	}
	if zeros < 400 || zeros > 600 {
		t.Fatalf("%d of 1000 dropped, want about 500", zeros)
	}
	// Graph mode compiles one plan per training state.
	withMode(spore.GraphMode, spore.O1, func() {
		d.Call(x)
		d.SetTrain(false)
		if y := d.Call(x); maxDiff(y, x) != 0 {
			t.Fatalf("compiled Dropout must be the identity in inference")
		}
		d.SetTrain(true)
		d.Call(x)
	})
	if st := d.JitStats(); st.Compiles != 2 || st.Hits != 1 {
		t.Fatalf("want one plan per training state, got %+v", st)
	}
}

// bnNet is a small network with batch normalisation.
type bnNet struct {
	nn.Cell
	Conv *nn.Conv2d
	BN   *nn.BatchNorm
	Head *nn.Dense
}

func (n *bnNet) Construct(x *spore.Tensor) *spore.Tensor {
	h := ops.ReLU(n.BN.Construct(n.Conv.Construct(x)))
	return n.Head.Construct(ops.Reshape(h, h.Dim(0), -1))
}

func newBNNet() *bnNet {
	return nn.Init(&bnNet{Conv: nn.NewConv2d(2, 3, 3), BN: nn.NewBatchNorm2d(3), Head: nn.NewDense(3*4*4, 2)})
}

func TestBatchNormGraphModeUpdatesRunningStats(t *testing.T) {
	spore.SetSeed(10)
	eager := newBNNet()
	spore.SetSeed(10)
	graph := newBNNet()
	eager.SetTrain(true)
	graph.SetTrain(true)
	x := ops.Cast(randT(3, -1, 2, 4, 2, 4, 4), tensor.Float32)
	for step := range 3 {
		ye := eager.Call(x)
		var yg *tensor.Tensor
		withMode(spore.GraphMode, spore.O1, func() { yg = graph.Call(x) })
		sameValues(t, "training output", yg, ye, 1e-5)
		sameValues(t, "moving mean", graph.BN.MovingMean, eager.BN.MovingMean, 1e-5)
		sameValues(t, "moving variance", graph.BN.MovingVariance, eager.BN.MovingVariance, 1e-5)
		if step == 0 && maxDiff(graph.BN.MovingMean, tensor.Zeros(tensor.Float32, 3)) == 0 {
			t.Fatalf("running mean not updated")
		}
	}
	if st := graph.JitStats(); st.Compiles != 1 || st.Hits != 2 {
		t.Fatalf("want one plan reused, got %+v", st)
	}
	// Inference uses, and leaves alone, the running statistics.
	eager.SetTrain(false)
	graph.SetTrain(false)
	mean := graph.BN.MovingMean.Clone()
	var yg *tensor.Tensor
	withMode(spore.GraphMode, spore.O1, func() { yg = graph.Call(x) })
	sameValues(t, "inference output", yg, eager.Call(x), 1e-5)
	sameValues(t, "running mean unchanged in inference", graph.BN.MovingMean, mean, 0)
}

func TestBatchNormMomentum(t *testing.T) {
	bn := nn.NewBatchNorm1d(1, nn.BatchNormConfig{DType: f64})
	bn.SetTrain(true)
	bn.Call(tensor.FromSlice([]float64{1, 3}, 2, 1))
	// mean 2, unbiased variance 2: 0.9·0 + 0.1·2 and 0.9·1 + 0.1·2.
	sameValues(t, "moving mean", bn.MovingMean, tensor.FromSlice([]float64{0.2}), 1e-12)
	sameValues(t, "moving variance", bn.MovingVariance, tensor.FromSlice([]float64{1.1}), 1e-12)
}

func TestLayerErrors(t *testing.T) {
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"dense zero width", func() { nn.NewDense(0, 2) }, "in_channels"},
		{"dense int dtype", func() { nn.NewDense(1, 2, nn.DenseConfig{DType: tensor.Int32}) }, "Float32 or Float64"},
		{"conv group", func() { nn.NewConv2d(3, 4, 3, nn.Conv2dConfig{Group: 2}) }, "divisible"},
		{"conv pad mode", func() { nn.NewConv2d(3, 4, 3, nn.Conv2dConfig{PadMode: "full"}) }, "full"},
		{"conv padding without pad mode", func() { nn.NewConv2d(3, 4, 3, nn.Conv2dConfig{Padding: [4]int{1, 1, 1, 1}}) }, "pad_mode"},
		{"pool pad mode", func() { nn.NewMaxPool2d(2, 2, "pad") }, "pad_mode"},
		{"dropout p", func() { nn.NewDropout(1) }, "[0, 1)"},
		{"batchnorm rank", func() { nn.NewBatchNorm2d(3).Call(ops.Ones(2, 3)) }, "rank 4"},
		{"layernorm shape", func() { nn.NewLayerNorm([]int{4}).Call(ops.Ones(2, 3)) }, "normalized_shape"},
		{"embedding padding", func() { p := 9; nn.NewEmbedding(3, 2, nn.EmbeddingConfig{PaddingIdx: &p}) }, "padding_idx"},
		{"sequential nil", func() { nn.NewSequentialCell(nil) }, "nil"},
		{"flatten range", func() { (nn.Init(&nn.Flatten{StartDim: 2, EndDim: 1})).Call(ops.Ones(2, 3, 4)) }, "start_dim"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { testkit.MustPanic(t, tt.f, tt.want) })
	}
}

func TestSequentialAppendAndCellList(t *testing.T) {
	s := nn.NewSequentialCell(nn.NewDense(2, 2))
	s.Append(nn.NewReLU())
	s.Append(nn.NewDense(2, 1))
	if s.Len() != 3 || s.Parameters()[2].Name() != "2.weight" {
		t.Fatalf("after Append: %d cells, names %v", s.Len(), s)
	}
	l := nn.NewCellList()
	l.Append(nn.NewDense(1, 1))
	if l.Len() != 1 || l.NamedParameters()[0].Name != "0.weight" {
		t.Fatalf("CellList names %v", l.NamedParameters())
	}
	testkit.MustPanic(t, func() { l.At(1) }, "out of range")
	if s.String() == "" || math.IsNaN(s.Call(ops.Ones(1, 2)).Item()) {
		t.Fatal("bad sequential")
	}
}
