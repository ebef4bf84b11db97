package onnx

import (
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	spore "github.com/sporeml/spore"
	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/tensor"
)

// trainingModel is one node of the preview training domain on inputs R, T
// and the named float tensors, importing only that domain.
func trainingModel(op string, ins, outs []string, attrs ...*onnxpb.AttributeProto) *onnxpb.ModelProto {
	n := node(op, strings.ToLower(op), append([]string{"R", "T"}, ins...), outs, attrs...)
	n.Domain = proto.String(trainingDomain)
	vis := []*onnxpb.ValueInfoProto{valueInfoProto("R", onnxpb.TensorProto_FLOAT), valueInfoProto("T", onnxpb.TensorProto_INT64)}
	for _, in := range ins {
		vis = append(vis, valueInfoProto(in, onnxpb.TensorProto_FLOAT, 2))
	}
	var ovs []*onnxpb.ValueInfoProto
	for _, o := range outs {
		ovs = append(ovs, valueInfoProto(o, onnxpb.TensorProto_FLOAT, 2))
	}
	m := modelProto(17, graphProto(op, []*onnxpb.NodeProto{n}, nil, vis, ovs))
	m.OpsetImport = []*onnxpb.OperatorSetIdProto{{Domain: proto.String(trainingDomain), Version: proto.Int64(1)}}
	return m
}

func attrFloat(name string, v float32) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_FLOAT.Enum(), F: proto.Float32(v)}
}

func attrString(name, v string) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_STRING.Enum(), S: []byte(v)}
}

// TestOptimizerOps runs Adagrad, Adam and Momentum at steps 0 and 3 in
// both modes against the update rules of ONNX's operator documentation,
// written out here in float64.
func TestOptimizerOps(t *testing.T) {
	const r = 0.1
	x, g, v, h := []float64{1, -2}, []float64{-0.5, 0.25}, []float64{0.3, -0.1}, []float64{0.2, 0.4}
	cases := []struct {
		name  string
		model *onnxpb.ModelProto
		ins   [][]float64
		want  func(t float64) [][]float64
	}{
		{"Adagrad", trainingModel("Adagrad", []string{"X", "G", "H"}, []string{"X2", "H2"},
			attrFloat("decay_factor", 0.1), attrFloat("epsilon", 1e-5), attrFloat("norm_coefficient", 0.01)),
			[][]float64{x, g, h}, func(t float64) [][]float64 {
				rr := r / (1 + t*0.1)
				var xn, hn []float64
				for i := range x {
					gr := 0.01*x[i] + g[i]
					hh := h[i] + gr*gr
					xn = append(xn, x[i]-rr*gr/(math.Sqrt(hh)+1e-5))
					hn = append(hn, hh)
				}
				return [][]float64{xn, hn}
			}},
		{"Adam", trainingModel("Adam", []string{"X", "G", "V", "H"}, []string{"X2", "V2", "H2"},
			attrFloat("alpha", 0.9), attrFloat("beta", 0.99), attrFloat("epsilon", 1e-3), attrFloat("norm_coefficient", 0.01), attrFloat("norm_coefficient_post", 0.02)),
			[][]float64{x, g, v, h}, func(t float64) [][]float64 {
				rr := r
				if t > 0 {
					rr = r * math.Sqrt(1-math.Pow(0.99, t)) / (1 - math.Pow(0.9, t))
				}
				var xn, vn, hn []float64
				for i := range x {
					gr := 0.01*x[i] + g[i]
					vv := 0.9*v[i] + 0.1*gr
					hh := 0.99*h[i] + 0.01*gr*gr
					xn = append(xn, 0.98*(x[i]-rr*vv/(math.Sqrt(hh)+1e-3)))
					vn, hn = append(vn, vv), append(hn, hh)
				}
				return [][]float64{xn, vn, hn}
			}},
		{"Momentum", trainingModel("Momentum", []string{"X", "G", "V"}, []string{"X2", "V2"},
			attrFloat("alpha", 0.9), attrFloat("beta", 0.5), attrString("mode", "standard"), attrFloat("norm_coefficient", 0.01)),
			[][]float64{x, g, v}, func(t float64) [][]float64 {
				b := 0.5
				if t == 0 {
					b = 1
				}
				var xn, vn []float64
				for i := range x {
					gr := 0.01*x[i] + g[i]
					vv := 0.9*v[i] + b*gr
					xn, vn = append(xn, x[i]-r*vv), append(vn, vv)
				}
				return [][]float64{xn, vn}
			}},
		{"Nesterov", trainingModel("Momentum", []string{"X", "G", "V"}, []string{"X2", "V2"},
			attrFloat("alpha", 0.9), attrFloat("beta", 0.5), attrString("mode", "nesterov"), attrFloat("norm_coefficient", 0.01)),
			[][]float64{x, g, v}, func(t float64) [][]float64 {
				b := 0.5
				if t == 0 {
					b = 1
				}
				var xn, vn []float64
				for i := range x {
					gr := 0.01*x[i] + g[i]
					vv := 0.9*v[i] + b*gr
					xn, vn = append(xn, x[i]-r*(gr+0.9*vv)), append(vn, vv)
				}
				return [][]float64{xn, vn}
			}},
	}
	for _, c := range cases {
		data := marshal(t, c.model)
		for _, step := range []int64{0, 3} {
			for _, mode := range []spore.Mode{spore.PyNativeMode, spore.GraphMode} {
				t.Run(c.name+"/"+mode.String(), func(t *testing.T) {
					ins := []*tensor.Tensor{tensor.Scalar(float32(r)), tensor.Scalar(step)}
					for _, in := range c.ins {
						ins = append(ins, tensor.FromSlice([]float32{float32(in[0]), float32(in[1])}, 2))
					}
					var outs []*tensor.Tensor
					var err error
					m := mustLoad(t, data)
					inMode(mode, func() { outs, err = m.Run(ins...) })
					if err != nil {
						t.Fatal(err)
					}
					for j, w := range c.want(float64(step)) {
						got := outs[j].Float64s()
						for i := range w {
							if math.Abs(got[i]-w[i]) > 1e-6*(1+math.Abs(w[i])) {
								t.Errorf("step %d, output %d: %v, want %v", step, j, got, w)
								break
							}
						}
					}
				})
			}
		}
	}
}

func TestOptimizerErrors(t *testing.T) {
	two := tensor.FromSlice([]float32{1, 2}, 2)
	three := tensor.FromSlice([]float32{1, 2, 3}, 3)
	mom := func(mode string) *onnxpb.ModelProto {
		return trainingModel("Momentum", []string{"X", "G", "V"}, []string{"X2", "V2"},
			attrFloat("alpha", 0.9), attrFloat("beta", 0.5), attrString("mode", mode), attrFloat("norm_coefficient", 0))
	}
	cases := []struct {
		name  string
		model *onnxpb.ModelProto
		ins   []*tensor.Tensor
		want  string
	}{
		{"bad mode", mom("heavy"), []*tensor.Tensor{tensor.Scalar(float32(0.1)), tensor.Scalar(int64(0)), two, two, two}, `mode "heavy"`},
		{"shapes differ", trainingModel("Adagrad", []string{"X", "G", "H"}, []string{"X2", "H2"}),
			[]*tensor.Tensor{tensor.Scalar(float32(0.1)), tensor.Scalar(int64(0)), two, two, three}, "must match X"},
		{"R not a scalar", trainingModel("Adagrad", []string{"X", "G", "H"}, []string{"X2", "H2"}),
			[]*tensor.Tensor{two, tensor.Scalar(int64(0)), two, two, two}, "R must be a one-element float tensor"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The graph declares X, G, ... as [2]; the checks tested here
			// are the op's, so the declared shapes are dropped.
			for _, vi := range c.model.GetGraph().GetInput() {
				vi.Type = nil
			}
			data := marshal(t, c.model)
			var errs [2]error
			for i, mode := range []spore.Mode{spore.PyNativeMode, spore.GraphMode} {
				m := mustLoad(t, data)
				inMode(mode, func() { _, errs[i] = m.Run(c.ins...) })
			}
			if errs[0] == nil || errs[1] == nil || errs[0].Error() != errs[1].Error() {
				t.Fatalf("PyNative %v; Graph %v: want one error in both", errs[0], errs[1])
			}
			if !strings.Contains(errs[0].Error(), c.want) {
				t.Errorf("error %q does not say %q", errs[0], c.want)
			}
		})
	}
	// A node of another domain is refused at load time, by name.
	m := trainingModel("Adagrad", []string{"X", "G", "H"}, []string{"X2", "H2"})
	m.GetGraph().GetNode()[0].Domain = proto.String("ai.onnx.preview.other")
	if _, err := Load(strings.NewReader(string(marshal(t, m)))); err == nil || !strings.Contains(err.Error(), "Adagrad (domain ai.onnx.preview.other") {
		t.Errorf("a node of an unknown domain: %v", err)
	}
}

// gradientModel computes y = a·b + a and Gradient(xs = [a, b], y); with
// viaLoop, y comes out of a Loop that runs no trips on a·b instead.
func gradientModel(viaLoop bool) *onnxpb.ModelProto {
	nodes := []*onnxpb.NodeProto{
		node("Mul", "mul", []string{"a", "b"}, []string{"ab"}),
		node("Add", "add", []string{"ab", "a"}, []string{"y"}),
	}
	if viaLoop {
		body := graphProto("body", []*onnxpb.NodeProto{
			node("Identity", "body/c", []string{"c"}, []string{"c2"}),
			node("Identity", "body/v", []string{"v"}, []string{"v2"}),
		}, nil, []*onnxpb.ValueInfoProto{valueInfoProto("i", onnxpb.TensorProto_INT64), valueInfoProto("c", onnxpb.TensorProto_BOOL), valueInfoProto("v", onnxpb.TensorProto_FLOAT)},
			[]*onnxpb.ValueInfoProto{valueInfoProto("c2", onnxpb.TensorProto_BOOL), valueInfoProto("v2", onnxpb.TensorProto_FLOAT)})
		nodes[1] = node("Loop", "loop", []string{"", "go", "ab"}, []string{"y"}, attrGraph("body", body))
		nodes = append([]*onnxpb.NodeProto{constNode("go", boolTensor("", false))}, nodes...)
	}
	gr := node("Gradient", "grad", []string{"a", "b"}, []string{"da", "db"},
		&onnxpb.AttributeProto{Name: proto.String("xs"), Type: onnxpb.AttributeProto_STRINGS.Enum(), Strings: [][]byte{[]byte("a"), []byte("b")}},
		attrString("y", "y"))
	gr.Domain = proto.String(trainingDomain)
	nodes = append(nodes, gr)
	m := modelProto(17, graphProto("grad", nodes, nil,
		[]*onnxpb.ValueInfoProto{valueInfoProto("a", onnxpb.TensorProto_FLOAT), valueInfoProto("b", onnxpb.TensorProto_FLOAT)},
		[]*onnxpb.ValueInfoProto{valueInfoProto("y", onnxpb.TensorProto_FLOAT), valueInfoProto("da", onnxpb.TensorProto_FLOAT), valueInfoProto("db", onnxpb.TensorProto_FLOAT)}))
	m.OpsetImport = append(m.OpsetImport, &onnxpb.OperatorSetIdProto{Domain: proto.String(trainingDomain), Version: proto.Int64(1)})
	return m
}

// TestGradientOp checks Gradient's dy/da = b + 1 and dy/db = a in both
// modes, and that a path through a Loop is refused at load time.
func TestGradientOp(t *testing.T) {
	data := marshal(t, gradientModel(false))
	for _, mode := range []spore.Mode{spore.PyNativeMode, spore.GraphMode} {
		for _, ab := range [][2]float32{{2, 3}, {-1, 0.5}} {
			m := mustLoad(t, data)
			var outs []*tensor.Tensor
			var err error
			inMode(mode, func() { outs, err = m.Run(tensor.Scalar(ab[0]), tensor.Scalar(ab[1])) })
			if err != nil {
				t.Fatal(err)
			}
			a, b := float64(ab[0]), float64(ab[1])
			want := []float64{a*b + a, b + 1, a}
			for i, w := range want {
				if got := outs[i].Float64s()[0]; math.Abs(got-w) > 1e-6 {
					t.Errorf("%v, a=%v b=%v: output %d is %v, want %v", mode, a, b, i, got, w)
				}
			}
		}
	}
	_, err := Load(strings.NewReader(string(marshal(t, gradientModel(true)))))
	if err == nil || !strings.Contains(err.Error(), "holds a sub-graph") {
		t.Errorf("Gradient through a Loop: %v", err)
	}
}
