package nn_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

func TestSeedNetworkModes(t *testing.T) {
	spore.SetSeed(1)
	net := newNetwork()
	x := ops.Ones(64, 1, 28, 28)
	eager := net.Call(x)
	if !eager.Shape().Equal(tensor.Shape{64, 10}) {
		t.Fatalf("PyNative output %v, want [64 10]", eager.Shape())
	}
	if direct := net.Construct(x); maxDiff(direct, eager) != 0 {
		t.Fatalf("Call and Construct differ in PyNative mode")
	}
	withMode(spore.GraphMode, spore.O0, func() {
		sameValues(t, "Graph O0", net.Call(x), eager, 0)
		sameValues(t, "Graph O0 again", net.Call(x), eager, 0)
	})
	withMode(spore.GraphMode, spore.O1, func() {
		sameValues(t, "Graph O1", net.Call(x), eager, 1e-5)
		net.Call(x)
	})
	st := net.JitStats()
	if st.Compiles != 2 || st.Hits != 2 {
		t.Fatalf("want one compilation per level and cache hits after, got %+v", st)
	}
	// Back in PyNative mode nothing is compiled.
	net.Call(x)
	if st2 := net.JitStats(); st2.Compiles != 2 || st2.Hits != 2 {
		t.Fatalf("PyNative call touched the compile cache: %+v", st2)
	}
	// A second network built from the same seed is the same network.
	spore.SetSeed(1)
	sameValues(t, "same seed", newNetwork().Call(x), eager, 0)
}

func TestParametersCapturedByReference(t *testing.T) {
	spore.SetSeed(2)
	net := newNetwork()
	x := randT(1, -1, 1, 4, 1, 28, 28)
	x32 := ops.Cast(x, tensor.Float32)
	withMode(spore.GraphMode, spore.O1, func() {
		before := net.Call(x32)
		b := net.DenseReluSequential.Cells[4].(*nn.Dense).Bias
		b.Assign(ops.AddScalar(b, 1))
		after := net.Call(x32)
		sameValues(t, "after a parameter update", after, ops.AddScalar(before, 1), 1e-6)
	})
	if net.JitStats().Compiles != 1 {
		t.Fatalf("a parameter update recompiled: %+v", net.JitStats())
	}
}

func TestJitCell(t *testing.T) {
	spore.SetSeed(3)
	net := nn.Jit(newNetwork(), spore.JitConfig{Level: spore.O0})
	x := ops.Ones(2, 1, 28, 28)
	y := net.Call(x)
	net.Call(x)
	if st := net.JitStats(); st.Compiles != 1 || st.Hits != 1 {
		t.Fatalf("nn.Jit in PyNative mode: want 1 compile and 1 hit, got %+v", st)
	}
	sameValues(t, "nn.Jit", y, net.Construct(x), 0)
	// A new input shape compiles a second plan, and says why.
	net.Call(ops.Ones(3, 1, 28, 28))
	if st := net.JitStats(); st.Compiles != 2 || len(st.Retraces) != 1 {
		t.Fatalf("want a retrace for a new shape, got %+v", st)
	}
}

// block is a user-defined cell with a mix of fields.
type block struct {
	nn.Cell
	FC1       *nn.Dense
	ConvBN    *nn.BatchNorm
	Scale     *spore.Tensor
	Extra     []*spore.Tensor
	Layers    []*nn.Dense
	Renamed   *nn.Dense `nn:"head"`
	Hidden    *nn.Dense `nn:"-"`
	Shared    *nn.Dense // the same cell as FC1: listed once
	Constant  *spore.Tensor
	List      *nn.CellList
	Nothing   *nn.Dense // nil: skipped
	TypedNil  nn.Layer  // an interface holding a nil *nn.Dense: skipped
	notPublic *nn.Dense
	Count     int
}

func newBlock() *block {
	fc1 := nn.NewDense(2, 3)
	return nn.Init(&block{
		FC1:       fc1,
		ConvBN:    nn.NewBatchNorm1d(3),
		Scale:     tensor.NewParameter("whatever", tensor.Ones(tensor.Float32, 1)),
		Extra:     []*spore.Tensor{tensor.NewParameter("e", tensor.Ones(tensor.Float32, 1))},
		Layers:    []*nn.Dense{nn.NewDense(3, 3, nn.DenseConfig{NoBias: true})},
		Renamed:   nn.NewDense(3, 1, nn.DenseConfig{NoBias: true}),
		Hidden:    nn.NewDense(1, 1),
		Shared:    fc1,
		Constant:  tensor.Ones(tensor.Float32, 1),
		List:      nn.NewCellList(nn.NewReLU(), nn.NewDense(1, 1, nn.DenseConfig{NoBias: true})),
		notPublic: nn.NewDense(1, 1),
		TypedNil:  (*nn.Dense)(nil),
	})
}

func TestParameterNames(t *testing.T) {
	tests := []struct {
		name string
		cell nn.Module
		want []string
	}{
		{"seed network", newNetwork(), []string{
			"dense_relu_sequential.0.weight", "dense_relu_sequential.0.bias",
			"dense_relu_sequential.2.weight", "dense_relu_sequential.2.bias",
			"dense_relu_sequential.4.weight", "dense_relu_sequential.4.bias",
		}},
		{"user block", newBlock(), []string{
			"fc1.weight", "fc1.bias",
			"conv_bn.gamma", "conv_bn.beta", "conv_bn.moving_mean", "conv_bn.moving_variance",
			"scale", "extra.0", "layers.0.weight", "head.weight", "list.1.weight",
		}},
		{"with loss keeps backbone names", nn.NewWithLossCell(newNetwork(), nn.NewCrossEntropyLoss("", 0)), []string{
			"dense_relu_sequential.0.weight", "dense_relu_sequential.0.bias",
			"dense_relu_sequential.2.weight", "dense_relu_sequential.2.bias",
			"dense_relu_sequential.4.weight", "dense_relu_sequential.4.bias",
		}},
		{"conv", nn.NewConv2d(1, 2, 3, nn.Conv2dConfig{HasBias: true}), []string{"weight", "bias"}},
		{"layer norm", nn.NewLayerNorm([]int{4}), []string{"gamma", "beta"}},
		{"embedding", nn.NewEmbedding(5, 2), []string{"embedding_table"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var names, tensorNames []string
			for _, p := range tt.cell.Base().NamedParameters() {
				names = append(names, p.Name)
				tensorNames = append(tensorNames, p.Tensor.Name())
			}
			if !reflect.DeepEqual(names, tt.want) {
				t.Fatalf("NamedParameters:\n got %q\nwant %q", names, tt.want)
			}
			if !reflect.DeepEqual(tensorNames, tt.want) {
				t.Fatalf("Tensor.Name:\n got %q\nwant %q", tensorNames, tt.want)
			}
			if n := len(tt.cell.Base().Parameters()); n != len(tt.want) {
				t.Fatalf("Parameters: %d, want %d", n, len(tt.want))
			}
		})
	}
}

func TestSubCellNamesAreRelative(t *testing.T) {
	net := newNetwork()
	var names []string
	for _, p := range net.DenseReluSequential.NamedParameters() {
		names = append(names, p.Name)
	}
	if names[0] != "0.weight" || net.DenseReluSequential.Parameters()[0].Name() != "dense_relu_sequential.0.weight" {
		t.Fatalf("sub-cell names %q, tensor name %q", names, net.DenseReluSequential.Parameters()[0].Name())
	}
}

func TestSnakeCase(t *testing.T) {
	for in, want := range map[string]string{
		"DenseReluSequential": "dense_relu_sequential",
		"FC1":                 "fc1",
		"ConvBN":              "conv_bn",
		"HTTPServer":          "http_server",
		"Conv2d":              "conv2d",
		"Layer2Norm":          "layer2_norm",
		"Weight":              "weight",
		"X":                   "x",
		"already_snake":       "already_snake",
	} {
		if got := nn.SnakeCase(in); got != want {
			t.Errorf("SnakeCase(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCellsAndFreezing(t *testing.T) {
	b := newBlock()
	var cells []string
	for _, c := range b.NamedCells() {
		cells = append(cells, c.Name)
	}
	want := []string{"fc1", "conv_bn", "layers.0", "head", "shared", "list", "list.0", "list.1"}
	if !reflect.DeepEqual(cells, want) {
		t.Fatalf("NamedCells %q, want %q", cells, want)
	}
	if n := len(b.Cells()); n != 6 {
		t.Fatalf("Cells: %d direct children, want 6", n)
	}
	if n := len(b.TrainableParameters()); n != 9 {
		t.Fatalf("TrainableParameters: %d, want 9 (all but the moving statistics)", n)
	}
	b.FC1.SetRequiresGrad(false)
	if n := len(b.TrainableParameters()); n != 7 {
		t.Fatalf("after freezing fc1: %d trainable, want 7", n)
	}
	if b.Training() || b.ConvBN.Training() {
		t.Fatalf("cells must start in inference mode")
	}
	b.SetTrain(true)
	if !b.ConvBN.Training() || !b.List.At(0).Base().Training() || b.Hidden.Training() {
		t.Fatalf("SetTrain must reach every registered descendant and only those")
	}
}

func TestCallErrors(t *testing.T) {
	type bare struct {
		nn.Cell
		D *nn.Dense
	}
	b := &bare{D: nn.NewDense(1, 1)}
	testkit.MustPanic(t, func() { b.NamedParameters() }, "nn.Init")
	testkit.MustPanic(t, func() { b.Call(ops.Ones(1, 1)) }, "nn.Init")
	nn.Init(b)
	testkit.MustPanic(t, func() { b.Call(ops.Ones(1, 1)) }, "no Construct")
	testkit.MustPanic(t, func() { nn.NewReLU().Call(ops.Ones(1), ops.Ones(1)) }, "takes 1 tensors")
	testkit.MustPanic(t, func() { nn.NewDense(3, 2).Call(ops.Ones(2, 4)) }, "in_channels=3")
	testkit.MustPanic(t, func() { nn.Activation("swish") }, "swish")
}

func TestPyNativeCallAllocatesNothingExtra(t *testing.T) {
	r := nn.NewReLU()
	x := ops.Ones(8)
	direct := testing.AllocsPerRun(100, func() { r.Construct(x) })
	called := testing.AllocsPerRun(100, func() { r.Call(x) })
	if called != direct {
		t.Fatalf("Call allocates %v times per call, Construct %v", called, direct)
	}
}

type listed struct {
	nn.Cell
	Extra ParamsField  `nn:"extra"`
	Flat  nn.ParamList `nn:",inline"`
}

// ParamsField is a ParamList under a field name of its own.
type ParamsField = nn.ParamList

func TestParamListNames(t *testing.T) {
	p := func(name string) nn.Param {
		return nn.Param{Name: name, Tensor: tensor.NewParameter("", tensor.Zeros(tensor.Float32, 1))}
	}
	c := nn.Init(&listed{Extra: nn.ParamList{p("a"), p("b")}, Flat: nn.ParamList{p("w_l0"), p("w_l1")}})
	var names []string
	for _, np := range c.NamedParameters() {
		names = append(names, np.Name)
	}
	if got := strings.Join(names, " "); got != "extra.a extra.b w_l0 w_l1" {
		t.Fatalf("names %q", got)
	}
	if c.Flat.Get("w_l1") == nil || c.Flat.Get("nope") != nil {
		t.Fatal("ParamList.Get")
	}
}
