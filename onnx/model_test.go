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
		assertClose(t, "Graph mode vs PyNative", graph[i].Float64s(), eager[i].Float64s(), tol)
	}
	jitted := nn.Jit(mustLoad(t, data))
	assertClose(t, "nn.Jit vs PyNative", jitted.Call(xs...).Float64s(), eager[0].Float64s(), tol)
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
		assertClose(t, "Graph mode vs reference", y.Float64s(), mlpRef(x.Float32s(), batch), 1e-5)
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
}

// toDouble rewrites a float32 model to float64, for finite differences.
func toDouble(mp *onnxpb.ModelProto) *onnxpb.ModelProto {
	mp = proto.Clone(mp).(*onnxpb.ModelProto)
	for i, init := range mp.Graph.Initializer {
		if init.GetDataType() != int32(onnxpb.TensorProto_FLOAT) {
			continue
		}
		v := rawFloats(init.GetRawData())
		d := make([]float64, len(v))
		for k, x := range v {
			d[k] = float64(x)
		}
		mp.Graph.Initializer[i] = &onnxpb.TensorProto{Name: init.Name, Dims: init.Dims, DataType: proto.Int32(int32(onnxpb.TensorProto_DOUBLE)), DoubleData: d}
	}
	for _, vi := range append(mp.Graph.Input, mp.Graph.Output...) {
		if tt := vi.GetType().GetTensorType(); tt != nil && tt.GetElemType() == int32(onnxpb.TensorProto_FLOAT) {
			tt.ElemType = proto.Int32(int32(onnxpb.TensorProto_DOUBLE))
		}
	}
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
	assertClose(t, "loss, Graph mode vs PyNative", []float64{jv.Item()}, []float64{v0.Item()}, 1e-12)
	const h = 1e-6
	for i, p := range params {
		assertClose(t, "gradient of "+p.Name()+", Graph mode vs PyNative", graph[i].Float64s(), eager[i].Float64s(), 1e-10)
		vals := p.Float64s()
		fd := make([]float64, len(vals))
		for k := range vals {
			at := func(d float64) float64 {
				w := append([]float64(nil), vals...)
				w[k] += d
				p.Assign(tensor.FromSlice(w, p.Shape()...))
				return loss(x64...).Item()
			}
			fd[k] = (at(h) - at(-h)) / (2 * h)
		}
		p.Assign(tensor.FromSlice(vals, p.Shape()...))
		assertClose(t, "gradient of "+p.Name()+" vs finite differences", eager[i].Float64s(), fd, 1e-6)
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
		assertClose(t, ext+" round trip", fresh.Call(x).Float64s(), y.Float64s(), 0)
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
	assertClose(t, "loss curves, Graph mode vs PyNative", g, e, 1e-4)
}
