package onnx

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// The losses, Det and MaxUnpool are differentiable: their fixtures join
// TestOpGradients' cases.
func init() {
	gradCases = append(gradCases, "nllloss_weight_ii", "nllloss_sum_negative_ii", "sce_sum_log_prob",
		"sce_mean_weight", "det", "det_4x4", "det_batch_6x6", "maxunpool", "resize_cubic_up", "resize_crop_linear", "resize_combo_6", "scatternd_add", "scatternd_mul", "scatterelements_max", "batchnorm_training", "einsum_diag_product", "convtranspose3d_strided")
}

// TestMiscOpErrors checks that the losses and the smaller ops refuse bad
// input with an error naming the node and what is wrong, alike in both
// modes.
func TestMiscOpErrors(t *testing.T) {
	x := tensor.RandNormal(tensor.Float32, 0, 1, 2, 3, 4)
	u8 := func(v ...uint8) *tensor.Tensor { return tensor.FromSlice(v, len(v)) }
	node := func(op string, ins []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
		return &onnxpb.NodeProto{Name: proto.String("n1"), OpType: proto.String(op), Input: ins, Output: []string{"y"}, Attribute: attrs}
	}
	target := tensor.FromSlice([]int64{0, 1, 2, 0, 1, 2, 0, 1}, 2, 4)
	cases := []struct {
		name   string
		node   *onnxpb.NodeProto
		consts map[string]*tensor.Tensor
		inputs []*tensor.Tensor
		want   string
	}{
		{"nll bad reduction", node("NegativeLogLikelihoodLoss", []string{"x", "t"}, strAttr("reduction", "max")), nil, []*tensor.Tensor{x, target}, `reduction "max"`},
		{"nll target shape", node("NegativeLogLikelihoodLoss", []string{"x", "t"}), nil, []*tensor.Tensor{x, tensor.FromSlice([]int64{0, 1}, 2)}, "does not match input"},
		{"nll float target", node("NegativeLogLikelihoodLoss", []string{"x", "t"}), nil, []*tensor.Tensor{x, tensor.Ones(tensor.Float32, 2, 4)}, "target has dtype"},
		{"nll weight length", node("NegativeLogLikelihoodLoss", []string{"x", "t", "w"}), map[string]*tensor.Tensor{"w": tensor.Ones(tensor.Float32, 4)}, []*tensor.Tensor{x, target}, "weight must be [3]"},
		{"sce rank 1", node("SoftmaxCrossEntropyLoss", []string{"x", "t"}), nil, []*tensor.Tensor{tensor.Ones(tensor.Float32, 3), tensor.FromSlice([]int64{0}, 1)}, "[N, C, d1, ...]"},
		{"argmin axis", node("ArgMin", []string{"x"}, intAttr("axis", 3)), nil, []*tensor.Tensor{x}, "axis 3 is out of range"},
		{"det not square", node("Det", []string{"x"}), nil, []*tensor.Tensor{x}, "[..., M, M]"},
		{"bitshift direction", node("BitShift", []string{"x", "s"}, strAttr("direction", "UP")), nil, []*tensor.Tensor{u8(1), u8(1)}, `direction "UP"`},
		{"bitshift signed", node("BitShift", []string{"x", "s"}, strAttr("direction", "LEFT")), nil, []*tensor.Tensor{tensor.FromSlice([]int64{1}, 1), tensor.FromSlice([]int64{1}, 1)}, "takes unsigned integers"},
		{"compress traced condition", node("Compress", []string{"x", "c"}), nil, []*tensor.Tensor{x, tensor.FromSlice([]bool{true}, 1)}, "condition depends on the model's input values"},
		{"unique traced", node("Unique", []string{"x"}), nil, []*tensor.Tensor{x}, "X depends on the model's input values"},
		{"nonzero traced", node("NonZero", []string{"x"}), nil, []*tensor.Tensor{x}, "X depends on the model's input values"},
		{"maxunpool no kernel", node("MaxUnpool", []string{"x", "i"}), nil, []*tensor.Tensor{tensor.Ones(tensor.Float32, 1, 1, 2, 2), tensor.Zeros(tensor.Int64, 1, 1, 2, 2)}, "kernel_shape [] must have 2 entries"},
		{"maxunpool index out of range", node("MaxUnpool", []string{"x", "i"}, intsAttr("kernel_shape", 2, 2), intsAttr("strides", 2, 2)), nil, []*tensor.Tensor{tensor.Ones(tensor.Float32, 1, 1, 2, 2), tensor.FromSlice([]int64{0, 3, 16, 5}, 1, 1, 2, 2)}, "out of range"},
		{"maxunpool shapes", node("MaxUnpool", []string{"x", "i"}, intsAttr("kernel_shape", 2, 2)), nil, []*tensor.Tensor{tensor.Ones(tensor.Float32, 1, 1, 2, 2), tensor.Zeros(tensor.Int64, 1, 1, 2)}, "I of its shape"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var data []string
			for _, in := range tc.node.GetInput() {
				if _, ok := tc.consts[in]; !ok && in != "" && len(data) < len(tc.inputs) && !contains(data, in) {
					data = append(data, in)
				}
			}
			m := oneNodeModel(17, tc.node, data, tc.consts)
			// In PyNative mode the graph inputs are marked as computed
			// from the model's inputs, as a Model marks them.
			eerr := runMarked(m, tc.inputs)
			_, _, _, gerr := runBothModes(m, tc.inputs)
			for mode, err := range map[string]error{"PyNative": eerr, "Graph": gerr} {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: got %v, want an error containing %q", mode, err, tc.want)
				}
			}
		})
	}
}

// runMarked runs a one-node model eagerly with its graph inputs marked as
// the model's input values, as the Model's scope marks them, so that an
// op that must read an operand as values refuses as it does in Graph
// mode. It returns the error.
func runMarked(m *onnxpb.ModelProto, inputs []*tensor.Tensor) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				err = e
			} else {
				panic(r)
			}
		}
	}()
	g := m.GetGraph()
	n := g.GetNode()[0]
	env := map[string]*tensor.Tensor{}
	for _, in := range g.GetInitializer() {
		t, err := tensorFromProto(in, "")
		if err != nil {
			return err
		}
		env[in.GetName()] = t
	}
	marked := map[*tensor.Tensor]origin{}
	for i, in := range g.GetInput() {
		env[in.GetName()] = inputs[i]
		marked[inputs[i]] = origin{other: true}
	}
	ins := make([]*tensor.Tensor, len(n.GetInput()))
	for j, name := range n.GetInput() {
		ins[j] = env[name]
	}
	_, err = lookupOp(n.GetOpType(), modelOpset(m))(&nodeCtx{Node: n, Opset: modelOpset(m), fromData: marked}, ins)
	return err
}

// TestMaxUnpoolOutputShape checks MaxUnpool with an output_shape larger
// than the unpooled one against the example of ONNX's operator document:
// the values keep their coordinates, the extra rows and columns are zero.
func TestMaxUnpoolOutputShape(t *testing.T) {
	n := &onnxpb.NodeProto{Name: proto.String("n1"), OpType: proto.String("MaxUnpool"), Input: []string{"x", "i", "s"}, Output: []string{"y"},
		Attribute: []*onnxpb.AttributeProto{intsAttr("kernel_shape", 2, 2), intsAttr("strides", 2, 2)}}
	m := oneNodeModel(17, n, []string{"x", "i"}, map[string]*tensor.Tensor{"s": int64s([]int64{1, 1, 5, 5})})
	x := tensor.FromSlice([]float32{5, 6, 7, 8}, 1, 1, 2, 2)
	idx := tensor.FromSlice([]int64{5, 7, 13, 15}, 1, 1, 2, 2)
	want := tensor.FromSlice([]float32{
		0, 0, 0, 0, 0,
		0, 5, 0, 6, 0,
		0, 0, 0, 0, 0,
		0, 7, 0, 8, 0,
		0, 0, 0, 0, 0,
	}, 1, 1, 5, 5)
	eager, graph, eerr, gerr := runBothModes(m, []*tensor.Tensor{x, idx})
	if eerr != nil || gerr != nil {
		t.Fatalf("PyNative: %v\nGraph: %v", eerr, gerr)
	}
	for mode, got := range map[string][]*tensor.Tensor{"PyNative": eager, "Graph": graph} {
		if err := testkit.CheckClose(got[0], want, 0); err != nil {
			t.Errorf("%s: %v", mode, err)
		}
	}
}

// TestRandomOps checks Bernoulli and RandomUniformLike against their
// definitions, which ONNX's suite cannot (its expected outputs are NumPy's
// draws): Bernoulli gives 1 with probability p, RandomUniformLike stays in
// [low, high) with the uniform mean; a seeded node draws the same values in
// PyNative and Graph mode, and an unseeded one fresh values each time.
func TestRandomOps(t *testing.T) {
	const n = 4000
	p := make([]float32, 2*n) // n draws at 0.2, then n at 0.9
	for i := range p {
		p[i] = 0.2
		if i >= n {
			p[i] = 0.9
		}
	}
	probs := tensor.FromSlice(p, 2*n)
	mk := func(op string, attrs ...*onnxpb.AttributeProto) *onnxpb.ModelProto {
		return oneNodeModel(17, &onnxpb.NodeProto{Name: proto.String("n1"), OpType: proto.String(op), Input: []string{"x"}, Output: []string{"y"}, Attribute: attrs}, []string{"x"}, nil)
	}
	seed := &onnxpb.AttributeProto{Name: proto.String("seed"), Type: onnxpb.AttributeProto_FLOAT.Enum(), F: proto.Float32(2)}
	floatAttr := func(name string, v float32) *onnxpb.AttributeProto {
		return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_FLOAT.Enum(), F: proto.Float32(v)}
	}
	for _, tc := range []struct {
		name  string
		model *onnxpb.ModelProto
		check func(y []float64) string
	}{
		{"bernoulli", mk("Bernoulli"), func(y []float64) string {
			for k, want := range []float64{0.2, 0.9} {
				ones := 0.0
				for _, v := range y[k*n : (k+1)*n] {
					if v != 0 && v != 1 {
						return fmt.Sprintf("value %v is not 0 or 1", v)
					}
					ones += v
				}
				// Five standard errors of the frequency.
				if f := ones / n; math.Abs(f-want) > 5*math.Sqrt(want*(1-want)/n) {
					return fmt.Sprintf("frequency of ones %v at p=%v", f, want)
				}
			}
			return ""
		}},
		{"uniform", mk("RandomUniformLike", floatAttr("low", -3), floatAttr("high", -1)), func(y []float64) string {
			sum := 0.0
			for _, v := range y {
				if v < -3 || v >= -1 {
					return fmt.Sprintf("value %v outside [-3, -1)", v)
				}
				sum += v
			}
			if m := sum / float64(len(y)); math.Abs(m+2) > 5*2/math.Sqrt(12*float64(len(y))) {
				return fmt.Sprintf("mean %v, want -2", m)
			}
			return ""
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eager, graph, eerr, gerr := runBothModes(tc.model, []*tensor.Tensor{probs})
			if eerr != nil || gerr != nil {
				t.Fatalf("PyNative: %v\nGraph: %v", eerr, gerr)
			}
			for mode, y := range map[string]*tensor.Tensor{"PyNative": eager[0], "Graph": graph[0]} {
				if !y.Shape().Equal(probs.Shape()) || y.DType() != tensor.Float32 {
					t.Fatalf("%s: got %v %v", mode, y.Shape(), y.DType())
				}
				if msg := tc.check(y.Float64s()); msg != "" {
					t.Errorf("%s: %s", mode, msg)
				}
			}
			if testkit.CheckClose(eager[0], graph[0], 0) == nil {
				t.Errorf("unseeded draws are equal in both modes")
			}
			seeded := proto.Clone(tc.model).(*onnxpb.ModelProto)
			seeded.GetGraph().GetNode()[0].Attribute = append(seeded.GetGraph().GetNode()[0].Attribute, seed)
			eager, graph, eerr, gerr = runBothModes(seeded, []*tensor.Tensor{probs})
			if eerr != nil || gerr != nil {
				t.Fatalf("seeded: PyNative: %v\nGraph: %v", eerr, gerr)
			}
			if err := testkit.CheckClose(graph[0], eager[0], 0); err != nil {
				t.Errorf("seeded: Graph against PyNative: %v", err)
			}
			if msg := tc.check(eager[0].Float64s()); msg != "" {
				t.Errorf("seeded: %s", msg)
			}
		})
	}
}

// TestExportRandomUniformLike exports a seeded draw and reads it back:
// spore's loader gives the same values (the seed survives), and ONNX
// Runtime values of the dtype and shape in the range.
func TestExportRandomUniformLike(t *testing.T) {
	x := tensor.Zeros(tensor.Float32, 3, 4)
	f := func(x *tensor.Tensor) *tensor.Tensor { return ops.RandomUniformLikeSeeded(x, 1, 4, 9) }
	path := filepath.Join(t.TempDir(), "uniform.onnx")
	if err := Export(f, []*tensor.Tensor{x}, path); err != nil {
		t.Fatal(err)
	}
	m := readModel(t, path)
	found := false
	for _, n := range m.GetGraph().GetNode() {
		found = found || n.GetOpType() == "RandomUniformLike"
	}
	if !found {
		t.Fatalf("the export has no RandomUniformLike node: %v", m.GetGraph().GetNode())
	}
	back, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ys, err := back.Run(x)
	if err != nil {
		t.Fatal(err)
	}
	if err := testkit.CheckClose(ys[0], f(x), 0); err != nil {
		t.Errorf("loaded back: %v", err)
	}
	needORT(t)
	got := runORT(t, path, map[string]*tensor.Tensor{m.GetGraph().GetInput()[0].GetName(): x})
	for _, y := range got {
		if !y.Shape().Equal(x.Shape()) || y.DType() != tensor.Float32 {
			t.Fatalf("ONNX Runtime: got %v %v", y.Shape(), y.DType())
		}
		for _, v := range y.Float64s() {
			if v < 1 || v >= 4 {
				t.Errorf("ONNX Runtime: value %v outside [1, 4)", v)
			}
		}
	}
}

// TestBitShiftWidths checks BitShift on every unsigned dtype against Go's
// own shifts, wrapping at the width, in both modes.
func TestBitShiftWidths(t *testing.T) {
	x := []uint64{1, 3, 255, 1<<15 + 7, 1<<31 + 5, 1<<63 + 9}
	s := []uint64{0, 1, 4, 3, 2, 7}
	for _, tc := range []struct {
		dt   tensor.DType
		bits uint
		of   func([]uint64) *tensor.Tensor
	}{
		{tensor.Uint8, 8, func(v []uint64) *tensor.Tensor { return conv[uint8](v) }},
		{tensor.Uint16, 16, func(v []uint64) *tensor.Tensor { return conv[uint16](v) }},
		{tensor.Uint32, 32, func(v []uint64) *tensor.Tensor { return conv[uint32](v) }},
		{tensor.Uint64, 64, func(v []uint64) *tensor.Tensor { return conv[uint64](v) }},
	} {
		for _, dir := range []string{"LEFT", "RIGHT"} {
			t.Run(fmt.Sprint(tc.dt, dir), func(t *testing.T) {
				mask := uint64(1)<<tc.bits - 1
				if tc.bits == 64 {
					mask = math.MaxUint64
				}
				want := make([]uint64, len(x))
				for i := range x {
					v := x[i] & mask
					if dir == "LEFT" {
						want[i] = (v << s[i]) & mask
					} else {
						want[i] = v >> s[i]
					}
				}
				n := &onnxpb.NodeProto{Name: proto.String("n1"), OpType: proto.String("BitShift"), Input: []string{"x", "s"}, Output: []string{"y"},
					Attribute: []*onnxpb.AttributeProto{strAttr("direction", dir)}}
				m := oneNodeModel(17, n, []string{"x", "s"}, nil)
				eager, graph, eerr, gerr := runBothModes(m, []*tensor.Tensor{tc.of(mask8(x, mask)), tc.of(s)})
				if eerr != nil || gerr != nil {
					t.Fatalf("PyNative: %v\nGraph: %v", eerr, gerr)
				}
				for mode, y := range map[string]*tensor.Tensor{"PyNative": eager[0], "Graph": graph[0]} {
					if y.DType() != tc.dt {
						t.Fatalf("%s: dtype %v", mode, y.DType())
					}
					for i, w := range want {
						if got := uint64At(y, i); got != w {
							t.Errorf("%s: element %d: %d %s %d is %d, want %d", mode, i, x[i]&mask, dir, s[i], got, w)
						}
					}
				}
			})
		}
	}
}

// conv converts uint64 values to a 1-D tensor of element type T.
func conv[T uint8 | uint16 | uint32 | uint64](v []uint64) *tensor.Tensor {
	out := make([]T, len(v))
	for i, x := range v {
		out[i] = T(x)
	}
	return tensor.FromSlice(out, len(out))
}

// mask8 keeps the low bits of each value that mask selects.
func mask8(v []uint64, mask uint64) []uint64 {
	out := make([]uint64, len(v))
	for i, x := range v {
		out[i] = x & mask
	}
	return out
}

// uint64At reads element i of an unsigned tensor exactly.
func uint64At(t *tensor.Tensor, i int) uint64 {
	switch d := t.Data().(type) {
	case []uint8:
		return uint64(d[i])
	case []uint16:
		return uint64(d[i])
	case []uint32:
		return uint64(d[i])
	case []uint64:
		return d[i]
	}
	panic(fmt.Sprintf("not an unsigned tensor: %v", t.DType()))
}
