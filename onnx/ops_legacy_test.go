package onnx

import (
	"bytes"
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

// onnxOpHistory is, for each ai.onnx op, the opsets at which ONNX defined
// a new version of it: the since_version of every schema of the op in
// onnx.defs.get_all_schemas_with_history() (ONNX 1.12, which knows
// opsets up to 17; ops it does not know, such as Gelu, are not checked). Copied from that call's output; the test below
// checks the table against it.
var onnxOpHistory = map[string][]int64{
	"Abs":                       {1, 6, 13},
	"Acos":                      {7},
	"Acosh":                     {9},
	"Add":                       {1, 6, 7, 13, 14},
	"And":                       {1, 7},
	"ArgMax":                    {1, 11, 12, 13},
	"ArgMin":                    {1, 11, 12, 13},
	"Asin":                      {7},
	"Asinh":                     {9},
	"Atan":                      {7},
	"Atanh":                     {9},
	"AveragePool":               {1, 7, 10, 11},
	"BatchNormalization":        {1, 6, 7, 9, 14, 15},
	"Bernoulli":                 {15},
	"BitShift":                  {11},
	"BlackmanWindow":            {17},
	"Cast":                      {1, 6, 9, 13},
	"CastLike":                  {15},
	"Ceil":                      {1, 6, 13},
	"Celu":                      {12},
	"Clip":                      {1, 6, 11, 12, 13},
	"Compress":                  {9, 11},
	"Concat":                    {1, 4, 11, 13},
	"ConcatFromSequence":        {11},
	"Constant":                  {1, 9, 11, 12, 13},
	"ConstantOfShape":           {9},
	"Conv":                      {1, 11},
	"ConvInteger":               {10},
	"ConvTranspose":             {1, 11},
	"Cos":                       {7},
	"Cosh":                      {9},
	"CumSum":                    {11, 14},
	"DFT":                       {17},
	"DepthToSpace":              {1, 11, 13},
	"DequantizeLinear":          {10, 13},
	"Det":                       {11},
	"Div":                       {1, 6, 7, 13, 14},
	"Dropout":                   {1, 6, 7, 10, 12, 13},
	"DynamicQuantizeLinear":     {11},
	"Einsum":                    {12},
	"Elu":                       {1, 6},
	"Equal":                     {1, 7, 11, 13},
	"Erf":                       {9, 13},
	"Exp":                       {1, 6, 13},
	"Expand":                    {8, 13},
	"EyeLike":                   {9},
	"Flatten":                   {1, 9, 11, 13},
	"Floor":                     {1, 6, 13},
	"GRU":                       {1, 3, 7, 14},
	"Gather":                    {1, 11, 13},
	"GatherElements":            {11, 13},
	"GatherND":                  {11, 12, 13},
	"Gemm":                      {1, 6, 7, 9, 11, 13},
	"GlobalAveragePool":         {1},
	"GlobalLpPool":              {1, 2},
	"GlobalMaxPool":             {1},
	"Greater":                   {1, 7, 9, 13},
	"GreaterOrEqual":            {12, 16},
	"GridSample":                {16},
	"HammingWindow":             {17},
	"HannWindow":                {17},
	"HardSigmoid":               {1, 6},
	"HardSwish":                 {14},
	"Hardmax":                   {1, 11, 13},
	"Identity":                  {1, 13, 14, 16},
	"If":                        {1, 11, 13, 16},
	"InstanceNormalization":     {1, 6},
	"IsInf":                     {10},
	"IsNaN":                     {9, 13},
	"LRN":                       {1, 13},
	"LSTM":                      {1, 7, 14},
	"LayerNormalization":        {17},
	"LeakyRelu":                 {1, 6, 16},
	"Less":                      {1, 7, 9, 13},
	"LessOrEqual":               {12, 16},
	"Log":                       {1, 6, 13},
	"LogSoftmax":                {1, 11, 13},
	"Loop":                      {1, 11, 13, 16},
	"LpNormalization":           {1},
	"LpPool":                    {1, 2, 11},
	"MatMul":                    {1, 9, 13},
	"MatMulInteger":             {10},
	"Max":                       {1, 6, 8, 12, 13},
	"MaxPool":                   {1, 8, 10, 11, 12},
	"MaxRoiPool":                {1},
	"MaxUnpool":                 {9, 11},
	"Mean":                      {1, 6, 8, 13},
	"MeanVarianceNormalization": {9, 13},
	"MelWeightMatrix":           {17},
	"Min":                       {1, 6, 8, 12, 13},
	"Mod":                       {10, 13},
	"Mul":                       {1, 6, 7, 13, 14},
	"Multinomial":               {7},
	"Neg":                       {1, 6, 13},
	"NegativeLogLikelihoodLoss": {12, 13},
	"NonMaxSuppression":         {10, 11},
	"NonZero":                   {9, 13},
	"Not":                       {1},
	"OneHot":                    {9, 11},
	"Optional":                  {15},
	"OptionalGetElement":        {15},
	"OptionalHasElement":        {15},
	"Or":                        {1, 7},
	"PRelu":                     {1, 6, 7, 9, 16},
	"Pad":                       {1, 2, 11, 13},
	"Pow":                       {1, 7, 12, 13, 15},
	"QLinearConv":               {10},
	"QLinearMatMul":             {10},
	"QuantizeLinear":            {10, 13},
	"RNN":                       {1, 7, 14},
	"RandomNormal":              {1},
	"RandomNormalLike":          {1},
	"RandomUniform":             {1},
	"RandomUniformLike":         {1},
	"Range":                     {11},
	"Reciprocal":                {1, 6, 13},
	"ReduceL1":                  {1, 11, 13},
	"ReduceL2":                  {1, 11, 13},
	"ReduceLogSum":              {1, 11, 13},
	"ReduceLogSumExp":           {1, 11, 13},
	"ReduceMax":                 {1, 11, 12, 13},
	"ReduceMean":                {1, 11, 13},
	"ReduceMin":                 {1, 11, 12, 13},
	"ReduceProd":                {1, 11, 13},
	"ReduceSum":                 {1, 11, 13},
	"ReduceSumSquare":           {1, 11, 13},
	"Relu":                      {1, 6, 13, 14},
	"Reshape":                   {1, 5, 13, 14},
	"Resize":                    {10, 11, 13},
	"ReverseSequence":           {10},
	"RoiAlign":                  {10, 16},
	"Round":                     {11},
	"STFT":                      {17},
	"Scan":                      {8, 9, 11, 16},
	"Scatter":                   {9},
	"ScatterElements":           {11, 13, 16},
	"ScatterND":                 {11, 13, 16},
	"Selu":                      {1, 6},
	"SequenceAt":                {11},
	"SequenceConstruct":         {11},
	"SequenceEmpty":             {11},
	"SequenceErase":             {11},
	"SequenceInsert":            {11},
	"SequenceLength":            {11},
	"SequenceMap":               {17},
	"Shape":                     {1, 13, 15},
	"Shrink":                    {9},
	"Sigmoid":                   {1, 6, 13},
	"Sign":                      {9, 13},
	"Sin":                       {7},
	"Sinh":                      {9},
	"Size":                      {1, 13},
	"Slice":                     {1, 10, 11, 13},
	"Softmax":                   {1, 11, 13},
	"SoftmaxCrossEntropyLoss":   {12, 13},
	"Softplus":                  {1},
	"Softsign":                  {1},
	"SpaceToDepth":              {1, 13},
	"Split":                     {1, 2, 11, 13},
	"SplitToSequence":           {11},
	"Sqrt":                      {1, 6, 13},
	"Squeeze":                   {1, 11, 13},
	"StringNormalizer":          {10},
	"Sub":                       {1, 6, 7, 13, 14},
	"Sum":                       {1, 6, 8, 13},
	"Tan":                       {7},
	"Tanh":                      {1, 6, 13},
	"TfIdfVectorizer":           {9},
	"ThresholdedRelu":           {10},
	"Tile":                      {1, 6, 13},
	"TopK":                      {1, 10, 11},
	"Transpose":                 {1, 13},
	"Trilu":                     {14},
	"Unique":                    {11},
	"Unsqueeze":                 {1, 11, 13},
	"Upsample":                  {1, 7, 9},
	"Where":                     {9, 16},
	"Xor":                       {1, 7},
}

// onnxDeprecated is the opset at which ONNX removed an op (its schema
// there is marked deprecated): the op exists only before it.
var onnxDeprecated = map[string]int64{"Upsample": 10, "Scatter": 11}

// unimplementedVersions are the op versions ONNX defines that the table
// has no form for, each with the reason.
var unimplementedVersions = map[string]map[int64]string{}

// versionAt returns the version of an op in effect at opset v: the
// largest since_version not above v, or 0 when the op did not exist yet.
func versionAt(history []int64, v int64) int64 {
	at := int64(0)
	for _, s := range history {
		if s <= v {
			at = s
		}
	}
	return at
}

// TestOpsetsFollowSchemaHistory checks the table's ranges against ONNX's
// schema history: an op the table has runs at every opset where ONNX
// defines it (but the versions listed as unimplemented) and at no other, and every range
// begins and ends where ONNX changed the op, so that no form claims an
// opset whose semantics it was not written for.
func TestOpsetsFollowSchemaHistory(t *testing.T) {
	for op, history := range onnxOpHistory {
		if _, ok := opTable[op]; !ok {
			continue // not implemented at any opset
		}
		isVersion := map[int64]bool{}
		for _, s := range history {
			isVersion[s] = true
		}
		removed := onnxDeprecated[op]
		var undefined, missing, listed []int64
		for v := int64(1); v <= MaxOpset; v++ {
			at := versionAt(history, v)
			exists := at != 0 && (removed == 0 || v < removed)
			got := lookupOp(op, v) != nil
			_, skip := unimplementedVersions[op][at]
			switch {
			case !exists && got:
				undefined = append(undefined, v)
			case exists && !got && !skip:
				missing = append(missing, v)
			case exists && got && skip:
				listed = append(listed, v)
			}
		}
		// One line per op and problem, with what to do about it.
		if len(undefined) > 0 {
			t.Errorf("%s runs at opsets %v, where ONNX does not define it (versions %v, removed at %d): narrow its registration", op, undefined, history, removed)
		}
		if len(missing) > 0 {
			t.Errorf("%s has no form at opsets %v, where ONNX defines it (versions %v): register the older versions (lower the bound where the schema did not change their semantics) or list them in unimplementedVersions", op, missing, history)
		}
		if len(listed) > 0 {
			t.Errorf("%s is listed as unimplemented at a version that runs at opsets %v", op, listed)
		}
		for _, d := range opTable[op] {
			// Opsets above 17 are beyond ONNX 1.12's history.
			if d.minOpset <= 17 && !isVersion[d.minOpset] {
				t.Errorf("%s: a form begins at opset %d, where ONNX did not change the op (versions %v)", op, d.minOpset, history)
			}
			if end := d.maxOpset + 1; d.maxOpset != 0 && end <= 17 && !isVersion[end] && end != removed {
				t.Errorf("%s: a form ends at opset %d, but ONNX did not change the op at %d (versions %v)", op, d.maxOpset, end, history)
			}
		}
	}
}

func TestOpsetRanges(t *testing.T) {
	for _, c := range []struct{ op, want string }{
		{"Upsample", "1 to 9"},
		{"Add", "1 to 21"},
		{"Scatter", "9 to 10"},
		{"Resize", "10 to 21"},
		{"NoSuchOp", ""},
	} {
		if got := opsetRanges(c.op); got != c.want {
			t.Errorf("opsetRanges(%s) = %q, want %q", c.op, got, c.want)
		}
	}
}

// runLoaded loads m and runs it on ins in PyNative mode and through its
// compiled plan (Graph mode), as the conformance suite does.
func runLoaded(m *onnxpb.ModelProto, ins []*tensor.Tensor) (eager, graph []*tensor.Tensor, eagerErr, graphErr error) {
	data, err := proto.Marshal(m)
	if err != nil {
		return nil, nil, err, err
	}
	em, err := Load(bytes.NewReader(data))
	if err != nil {
		return nil, nil, err, err
	}
	gm, err := Load(bytes.NewReader(data))
	if err != nil {
		return nil, nil, err, err
	}
	eager, eagerErr = em.Run(ins...)
	graph, graphErr = runGraph(gm, ins)
	return
}

// seq returns a float32 tensor of the shape holding distinct values
// of both signs, in no particular order.
func seq(shape ...int) *tensor.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32((i*37)%101-50) / 16
	}
	return tensor.FromSlice(v, shape...)
}

func floatAttrOf(name string, v float32) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_FLOAT.Enum(), F: proto.Float32(v)}
}

func floatsAttrOf(name string, v ...float32) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_FLOATS.Enum(), Floats: v}
}

// aModel is a one-node model: the node's inputs not in consts are graph
// inputs, bound in order to the case's inputs.
type aModel struct {
	opset  int64
	node   *onnxpb.NodeProto
	consts map[string]*tensor.Tensor
}

func (a aModel) proto(nInputs int) *onnxpb.ModelProto {
	var data []string
	for _, in := range a.node.GetInput() {
		if _, ok := a.consts[in]; !ok && in != "" && len(data) < nInputs && !contains(data, in) {
			data = append(data, in)
		}
	}
	return oneNodeModel(a.opset, a.node, data, a.consts)
}

// sameOutputs reports how got differs from want (dtype, shape, values
// within opTol), or "".
func sameOutputs(got, want []*tensor.Tensor) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d outputs, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].DType() != want[i].DType() {
			return fmt.Sprintf("output %d: dtype %v, want %v", i, got[i].DType(), want[i].DType())
		}
		if err := testkit.CheckClose(got[i], want[i], opTol); err != nil {
			return fmt.Sprintf("output %d: %v", i, err)
		}
	}
	return ""
}

// TestLegacyForms runs each older form of an op in both modes and checks
// it against the same computation written in the op's newer form (or
// against values worked out from the operator's definition).
func TestLegacyForms(t *testing.T) {
	x := seq(2, 3, 4)
	i64 := func(v ...int64) *tensor.Tensor { return int64s(v) }
	f32 := func(shape []int, v ...float32) *tensor.Tensor { return tensor.FromSlice(v, shape...) }
	n := func(op string, ins []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
		return node(op, "n", ins, []string{"y"}, attrs...)
	}
	n2 := func(op string, ins []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
		return node(op, "n", ins, []string{"y0", "y1"}, attrs...)
	}
	bnParams := map[string]*tensor.Tensor{"s": f32([]int{3}, 1, 2, 0.5), "b": f32([]int{3}, 0, -1, 0.25), "m": f32([]int{3}, 0.1, -0.2, 0.3), "v": f32([]int{3}, 1, 0.5, 2)}
	// Selu before opset 6, from its definition with the old defaults.
	seluOld := make([]float32, x.Size())
	for i, v := range x.Float32s() {
		if v > 0 {
			seluOld[i] = 1.0507 * v
		} else {
			seluOld[i] = 1.0507 * 1.6732 * float32(math.Expm1(float64(v)))
		}
	}
	// BatchNormalization with spatial=0: per-activation statistics.
	xb := seq(2, 3, 2)
	pa := map[string]*tensor.Tensor{"s": seq(3, 2), "b": seq(3, 2), "m": seq(3, 2), "v": ops.AddScalar(ops.Abs(seq(3, 2)), 0.5)}
	perAct := make([]float32, xb.Size())
	for i, v := range xb.Float32s() {
		j := i % 6
		s, b, m, va := pa["s"].Float32s()[j], pa["b"].Float32s()[j], pa["m"].Float32s()[j], pa["v"].Float32s()[j]
		perAct[i] = (v-m)/float32(math.Sqrt(float64(va)+1e-5))*s + b
	}
	img := f32([]int{1, 1, 2, 2}, 1, 2, 3, 4)
	// Nearest upsampling by 2 and 3 (ONNX's Upsample example).
	up := f32([]int{1, 1, 4, 6}, 1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4)
	cases := []struct {
		name   string
		legacy aModel
		inputs []*tensor.Tensor
		newer  *aModel          // the same computation in the newer form
		want   []*tensor.Tensor // or its values
	}{
		{"Add broadcast from axis 1 (opset 6)", aModel{6, n("Add", []string{"x", "b"}, intAttr("broadcast", 1), intAttr("axis", 1)), map[string]*tensor.Tensor{"b": seq(3)}}, []*tensor.Tensor{x},
			&aModel{13, n("Add", []string{"x", "b"}), map[string]*tensor.Tensor{"b": seq(3, 1)}}, nil},
		{"Mul broadcast of the last axes (opset 1)", aModel{1, n("Mul", []string{"x", "b"}, intAttr("broadcast", 1)), map[string]*tensor.Tensor{"b": seq(3, 4)}}, []*tensor.Tensor{x},
			&aModel{13, n("Mul", []string{"x", "b"}), map[string]*tensor.Tensor{"b": seq(3, 4)}}, nil},
		{"Sub of one shape (opset 6)", aModel{6, n("Sub", []string{"x", "b"}), map[string]*tensor.Tensor{"b": seq(2, 3, 4)}}, []*tensor.Tensor{x},
			&aModel{14, n("Sub", []string{"x", "b"}), map[string]*tensor.Tensor{"b": seq(2, 3, 4)}}, nil},
		{"Greater broadcast from axis 0 (opset 6)", aModel{6, n("Greater", []string{"x", "b"}, intAttr("broadcast", 1), intAttr("axis", 0)), map[string]*tensor.Tensor{"b": seq(2)}}, []*tensor.Tensor{x},
			&aModel{13, n("Greater", []string{"x", "b"}), map[string]*tensor.Tensor{"b": seq(2, 1, 1)}}, nil},
		{"Pow of a scalar exponent (opset 6)", aModel{6, n("Pow", []string{"x", "b"}, intAttr("broadcast", 1)), map[string]*tensor.Tensor{"b": tensor.Scalar(float32(2))}}, []*tensor.Tensor{x},
			&aModel{15, n("Pow", []string{"x", "b"}), map[string]*tensor.Tensor{"b": tensor.Scalar(float32(2))}}, nil},
		{"Gemm C broadcast (opset 6)", aModel{6, n("Gemm", []string{"x", "w", "c"}, intAttr("broadcast", 1), intAttr("transB", 1), floatAttrOf("beta", 0.5)), map[string]*tensor.Tensor{"w": seq(4, 3), "c": seq(4)}}, []*tensor.Tensor{seq(2, 3)},
			&aModel{13, n("Gemm", []string{"x", "w", "c"}, intAttr("transB", 1), floatAttrOf("beta", 0.5)), map[string]*tensor.Tensor{"w": seq(4, 3), "c": seq(4)}}, nil},
		{"PRelu per-channel slope (opset 6)", aModel{6, n("PRelu", []string{"x", "s"}), map[string]*tensor.Tensor{"s": seq(3)}}, []*tensor.Tensor{x},
			&aModel{16, n("PRelu", []string{"x", "s"}), map[string]*tensor.Tensor{"s": seq(3, 1)}}, nil},
		{"Cast to named by a string (opset 5)", aModel{5, n("Cast", []string{"x"}, strAttr("to", "DOUBLE")), nil}, []*tensor.Tensor{x},
			&aModel{13, n("Cast", []string{"x"}, intAttr("to", int64(onnxpb.TensorProto_DOUBLE))), nil}, nil},
		{"Clip bounds as attributes (opset 6)", aModel{6, n("Clip", []string{"x"}, floatAttrOf("min", -1), floatAttrOf("max", 0.5)), nil}, []*tensor.Tensor{x},
			&aModel{13, n("Clip", []string{"x", "lo", "hi"}), map[string]*tensor.Tensor{"lo": tensor.Scalar(float32(-1)), "hi": tensor.Scalar(float32(0.5))}}, nil},
		{"Clip with only max (opset 1)", aModel{1, n("Clip", []string{"x"}, floatAttrOf("max", 0.5)), nil}, []*tensor.Tensor{x},
			&aModel{13, n("Clip", []string{"x", "", "hi"}), map[string]*tensor.Tensor{"hi": tensor.Scalar(float32(0.5))}}, nil},
		{"Concat axis 1 by default (opset 3)", aModel{3, n("Concat", []string{"x", "z"}), map[string]*tensor.Tensor{"z": seq(2, 1, 4)}}, []*tensor.Tensor{x},
			&aModel{13, n("Concat", []string{"x", "z"}, intAttr("axis", 1)), map[string]*tensor.Tensor{"z": seq(2, 1, 4)}}, nil},
		{"Pad pads and value as attributes (opset 2)", aModel{2, n("Pad", []string{"x"}, intsAttr("pads", 0, 1, 0, 0, 0, 2), floatAttrOf("value", 1.5)), nil}, []*tensor.Tensor{x},
			&aModel{13, n("Pad", []string{"x", "p", "v"}), map[string]*tensor.Tensor{"p": i64(0, 1, 0, 0, 0, 2), "v": tensor.Scalar(float32(1.5))}}, nil},
		{"Pad paddings, reflect (opset 1)", aModel{1, n("Pad", []string{"x"}, intsAttr("paddings", 0, 1, 2, 0, 1, 1), strAttr("mode", "reflect")), nil}, []*tensor.Tensor{x},
			&aModel{13, n("Pad", []string{"x", "p"}, strAttr("mode", "reflect")), map[string]*tensor.Tensor{"p": i64(0, 1, 2, 0, 1, 1)}}, nil},
		{"Reshape shape as an attribute (opset 4)", aModel{4, n("Reshape", []string{"x"}, intsAttr("shape", 4, 0, -1)), nil}, []*tensor.Tensor{x},
			&aModel{13, n("Reshape", []string{"x", "s"}), map[string]*tensor.Tensor{"s": i64(4, 0, -1)}}, nil},
		{"Slice starts, ends and axes as attributes (opset 9)", aModel{9, n("Slice", []string{"x"}, intsAttr("starts", 1, 0), intsAttr("ends", 3, -1), intsAttr("axes", 2, 0)), nil}, []*tensor.Tensor{x},
			&aModel{13, n("Slice", []string{"x", "s", "e", "a"}), map[string]*tensor.Tensor{"s": i64(1, 0), "e": i64(3, -1), "a": i64(2, 0)}}, nil},
		{"Slice without axes (opset 1)", aModel{1, n("Slice", []string{"x"}, intsAttr("starts", 0, 1), intsAttr("ends", 1, 1000)), nil}, []*tensor.Tensor{x},
			&aModel{13, n("Slice", []string{"x", "s", "e"}), map[string]*tensor.Tensor{"s": i64(0, 1), "e": i64(1, 1000)}}, nil},
		{"Split sizes as an input (opset 1)", aModel{1, n2("Split", []string{"x", "s"}, intAttr("axis", 2)), map[string]*tensor.Tensor{"s": i64(1, 3)}}, []*tensor.Tensor{x},
			&aModel{13, n2("Split", []string{"x", "s"}, intAttr("axis", 2)), map[string]*tensor.Tensor{"s": i64(1, 3)}}, nil},
		{"Split sizes as an attribute (opset 2)", aModel{2, n2("Split", []string{"x"}, intAttr("axis", 1), intsAttr("split", 1, 2)), nil}, []*tensor.Tensor{x},
			&aModel{13, n2("Split", []string{"x", "s"}, intAttr("axis", 1)), map[string]*tensor.Tensor{"s": i64(1, 2)}}, nil},
		{"Squeeze axes as an attribute (opset 1)", aModel{1, n("Squeeze", []string{"x"}, intsAttr("axes", 1)), nil}, []*tensor.Tensor{seq(2, 1, 4)},
			&aModel{13, n("Squeeze", []string{"x", "a"}), map[string]*tensor.Tensor{"a": i64(1)}}, nil},
		{"ReduceSum axes as an attribute (opset 1)", aModel{1, n("ReduceSum", []string{"x"}, intsAttr("axes", 0, 2), intAttr("keepdims", 0)), nil}, []*tensor.Tensor{x},
			&aModel{13, n("ReduceSum", []string{"x", "a"}, intAttr("keepdims", 0)), map[string]*tensor.Tensor{"a": i64(0, 2)}}, nil},
		{"Tile tiles and axis as inputs (opset 5)", aModel{5, n("Tile", []string{"x", "t", "a"}), map[string]*tensor.Tensor{"t": i64(2), "a": i64(1)}}, []*tensor.Tensor{x},
			&aModel{13, n("Tile", []string{"x", "r"}), map[string]*tensor.Tensor{"r": i64(1, 2, 1)}}, nil},
		{"TopK k as an attribute (opset 9)", aModel{9, n2("TopK", []string{"x"}, intAttr("k", 2), intAttr("axis", 1)), nil}, []*tensor.Tensor{x},
			&aModel{13, n2("TopK", []string{"x", "k"}, intAttr("axis", 1)), map[string]*tensor.Tensor{"k": i64(2)}}, nil},
		{"Scatter (opset 9)", aModel{9, n("Scatter", []string{"x", "i", "u"}, intAttr("axis", 1)), map[string]*tensor.Tensor{"i": tensor.FromSlice([]int64{1, 0, 2}, 1, 3), "u": seq(1, 3)}}, []*tensor.Tensor{seq(2, 3)},
			&aModel{13, n("ScatterElements", []string{"x", "i", "u"}, intAttr("axis", 1)), map[string]*tensor.Tensor{"i": tensor.FromSlice([]int64{1, 0, 2}, 1, 3), "u": seq(1, 3)}}, nil},
		{"BatchNormalization spatial, is_test (opset 6)", aModel{6, n("BatchNormalization", []string{"x", "s", "b", "m", "v"}, intAttr("is_test", 1), intAttr("spatial", 1), floatAttrOf("epsilon", 1e-3)), bnParams}, []*tensor.Tensor{x},
			&aModel{15, n("BatchNormalization", []string{"x", "s", "b", "m", "v"}, floatAttrOf("epsilon", 1e-3)), bnParams}, nil},
		{"BatchNormalization per activation (opset 7)", aModel{7, n("BatchNormalization", []string{"x", "s", "b", "m", "v"}, intAttr("spatial", 0)), pa}, []*tensor.Tensor{xb},
			nil, []*tensor.Tensor{tensor.FromSlice(perAct, 2, 3, 2)}},
		{"Selu with the old defaults (opset 5)", aModel{5, n("Selu", []string{"x"}), nil}, []*tensor.Tensor{x},
			nil, []*tensor.Tensor{tensor.FromSlice(seluOld, 2, 3, 4)}},
		{"Hardmax over the flattened axes from 1 (opset 11)", aModel{11, n("Hardmax", []string{"x"}), nil}, []*tensor.Tensor{f32([]int{2, 2, 2}, 1, 5, 3, 2, 0, 0, 9, 1)},
			nil, []*tensor.Tensor{f32([]int{2, 2, 2}, 0, 1, 0, 0, 0, 0, 1, 0)}},
		{"Dropout is_test with a float mask (opset 6)", aModel{6, n2("Dropout", []string{"x"}, intAttr("is_test", 1), floatAttrOf("ratio", 0.3)), nil}, []*tensor.Tensor{x},
			nil, []*tensor.Tensor{x, tensor.Zeros(tensor.Float32, 2, 3, 4)}},
		{"Softmax over the flattened axes from 1 (opset 1)", aModel{1, n("Softmax", []string{"x"}), nil}, []*tensor.Tensor{x},
			nil, []*tensor.Tensor{ops.Reshape(ops.Softmax(ops.Reshape(x, 2, 12), 1), 2, 3, 4)}},
		{"Resize nearest, shrinking rounds up (opset 10)", aModel{10, n("Resize", []string{"x", "s"}), map[string]*tensor.Tensor{"s": f32([]int{4}, 1, 1, 0.6, 0.6)}}, []*tensor.Tensor{f32([]int{1, 1, 2, 4}, 1, 2, 3, 4, 5, 6, 7, 8)},
			nil, []*tensor.Tensor{f32([]int{1, 1, 1, 2}, 1, 3)}},
		{"Resize nearest, growing (opset 10)", aModel{10, n("Resize", []string{"x", "s"}), map[string]*tensor.Tensor{"s": f32([]int{4}, 1, 1, 2, 3)}}, []*tensor.Tensor{img},
			nil, []*tensor.Tensor{up}},
		{"Resize linear (opset 10)", aModel{10, n("Resize", []string{"x", "s"}, strAttr("mode", "linear")), map[string]*tensor.Tensor{"s": f32([]int{4}, 1, 1, 2, 0.5)}}, []*tensor.Tensor{seq(1, 2, 3, 4)},
			&aModel{13, n("Resize", []string{"x", "", "s"}, strAttr("mode", "linear"), strAttr("coordinate_transformation_mode", "asymmetric")), map[string]*tensor.Tensor{"s": f32([]int{4}, 1, 1, 2, 0.5)}}, nil},
		{"ImageScaler (opset 8)", aModel{8, n("ImageScaler", []string{"x"}, floatAttrOf("scale", 0.5), floatsAttrOf("bias", 1, -2)), nil}, []*tensor.Tensor{f32([]int{1, 2, 1, 2}, 1, 2, 3, 4)},
			nil, []*tensor.Tensor{f32([]int{1, 2, 1, 2}, 1.5, 2, -0.5, 0)}},
		{"Upsample height_scale and width_scale (opset 1)", aModel{1, n("Upsample", []string{"x"}, floatAttrOf("height_scale", 2), floatAttrOf("width_scale", 3)), nil}, []*tensor.Tensor{img},
			nil, []*tensor.Tensor{up}},
		{"Upsample scales as an attribute (opset 7)", aModel{7, n("Upsample", []string{"x"}, floatsAttrOf("scales", 1, 1, 2, 3)), nil}, []*tensor.Tensor{img},
			nil, []*tensor.Tensor{up}},
		{"Upsample scales as an input (opset 9)", aModel{9, n("Upsample", []string{"x", "s"}), map[string]*tensor.Tensor{"s": f32([]int{4}, 1, 1, 2, 3)}}, []*tensor.Tensor{img},
			nil, []*tensor.Tensor{up}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, g, eerr, gerr := runLoaded(c.legacy.proto(len(c.inputs)), c.inputs)
			if eerr != nil || gerr != nil {
				t.Fatalf("PyNative: %v; Graph: %v", eerr, gerr)
			}
			if msg := sameOutputs(g, e); msg != "" {
				t.Fatalf("Graph mode vs PyNative: %s", msg)
			}
			want := c.want
			if c.newer != nil {
				var err error
				if want, _, err, _ = runLoaded(c.newer.proto(len(c.inputs)), c.inputs); err != nil {
					t.Fatalf("the newer form: %v", err)
				}
			}
			if msg := sameOutputs(e, want); msg != "" {
				t.Errorf("%s", msg)
			}
		})
	}
}

// TestLegacyFormErrors checks that an older form refuses what its opset
// does not allow, the same in both modes, with a message naming it.
func TestLegacyFormErrors(t *testing.T) {
	x := seq(2, 3, 4)
	n := func(op string, ins []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
		return node(op, "n", ins, []string{"y"}, attrs...)
	}
	cases := []struct {
		name   string
		model  aModel
		inputs []*tensor.Tensor
		want   string
	}{
		{"Add of two shapes without broadcast", aModel{6, n("Add", []string{"x", "b"}), map[string]*tensor.Tensor{"b": seq(4)}}, []*tensor.Tensor{x}, "broadcast is not set"},
		{"Add with B not matching from axis", aModel{6, n("Add", []string{"x", "b"}, intAttr("broadcast", 1), intAttr("axis", 0)), map[string]*tensor.Tensor{"b": seq(3)}}, []*tensor.Tensor{x}, "does not match A"},
		{"Add with B of higher rank", aModel{6, n("Add", []string{"x", "b"}, intAttr("broadcast", 1)), map[string]*tensor.Tensor{"b": seq(1, 2, 3, 4)}}, []*tensor.Tensor{x}, "more axes than A"},
		{"Gemm with C not M×N and no broadcast", aModel{6, n("Gemm", []string{"x", "w", "c"}), map[string]*tensor.Tensor{"w": seq(3, 4), "c": seq(4)}}, []*tensor.Tensor{seq(2, 3)}, "broadcasts C only with broadcast=1"},
		{"Cast to an unknown name", aModel{5, n("Cast", []string{"x"}, strAttr("to", "FLOAT99")), nil}, []*tensor.Tensor{x}, "names no ONNX element type"},
		{"Slice without starts", aModel{9, n("Slice", []string{"x"}, intsAttr("ends", 1)), nil}, []*tensor.Tensor{x}, "attribute starts is missing"},
		{"TopK without k", aModel{9, node("TopK", "n", []string{"x"}, []string{"v", "i"}), nil}, []*tensor.Tensor{x}, "attribute k is missing"},
		{"Reshape without shape", aModel{4, n("Reshape", []string{"x"}), nil}, []*tensor.Tensor{x}, "attribute shape is missing"},
		{"Pad without pads", aModel{2, n("Pad", []string{"x"}), nil}, []*tensor.Tensor{x}, "attribute pads is missing"},
		{"Upsample without scales", aModel{7, n("Upsample", []string{"x"}), nil}, []*tensor.Tensor{x}, "attribute scales is missing"},
		{"ImageScaler with a bias per channel missing", aModel{8, n("ImageScaler", []string{"x"}, floatsAttrOf("bias", 1, 2)), nil}, []*tensor.Tensor{seq(1, 3, 2, 2)}, "bias has 2 values for 3 channels"},
		{"Upsample at opset 1 of a 3-D input", aModel{1, n("Upsample", []string{"x"}, floatAttrOf("height_scale", 2), floatAttrOf("width_scale", 2)), nil}, []*tensor.Tensor{x}, "want N×C×H×W"},
		{"ImageScaler of a 3-D input", aModel{8, n("ImageScaler", []string{"x"}), nil}, []*tensor.Tensor{x}, "want N×C×H×W"},
		{"BatchNormalization per activation with per-channel statistics", aModel{7, n("BatchNormalization", []string{"x", "s", "b", "m", "v"}, intAttr("spatial", 0)), map[string]*tensor.Tensor{"s": seq(3), "b": seq(3), "m": seq(3), "v": seq(3)}}, []*tensor.Tensor{x}, "with spatial=0, scale must have X's shape without the batch axis"},
		{"Tile with two counts", aModel{5, n("Tile", []string{"x", "t", "a"}), map[string]*tensor.Tensor{"t": int64s([]int64{2, 2}), "a": int64s([]int64{1})}}, []*tensor.Tensor{x}, "must hold one value each"},
		{"Scan at opset 8 of a scalar", aModel{8, node("Scan", "n", []string{"", "s"}, []string{"y"}, attrGraph("body", graphProto("b", nil, nil, nil, nil)), intAttr("num_scan_inputs", 1)), nil}, []*tensor.Tensor{tensor.Scalar(float32(1))}, "is a scalar"},
		{"Resize with a mode it lacks", aModel{10, n("Resize", []string{"x", "s"}, strAttr("mode", "cubic")), map[string]*tensor.Tensor{"s": tensor.FromSlice([]float32{1, 1, 2}, 3)}}, []*tensor.Tensor{x}, `mode "cubic" is not supported`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, eerr, gerr := runLoaded(c.model.proto(len(c.inputs)), c.inputs)
			for mode, err := range map[string]error{"PyNative": eerr, "Graph": gerr} {
				if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `node "n"`) {
					t.Errorf("%s: got %v, want an error naming node \"n\" and containing %q", mode, err, c.want)
				}
			}
			if eerr != nil && gerr != nil && eerr.Error() != gerr.Error() {
				t.Errorf("the modes disagree:\nPyNative: %v\nGraph:    %v", eerr, gerr)
			}
		})
	}
}

// TestUnsupportedOpVersion checks that an op at an opset where the table
// has no form of it (here, where ONNX has removed it: Upsample from 10,
// Scatter from 11) is refused as unsupported at the model's opset, naming
// the op and the opsets spore has it at, by Load and by Check.
func TestUnsupportedOpVersion(t *testing.T) {
	for _, c := range []struct {
		opset  int64
		n      *onnxpb.NodeProto
		ranges string
	}{
		{10, node("Upsample", "up", []string{"x", "s"}, []string{"y"}), "1 to 9"},
		{11, node("Scatter", "up", []string{"x", "i", "u"}, []string{"y"}), "9 to 10"},
		{13, node("Scatter", "up", []string{"x", "i", "u"}, []string{"y"}), "9 to 10"},
	} {
		opset, op := c.opset, c.n.GetOpType()
		m := oneNodeModel(opset, c.n, c.n.GetInput(), nil)
		data, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Load(bytes.NewReader(data))
		want := fmt.Sprintf("spore does not support at opset %d: %s (domain ai.onnx, 1 node(s), first \"up\", spore implements it at opsets %s)", opset, op, c.ranges)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("opset %d: Load: %v\nwant an error containing %q", opset, err, want)
		}
		rep, err := Check(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		line := op + ` (domain ai.onnx): 1 node(s), first "up"; spore implements it at opsets ` + c.ranges
		if rep.OK() || len(rep.Unsupported) != 1 || !strings.Contains(rep.String(), line) || !strings.Contains(rep.String(), fmt.Sprintf("ai.onnx opset %d,", opset)) {
			t.Errorf("opset %d: Check's report lacks %q:\n%s", opset, line, rep)
		}
	}
}

// TestOpsetOutOfRangeOneLine checks that a model of an opset spore does
// not read is refused in one line, by Load and by Check, without a list
// of its ops as unsupported.
func TestOpsetOutOfRangeOneLine(t *testing.T) {
	for _, v := range []int64{0, 22} {
		mp := mlpModel()
		mp.OpsetImport[0].Version = proto.Int64(v)
		data := marshal(t, mp)
		want := fmt.Sprintf("the model uses ai.onnx opset %d; spore supports opsets 1 to 21", v)
		_, err := Load(bytes.NewReader(data))
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "node(s)") {
			t.Errorf("opset %d: Load: %v\nwant one line containing %q", v, err, want)
		}
		rep, err := Check(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		s := rep.String()
		if rep.OK() || len(rep.Unsupported) != 0 || strings.Count(s, "spore supports opsets") != 1 || strings.Contains(s, "unsupported ops") || !strings.Contains(s, "problem: "+want) {
			t.Errorf("opset %d: want one problem line %q and no op listed:\n%s", v, want, s)
		}
	}
}

// TestScan8 runs Scan at opset 8, whose inputs carry a batch axis, on a
// body that keeps a running sum, forwards and backwards, and checks the
// final states and scan outputs against the sums worked out here.
func TestScan8(t *testing.T) {
	body := graphProto("sum", []*onnxpb.NodeProto{
		node("Add", "add", []string{"s_in", "x_in"}, []string{"s_out"}),
		node("Identity", "id", []string{"s_out"}, []string{"y_out"}),
	}, nil,
		[]*onnxpb.ValueInfoProto{valueInfoProto("s_in", onnxpb.TensorProto_FLOAT, 2), valueInfoProto("x_in", onnxpb.TensorProto_FLOAT, 2)},
		[]*onnxpb.ValueInfoProto{valueInfoProto("s_out", onnxpb.TensorProto_FLOAT, 2), valueInfoProto("y_out", onnxpb.TensorProto_FLOAT, 2)})
	const batch, steps = 2, 3
	init, xs := seq(batch, 2), seq(batch, steps, 2)
	for _, reverse := range []bool{false, true} {
		attrs := []*onnxpb.AttributeProto{attrGraph("body", body), intAttr("num_scan_inputs", 1)}
		if reverse {
			attrs = append(attrs, intsAttr("directions", 1))
		}
		n := node("Scan", "scan", []string{"", "init", "xs"}, []string{"final", "ys"}, attrs...)
		final := make([]float32, batch*2)
		ys := make([]float32, batch*steps*2)
		for b := range batch {
			for j := range 2 {
				s := init.Float32s()[b*2+j]
				for it := range steps {
					step := it
					if reverse {
						step = steps - 1 - it
					}
					s += xs.Float32s()[(b*steps+step)*2+j]
					ys[(b*steps+it)*2+j] = s
				}
				final[b*2+j] = s
			}
		}
		e, g, eerr, gerr := runLoaded(oneNodeModel(8, n, []string{"init", "xs"}, nil), []*tensor.Tensor{init, xs})
		if eerr != nil || gerr != nil {
			t.Fatalf("reverse %v: PyNative: %v; Graph: %v", reverse, eerr, gerr)
		}
		want := []*tensor.Tensor{tensor.FromSlice(final, batch, 2), tensor.FromSlice(ys, batch, steps, 2)}
		for mode, got := range map[string][]*tensor.Tensor{"PyNative": e, "Graph": g} {
			if msg := sameOutputs(got, want); msg != "" {
				t.Errorf("reverse %v: %s: %s", reverse, mode, msg)
			}
		}
	}
	// Sequences shorter than the scan inputs are refused, alike in both
	// modes.
	n := node("Scan", "scan", []string{"lens", "init", "xs"}, []string{"final", "ys"}, attrGraph("body", body), intAttr("num_scan_inputs", 1))
	_, _, eerr, gerr := runLoaded(oneNodeModel(8, n, []string{"init", "xs"}, map[string]*tensor.Tensor{"lens": int64s([]int64{2, 3})}), []*tensor.Tensor{init, xs})
	for mode, err := range map[string]error{"PyNative": eerr, "Graph": gerr} {
		if err == nil || !strings.Contains(err.Error(), "shorter than the scan inputs") {
			t.Errorf("%s: got %v, want the short sequences refused", mode, err)
		}
	}
}

// TestLegacyFixturesThroughLoad runs the fixtures of older op forms that
// need the loader (a Scan's body), written by testdata/ops/gen_legacy.py
// with ONNX Runtime's outputs, in both modes.
func TestLegacyFixturesThroughLoad(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "legacy", "*", "model.onnx"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no fixtures in testdata/legacy (%v); run testdata/ops/gen_legacy.py", err)
	}
	for _, f := range dirs {
		dir := filepath.Dir(f)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			c := loadOpCase(t, dir)
			e, g, eerr, gerr := runLoaded(c.model, c.inputs)
			if eerr != nil || gerr != nil {
				t.Fatalf("PyNative: %v; Graph: %v", eerr, gerr)
			}
			for mode, got := range map[string][]*tensor.Tensor{"PyNative": e, "Graph": g} {
				if msg := sameOutputs(got, c.want); msg != "" {
					t.Errorf("%s: %s", mode, msg)
				}
			}
		})
	}
}
