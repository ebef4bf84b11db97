package onnx

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/tensor"
)

// allocBound is the most FuzzLoad lets Load allocate for a file of n
// bytes: protobuf decodes a one-byte varint into an 8-byte int64 and the
// decoder copies it once more into a tensor, so a few dozen bytes per
// byte of input is in proportion; gigabytes for a kilobyte file (a huge
// declared dimension believed) is not.
func allocBound(n int) uint64 { return 64*uint64(n) + 4<<20 }

// fuzzSeeds are the models the fuzzer starts from: the Go-built ones, the
// committed PyTorch fixtures and hostile files, and truncations of each.
func fuzzSeeds(t testing.TB) [][]byte {
	var seeds [][]byte
	huge := mlpModel()
	huge.Graph.Initializer[0] = floatTensor("fc1.weight", []int64{1 << 20, 1 << 10}, []float32{1, 2})
	hugeInput := mlpModel()
	hugeInput.Graph.Input[0] = valueInfoProto("x", 1, 1<<40, 1<<40)
	for _, mp := range []*onnxpb.ModelProto{mlpModel(), bnModel(), ifModel(), loopModel(), whileModel(), scanModel(true), huge, hugeInput} {
		seeds = append(seeds, marshal(t, mp))
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "torch", "*.onnx"))
	hostile, _ := filepath.Glob(filepath.Join("testdata", "hostile", "*.onnx"))
	files = append(files, hostile...)
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && len(b) < 1<<20 {
			seeds = append(seeds, b)
		}
	}
	n := len(seeds)
	for _, s := range seeds[:n] {
		for _, cut := range []int{1, 7, len(s) / 3, len(s) / 2, len(s) - 1} {
			if cut > 0 && cut < len(s) {
				seeds = append(seeds, s[:cut])
			}
		}
	}
	return seeds
}

// FuzzLoad feeds arbitrary bytes to Load and Check: they must return a
// model or an error, never panic, and allocate in proportion to the input.
// Models that load are not run (a valid Loop may legitimately run long).
func FuzzLoad(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		m, err := Load(bytes.NewReader(data))
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > allocBound(len(data)) {
			t.Fatalf("Load allocated %d bytes for a %d-byte input (bound %d)", got, len(data), allocBound(len(data)))
		}
		if err == nil && m == nil {
			t.Fatal("Load returned neither a model nor an error")
		}
		if err != nil && err.Error() == "" {
			t.Fatal("empty error message")
		}
		rep, err := Check(bytes.NewReader(data))
		if err == nil {
			_ = rep.String()
		}
	})
}

// TestLoadSeedsAllocation runs the fuzz seeds as a plain test, so that the
// allocation bound is checked on every test run, not only under -fuzz.
func TestLoadSeedsAllocation(t *testing.T) {
	for _, s := range fuzzSeeds(t) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, _ = Load(bytes.NewReader(s))
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > allocBound(len(s)) {
			t.Errorf("Load allocated %d bytes for a %d-byte input", got, len(s))
		}
	}
}

// The committed corpora, testdata/fuzz/FuzzLoad and testdata/fuzz/FuzzRun,
// are written by TestFuzzCorpus from fuzzCorpus: models whose ops declare
// huge tensors, and models whose initializers are truncated or
// inconsistent TensorProtos. go test runs them as seeds on every run;
// -fuzz starts its search from them.

// corpusSeed is one named seed file.
type corpusSeed struct {
	name string
	data []byte
}

// hugeSide is a dimension no tensor can have: 2^40 elements along one
// axis, a terabyte of bytes.
const hugeSide = 1 << 40

// hugeOpModels are small models whose ops, read literally, make enormous
// tensors: a shape, repeat count, size, depth, pad, hidden size or k of
// 2^40 (or one whose product overflows int64), given as an initializer
// or an attribute. Each must be refused with an error, not attempted.
func hugeOpModels() []corpusSeed {
	f32, i64 := onnxpb.TensorProto_FLOAT, onnxpb.TensorProto_INT64
	x23 := valueInfoProto("x", f32, 2, 3)
	x4d := valueInfoProto("x", f32, 1, 1, 2, 3)
	y := valueInfoProto("y", f32)
	yi := valueInfoProto("y", i64)
	i64s := func(name string, v ...int64) *onnxpb.TensorProto { return int64Tensor(name, []int64{int64(len(v))}, v) }
	i64scalar := func(name string, v int64) *onnxpb.TensorProto { return int64Tensor(name, nil, []int64{v}) }
	f32s := func(name string, v ...float32) *onnxpb.TensorProto {
		return floatTensor(name, []int64{int64(len(v))}, v)
	}
	one := func(op string, ins []string, inits []*onnxpb.TensorProto, in, out *onnxpb.ValueInfoProto, attrs ...*onnxpb.AttributeProto) *onnxpb.ModelProto {
		return modelProto(17, graphProto(op, []*onnxpb.NodeProto{node(op, op, ins, []string{out.GetName()}, attrs...)}, inits,
			[]*onnxpb.ValueInfoProto{in}, []*onnxpb.ValueInfoProto{out}))
	}
	// chain feeds a huge ConstantOfShape into op, for ops whose own
	// attributes are fine but whose input is the problem.
	chain := func(op string, shape []int64, out *onnxpb.ValueInfoProto) *onnxpb.ModelProto {
		return modelProto(17, graphProto(op, []*onnxpb.NodeProto{
			node("ConstantOfShape", "fill", []string{"shape"}, []string{"big"}, attrTensor("value", floatTensor("", []int64{1}, []float32{1}))),
			node(op, op, []string{"big"}, []string{out.GetName()}),
		}, []*onnxpb.TensorProto{i64s("shape", shape...)}, []*onnxpb.ValueInfoProto{x23}, []*onnxpb.ValueInfoProto{out}))
	}
	xseq := valueInfoProto("x", f32, 2, 1, 3)
	recurrent := func(op string, gates int64, hidden int64) *onnxpb.ModelProto {
		w := floatTensor("W", []int64{1, 2 * gates, 3}, make([]float32, 6*gates))
		r := floatTensor("R", []int64{1, 2 * gates, 2}, make([]float32, 4*gates))
		return one(op, []string{"x", "W", "R"}, []*onnxpb.TensorProto{w, r}, xseq, y, attrInt("hidden_size", hidden))
	}
	models := []struct {
		name string
		m    *onnxpb.ModelProto
	}{
		{"constantofshape-2e40", one("ConstantOfShape", []string{"s"}, []*onnxpb.TensorProto{i64s("s", hugeSide, hugeSide)}, x23, y)},
		{"constantofshape-overflow", one("ConstantOfShape", []string{"s"}, []*onnxpb.TensorProto{i64s("s", 1<<62, 1<<62, 4)}, x23, y)},
		{"constantofshape-negative", one("ConstantOfShape", []string{"s"}, []*onnxpb.TensorProto{i64s("s", -1, 3)}, x23, y)},
		{"expand-2e31", one("Expand", []string{"x", "s"}, []*onnxpb.TensorProto{i64s("s", 1<<31, 1<<31, 2, 3)}, x23, y)},
		{"tile-2e40", one("Tile", []string{"x", "r"}, []*onnxpb.TensorProto{i64s("r", hugeSide, 1)}, x23, y)},
		{"tile-overflow", one("Tile", []string{"x", "r"}, []*onnxpb.TensorProto{i64s("r", 1<<62, 1<<62)}, x23, y)},
		{"range-int-2e62", one("Range", []string{"a", "b", "d"}, []*onnxpb.TensorProto{i64scalar("a", 0), i64scalar("b", 1<<62), i64scalar("d", 1)}, x23, yi)},
		{"range-int-minmax", one("Range", []string{"a", "b", "d"}, []*onnxpb.TensorProto{i64scalar("a", math.MinInt64), i64scalar("b", math.MaxInt64), i64scalar("d", 3)}, x23, yi)},
		{"range-float-tiny-delta", one("Range", []string{"a", "b", "d"}, []*onnxpb.TensorProto{floatTensor("a", nil, []float32{0}), floatTensor("b", nil, []float32{1e30}), floatTensor("d", nil, []float32{1e-30})}, x23, y)},
		{"resize-sizes-2e30", one("Resize", []string{"x", "", "", "s"}, []*onnxpb.TensorProto{i64s("s", 1, 1, 1<<30, 1<<30)}, x4d, y)},
		{"resize-scales-1e9", one("Resize", []string{"x", "", "sc"}, []*onnxpb.TensorProto{f32s("sc", 1, 1, 1e9, 1e9)}, x4d, y)},
		{"resize-scales-inf", one("Resize", []string{"x", "", "sc"}, []*onnxpb.TensorProto{f32s("sc", 1, 1, float32(math.Inf(1)), 2)}, x4d, y)},
		{"nonzero-of-2e40", chain("NonZero", []int64{hugeSide}, yi)},
		{"unique-of-2e40", chain("Unique", []int64{hugeSide}, y)},
		{"onehot-depth-2e40", one("OneHot", []string{"i", "d", "v"}, []*onnxpb.TensorProto{i64s("i", 0, 1), i64scalar("d", hugeSide), f32s("v", 0, 1)}, x23, y)},
		{"pad-2e40", one("Pad", []string{"x", "p"}, []*onnxpb.TensorProto{i64s("p", 0, hugeSide, 0, hugeSide)}, x23, y)},
		{"pad-negative-huge", one("Pad", []string{"x", "p"}, []*onnxpb.TensorProto{i64s("p", 0, -hugeSide, 0, 0)}, x23, y)},
		{"lstm-hidden-2e40", recurrent("LSTM", 4, hugeSide)},
		{"gru-hidden-2e40", recurrent("GRU", 3, hugeSide)},
		{"rnn-hidden-2e31", recurrent("RNN", 1, 1<<31)},
		{"lstm-hidden-negative", recurrent("LSTM", 4, -2)},
		{"topk-k-2e40", one("TopK", []string{"x", "k"}, []*onnxpb.TensorProto{i64s("k", hugeSide)}, x23, y)},
		{"randomnormal-2e40", one("RandomNormal", nil, nil, x23, y, attrInts("shape", hugeSide, 4))},
		{"reshape-2e40", one("Reshape", []string{"x", "s"}, []*onnxpb.TensorProto{i64s("s", hugeSide, -1)}, x23, y)},
		{"split-2e40", one("Split", []string{"x", "s"}, []*onnxpb.TensorProto{i64s("s", hugeSide, -hugeSide+2)}, x23, y, attrInt("axis", 0))},
		{"depthtospace-2e40", one("DepthToSpace", []string{"x"}, nil, x4d, y, attrInt("blocksize", hugeSide))},
		{"convtranspose-output-shape-2e30", one("ConvTranspose", []string{"x", "w"}, []*onnxpb.TensorProto{floatTensor("w", []int64{1, 1, 2, 2}, make([]float32, 4))}, x4d, y, attrInts("output_shape", 1<<30, 1<<30))},
		{"convtranspose-dilation-2e40", one("ConvTranspose", []string{"x", "w"}, []*onnxpb.TensorProto{floatTensor("w", []int64{1, 1, 2, 2}, make([]float32, 4))}, x4d, y, attrInts("dilations", hugeSide, 1))},
		{"maxpool-pads-2e40", one("MaxPool", []string{"x"}, nil, x4d, y, attrInts("kernel_shape", 1, 1), attrInts("pads", hugeSide, 0, hugeSide, 0))},
		{"gather-index-2e40", one("Gather", []string{"x", "i"}, []*onnxpb.TensorProto{i64s("i", hugeSide)}, x23, y)},
		{"slice-step-0", one("Slice", []string{"x", "s", "e", "a", "st"}, []*onnxpb.TensorProto{i64s("s", 0), i64s("e", 1<<62), i64s("a", 0), i64s("st", 0)}, x23, y)},
		{"eyelike-k-2e40", one("EyeLike", []string{"x"}, nil, x23, y, attrInt("k", hugeSide))},
		{"flatten-axis-2e40", one("Flatten", []string{"x"}, nil, x23, y, attrInt("axis", hugeSide))},
	}
	var seeds []corpusSeed
	for _, m := range models {
		b, err := proto.Marshal(m.m)
		if err != nil {
			panic(err)
		}
		seeds = append(seeds, corpusSeed{"huge-" + m.name, b})
	}
	return seeds
}

// badTensorModels are y = x + W whose initializer W is a truncated or
// inconsistent TensorProto: data shorter or longer than its dimensions,
// dimensions that overflow or are negative, an unknown element type, and
// the serialised TensorProto itself cut off inside a field (wrapped in a
// graph and a model whose lengths are right, so that only the tensor is
// broken).
func badTensorModels() []corpusSeed {
	f32 := onnxpb.TensorProto_FLOAT
	add := func(w *onnxpb.TensorProto) *onnxpb.ModelProto {
		return modelProto(17, graphProto("bad", []*onnxpb.NodeProto{node("Add", "add", []string{"x", "W"}, []string{"y"})},
			[]*onnxpb.TensorProto{w}, []*onnxpb.ValueInfoProto{valueInfoProto("x", f32, 2, 3)}, []*onnxpb.ValueInfoProto{valueInfoProto("y", f32)}))
	}
	typed := func(dt onnxpb.TensorProto_DataType, dims []int64) *onnxpb.TensorProto {
		return &onnxpb.TensorProto{Name: proto.String("W"), Dims: dims, DataType: proto.Int32(int32(dt))}
	}
	good := floatTensor("W", []int64{2, 3}, []float32{1, 2, 3, 4, 5, 6})
	short := floatTensor("W", []int64{2, 3}, []float32{1, 2, 3, 4, 5, 6})
	short.RawData = short.RawData[:21]
	long := floatTensor("W", []int64{2, 3}, []float32{1, 2, 3, 4, 5, 6, 7})
	floats := typed(f32, []int64{2, 3})
	floats.FloatData = []float32{1, 2, 3, 4, 5}
	ints := typed(onnxpb.TensorProto_INT64, []int64{4})
	ints.Int64Data = []int64{1, 2, 3}
	huge := floatTensor("W", []int64{hugeSide}, []float32{1})
	overflow := typed(f32, []int64{1 << 32, 1 << 32, 1 << 32})
	negative := typed(f32, []int64{-3})
	unknown := typed(99, []int64{1})
	unknown.RawData = []byte{1, 2, 3, 4}
	halfShort := typed(onnxpb.TensorProto_FLOAT16, []int64{2, 3})
	halfShort.Int32Data = []int32{0x3c00, 0x3c00}
	strs := typed(onnxpb.TensorProto_STRING, []int64{3})
	strs.StringData = [][]byte{[]byte("a"), []byte("b")}
	external := floatTensor("W", []int64{2, 3}, nil)
	external.RawData = nil
	external.DataLocation = onnxpb.TensorProto_EXTERNAL.Enum()
	external.ExternalData = []*onnxpb.StringStringEntryProto{
		{Key: proto.String("location"), Value: proto.String("w.bin")},
		{Key: proto.String("offset"), Value: proto.String("9223372036854775807")},
		{Key: proto.String("length"), Value: proto.String("24")},
	}
	var seeds []corpusSeed
	for _, c := range []struct {
		name string
		w    *onnxpb.TensorProto
	}{
		{"raw-short", short}, {"raw-long", long}, {"float-data-short", floats}, {"int64-data-short", ints},
		{"dims-2e40-one-value", huge}, {"dims-overflow", overflow}, {"dims-negative", negative},
		{"dtype-99", unknown}, {"float16-short", halfShort}, {"strings-short", strs}, {"external-offset-max", external},
	} {
		b, err := proto.Marshal(add(c.w))
		if err != nil {
			panic(err)
		}
		seeds = append(seeds, corpusSeed{"tensor-" + c.name, b})
	}
	// The initializer's own bytes cut short: inside the dims, inside
	// raw_data's length, inside raw_data itself, one byte before its end.
	wb, err := proto.Marshal(good)
	if err != nil {
		panic(err)
	}
	empty := add(good)
	empty.Graph.Initializer = nil
	for _, cut := range []int{1, 3, 8, len(wb) - 20, len(wb) - 1} {
		gb, err := proto.Marshal(empty.Graph)
		if err != nil {
			panic(err)
		}
		gb = protowire.AppendTag(gb, 5, protowire.BytesType) // GraphProto.initializer
		gb = protowire.AppendBytes(gb, wb[:cut])
		shell := proto.Clone(empty).(*onnxpb.ModelProto)
		shell.Graph = nil
		mb, err := proto.Marshal(shell)
		if err != nil {
			panic(err)
		}
		mb = protowire.AppendTag(mb, 7, protowire.BytesType) // ModelProto.graph
		mb = protowire.AppendBytes(mb, gb)
		seeds = append(seeds, corpusSeed{fmt.Sprintf("tensor-cut-at-%d-of-%d", cut, len(wb)), mb})
	}
	return seeds
}

// fuzzCorpus is what TestFuzzCorpus writes for each fuzz target.
func fuzzCorpus() map[string][]corpusSeed {
	seeds := append(hugeOpModels(), badTensorModels()...)
	return map[string][]corpusSeed{"FuzzLoad": seeds, "FuzzRun": seeds}
}

// corpusFile is a seed in the format of go test's fuzz corpus files.
func corpusFile(data []byte) []byte {
	return []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data))
}

// TestFuzzCorpus checks that the committed corpus files are those
// fuzzCorpus makes; SPORE_FUZZ_WRITE=1 writes them. (Files the fuzzer
// adds itself, named by their hash, are left alone.)
func TestFuzzCorpus(t *testing.T) {
	write := os.Getenv("SPORE_FUZZ_WRITE") == "1"
	for target, seeds := range fuzzCorpus() {
		dir := filepath.Join("testdata", "fuzz", target)
		for _, s := range seeds {
			path := filepath.Join(dir, s.name)
			want := corpusFile(s.data)
			if write {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, want, 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s is missing or stale: run SPORE_FUZZ_WRITE=1 go test ./onnx -run TestFuzzCorpus and commit it", path)
			}
		}
	}
}

// fuzzMaxInput bounds the elements of an input FuzzRun makes for a model.
const fuzzMaxInput = 1 << 16

// FuzzRun loads arbitrary bytes and, when they make a model without
// loops, runs it in both modes on zero inputs of the declared shapes
// (dynamic dimensions 2): each mode must answer or refuse with an error,
// never hit a Go runtime panic, and both must do the same. Ops are held
// to a smaller maxMade, as in FuzzOpAttributes, so that a legal but large
// model does not slow the search. Loop and Scan are skipped because a
// valid one may run as long as its trip count says.
func FuzzRun(f *testing.F) {
	for _, mp := range []*onnxpb.ModelProto{mlpModel(), bnModel(), ifModel()} {
		f.Add(marshal(f, mp))
	}
	defer func(m int) { maxMade = m }(maxMade)
	maxMade = 1 << 22
	f.Fuzz(func(t *testing.T, data []byte) {
		mp := &onnxpb.ModelProto{}
		if proto.Unmarshal(data, mp) != nil || hasLoop(mp.GetGraph()) {
			return
		}
		eager, err := Load(bytes.NewReader(data))
		if err != nil {
			if isRuntimePanic(err) {
				t.Fatalf("Load: %v", err)
			}
			return
		}
		graph, err := Load(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("the second Load fails where the first did not: %v", err)
		}
		var ins []*tensor.Tensor
		for _, v := range eager.Inputs() {
			x, ok := fuzzInput(v)
			if !ok {
				return
			}
			ins = append(ins, x)
		}
		_, eerr := eager.Run(ins...)
		_, gerr := runGraph(graph, ins)
		for _, err := range []error{eerr, gerr} {
			if err != nil && isRuntimePanic(err) {
				t.Fatalf("Go runtime panic: %v", err)
			}
		}
		if (eerr == nil) != (gerr == nil) {
			t.Fatalf("the modes disagree: PyNative: %v; Graph: %v", eerr, gerr)
		}
	})
}

// hasLoop reports whether g or a subgraph has a Loop or Scan node.
func hasLoop(g *onnxpb.GraphProto) bool {
	for _, n := range g.GetNode() {
		if n.GetOpType() == "Loop" || n.GetOpType() == "Scan" {
			return true
		}
		for _, a := range n.GetAttribute() {
			if hasLoop(a.GetG()) {
				return true
			}
			for _, sg := range a.GetGraphs() {
				if hasLoop(sg) {
					return true
				}
			}
		}
	}
	return false
}

// fuzzInput makes zeros of an input's declared dtype and shape (dynamic
// dimensions 2), or reports that it cannot (an unknown dtype, too many
// elements).
func fuzzInput(v ValueInfo) (*tensor.Tensor, bool) {
	if v.DType == tensor.Invalid {
		return nil, false
	}
	shape := make([]int, len(v.Shape))
	n := 1
	for i, d := range v.Shape {
		if d < 0 {
			d = 2
		}
		if d > fuzzMaxInput || n*int(d) > fuzzMaxInput {
			return nil, false
		}
		shape[i] = int(d)
		n *= int(d)
	}
	return tensor.New(v.DType, shape...), true
}
