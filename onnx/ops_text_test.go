package onnx

import (
	"strings"
	"testing"

	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/tensor"
	"google.golang.org/protobuf/proto"
)

// textNode is a one-output node named n1 for the tests below.
func textNode(op string, ins []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
	return &onnxpb.NodeProto{Name: proto.String("n1"), OpType: proto.String(op), Input: ins, Output: []string{"y"}, Attribute: attrs}
}

// runOneNode runs a node whose inputs are all graph inputs, in both modes.
func runOneNode(opset int64, n *onnxpb.NodeProto, inputs ...*tensor.Tensor) (eager, graph []*tensor.Tensor, eerr, gerr error) {
	return runBothModes(oneNodeModel(opset, n, n.GetInput(), nil), inputs)
}

// TestTextOpsErrors checks that bad attributes and bad data fail with an
// error naming the node and the problem, the same in both modes, where
// ONNX Runtime's fixtures only show the good cases.
func TestTextOpsErrors(t *testing.T) {
	x := tensor.RandNormal(tensor.Float32, 0, 1, 4, 3, 2)
	tok := tensor.FromSlice([]int64{1, 2, 3, 2, 1}, 5)
	pool := []*onnxpb.AttributeProto{attrInt("min_gram_length", 1), attrInt("max_gram_length", 1),
		intsAttr("ngram_counts", 0), intsAttr("ngram_indexes", 0, 1), intsAttr("pool_int64s", 2, 3)}
	tfidf := func(extra ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
		return textNode("TfIdfVectorizer", []string{"x"}, append(append([]*onnxpb.AttributeProto{}, pool...), extra...)...)
	}
	cases := []struct {
		name   string
		opset  int64
		node   *onnxpb.NodeProto
		inputs []*tensor.Tensor
		want   string
	}{
		{"eyelike rank 3", 9, textNode("EyeLike", []string{"x"}), []*tensor.Tensor{x}, "must have rank 2"},
		{"eyelike string dtype", 9, textNode("EyeLike", []string{"x"}, attrInt("dtype", int64(onnxpb.TensorProto_STRING))), []*tensor.Tensor{tensor.Ones(tensor.Float32, 2, 2)}, "not supported"},
		{"reversesequence length past T", 10, textNode("ReverseSequence", []string{"x", "l"}), []*tensor.Tensor{x, tensor.FromSlice([]int64{4, 5, 1}, 3)}, "out of range"},
		{"reversesequence negative length", 10, textNode("ReverseSequence", []string{"x", "l"}), []*tensor.Tensor{x, tensor.FromSlice([]int64{2, -1, 1}, 3)}, "out of range"},
		{"reversesequence lens shape", 10, textNode("ReverseSequence", []string{"x", "l"}), []*tensor.Tensor{x, tensor.FromSlice([]int64{1, 1}, 2)}, "must have shape [3]"},
		{"reversesequence axes", 10, textNode("ReverseSequence", []string{"x", "l"}, attrInt("batch_axis", 2)), []*tensor.Tensor{x, tensor.FromSlice([]int64{1, 1, 1}, 3)}, "must be 0 and 1"},
		{"tfidf float tokens", 9, tfidf(strAttr("mode", "TF")), []*tensor.Tensor{tensor.Ones(tensor.Float32, 5)}, "only int32 and int64 tokens"},
		{"tfidf strings", 9, tfidf(strAttr("mode", "TF"), &onnxpb.AttributeProto{Name: proto.String("pool_strings"), Type: onnxpb.AttributeProto_STRINGS.Enum(), Strings: [][]byte{[]byte("a")}}), []*tensor.Tensor{tok}, "no string tensors"},
		{"tfidf mode", 9, tfidf(strAttr("mode", "BM25")), []*tensor.Tensor{tok}, `mode "BM25"`},
		{"tfidf weights", 9, tfidf(strAttr("mode", "TFIDF"), floatsAttrOf("weights", 1)), []*tensor.Tensor{tok}, "weights has 1 entries"},
		{"tfidf gram lengths", 9, textNode("TfIdfVectorizer", []string{"x"}, strAttr("mode", "TF"), attrInt("min_gram_length", 2), attrInt("max_gram_length", 1), intsAttr("ngram_counts", 0), intsAttr("ngram_indexes", 0), intsAttr("pool_int64s", 1)), []*tensor.Tensor{tok}, "1 ≤ min ≤ max"},
		{"tfidf ragged pool", 9, textNode("TfIdfVectorizer", []string{"x"}, strAttr("mode", "TF"), attrInt("min_gram_length", 2), attrInt("max_gram_length", 2), intsAttr("ngram_counts", 0, 0), intsAttr("ngram_indexes", 0), intsAttr("pool_int64s", 1, 2, 3)), []*tensor.Tensor{tok}, "do not split"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, eerr, gerr := runOneNode(tc.opset, tc.node, tc.inputs...)
			for mode, err := range map[string]error{"PyNative": eerr, "Graph": gerr} {
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `"n1"`) {
					t.Errorf("%s: got %v, want an error naming n1 and containing %q", mode, err, tc.want)
				}
			}
			if eerr != nil && gerr != nil && eerr.Error() != gerr.Error() {
				t.Errorf("the modes disagree:\nPyNative: %v\nGraph:    %v", eerr, gerr)
			}
		})
	}
}

// TestTextOpsValues checks hand-computed results at the edges the
// fixtures leave out: a diagonal past the matrix, lengths 0 and T, and a
// count of a unigram that max_skip_count must not multiply.
func TestTextOpsValues(t *testing.T) {
	x := tensor.FromSlice([]float32{0, 1, 2, 3, 4, 5}, 3, 2) // [T=3, B=2]
	cases := []struct {
		name   string
		opset  int64
		node   *onnxpb.NodeProto
		inputs []*tensor.Tensor
		want   []float64
	}{
		{"eyelike k beyond", 9, textNode("EyeLike", []string{"x"}, attrInt("k", 1<<40)), []*tensor.Tensor{tensor.Ones(tensor.Float32, 2, 3)}, []float64{0, 0, 0, 0, 0, 0}},
		{"eyelike bool", 9, textNode("EyeLike", []string{"x"}, attrInt("k", -1)), []*tensor.Tensor{tensor.FromSlice([]bool{true, true, true, true}, 2, 2)}, []float64{0, 0, 1, 0}},
		// Entry 0 keeps its order (length 0), entry 1 reverses all 3 steps.
		{"reversesequence 0 and T", 10, textNode("ReverseSequence", []string{"x", "l"}), []*tensor.Tensor{x, tensor.FromSlice([]int32{0, 3}, 2)}, []float64{0, 5, 2, 3, 4, 1}},
		// Tokens 2 3 2 2: the unigram 2 thrice, 3 once, whatever the skip.
		{"tfidf unigrams once", 9, textNode("TfIdfVectorizer", []string{"x"}, strAttr("mode", "TF"), attrInt("min_gram_length", 1), attrInt("max_gram_length", 1), attrInt("max_skip_count", 3),
			intsAttr("ngram_counts", 0), intsAttr("ngram_indexes", 1, 0), intsAttr("pool_int64s", 2, 3)), []*tensor.Tensor{tensor.FromSlice([]int64{2, 3, 2, 2}, 4)}, []float64{1, 3}},
		// Int32 tokens: the pool entry 2^32+2 must not wrap onto token 2.
		{"tfidf int32 wide pool", 9, textNode("TfIdfVectorizer", []string{"x"}, strAttr("mode", "TF"), attrInt("min_gram_length", 1), attrInt("max_gram_length", 1),
			intsAttr("ngram_counts", 0), intsAttr("ngram_indexes", 0, 1), intsAttr("pool_int64s", 1<<32+2, 3)), []*tensor.Tensor{tensor.FromSlice([]int32{2, 3, 2, 2}, 4)}, []float64{0, 1}},
		// Bigrams (2, 2) with spacing 1 (positions 2-3), 2 (0-2) and 3 (0-3).
		{"tfidf bigram spacings", 9, textNode("TfIdfVectorizer", []string{"x"}, strAttr("mode", "TF"), attrInt("min_gram_length", 2), attrInt("max_gram_length", 2), attrInt("max_skip_count", 2),
			intsAttr("ngram_counts", 0, 0), intsAttr("ngram_indexes", 0), intsAttr("pool_int64s", 2, 2)), []*tensor.Tensor{tensor.FromSlice([]int64{2, 3, 2, 2}, 4)}, []float64{3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, g, eerr, gerr := runOneNode(tc.opset, tc.node, tc.inputs...)
			if eerr != nil || gerr != nil {
				t.Fatalf("PyNative: %v; Graph: %v", eerr, gerr)
			}
			for mode, out := range map[string][]*tensor.Tensor{"PyNative": e, "Graph": g} {
				got := out[0].Float64s()
				if len(got) != len(tc.want) {
					t.Fatalf("%s: %v, want %v", mode, got, tc.want)
				}
				for i := range got {
					if got[i] != tc.want[i] {
						t.Fatalf("%s: %v, want %v", mode, got, tc.want)
					}
				}
			}
		})
	}
}

// The fixtures of ops_trig.go, ops_text.go and the run-time scatter
// reductions join TestOpGradients' list: a model is fine-tuned through
// them like through any other op.
func init() {
	gradCases = append(gradCases, "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
		"reversesequence_time_major", "reversesequence_batch_major",
		"scatternd_mul_runtime", "scatternd_max_runtime", "scatterelements_min_runtime")
}
