package onnx

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/tensor"
)

func TestLoadMLP(t *testing.T) {
	// Old exporters also list initializers as graph inputs (defaults that
	// may be overridden); they are parameters, not inputs to feed.
	mp := mlpModel()
	mp.Graph.Input = append(mp.Graph.Input, valueInfoProto("fc1.bias", onnxpb.TensorProto_FLOAT, 4))
	m, err := Load(bytes.NewReader(marshal(t, mp)))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Inputs(); len(got) != 1 || got[0].Name != "x" || got[0].Shape[0] != -1 || got[0].DimNames[0] != "batch" || got[0].DType != tensor.Float32 {
		t.Errorf("Inputs() = %+v", got)
	}
	if got := m.OutputInfo(); len(got) != 1 || got[0].Name != "y" || got[0].String() != "y [batch 2] Float32" {
		t.Errorf("OutputInfo() = %+v", got)
	}
	var names []string
	for _, p := range m.NamedParameters() {
		names = append(names, p.Name)
		if !p.Tensor.RequiresGrad() {
			t.Errorf("%s does not require gradients", p.Name)
		}
	}
	if got, want := strings.Join(names, ","), "fc1.weight,fc1.bias,fc2.weight,fc2.bias"; got != want {
		t.Errorf("parameters %s, want %s", got, want)
	}
	for _, batch := range []int{1, 5} {
		x := make([]float32, batch*3)
		for i := range x {
			x[i] = float32(i%7) - 2.5
		}
		y := m.Call(tensor.FromSlice(x, batch, 3))
		if !y.Shape().Equal(tensor.Shape{batch, 2}) {
			t.Fatalf("batch %d: shape %v", batch, y.Shape())
		}
		testkit.Near(t, "mlp", y.Float64s(), 1e-5, mlpRef(x, batch)...)
	}
}

func TestLoadRejects(t *testing.T) {
	good := marshal(t, mlpModel())
	withGraph := func(edit func(g *onnxpb.GraphProto)) []byte {
		m := mlpModel()
		edit(m.Graph)
		return marshal(t, m)
	}
	withOpset := func(v int64) []byte {
		m := mlpModel()
		m.OpsetImport[0].Version = proto.Int64(v)
		return marshal(t, m)
	}
	random := make([]byte, 4096)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "empty"},
		{"truncated", good[:len(good)/2], "truncated or not a protobuf"},
		{"truncated by one byte", good[:len(good)-1], "truncated or not a protobuf"},
		{"random bytes", random, "not a valid ONNX model"},
		{"text", []byte("this is not a model\n"), "not a valid ONNX model"},
		{"no graph", marshal(t, &onnxpb.ModelProto{IrVersion: proto.Int64(8)}), "holds no graph"},
		{"opset 0", withOpset(0), "opset 0; spore supports opsets 1 to 21"},
		{"new opset", withOpset(99), "opset 99"},
		{"huge dims", withGraph(func(g *onnxpb.GraphProto) {
			g.Initializer[0] = floatTensor("fc1.weight", []int64{1 << 40, 1 << 40}, []float32{1})
		}), "too many elements"},
		{"huge dims little data", withGraph(func(g *onnxpb.GraphProto) {
			g.Initializer[0] = floatTensor("fc1.weight", []int64{1 << 20, 1 << 10}, []float32{1, 2})
		}), "raw data holds 8 bytes, want 4294967296"},
		{"negative dim", withGraph(func(g *onnxpb.GraphProto) {
			g.Initializer[0] = floatTensor("fc1.weight", []int64{-3, 4}, nil)
		}), "negative dimension"},
		{"missing input", withGraph(func(g *onnxpb.GraphProto) {
			g.Node[1].Input[0] = "nowhere"
		}), `node "fc1/add" (Add) reads "nowhere", which no node, initializer or graph input defines`},
		{"cycle", withGraph(func(g *onnxpb.GraphProto) {
			g.Node[0].Input[0] = "h3" // fc1/matmul now depends on fc2/matmul
		}), `is cyclic: node "fc1/matmul" (MatMul) reads "h3"`},
		{"self loop", withGraph(func(g *onnxpb.GraphProto) {
			g.Node[2].Input[0] = "h2"
		}), `node "relu" (Relu) reads its own output "h2"`},
		{"produced twice", withGraph(func(g *onnxpb.GraphProto) {
			g.Node[3].Output[0] = "h1"
		}), `value "h1" is produced twice`},
		{"undefined output", withGraph(func(g *onnxpb.GraphProto) {
			g.Output[0].Name = proto.String("z")
		}), `output "z" is not produced`},
		{"unsupported ops", withGraph(func(g *onnxpb.GraphProto) {
			g.Node[2].OpType = proto.String("FancyRelu")
			g.Node = append(g.Node,
				node("NoSuchOp", "extra1", []string{"y"}, []string{"z1"}),
				node("NoSuchOp", "extra2", []string{"y"}, []string{"z2"}))
			custom := node("Custom", "mine", []string{"y"}, []string{"z3"})
			custom.Domain = proto.String("com.example")
			g.Node = append(g.Node, custom)
		}), `3 op type(s) that spore does not support at opset 17: FancyRelu (domain ai.onnx, 1 node(s), first "relu"); NoSuchOp (domain ai.onnx, 2 node(s), first "extra1"); Custom (domain com.example, 1 node(s), first "mine")`},
		{"bad constant", withGraph(func(g *onnxpb.GraphProto) {
			g.Node = append(g.Node, node("Constant", "c", nil, []string{"k"},
				attrTensor("value", &onnxpb.TensorProto{Dims: []int64{1 << 30, 1 << 30, 1 << 30}, DataType: proto.Int32(1)})))
		}), `node "c" (Constant): attribute value: dimensions`},
		{"external data from a stream", withGraph(func(g *onnxpb.GraphProto) {
			g.Initializer[1] = externalTensor("fc1.bias", []int64{4}, "w.bin", 0, 16)
		}), "read from a stream; use LoadFile"},
		{"sub-graph reads an undefined value", withGraph(func(g *onnxpb.GraphProto) {
			g.Initializer = append(g.Initializer, boolTensor("flag", true))
			then := graphProto("then", []*onnxpb.NodeProto{node("Relu", "inner", []string{"ghost"}, []string{"t"})}, nil, nil,
				[]*onnxpb.ValueInfoProto{valueInfoProto("t", onnxpb.TensorProto_FLOAT)})
			g.Node = append(g.Node, node("If", "branch", []string{"flag"}, []string{"z"}, attrGraph("then_branch", then), attrGraph("else_branch", then)))
		}), `sub-graph "then": node "inner" (Relu) reads "ghost"`},
		{"input declared twice", withGraph(func(g *onnxpb.GraphProto) {
			g.Input = append(g.Input, g.Input[0])
		}), `input name "x" is empty or declared twice`},
		{"initializer twice", withGraph(func(g *onnxpb.GraphProto) {
			g.Initializer = append(g.Initializer, g.Initializer[1])
		}), `initializer name "fc1.bias" is empty or used twice`},
		{"unsupported op in a sub-graph", withGraph(func(g *onnxpb.GraphProto) {
			g.Initializer = append(g.Initializer, boolTensor("flag", true))
			then := graphProto("then", []*onnxpb.NodeProto{node("NoSuchInnerOp", "inner", []string{"y"}, []string{"t"})}, nil, nil,
				[]*onnxpb.ValueInfoProto{valueInfoProto("t", onnxpb.TensorProto_FLOAT)})
			g.Node = append(g.Node, node("If", "branch", []string{"flag"}, []string{"z"}, attrGraph("then_branch", then), attrGraph("else_branch", then)))
		}), `NoSuchInnerOp (domain ai.onnx, 2 node(s), first "inner")`},
		{"string input", withGraph(func(g *onnxpb.GraphProto) {
			g.Input[0] = valueInfoProto("x", onnxpb.TensorProto_STRING, -1, 3)
		}), `graph input "x": element type STRING is not supported`},
		{"sub-graphs nested too deep", withGraph(func(g *onnxpb.GraphProto) {
			g.Initializer = append(g.Initializer, boolTensor("flag", true))
			leafGraph := func() *onnxpb.GraphProto {
				return graphProto("leaf", []*onnxpb.NodeProto{node("Relu", "leaf", []string{"y"}, []string{"t0"})}, nil, nil,
					[]*onnxpb.ValueInfoProto{valueInfoProto("t0", onnxpb.TensorProto_FLOAT)})
			}
			inner := leafGraph()
			for i := 1; i < 100; i++ {
				out := "t" + itoa(i)
				inner = graphProto("level"+itoa(i), []*onnxpb.NodeProto{node("If", "if"+itoa(i), []string{"flag"}, []string{out}, attrGraph("then_branch", inner), attrGraph("else_branch", leafGraph()))}, nil, nil,
					[]*onnxpb.ValueInfoProto{valueInfoProto(out, onnxpb.TensorProto_FLOAT)})
			}
			g.Node = append(g.Node, node("If", "top", []string{"flag"}, []string{"z"}, attrGraph("then_branch", inner), attrGraph("else_branch", leafGraph())))
		}), "sub-graphs nest deeper than 64 levels"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := Load(bytes.NewReader(c.data))
			if err == nil {
				t.Fatalf("Load succeeded (%v), want an error containing %q", m, c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q\ndoes not contain %q", err, c.want)
			}
		})
	}
}

// TestOpsets loads the MLP at every opset the loader accepts.
func TestOpsets(t *testing.T) {
	x := []float32{1, -2, 3, 0.5, 0.25, -1}
	for v := int64(MinOpset); v <= MaxOpset; v++ {
		mp := mlpModel()
		mp.OpsetImport[0].Version = proto.Int64(v)
		if v < 7 {
			// Before opset 7 the bias broadcasts only when told to.
			for _, n := range mp.Graph.Node {
				if n.GetOpType() == "Add" {
					n.Attribute = append(n.Attribute, attrInt("broadcast", 1))
				}
			}
		}
		m, err := Load(bytes.NewReader(marshal(t, mp)))
		if err != nil {
			t.Fatalf("opset %d: %v", v, err)
		}
		if m.Opset() != v {
			t.Errorf("Opset() = %d, want %d", m.Opset(), v)
		}
		testkit.Near(t, "opset "+itoa(int(v)), m.Call(tensor.FromSlice(x, 2, 3)).Float64s(), 1e-5, mlpRef(x, 2)...)
	}
}

func TestUnsupportedErrorType(t *testing.T) {
	m := mlpModel()
	m.Graph.Node[2].OpType = proto.String("FancyRelu")
	_, err := Load(bytes.NewReader(marshal(t, m)))
	var ue *UnsupportedError
	if !errors.As(err, &ue) || len(ue.Ops) != 1 || ue.Ops[0].OpType != "FancyRelu" || ue.Ops[0].FirstNode != `"relu"` {
		t.Fatalf("error %v (%T), want an *UnsupportedError for FancyRelu", err, err)
	}
}

// externalTensor is a float32 tensor whose data lives in file loc.
func externalTensor(name string, dims []int64, loc string, offset, length int) *onnxpb.TensorProto {
	kv := func(k, v string) *onnxpb.StringStringEntryProto {
		return &onnxpb.StringStringEntryProto{Key: proto.String(k), Value: proto.String(v)}
	}
	return &onnxpb.TensorProto{
		Name: proto.String(name), Dims: dims, DataType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)),
		DataLocation: onnxpb.TensorProto_EXTERNAL.Enum(),
		ExternalData: []*onnxpb.StringStringEntryProto{kv("location", loc), kv("offset", itoa(offset)), kv("length", itoa(length))},
	}
}

func itoa(i int) string {
	neg := i < 0
	if neg {
		i = -i
	}
	var b []byte
	for {
		b = append([]byte{byte('0' + i%10)}, b...)
		i /= 10
		if i == 0 {
			break
		}
	}
	if neg {
		b = append([]byte{'-'}, b...)
	}
	return string(b)
}

func TestExternalData(t *testing.T) {
	dir := t.TempDir()
	ref := mlpModel()
	// Put fc1.weight (48 bytes) and fc2.weight (32 bytes) in one data file
	// after 8 bytes of padding, as the ONNX tools lay them out.
	data := make([]byte, 8)
	w1 := ref.Graph.Initializer[0].GetRawData()
	w2 := ref.Graph.Initializer[2].GetRawData()
	data = append(append(data, w1...), w2...)
	if err := os.WriteFile(filepath.Join(dir, "mlp.onnx.data"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "secret.data")
	if err := os.WriteFile(outside, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link.data")); err != nil {
		t.Fatal(err)
	}
	write := func(name string, edit func(g *onnxpb.GraphProto)) string {
		m := mlpModel()
		m.Graph.Initializer[0] = externalTensor("fc1.weight", []int64{3, 4}, "mlp.onnx.data", 8, 48)
		m.Graph.Initializer[2] = externalTensor("fc2.weight", []int64{4, 2}, "mlp.onnx.data", 56, 32)
		if edit != nil {
			edit(m.Graph)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, marshal(t, m), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	m, err := LoadFile(write("mlp.onnx", nil))
	if err != nil {
		t.Fatal(err)
	}
	x := []float32{1, -2, 3, 0.5, 0.25, -1}
	testkit.Near(t, "external", m.Call(tensor.FromSlice(x, 2, 3)).Float64s(), 1e-5, mlpRef(x, 2)...)

	bad := []struct {
		name string
		t    *onnxpb.TensorProto
		want string
	}{
		{"absolute", externalTensor("fc1.weight", []int64{3, 4}, "/etc/passwd", 0, 48), "absolute path"},
		{"escape", externalTensor("fc1.weight", []int64{3, 4}, "../mlp.onnx.data", 0, 48), "leaves the model's directory"},
		{"escape inside", externalTensor("fc1.weight", []int64{3, 4}, "a/../../x", 0, 48), "leaves the model's directory"},
		{"missing file", externalTensor("fc1.weight", []int64{3, 4}, "nope.data", 0, 48), "no such file"},
		{"past the end", externalTensor("fc1.weight", []int64{3, 4}, "mlp.onnx.data", 80, 48), "too short"},
		{"wrong length", externalTensor("fc1.weight", []int64{3, 4}, "mlp.onnx.data", 0, 40), "want 48"},
		{"huge dims", externalTensor("fc1.weight", []int64{1 << 20, 1 << 10}, "mlp.onnx.data", 0, 48), "want 4294967296"},
		{"symbolic link out", externalTensor("fc1.weight", []int64{3, 4}, "link.data", 8, 48), "through a symbolic link"},
		{"directory", externalTensor("fc1.weight", []int64{3, 4}, ".", 0, 48), "not a regular file"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			path := write(c.name+".onnx", func(g *onnxpb.GraphProto) { g.Initializer[0] = c.t })
			_, err := LoadFile(path)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestCheckReport(t *testing.T) {
	m := mlpModel()
	m.Graph.Node = append(m.Graph.Node, node("NoSuchOp", "extra", []string{"y"}, []string{"z"}))
	rep, err := Check(bytes.NewReader(marshal(t, m)))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Opset != 17 || rep.IRVersion != 8 || rep.Nodes != 6 || rep.OpCounts["MatMul"] != 2 || rep.Values != 12+4+8+2 || rep.OK() {
		t.Errorf("report %+v", rep)
	}
	s := rep.String()
	for _, want := range []string{
		"ONNX IR version 8, ai.onnx opset 17, producer spore-test 1",
		`graph "mlp": 6 nodes, 4 initializers (26 values)`,
		"input   x [batch 3] Float32",
		"ops: Add 2, MatMul 2, NoSuchOp 1, Relu 1",
		`NoSuchOp (domain ai.onnx): 1 node(s), first "extra"`,
		"spore cannot load this model",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
	if _, err := Check(bytes.NewReader([]byte("junk"))); err == nil {
		t.Error("Check accepted junk")
	}
	old := mlpModel()
	old.OpsetImport[0].Version = proto.Int64(22)
	rep, err = Check(bytes.NewReader(marshal(t, old)))
	if err != nil || rep.OK() || !strings.Contains(rep.String(), "problem: the model uses ai.onnx opset 22; spore supports opsets 1 to 21") {
		t.Errorf("opset 22: %v\n%v", err, rep)
	}
	rep, err = Check(bytes.NewReader(marshal(t, mlpModel())))
	if err != nil || !rep.OK() || !strings.Contains(rep.String(), "spore can load this model") {
		t.Errorf("good model: %v %v", err, rep)
	}
	// CheckFile finds external data beside the model.
	rep, err = CheckFile(filepath.Join("testdata", "torch", "ext.onnx"))
	if err != nil || !rep.OK() {
		t.Errorf("ext.onnx: %v\n%v", err, rep)
	}
}

// rawFloats decodes little-endian float32 bytes, for tests.
func rawFloats(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// TestHostileFiles loads the files make_hostile.py writes, as a user
// would: each fails with its own clear error, and Check still reports on
// those that are models.
func TestHostileFiles(t *testing.T) {
	cases := []struct {
		file, want string
		check      bool // Check reads the file as a model
	}{
		{"truncated.onnx", "truncated or not a protobuf ModelProto", false},
		{"random.onnx", "not a valid ONNX model", false},
		{"hugedims.onnx", `tensor "w": dimensions [1048576 1048576] hold too many elements`, true},
		{"cyclic.onnx", `the main graph is cyclic: node "add" (Add) reads "b", which is computed from the node's own output`, true},
		{"missing_input.onnx", `node "add" (Add) reads "nowhere", which no node, initializer or graph input defines`, true},
		{"unsupported.onnx", `2 op type(s) that spore does not support at opset 17: NoSuchOp (domain ai.onnx, 2 node(s), first "first_missing"); Custom (domain com.example, 1 node(s), first "mine")`, true},
		{"opset22.onnx", "the model uses ai.onnx opset 22; spore supports opsets 1 to 21", true},
		{"extescape.onnx", `external data location "../../../etc/passwd" leaves the model's directory`, true},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join("testdata", "hostile", c.file)
			_, err := LoadFile(path)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("LoadFile: error %v\nwant one containing %q", err, c.want)
			}
			rep, err := CheckFile(path)
			if c.check != (err == nil) {
				t.Fatalf("CheckFile: error %v, want a report: %v", err, c.check)
			}
			if err == nil && (rep.OK() || !strings.Contains(rep.String(), c.want) && c.file != "unsupported.onnx") {
				t.Errorf("CheckFile's report lacks the problem %q:\n%s", c.want, rep)
			}
		})
	}
}
