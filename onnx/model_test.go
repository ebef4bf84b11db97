package onnx

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/checkpoint"
	"github.com/sporeml/spore/dataset"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/tensor"
	"github.com/sporeml/spore/train"
)

// inMode runs f with the context's mode set to mode.
func inMode(mode spore.Mode, f func()) {
	old := spore.GetContext().Mode
	spore.SetContext(spore.WithMode(mode))
	defer spore.SetContext(spore.WithMode(old))
	f()
}

func mustLoad(t testing.TB, data []byte) *Model {
	t.Helper()
	m, err := Load(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// bothModes runs the model in PyNative mode and in Graph mode (all
// outputs through Outputs under GraphMode, the first also through nn.Jit's
// Call) and checks that they agree to tol; it returns the PyNative outputs.
func bothModes(t *testing.T, data []byte, tol float64, xs ...*tensor.Tensor) []*tensor.Tensor {
	t.Helper()
	eager := mustLoad(t, data).Outputs(xs...)
	var graph []*tensor.Tensor
	gm := mustLoad(t, data)
	inMode(spore.GraphMode, func() { graph = gm.Outputs(xs...) })
	if len(eager) != len(graph) {
		t.Fatalf("PyNative gives %d outputs, Graph mode %d", len(eager), len(graph))
	}
	for i := range eager {
		if !eager[i].Shape().Equal(graph[i].Shape()) {
			t.Fatalf("output %d: PyNative shape %v, Graph mode %v", i, eager[i].Shape(), graph[i].Shape())
		}
		testkit.Near(t, "Graph mode vs PyNative", graph[i].Float64s(), tol, eager[i].Float64s()...)
	}
	jitted := nn.Jit(mustLoad(t, data))
	testkit.Near(t, "nn.Jit vs PyNative", jitted.Call(xs...).Float64s(), tol, eager[0].Float64s()...)
	if st := jitted.JitStats(); st.Compiles != 1 {
		t.Errorf("nn.Jit compiled %d times, want 1", st.Compiles)
	}
	return eager
}

func TestModesAgreeDynamicBatch(t *testing.T) {
	data := marshal(t, mlpModel())
	m := nn.Jit(mustLoad(t, data))
	for i, batch := range []int{1, 7, 7, 3} {
		x := tensor.RandNormal(tensor.Float32, 0, 1, batch, 3)
		y := m.Call(x)
		testkit.Near(t, "Graph mode vs reference", y.Float64s(), 1e-5, mlpRef(x.Float32s(), batch)...)
		bothModes(t, data, 1e-6, x)
		if i == 2 && m.JitStats().Hits != 1 {
			t.Errorf("a repeated batch size recompiled: %+v", m.JitStats())
		}
	}
	if st := m.JitStats(); st.Compiles != 3 {
		t.Errorf("three batch sizes compiled %d times", st.Compiles)
	}
}

func TestInputErrors(t *testing.T) {
	m := mustLoad(t, marshal(t, mlpModel()))
	cases := []struct {
		name string
		xs   []*tensor.Tensor
		want string
	}{
		{"no input", nil, "the model takes 1 input(s) (x), called with 0"},
		{"two inputs", []*tensor.Tensor{tensor.Zeros(tensor.Float32, 1, 3), tensor.Zeros(tensor.Float32, 1, 3)}, "called with 2"},
		{"wrong width", []*tensor.Tensor{tensor.Zeros(tensor.Float32, 2, 4)}, `input "x" has shape [2 4], the model wants x [batch 3] Float32`},
		{"wrong rank", []*tensor.Tensor{tensor.Zeros(tensor.Float32, 3)}, `input "x" has shape [3]`},
		{"wrong dtype", []*tensor.Tensor{tensor.Zeros(tensor.Float64, 2, 3)}, `input "x" has dtype Float64, the model wants Float32`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, mode := range []spore.Mode{spore.PyNativeMode, spore.GraphMode} {
				var err error
				inMode(mode, func() { _, err = m.Run(c.xs...) })
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("mode %v: error %v, want one containing %q", mode, err, c.want)
				}
				var te *tensor.Error
				if !errors.As(err, &te) {
					t.Errorf("mode %v: error %T, want a *tensor.Error", mode, err)
				}
			}
		})
	}
}

// TestNodeErrorNamed checks that an op failing inside the graph names the
// ONNX node, in both modes.
func TestNodeErrorNamed(t *testing.T) {
	mp := mlpModel()
	// Undeclared input shape, so that only MatMul can reject a bad width.
	mp.Graph.Input[0] = &onnxpb.ValueInfoProto{Name: proto.String("x")}
	m := mustLoad(t, marshal(t, mp))
	for _, mode := range []spore.Mode{spore.PyNativeMode, spore.GraphMode} {
		var err error
		inMode(mode, func() { _, err = m.Run(tensor.Zeros(tensor.Float32, 2, 5)) })
		if err == nil || !strings.Contains(err.Error(), `node "fc1/matmul" (MatMul)`) {
			t.Errorf("mode %v: error %v, want one naming node fc1/matmul", mode, err)
		}
	}
	// Inside a sub-graph, the error names the enclosing node too.
	ip := ifModel()
	ip.Graph.Input[0] = &onnxpb.ValueInfoProto{Name: proto.String("x")}
	m = mustLoad(t, marshal(t, ip))
	for _, mode := range []spore.Mode{spore.PyNativeMode, spore.GraphMode} {
		var err error
		inMode(mode, func() { _, err = m.Run(tensor.Ones(tensor.Float32, 2, 4)) })
		if err == nil || !strings.Contains(err.Error(), `node "branch" (If): node "then/mul" (Mul): `) {
			t.Errorf("mode %v: error %v, want one naming the If and the Mul in its branch", mode, err)
		}
		if testing.Verbose() {
			t.Log(err)
		}
	}
}

// toDouble rewrites a float32 model to float64, for finite differences.
func toDouble(mp *onnxpb.ModelProto) *onnxpb.ModelProto {
	mp = proto.Clone(mp).(*onnxpb.ModelProto)
	convert := func(tp *onnxpb.TensorProto) *onnxpb.TensorProto {
		if tp.GetDataType() != int32(onnxpb.TensorProto_FLOAT) {
			return tp
		}
		v := rawFloats(tp.GetRawData())
		if tp.RawData == nil {
			v = tp.GetFloatData()
		}
		d := make([]float64, len(v))
		for k, x := range v {
			d[k] = float64(x)
		}
		return &onnxpb.TensorProto{Name: tp.Name, Dims: tp.Dims, DataType: proto.Int32(int32(onnxpb.TensorProto_DOUBLE)), DoubleData: d}
	}
	var visit func(g *onnxpb.GraphProto)
	visit = func(g *onnxpb.GraphProto) {
		for i, init := range g.Initializer {
			g.Initializer[i] = convert(init)
		}
		for _, vi := range append(append([]*onnxpb.ValueInfoProto(nil), g.Input...), g.Output...) {
			if tt := vi.GetType().GetTensorType(); tt != nil && tt.GetElemType() == int32(onnxpb.TensorProto_FLOAT) {
				tt.ElemType = proto.Int32(int32(onnxpb.TensorProto_DOUBLE))
			}
		}
		for _, n := range g.Node {
			for _, a := range n.Attribute {
				if a.T != nil {
					a.T = convert(a.T)
				}
				// Casts to float32 become casts to float64.
				if n.GetOpType() == "Cast" && a.GetName() == "to" && a.GetI() == int64(onnxpb.TensorProto_FLOAT) {
					a.I = proto.Int64(int64(onnxpb.TensorProto_DOUBLE))
				}
			}
			for _, sub := range subGraphs(n) {
				visit(sub)
			}
		}
	}
	visit(mp.Graph)
	return mp
}

// checkGradients compares the gradients of sum(model(x)²) with respect to
// every trainable parameter: PyNative against Graph mode (the whole
// ValueAndGrad compiled by spore.Jit), and both against central finite
// differences on a float64 copy of the model.
func checkGradients(t *testing.T, mp *onnxpb.ModelProto, xs ...*tensor.Tensor) {
	t.Helper()
	data := marshal(t, toDouble(mp))
	m := mustLoad(t, data)
	params := m.TrainableParameters()
	loss := func(in ...*tensor.Tensor) *tensor.Tensor { return ops.Sum(ops.Square(m.Call(in...))) }
	vg := spore.ValueAndGrad(loss, spore.GradPosition(), spore.Weights(params...))
	x64 := make([]*tensor.Tensor, len(xs))
	for i, x := range xs {
		x64[i] = x
		if x.DType() == tensor.Float32 {
			x64[i] = ops.Cast(x, tensor.Float64)
		}
	}
	v0, eager := vg(x64...)
	// A fixed-arity wrapper: spore.Jit's reflective path calls its
	// function with Call, not CallSlice, so it needs one that is not
	// variadic.
	jv, graph := spore.Jit(func(xs []*tensor.Tensor) (*tensor.Tensor, []*tensor.Tensor) { return vg(xs...) })(x64)
	testkit.Near(t, "loss, Graph mode vs PyNative", []float64{jv.Item()}, 1e-12, v0.Item())
	const h = 1e-6
	for i, p := range params {
		testkit.Near(t, "gradient of "+p.Name()+", Graph mode vs PyNative", graph[i].Float64s(), 1e-10, eager[i].Float64s()...)
		vals := p.Float64s()
		// Up to 8 elements per parameter, spread over it: enough to catch
		// a wrong rule, few enough for a CNN.
		stride := max(1, len(vals)/8)
		var fd, an []float64
		ge := eager[i].Float64s()
		for k := 0; k < len(vals); k += stride {
			at := func(d float64) float64 {
				w := append([]float64(nil), vals...)
				w[k] += d
				p.Assign(tensor.FromSlice(w, p.Shape()...))
				return loss(x64...).Item()
			}
			fd = append(fd, (at(h)-at(-h))/(2*h))
			an = append(an, ge[k])
		}
		p.Assign(tensor.FromSlice(vals, p.Shape()...))
		testkit.Near(t, "gradient of "+p.Name()+" vs finite differences", an, 1e-6, fd...)
	}
}

func TestGradientsMLP(t *testing.T) {
	checkGradients(t, mlpModel(), tensor.RandNormal(tensor.Float32, 0, 1, 4, 3))
}

// bnModel is y = BatchNormalization(x) over 2 channels, with running
// statistics as initializers.
func bnModel() *onnxpb.ModelProto {
	g := graphProto("bn", []*onnxpb.NodeProto{
		node("BatchNormalization", "bn", []string{"x", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"}, []string{"y"}),
	}, []*onnxpb.TensorProto{
		floatTensor("bn.weight", []int64{2}, []float32{1.5, 0.5}),
		floatTensor("bn.bias", []int64{2}, []float32{0.1, -0.2}),
		floatTensor("bn.running_mean", []int64{2}, []float32{0.3, -0.4}),
		floatTensor("bn.running_var", []int64{2}, []float32{2, 0.5}),
	}, []*onnxpb.ValueInfoProto{valueInfoProto("x", onnxpb.TensorProto_FLOAT, -1, 2, 2, 2)},
		[]*onnxpb.ValueInfoProto{valueInfoProto("y", onnxpb.TensorProto_FLOAT, -1, 2, 2, 2)})
	return modelProto(17, g)
}

func TestCheckpointRoundTrip(t *testing.T) {
	data := marshal(t, bnModel())
	m := mustLoad(t, data)
	want := map[string]bool{"bn.weight": true, "bn.bias": true, "bn.running_mean": false, "bn.running_var": false}
	for _, p := range m.NamedParameters() {
		if rg, ok := want[p.Name]; !ok || p.Tensor.RequiresGrad() != rg {
			t.Errorf("parameter %s: RequiresGrad %v (known %v)", p.Name, p.Tensor.RequiresGrad(), ok)
		}
	}
	if n := len(m.TrainableParameters()); n != 2 {
		t.Errorf("%d trainable parameters, want 2", n)
	}
	x := tensor.RandNormal(tensor.Float32, 0, 1, 3, 2, 2, 2)
	// Change every parameter, save, load into a fresh copy of the model:
	// the copy must then compute what the changed model does.
	for _, p := range m.Parameters() {
		p.Assign(ops.AddScalar(p, 0.25))
	}
	y := m.Call(x)
	for _, ext := range []string{"safetensors", "ckpt"} {
		path := filepath.Join(t.TempDir(), "bn."+ext)
		if err := checkpoint.Save(path, train.NetParams(m), nil); err != nil {
			t.Fatal(err)
		}
		loaded, _, err := checkpoint.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		fresh := mustLoad(t, data)
		missing, unexpected, mismatched, err := checkpoint.LoadInto(train.NetParams(fresh), loaded, true)
		if err != nil || len(missing)+len(unexpected)+len(mismatched) > 0 {
			t.Fatalf("%s: LoadInto: %v %v %v %v", ext, missing, unexpected, mismatched, err)
		}
		testkit.Near(t, ext+" round trip", fresh.Call(x).Float64s(), 0, y.Float64s()...)
	}
}

// TestTrainMLP fine-tunes the Go-built MLP through train.Model and through
// TrainOneStepCell in Graph mode: the loss must fall, and the two modes
// must follow the same curve.
func TestTrainMLP(t *testing.T) {
	tensor.SetSeed(3)
	x := tensor.RandNormal(tensor.Float32, 0, 1, 32, 3)
	y := ops.Mul(x.Clone(), tensor.Scalar(float32(0.5)))
	y = ops.Slice(y, []int{0, 0}, []int{32, 2})
	curves := map[spore.Mode][]float64{}
	for _, mode := range []spore.Mode{spore.PyNativeMode, spore.GraphMode} {
		m := mustLoad(t, marshal(t, mlpModel()))
		wl := nn.NewWithLossCell(m.Layer(), nn.NewMSELoss(nn.Mean))
		step := nn.NewTrainOneStepCell(wl, optim.NewSGD(wl.TrainableParameters(), optim.SGDConfig{Common: optim.Common{LR: optim.Constant(0.05)}}))
		inMode(mode, func() {
			for range 20 {
				curves[mode] = append(curves[mode], step.Call(x, y).Item())
			}
		})
	}
	e, g := curves[spore.PyNativeMode], curves[spore.GraphMode]
	if !(g[len(g)-1] < 0.5*g[0]) {
		t.Errorf("Graph-mode loss did not fall by half in 20 steps: %v", g)
	}
	testkit.Near(t, "loss curves, Graph mode vs PyNative", g, 1e-4, e...)
}

func constNode(name string, t *onnxpb.TensorProto) *onnxpb.NodeProto {
	return node("Constant", name, nil, []string{name}, attrTensor("value", t))
}

func scalarFloat(v float32) *onnxpb.TensorProto { return floatTensor("", nil, []float32{v}) }

// ifModel is y = x*w when sum(x) > 0, else x-w: a condition computed from
// the data, so Graph mode stages both branches.
func ifModel() *onnxpb.ModelProto {
	then := graphProto("then", []*onnxpb.NodeProto{node("Mul", "then/mul", []string{"x", "w"}, []string{"t"})}, nil, nil,
		[]*onnxpb.ValueInfoProto{valueInfoProto("t", onnxpb.TensorProto_FLOAT)})
	els := graphProto("else", []*onnxpb.NodeProto{node("Sub", "else/sub", []string{"x", "w"}, []string{"e"})}, nil, nil,
		[]*onnxpb.ValueInfoProto{valueInfoProto("e", onnxpb.TensorProto_FLOAT)})
	g := graphProto("ifmodel", []*onnxpb.NodeProto{
		node("ReduceSum", "sum", []string{"x"}, []string{"s"}, attrInt("keepdims", 0)),
		constNode("zero", scalarFloat(0)),
		node("Greater", "positive", []string{"s", "zero"}, []string{"cond"}),
		node("If", "branch", []string{"cond"}, []string{"y"}, attrGraph("then_branch", then), attrGraph("else_branch", els)),
	}, []*onnxpb.TensorProto{floatTensor("w", []int64{3}, []float32{2, -1, 0.5})},
		[]*onnxpb.ValueInfoProto{valueInfoProto("x", onnxpb.TensorProto_FLOAT, -1, 3)},
		[]*onnxpb.ValueInfoProto{valueInfoProto("y", onnxpb.TensorProto_FLOAT, -1, 3)})
	return modelProto(17, g)
}

func TestIf(t *testing.T) {
	data := marshal(t, ifModel())
	w := []float32{2, -1, 0.5}
	for _, sign := range []float32{1, -1} {
		x := []float32{1, 2, 3, 0.5, 0.25, 1}
		want := make([]float64, len(x))
		for i := range x {
			x[i] *= sign
			if sign > 0 {
				want[i] = float64(x[i] * w[i%3])
			} else {
				want[i] = float64(x[i] - w[i%3])
			}
		}
		xt := tensor.FromSlice(x, 2, 3)
		got := bothModes(t, data, 0, xt)
		testkit.Near(t, "If", got[0].Float64s(), 1e-6, want...)
		// Graph mode runs one plan for both signs: the branch is picked
		// at run time.
		checkGradients(t, ifModel(), xt)
	}
}

// loopModel runs a constant 3 trips of v += w and stacks every v: the
// Loop becomes a Scan.
func loopModel() *onnxpb.ModelProto {
	body := graphProto("body", []*onnxpb.NodeProto{
		node("Add", "body/add", []string{"v", "w"}, []string{"v2"}),
		node("Identity", "body/cond", []string{"c"}, []string{"c2"}),
		node("Identity", "body/scan", []string{"v2"}, []string{"s"}),
	}, nil, []*onnxpb.ValueInfoProto{
		valueInfoProto("i", onnxpb.TensorProto_INT64), valueInfoProto("c", onnxpb.TensorProto_BOOL), valueInfoProto("v", onnxpb.TensorProto_FLOAT),
	}, []*onnxpb.ValueInfoProto{valueInfoProto("c2", onnxpb.TensorProto_BOOL), valueInfoProto("v2", onnxpb.TensorProto_FLOAT), valueInfoProto("s", onnxpb.TensorProto_FLOAT)})
	g := graphProto("loopmodel", []*onnxpb.NodeProto{
		constNode("trips", int64Tensor("", nil, []int64{3})),
		node("Loop", "loop", []string{"trips", "", "x"}, []string{"y", "ys"}, attrGraph("body", body)),
	}, []*onnxpb.TensorProto{floatTensor("w", []int64{3}, []float32{2, -1, 0.5})},
		[]*onnxpb.ValueInfoProto{valueInfoProto("x", onnxpb.TensorProto_FLOAT, -1, 3)},
		[]*onnxpb.ValueInfoProto{valueInfoProto("y", onnxpb.TensorProto_FLOAT, -1, 3), valueInfoProto("ys", onnxpb.TensorProto_FLOAT, 3, -1, 3)})
	return modelProto(17, g)
}

// whileModel doubles x until its sum reaches 100: a Loop whose condition
// the body computes, which becomes a While.
func whileModel() *onnxpb.ModelProto { return whileModelTrips(-1) }

// whileModelTrips is whileModel with at most trips trips (-1: no limit).
func whileModelTrips(trips int64) *onnxpb.ModelProto {
	body := graphProto("body", []*onnxpb.NodeProto{
		constNode("two", scalarFloat(2)),
		constNode("limit", scalarFloat(100)),
		node("Mul", "body/double", []string{"v", "two"}, []string{"v2"}),
		node("ReduceSum", "body/sum", []string{"v2"}, []string{"sum"}, attrInt("keepdims", 0)),
		node("Less", "body/less", []string{"sum", "limit"}, []string{"c2"}),
	}, nil, []*onnxpb.ValueInfoProto{
		valueInfoProto("i", onnxpb.TensorProto_INT64), valueInfoProto("c", onnxpb.TensorProto_BOOL), valueInfoProto("v", onnxpb.TensorProto_FLOAT),
	}, []*onnxpb.ValueInfoProto{valueInfoProto("c2", onnxpb.TensorProto_BOOL), valueInfoProto("v2", onnxpb.TensorProto_FLOAT)})
	nodes := []*onnxpb.NodeProto{
		constNode("go", boolTensor("", true)),
		node("Loop", "loop", []string{"", "go", "x"}, []string{"y"}, attrGraph("body", body)),
	}
	if trips >= 0 {
		nodes = append([]*onnxpb.NodeProto{constNode("trips", int64Tensor("", nil, []int64{trips}))}, nodes...)
		nodes[2].Input[0] = "trips"
	}
	g := graphProto("whilemodel", nodes, nil,
		[]*onnxpb.ValueInfoProto{valueInfoProto("x", onnxpb.TensorProto_FLOAT, -1, 3)},
		[]*onnxpb.ValueInfoProto{valueInfoProto("y", onnxpb.TensorProto_FLOAT, -1, 3)})
	return modelProto(17, g)
}

// scanModel is a cumulative sum over the leading axis of x (backwards when
// reverse is set), from the initial state s0.
func scanModel(reverse bool) *onnxpb.ModelProto {
	body := graphProto("body", []*onnxpb.NodeProto{
		node("Add", "body/add", []string{"s", "xi"}, []string{"s2"}),
		node("Identity", "body/out", []string{"s2"}, []string{"o"}),
	}, nil, []*onnxpb.ValueInfoProto{valueInfoProto("s", onnxpb.TensorProto_FLOAT), valueInfoProto("xi", onnxpb.TensorProto_FLOAT)},
		[]*onnxpb.ValueInfoProto{valueInfoProto("s2", onnxpb.TensorProto_FLOAT), valueInfoProto("o", onnxpb.TensorProto_FLOAT)})
	attrs := []*onnxpb.AttributeProto{attrGraph("body", body), attrInt("num_scan_inputs", 1)}
	if reverse {
		attrs = append(attrs, attrInts("scan_input_directions", 1))
	}
	g := graphProto("scanmodel", []*onnxpb.NodeProto{
		node("Scan", "scan", []string{"s0", "x"}, []string{"final", "cum"}, attrs...),
	}, nil,
		[]*onnxpb.ValueInfoProto{valueInfoProto("s0", onnxpb.TensorProto_FLOAT, 3), valueInfoProto("x", onnxpb.TensorProto_FLOAT, -1, 3)},
		[]*onnxpb.ValueInfoProto{valueInfoProto("final", onnxpb.TensorProto_FLOAT, 3), valueInfoProto("cum", onnxpb.TensorProto_FLOAT, -1, 3)})
	return modelProto(17, g)
}

func TestLoopAndScan(t *testing.T) {
	x := []float32{1, 2, 3, 0.5, 0.25, 1}
	w := []float32{2, -1, 0.5}
	xt := tensor.FromSlice(x, 2, 3)

	got := bothModes(t, marshal(t, loopModel()), 1e-7, xt)
	var final, stacked []float64
	for k := 1; k <= 3; k++ {
		for i := range x {
			stacked = append(stacked, float64(x[i]+float32(k)*w[i%3]))
		}
	}
	final = stacked[2*len(x):]
	testkit.Near(t, "Loop final", got[0].Float64s(), 1e-6, final...)
	if !got[1].Shape().Equal(tensor.Shape{3, 2, 3}) {
		t.Fatalf("Loop scan output shape %v", got[1].Shape())
	}
	testkit.Near(t, "Loop scan output", got[1].Float64s(), 1e-6, stacked...)
	checkGradients(t, loopModel(), xt)

	got = bothModes(t, marshal(t, whileModel()), 0, xt)
	v := append([]float32(nil), x...)
	for {
		s := float32(0)
		for i := range v {
			v[i] *= 2
			s += v[i]
		}
		if s >= 100 {
			break
		}
	}
	want := make([]float64, len(v))
	for i := range v {
		want[i] = float64(v[i])
	}
	testkit.Near(t, "Loop with a computed condition", got[0].Float64s(), 1e-6, want...)
	// With a trip count of 2 the loop stops before the sum reaches 100.
	got = bothModes(t, marshal(t, whileModelTrips(2)), 0, xt)
	for i := range x {
		want[i] = float64(4 * x[i])
	}
	testkit.Near(t, "Loop with a computed condition and a trip count", got[0].Float64s(), 1e-6, want...)

	for _, reverse := range []bool{false, true} {
		s0 := tensor.FromSlice([]float32{10, 20, 30}, 3)
		got := bothModes(t, marshal(t, scanModel(reverse)), 1e-7, s0, xt)
		var cum []float64
		acc := []float32{10, 20, 30}
		rows := []int{0, 1}
		if reverse {
			rows = []int{1, 0}
		}
		steps := make([][]float64, 2)
		for _, r := range rows {
			for j := range 3 {
				acc[j] += x[r*3+j]
				steps[r] = append(steps[r], float64(acc[j]))
			}
		}
		// Reverse directions scan the input backwards, but the outputs
		// still stack in step order: step k's output is row k.
		if reverse {
			steps[0], steps[1] = steps[1], steps[0]
		}
		cum = append(steps[0], steps[1]...)
		testkit.Near(t, "Scan final state", got[0].Float64s(), 1e-6, float64(acc[0]), float64(acc[1]), float64(acc[2]))
		testkit.Near(t, "Scan outputs", got[1].Float64s(), 1e-6, cum...)
	}
}

// TestControlFlowStaged checks that in Graph mode If, Loop and Scan become
// control-flow nodes holding their bodies, not unrolled or resolved at
// trace time, and that one compiled plan serves both branches of an If.
func TestControlFlowStaged(t *testing.T) {
	cases := []struct {
		name string
		mp   *onnxpb.ModelProto
		args []any
		want string
	}{
		{"If", ifModel(), []any{tensor.Zeros(tensor.Float32, 2, 3)}, "Cond"},
		{"Loop", loopModel(), []any{tensor.Zeros(tensor.Float32, 2, 3)}, "Scan"},
		{"While", whileModel(), []any{tensor.Zeros(tensor.Float32, 2, 3)}, "While"},
		{"Scan", scanModel(false), []any{tensor.Zeros(tensor.Float32, 3), tensor.Zeros(tensor.Float32, 2, 3)}, "Scan"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := mustLoad(t, marshal(t, c.mp))
			var fn any = func(x *tensor.Tensor) []*tensor.Tensor { return m.Outputs(x) }
			if len(c.args) == 2 {
				fn = func(s, x *tensor.Tensor) []*tensor.Tensor { return m.Outputs(s, x) }
			}
			ir, err := spore.IR(fn, c.args)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(ir, c.want) {
				t.Fatalf("the IR has no %s node:\n%s", c.want, ir)
			}
		})
	}
	m := nn.Jit(mustLoad(t, marshal(t, ifModel())))
	pos := m.Call(tensor.Ones(tensor.Float32, 2, 3)).Float32s()
	neg := m.Call(ops.Neg(tensor.Ones(tensor.Float32, 2, 3))).Float32s()
	if pos[0] != 2 || neg[0] != -3 || m.JitStats().Compiles != 1 {
		t.Errorf("If under nn.Jit: %v %v, %d compiles", pos, neg, m.JitStats().Compiles)
	}
}

// TestConcurrentCalls runs one model from several goroutines, eagerly and
// compiled, as a server would: the walker keeps no per-call state on the
// Model.
func TestConcurrentCalls(t *testing.T) {
	data := marshal(t, ifModel())
	eager := mustLoad(t, data)
	jitted := nn.Jit(mustLoad(t, data))
	x := tensor.FromSlice([]float32{1, 2, 3, -4, -5, -6}, 2, 3)
	want := eager.Call(x).Float64s()
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			for range 20 {
				var got []*tensor.Tensor
				var err error
				if g%2 == 0 {
					got, err = eager.Run(x)
				} else {
					got = []*tensor.Tensor{jitted.Call(x)} // the compiled plan
				}
				if err == nil && maxRelErr(got[0].Float64s(), want) != 0 {
					err = errors.New("a concurrent call computed another result")
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestTrainModel fine-tunes the Go-built MLP through train.Model in Graph
// mode: Train lowers the evaluation loss, Predict runs the trained model,
// and the checkpoint holds the parameters under their ONNX names.
func TestTrainModel(t *testing.T) {
	tensor.SetSeed(5)
	x := tensor.RandNormal(tensor.Float32, 0, 1, 64, 3)
	y := ops.Slice(ops.Mul(x, tensor.Scalar(float32(0.5))), []int{0, 0}, []int{64, 2})
	m := mustLoad(t, marshal(t, mlpModel()))
	tm := train.NewModel(m.Layer(), nn.NewMSELoss(nn.Mean), optim.NewAdam(m.TrainableParameters(), optim.AdamConfig{Common: optim.Common{LR: optim.Constant(0.02)}}), train.NewLoss())
	ds := dataset.FromTensors(x, y).Batch(16, false)
	var before, after map[string]float64
	var err error
	inMode(spore.GraphMode, func() {
		if before, err = tm.Eval(ds); err != nil {
			t.Fatal(err)
		}
		if err = tm.Train(10, ds); err != nil {
			t.Fatal(err)
		}
		if after, err = tm.Eval(ds); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("evaluation loss %.4f before, %.4f after", before["loss"], after["loss"])
	if !(after["loss"] < 0.5*before["loss"]) {
		t.Errorf("train.Model: loss %.4f before, %.4f after 10 epochs; want a fall by half", before["loss"], after["loss"])
	}
	if p := tm.Predict(x); !p.Shape().Equal(tensor.Shape{64, 2}) {
		t.Errorf("Predict gives %v", p.Shape())
	}
	names := checkpoint.Names(tm.CheckpointParams())
	if !strings.Contains(strings.Join(names, ","), "fc1.weight,fc1.bias,fc2.weight,fc2.bias") {
		t.Errorf("checkpoint names %v", names)
	}
}
