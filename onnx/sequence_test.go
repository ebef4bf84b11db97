package onnx

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	spore "github.com/sporeml/spore"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/tensor"
)

func seqValueInfo(name string) *onnxpb.ValueInfoProto {
	el := &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(onnxpb.TensorProto_FLOAT))}}}
	return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_SequenceType{SequenceType: &onnxpb.TypeProto_Sequence{ElemType: el}}}}
}

// seqModel takes a sequence s and a tensor x, and returns s with x put in
// front (a sequence), the concatenation of that along axis 0, and its
// element at position pos.
func seqModel(pos int64) *onnxpb.ModelProto {
	g := graphProto("seqmodel", []*onnxpb.NodeProto{
		constNode("zero", int64Tensor("", nil, []int64{0})),
		constNode("pos", int64Tensor("", nil, []int64{pos})),
		node("SequenceInsert", "insert", []string{"s", "x", "zero"}, []string{"s2"}),
		node("ConcatFromSequence", "concat", []string{"s2"}, []string{"cat"}, attrInt("axis", 0)),
		node("SequenceAt", "at", []string{"s2", "pos"}, []string{"at"}),
	}, nil,
		[]*onnxpb.ValueInfoProto{seqValueInfo("s"), valueInfoProto("x", onnxpb.TensorProto_FLOAT, 2)},
		[]*onnxpb.ValueInfoProto{seqValueInfo("s2"), valueInfoProto("cat", onnxpb.TensorProto_FLOAT, -1), valueInfoProto("at", onnxpb.TensorProto_FLOAT, -1)})
	return modelProto(17, g)
}

func floats(t *tensor.Tensor) []float64 { return t.Float64s() }

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSequenceAtTheBoundary runs seqModel on sequences of two lengths, in
// both modes, twice each (Graph mode compiles once per structure and reuses
// the plan), and checks every output against the inputs.
func TestSequenceAtTheBoundary(t *testing.T) {
	data := marshal(t, seqModel(-1))
	x := tensor.FromSlice([]float32{9, 8}, 2)
	a := tensor.FromSlice([]float32{1, 2, 3}, 3)
	b := tensor.FromSlice([]float32{4}, 1)
	cases := []struct {
		name  string
		elems []*tensor.Tensor
	}{
		{"one element", []*tensor.Tensor{a}},
		{"two elements", []*tensor.Tensor{a, b}},
		{"one element again", []*tensor.Tensor{a}},
		{"empty", nil},
	}
	for _, mode := range []spore.Mode{spore.PyNativeMode, spore.GraphMode} {
		m := mustLoad(t, data)
		for _, c := range cases {
			t.Run(mode.String()+"/"+c.name, func(t *testing.T) {
				s, err := NewSequence(c.elems...)
				if err != nil {
					t.Fatal(err)
				}
				var outs []*tensor.Tensor
				inMode(mode, func() { outs, err = m.Run(s, x) })
				if err != nil {
					t.Fatal(err)
				}
				want := append([]*tensor.Tensor{x}, c.elems...)
				got, ok := SequenceElements(outs[0])
				if !ok || len(got) != len(want) {
					t.Fatalf("output 0 is %s, want a sequence of %d", describeBoxed(outs[0]), len(want))
				}
				var cat []float64
				for i := range want {
					if !equalFloats(floats(got[i]), floats(want[i])) {
						t.Errorf("element %d is %v, want %v", i, floats(got[i]), floats(want[i]))
					}
					cat = append(cat, floats(want[i])...)
				}
				if !equalFloats(floats(outs[1]), cat) {
					t.Errorf("concatenation %v, want %v", floats(outs[1]), cat)
				}
				if last := floats(want[len(want)-1]); !equalFloats(floats(outs[2]), last) {
					t.Errorf("SequenceAt -1 gives %v, want %v", floats(outs[2]), last)
				}
			})
		}
		if mode == spore.GraphMode {
			if st := m.compiled.stats(); st.Compiles != 0 {
				// The handles go through the boundary jit, not the plain one.
				t.Errorf("the plain plan compiled %d times for a model with sequences", st.Compiles)
			}
		}
	}
}

// TestSequenceErrorsAgree checks that bad sequence input fails with one
// message in both modes.
func TestSequenceErrorsAgree(t *testing.T) {
	x := tensor.FromSlice([]float32{9, 8}, 2)
	a := tensor.FromSlice([]float32{1, 2, 3}, 3)
	s1, _ := NewSequence(a)
	cases := []struct {
		name string
		pos  int64
		ins  []*tensor.Tensor
		want string
	}{
		{"a tensor for a sequence", 0, []*tensor.Tensor{a, x}, `input "s" is a tensor, the model wants a sequence`},
		{"a sequence for a tensor", 0, []*tensor.Tensor{s1, s1}, `input "x" is a sequence, the model wants a tensor`},
		{"position out of range", 2, []*tensor.Tensor{s1, x}, "position 2 is out of range for a sequence of length 2"},
		{"an optional for a sequence", 0, []*tensor.Tensor{NewOptional(a), x}, "is an optional, the model wants a sequence"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := marshal(t, seqModel(c.pos))
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
}

func TestNewSequenceChecks(t *testing.T) {
	a := tensor.FromSlice([]float32{1}, 1)
	s, _ := NewSequence(a)
	cases := []struct {
		name  string
		elems []*tensor.Tensor
		want  string
	}{
		{"nil element", []*tensor.Tensor{a, nil}, "element 1 is nil"},
		{"mixed dtypes", []*tensor.Tensor{a, tensor.FromSlice([]int64{1}, 1)}, "element 1 has dtype"},
		{"nested", []*tensor.Tensor{s}, "is a sequence or optional"},
	}
	for _, c := range cases {
		if _, err := NewSequence(c.elems...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		}
	}
	if KindOf(a) != KindTensor || KindOf(s) != KindSequence || KindOf(NewOptional(nil)) != KindOptional {
		t.Errorf("KindOf: %v %v %v", KindOf(a), KindOf(s), KindOf(NewOptional(nil)))
	}
	if e, ok := OptionalElement(NewOptional(a)); !ok || e != a {
		t.Errorf("OptionalElement of an optional of a: %v %v", e, ok)
	}
	if e, ok := OptionalElement(NewOptional(nil)); !ok || e != nil {
		t.Errorf("OptionalElement of an empty optional: %v %v", e, ok)
	}
	if _, ok := SequenceElements(a); ok {
		t.Errorf("SequenceElements of a tensor says it is a sequence")
	}
}

// TestHandlesAreCollected checks that the registry of handles does not
// keep handles alive: after a collection their entries go.
func TestHandlesAreCollected(t *testing.T) {
	count := func() int {
		boxMu.Lock()
		defer boxMu.Unlock()
		return len(boxes)
	}
	before := count()
	for range 1000 {
		NewOptional(nil)
	}
	if count() < before+1000 {
		t.Fatalf("%d handles registered after making 1000, %d before", count(), before)
	}
	deadline := time.Now().Add(5 * time.Second)
	for count() >= before+1000 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := count(); n >= before+1000 {
		t.Errorf("%d handles still registered after collections, %d before", n, before)
	}
}

// TestSequenceOutputUnderJit checks that a function of tensors compiled
// over the model (nn.Jit's Call) refuses a sequence output rather than
// baking its handle into the plan, while Outputs in Graph mode returns it.
func TestSequenceOutputUnderJit(t *testing.T) {
	g := graphProto("split", []*onnxpb.NodeProto{
		node("SplitToSequence", "split", []string{"x"}, []string{"s"}, attrInt("axis", 0)),
	}, nil, []*onnxpb.ValueInfoProto{valueInfoProto("x", onnxpb.TensorProto_FLOAT, 2, 2)}, []*onnxpb.ValueInfoProto{seqValueInfo("s")})
	data := marshal(t, modelProto(17, g))
	x := tensor.FromSlice([]float32{1, 2, 3, 4}, 2, 2)
	var outs []*tensor.Tensor
	var err error
	inMode(spore.GraphMode, func() { outs, err = mustLoad(t, data).Run(x) })
	if err != nil {
		t.Fatal(err)
	}
	if elems, ok := SequenceElements(outs[0]); !ok || len(elems) != 2 || !equalFloats(floats(elems[1]), []float64{3, 4}) {
		t.Fatalf("Graph mode Outputs gives %s", describeBoxed(outs[0]))
	}
	func() {
		defer func() {
			r := recover()
			if e, ok := r.(error); !ok || !strings.Contains(e.Error(), `output "s" is a sequence, which a compiled function of tensors cannot return`) {
				t.Errorf("nn.Jit's Call: %v, want a refusal naming the output", r)
			}
		}()
		nn.Jit(mustLoad(t, data)).Call(x)
	}()
}
