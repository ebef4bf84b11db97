package onnx

import (
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// The older forms of ops whose semantics changed before the form the op
// files implement: attributes that later became inputs (Slice's starts,
// Pad's pads, Clip's bounds, TopK's k, Reshape's shape, Upsample's
// scales), legacy broadcasting (the broadcast and axis attributes of the
// binary ops before opset 7), and renamed or retyped attributes (Cast's
// to as a string, Pad's paddings, Selu's defaults). Most are adapters:
// they rewrite the node into the newer form and call that form's
// function, so that one implementation serves every opset. The opset at
// which each form begins is the since_version of ONNX's operator schemas
// (onnx.defs.get_all_schemas_with_history()); an op version that has no
// form here or in the op files is reported as unsupported at its opset.
//
// Changes that only widen what an op accepts (more element types,
// negative axes from opset 11, multidirectional broadcasting of Sum, Max,
// Min and Mean from 8, the consumed_inputs attribute dropped at 6, which
// never changed a value) need no older form: the newer form runs every
// model valid at the older opset the same way, and the op files register
// it from the op's first version.

// firstOpsets holds, for the ops that the op files register (or may
// register) in loops, the ai.onnx opset at which their registered form
// begins: the op's first version, or the first after a change of
// semantics that ops_legacy.go registers the older form for (the binary
// ops' legacy broadcasting before 7). Later versions of these ops only
// added element types.
var firstOpsets = map[string]int64{
	// Unary ops: the first version; later ones added element types.
	"Relu": 1, "Sigmoid": 1, "Tanh": 1, "Sqrt": 1, "Exp": 1, "Log": 1,
	"Neg": 1, "Abs": 1, "Reciprocal": 1, "Floor": 1, "Ceil": 1,
	"Softplus": 1, "Not": 1, "Erf": 9, "Sign": 9, "Sin": 7, "Cos": 7,
	"Tan": 7, "Asin": 7, "Acos": 7, "Atan": 7, "Sinh": 9, "Cosh": 9,
	"Asinh": 9, "Acosh": 9, "Atanh": 9,
	// Binary ops: NumPy broadcasting from 7, legacy broadcasting before.
	"Add": 7, "Sub": 7, "Mul": 7, "Equal": 7, "Less": 7, "Greater": 7,
	"And": 7, "Or": 7, "Xor": 7, "LessOrEqual": 12, "GreaterOrEqual": 12,
}

// firstOpset returns the opset at which the registered form of an op
// registered in a loop begins (see firstOpsets); 11, the oldest opset the
// op files were written for, for an op not listed.
func firstOpset(opType string) int64 {
	if v, ok := firstOpsets[opType]; ok {
		return v
	}
	return 11
}

func init() {
	for _, op := range []string{"Add", "Sub", "Mul", "Div", "Pow", "Equal", "Less", "Greater", "And", "Or", "Xor"} {
		register(op, 1, 6, upgrade(7, legacyBroadcast))
	}
	register("Gemm", 1, 6, upgrade(7, legacyGemm))
	register("PRelu", 1, 6, upgrade(7, legacyPRelu))
	register("Cast", 1, 5, upgrade(6, legacyCast))
	register("Clip", 1, 10, upgrade(11, legacyClip))
	register("Concat", 1, 3, upgrade(4, legacyConcat))
	register("Dropout", 1, 11, legacyDropout)
	register("Hardmax", 1, 12, legacyHardmax)
	register("Pad", 1, 10, upgrade(11, legacyPad))
	register("Reshape", 1, 4, upgrade(5, legacyReshape))
	register("Selu", 1, 5, upgrade(6, legacySelu))
	register("Slice", 1, 9, upgrade(10, legacySlice))
	register("Split", 1, 1, upgrade(2, legacySplit))
	register("Tile", 1, 5, upgrade(6, legacyTile))
	register("TopK", 1, 9, upgrade(10, legacyTopK))
	register("BatchNormalization", 1, 8, legacyBatchNorm)
	register("Resize", 10, 10, resize10Op)
	register("Scan", 8, 8, scan8Op)
	register("Upsample", 1, 9, upsampleOp)
	register("ImageScaler", 1, 0, imageScalerOp)
	register("Scatter", 9, 10, func(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		return callAs(c, "ScatterElements", 11, ins)
	})
}

// An adapter rewrites a node of an older op version into the form of a
// newer one: it returns the node context and inputs that the newer form
// reads (attributes that became inputs turned into concrete tensors).
type adapter func(c *nodeCtx, ins []*tensor.Tensor) (*nodeCtx, []*tensor.Tensor, error)

// upgrade returns the op function of an older version of the node's op:
// adapt rewrites the node into the form the op has at opset to, whose
// function then runs. That function is looked up when the node runs, not
// when the table is filled, as the op files register in any order.
func upgrade(to int64, adapt adapter) opFunc {
	return func(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		c2, ins2, err := adapt(c, ins)
		if err != nil {
			return nil, err
		}
		return callAs(c2, c.Node.GetOpType(), to, ins2)
	}
}

// callAs runs the form that op type opType has at opset on c's node
// (whose attributes it reads) and ins.
func callAs(c *nodeCtx, opType string, opset int64, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	fn := lookupOp(opType, opset)
	if fn == nil {
		return nil, c.Errorf("spore has no %s at opset %d to run this op version as", opType, opset)
	}
	c2 := *c
	c2.Opset = opset
	return fn(&c2, ins)
}

// rewritten returns a copy of c whose node has the attributes named in
// drop removed and those in set added, replacing any of the same name.
// The model's node is not changed.
func (c *nodeCtx) rewritten(drop []string, set ...*onnxpb.AttributeProto) *nodeCtx {
	gone := map[string]bool{}
	for _, d := range drop {
		gone[d] = true
	}
	for _, a := range set {
		gone[a.GetName()] = true
	}
	n := c.Node
	node := &onnxpb.NodeProto{Name: n.Name, OpType: n.OpType, Domain: n.Domain, Input: n.Input, Output: n.Output}
	for _, a := range n.GetAttribute() {
		if !gone[a.GetName()] {
			node.Attribute = append(node.Attribute, a)
		}
	}
	node.Attribute = append(node.Attribute, set...)
	c2 := *c
	c2.Node = node
	return &c2
}

// newIntAttr, newStringAttr, newIntsAttr and newFloatAttr make the
// attributes that rewritten sets.
func newIntAttr(name string, v int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(v)}
}

func newStringAttr(name, v string) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_STRING.Enum(), S: []byte(v)}
}

func newIntsAttr(name string, v []int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v}
}

func newFloatAttr(name string, v float32) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_FLOAT.Enum(), F: proto.Float32(v)}
}

// legacyBroadcast is the binary ops before opset 7: without broadcast=1
// the operands must have one shape; with it, B (of lower or equal rank)
// is broadcast to A, its axes lined up with A's from axis (by default
// with A's last ones). B is reshaped so that NumPy broadcasting, the
// newer form's rule, does exactly that.
func legacyBroadcast(c *nodeCtx, ins []*tensor.Tensor) (*nodeCtx, []*tensor.Tensor, error) {
	req, err := c.needs(ins, "A", "B")
	if err != nil {
		return nil, nil, err
	}
	a, b := req[0], req[1]
	c2 := c.rewritten([]string{"broadcast", "axis", "consumed_inputs"})
	if c.Int("broadcast", 0) == 0 {
		if !a.Shape().Equal(b.Shape()) {
			return nil, nil, c.Errorf("A %v and B %v differ in shape and broadcast is not set (opset %d broadcasts only with broadcast=1)", a.Shape(), b.Shape(), c.Opset)
		}
		return c2, []*tensor.Tensor{a, b}, nil
	}
	ra, rb := a.Rank(), b.Rank()
	if rb > ra {
		return nil, nil, c.Errorf("B %v has more axes than A %v; with broadcast=1, B broadcasts to A", b.Shape(), a.Shape())
	}
	axis := int64(ra - rb)
	if c.Has("axis") {
		axis = c.Int("axis", 0)
		if axis < 0 {
			axis += int64(ra)
		}
		if axis < 0 || axis > int64(ra-rb) {
			return nil, nil, c.Errorf("axis %d does not fit B %v into A %v", c.Int("axis", 0), b.Shape(), a.Shape())
		}
	}
	shape := make([]int, ra)
	for i := range shape {
		shape[i] = 1
	}
	for i, d := range b.Shape() {
		if ad := a.Dim(int(axis) + i); d != ad && d != 1 {
			return nil, nil, c.Errorf("B %v does not match A %v from axis %d", b.Shape(), a.Shape(), axis)
		}
		shape[int(axis)+i] = d
	}
	if rb != ra {
		b = ops.Reshape(b, shape...)
	}
	return c2, []*tensor.Tensor{a, b}, nil
}

// legacyGemm is Gemm before opset 7: C broadcasts to A·B only with
// broadcast=1; without it, C must have the product's shape.
func legacyGemm(c *nodeCtx, ins []*tensor.Tensor) (*nodeCtx, []*tensor.Tensor, error) {
	req, err := c.needs(ins, "A", "B", "C")
	if err != nil {
		return nil, nil, err
	}
	a, b, cc := req[0], req[1], req[2]
	if c.Int("broadcast", 0) == 0 && a.Rank() == 2 && b.Rank() == 2 {
		m, n := a.Dim(0), b.Dim(1)
		if c.Int("transA", 0) != 0 {
			m = a.Dim(1)
		}
		if c.Int("transB", 0) != 0 {
			n = b.Dim(0)
		}
		if !cc.Shape().Equal(tensor.Shape{m, n}) {
			return nil, nil, c.Errorf("C %v is not %d×%d and broadcast is not set (opset %d broadcasts C only with broadcast=1)", cc.Shape(), m, n, c.Opset)
		}
	}
	return c.rewritten([]string{"broadcast"}), ins, nil
}

// legacyPRelu is PRelu before opset 7, whose slope holds one value or one
// per channel (X's axis 1) rather than broadcasting as NumPy does: a
// per-channel slope is reshaped to C×1×…×1 for the newer form.
func legacyPRelu(c *nodeCtx, ins []*tensor.Tensor) (*nodeCtx, []*tensor.Tensor, error) {
	req, err := c.needs(ins, "X", "slope")
	if err != nil {
		return nil, nil, err
	}
	x, slope := req[0], req[1]
	if x.Rank() > 2 && slope.Rank() == 1 && slope.Size() == x.Dim(1) && slope.Size() != 1 {
		shape := make([]int, x.Rank()-1)
		for i := range shape {
			shape[i] = 1
		}
		shape[0] = slope.Size()
		slope = ops.Reshape(slope, shape...)
	}
	return c.rewritten([]string{"consumed_inputs"}), []*tensor.Tensor{x, slope}, nil
}

// legacyCast is Cast before opset 6, whose to names the element type
// ("FLOAT", "INT64") rather than giving its number.
func legacyCast(c *nodeCtx, ins []*tensor.Tensor) (*nodeCtx, []*tensor.Tensor, error) {
	if !c.Has("to") {
		return nil, nil, c.Errorf("attribute to is missing")
	}
	name := c.String("to", "")
	v, ok := onnxpb.TensorProto_DataType_value[strings.ToUpper(name)]
	if !ok || v == 0 {
		return nil, nil, c.Errorf("attribute to: %q names no ONNX element type", name)
	}
	return c.rewritten(nil, newIntAttr("to", int64(v))), ins, nil
}

// legacyClip is Clip before opset 11, whose bounds are the attributes min
// and max (either absent: no bound) rather than inputs.
func legacyClip(c *nodeCtx, ins []*tensor.Tensor) (*nodeCtx, []*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "input")
	if err != nil {
		return nil, nil, err
	}
	out := []*tensor.Tensor{x, nil, nil}
	for i, name := range []string{"min", "max"} {
		if c.Has(name) {
			out[1+i] = scalarOf(x.DType(), float64(c.Float(name, 0)))
		}
	}
	return c.rewritten([]string{"min", "max", "consumed_inputs"}), out, nil
}

// legacyConcat is Concat before opset 4, whose axis defaults to 1.
func legacyConcat(c *nodeCtx, ins []*tensor.Tensor) (*nodeCtx, []*tensor.Tensor, error) {
	if c.Has("axis") {
		return c, ins, nil
	}
	return c.rewritten(nil, newIntAttr("axis", 1)), ins, nil
}

// legacyDropout is Dropout before opset 12, whose ratio is an attribute:
// is_test=1 (before 7) makes it the identity whatever the cell's mode.
// Those versions do not say what the mask holds for an element kept at
// inference; ONNX Runtime writes zeros (false), and so does this, in the
// data's element type before opset 10 and as bool from it.
func legacyDropout(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	c2 := *c
	if c.Opset < 7 && c.Int("is_test", 0) != 0 {
		c2.Training = false
	}
	outs, err := dropoutOp(&c2, ins)
	if err != nil {
		return nil, err
	}
	if len(outs) > 1 && outs[1] != nil {
		dt := tensor.Bool
		if c.Opset < 10 {
			dt = outs[0].DType()
		}
		outs[1] = tensor.Zeros(dt, outs[0].Shape()...)
	}
	return outs, nil
}

// legacyHardmax is Hardmax before opset 13: the input is seen as a matrix
// of the axes before axis (default 1) by those from it, and the one-hot
// maximum is taken along each row of that matrix.
func legacyHardmax(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "input")
	if err != nil {
		return nil, err
	}
	ax, err := c.axis(c.Int("axis", 1), x.Rank(), "axis")
	if err != nil {
		return nil, err
	}
	inner := 1
	for _, d := range x.Shape()[ax:] {
		inner *= d
	}
	if inner == 0 || x.Size() == 0 {
		return one(x)
	}
	m := ops.Reshape(x, x.Size()/inner, inner)
	outs, err := callAs(c.rewritten(nil, newIntAttr("axis", 1)), "Hardmax", 13, []*tensor.Tensor{m})
	if err != nil {
		return nil, err
	}
	return one(ops.Reshape(outs[0], x.Shape()...))
}

// legacyPad is Pad before opset 11: pads (paddings at opset 1) and the
// constant value are attributes rather than inputs.
func legacyPad(c *nodeCtx, ins []*tensor.Tensor) (*nodeCtx, []*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "data")
	if err != nil {
		return nil, nil, err
	}
	name := "pads"
	if c.Opset < 2 {
		name = "paddings"
	}
	if !c.Has(name) {
		return nil, nil, c.Errorf("attribute %s is missing", name)
	}
	pads := int64s(c.IntsAttr(name, nil))
	value := scalarOf(x.DType(), float64(c.Float("value", 0)))
	return c.rewritten([]string{"pads", "paddings", "value"}), []*tensor.Tensor{x, pads, value}, nil
}

// legacyReshape is Reshape before opset 5, whose shape is an attribute.
func legacyReshape(c *nodeCtx, ins []*tensor.Tensor) (*nodeCtx, []*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "data")
	if err != nil {
		return nil, nil, err
	}
	if !c.Has("shape") {
		return nil, nil, c.Errorf("attribute shape is missing")
	}
	return c.rewritten([]string{"shape", "consumed_inputs"}), []*tensor.Tensor{x, int64s(c.IntsAttr("shape", nil))}, nil
}

// legacySelu is Selu before opset 6, whose defaults were rounder:
// alpha 1.6732, gamma 1.0507.
func legacySelu(c *nodeCtx, ins []*tensor.Tensor) (*nodeCtx, []*tensor.Tensor, error) {
	return c.rewritten(nil, newFloatAttr("alpha", c.Float("alpha", 1.6732)), newFloatAttr("gamma", c.Float("gamma", 1.0507))), ins, nil
}

// legacySlice is Slice before opset 10: starts, ends and axes are
// attributes, and there are no steps.
func legacySlice(c *nodeCtx, ins []*tensor.Tensor) (*nodeCtx, []*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "data")
	if err != nil {
		return nil, nil, err
	}
	for _, name := range []string{"starts", "ends"} {
		if !c.Has(name) {
			return nil, nil, c.Errorf("attribute %s is missing", name)
		}
	}
	out := []*tensor.Tensor{x, int64s(c.IntsAttr("starts", nil)), int64s(c.IntsAttr("ends", nil))}
	if c.Has("axes") {
		out = append(out, int64s(c.IntsAttr("axes", nil)))
	}
	return c.rewritten([]string{"starts", "ends", "axes"}), out, nil
}

// legacySplit is Split at opset 1, whose sizes are either the attribute
// split or a second input.
func legacySplit(c *nodeCtx, ins []*tensor.Tensor) (*nodeCtx, []*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "input")
	if err != nil {
		return nil, nil, err
	}
	s := c.In(ins, 1)
	if s == nil {
		return c, []*tensor.Tensor{x}, nil
	}
	if c.Has("split") {
		return nil, nil, c.Errorf("split is given both as an attribute and as an input")
	}
	sizes, err := c.Ints(s, "split")
	if err != nil {
		return nil, nil, err
	}
	return c.rewritten(nil, newIntsAttr("split", sizes)), []*tensor.Tensor{x}, nil
}

// legacyTile is Tile before opset 6: the input is repeated tiles times
// along the one axis given, both scalar inputs.
func legacyTile(c *nodeCtx, ins []*tensor.Tensor) (*nodeCtx, []*tensor.Tensor, error) {
	req, err := c.needs(ins, "input", "tiles", "axis")
	if err != nil {
		return nil, nil, err
	}
	x := req[0]
	tiles, err := c.Ints(req[1], "tiles")
	if err != nil {
		return nil, nil, err
	}
	axis, err := c.Ints(req[2], "axis")
	if err != nil {
		return nil, nil, err
	}
	if len(tiles) != 1 || len(axis) != 1 {
		return nil, nil, c.Errorf("tiles %v and axis %v must hold one value each", tiles, axis)
	}
	ax, err := c.axis(axis[0], x.Rank(), "axis")
	if err != nil {
		return nil, nil, err
	}
	reps := make([]int64, x.Rank())
	for i := range reps {
		reps[i] = 1
	}
	reps[ax] = tiles[0]
	return c, []*tensor.Tensor{x, int64s(reps)}, nil
}

// legacyTopK is TopK before opset 10, whose k is an attribute.
func legacyTopK(c *nodeCtx, ins []*tensor.Tensor) (*nodeCtx, []*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "X")
	if err != nil {
		return nil, nil, err
	}
	if !c.Has("k") {
		return nil, nil, c.Errorf("attribute k is missing")
	}
	return c.rewritten([]string{"k"}), []*tensor.Tensor{x, int64s([]int64{c.Int("k", 0)})}, nil
}

// legacyBatchNorm is BatchNormalization before opset 9. With spatial=1
// (the default) it is the newer form (is_test, momentum and
// consumed_inputs change nothing at inference); with spatial=0 the
// statistics, scale and bias are per activation: shaped as X without its
// batch axis.
func legacyBatchNorm(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	if c.Int("spatial", 1) != 0 {
		return callAs(c.rewritten([]string{"spatial", "is_test", "momentum", "consumed_inputs"}), "BatchNormalization", 9, ins)
	}
	in, err := c.needs(ins, "X", "scale", "B", "mean", "var")
	if err != nil {
		return nil, err
	}
	for i := 1; i < len(c.Node.GetOutput()); i++ {
		if c.wantOutput(i) {
			return nil, c.Errorf("output %d (running statistics) exists only in training mode, which is not supported", i)
		}
	}
	x := in[0]
	if x.Rank() < 2 {
		return nil, c.Errorf("X has shape %v; want N×C×…", x.Shape())
	}
	per := x.Shape()[1:]
	p := make([]*tensor.Tensor, 4)
	for i, t := range in[1:] {
		if t.Size() != per.Size() {
			return nil, c.Errorf("with spatial=0, %s must have X's shape without the batch axis %v, got %v", []string{"scale", "B", "mean", "var"}[i], per, t.Shape())
		}
		p[i] = ops.Reshape(t, append([]int{1}, per...)...)
	}
	scale, bias, mean, variance := p[0], p[1], p[2], p[3]
	inv := ops.Rsqrt(ops.AddScalar(variance, float64(c.Float("epsilon", 1e-5))))
	return one(ops.Add(ops.Mul(ops.Mul(ops.Sub(x, mean), inv), scale), bias))
}

// resize10Op is Resize at opset 10: the output extents from scales (its
// second input), coordinates mapped asymmetrically (out/scale), and in
// nearest mode the source index truncated when an axis grows and rounded
// up when it shrinks, as ONNX Runtime does for the versions before
// nearest_mode existed. It runs the newer form once per kind of axis.
func resize10Op(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "X")
	if err != nil {
		return nil, err
	}
	sc, err := c.Concrete(c.In(ins, 1), "scales")
	if err != nil {
		return nil, err
	}
	return resizeByScales(c, x, sc)
}

// upsampleOp is Upsample (opsets 1 to 9; deprecated at 10 for Resize):
// Resize at opset 10 with the scales of the attributes height_scale and
// width_scale of an N×C×H×W input (1 to 6), of the attribute scales (7
// and 8) or of the second input (9).
func upsampleOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "X")
	if err != nil {
		return nil, err
	}
	var sc *tensor.Tensor
	switch {
	case c.Opset < 7:
		if !c.Has("height_scale") || !c.Has("width_scale") {
			return nil, c.Errorf("attributes height_scale and width_scale are required")
		}
		if x.Rank() != 4 {
			return nil, c.Errorf("X has shape %v; want N×C×H×W", x.Shape())
		}
		sc = tensor.FromSlice([]float32{1, 1, c.Float("height_scale", 1), c.Float("width_scale", 1)}, 4)
		c = c.rewritten([]string{"height_scale", "width_scale"})
	case c.Opset < 9:
		if !c.Has("scales") {
			return nil, c.Errorf("attribute scales is missing")
		}
		v := c.FloatsAttr("scales", nil)
		sc = tensor.FromSlice(append([]float32(nil), v...), len(v))
	default:
		if sc, err = c.Concrete(c.In(ins, 1), "scales"); err != nil {
			return nil, err
		}
	}
	return resizeByScales(c.rewritten([]string{"scales"}), x, sc)
}

// resizeByScales is Resize at opset 10 of x by the concrete scales sc
// (see resize10Op). Its modes are nearest and linear.
func resizeByScales(c *nodeCtx, x, sc *tensor.Tensor) ([]*tensor.Tensor, error) {
	if sc.DType() != tensor.Float32 && sc.DType() != tensor.Float64 {
		return nil, c.Errorf("scales have dtype %v, want float", sc.DType())
	}
	v := sc.Float64s()
	if len(v) != x.Rank() {
		return nil, c.Errorf("scales %v must have one entry per axis of %v", v, x.Shape())
	}
	mode := c.String("mode", "nearest")
	switch mode {
	case "nearest", "linear":
	case "bilinear": // Upsample at opset 1's name for linear in two axes
		mode = "linear"
	default:
		return nil, c.Errorf("mode %q is not supported (nearest and linear are)", mode)
	}
	// One pass for the axes that shrink, one for the others: in nearest
	// mode they round differently, and the passes are separable.
	down, up := make([]float32, len(v)), make([]float32, len(v))
	var anyDown, anyUp bool
	for i, s := range v {
		down[i], up[i] = 1, 1
		if s < 1 {
			down[i], anyDown = float32(s), true
		} else {
			up[i], anyUp = float32(s), anyUp || s != 1
		}
	}
	y := x
	for _, pass := range []struct {
		scales  []float32
		use     bool
		nearest string
	}{{down, anyDown, "ceil"}, {up, anyUp, "floor"}} {
		if !pass.use {
			continue
		}
		c2 := c.rewritten(nil, newStringAttr("mode", mode), newStringAttr("coordinate_transformation_mode", "asymmetric"), newStringAttr("nearest_mode", pass.nearest))
		outs, err := callAs(c2, "Resize", 11, []*tensor.Tensor{y, nil, tensor.FromSlice(pass.scales, len(pass.scales))})
		if err != nil {
			return nil, err
		}
		y = outs[0]
	}
	return one(y)
}

// scan8Op is Scan at opset 8, whose inputs and outputs have a batch axis
// first (the scan inputs their sequence axis second): each batch item is
// scanned on its own, by the form of opset 9 (directions became
// scan_input_directions), and the results are stacked. sequence_lens,
// when given, must give every item the full length: shorter sequences,
// which leave the tails of the scan outputs undefined, are refused.
func scan8Op(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	if len(ins) < 2 {
		return nil, c.Errorf("needs sequence_lens and at least one more input, got %d inputs", len(ins))
	}
	data := ins[1:]
	for i, x := range data {
		if x == nil {
			return nil, c.Errorf("input %d is missing", i+1)
		}
		if x.Rank() < 1 {
			return nil, c.Errorf("input %d is a scalar; every input needs the batch axis first", i+1)
		}
		if x.Dim(0) != data[0].Dim(0) {
			return nil, c.Errorf("input %d has shape %v; every input needs the batch axis first, of extent %d", i+1, x.Shape(), data[0].Dim(0))
		}
	}
	batch := data[0].Dim(0)
	if batch == 0 {
		return nil, c.Errorf("a batch of 0 items is not supported")
	}
	m := int(c.Int("num_scan_inputs", 0))
	if m <= 0 || m > len(data) {
		return nil, c.Errorf("num_scan_inputs is %d with %d inputs after sequence_lens", m, len(data))
	}
	if lens := ins[0]; lens != nil {
		v, err := c.Ints(lens, "sequence_lens")
		if err != nil {
			return nil, err
		}
		x := data[len(data)-m]
		for _, l := range v {
			if x.Rank() < 2 || l != int64(x.Dim(1)) {
				return nil, c.Errorf("sequence_lens %v: sequences shorter than the scan inputs' %v are not supported", v, x.Shape())
			}
		}
	}
	var drop []string
	var set []*onnxpb.AttributeProto
	if c.Has("directions") {
		drop = []string{"directions"}
		set = append(set, newIntsAttr("scan_input_directions", c.IntsAttr("directions", nil)))
	}
	c9 := c.rewritten(drop, set...)
	var per [][]*tensor.Tensor
	for b := range batch {
		item := make([]*tensor.Tensor, len(data))
		for i, x := range data {
			begin, size := make([]int, x.Rank()), append([]int(nil), x.Shape()...)
			begin[0], size[0] = b, 1
			item[i] = ops.Squeeze(ops.Slice(x, begin, size), 0)
		}
		outs, err := callAs(c9, "Scan", 9, item)
		if err != nil {
			return nil, err
		}
		per = append(per, outs)
	}
	outs := make([]*tensor.Tensor, len(per[0]))
	for j := range outs {
		col := make([]*tensor.Tensor, batch)
		for b := range col {
			if j < len(per[b]) {
				col[b] = per[b][j]
			}
		}
		if col[0] != nil {
			outs[j] = ops.Stack(0, col...)
		}
	}
	return outs, nil
}

// imageScalerOp is ImageScaler, one of the experimental ops of ONNX's
// first releases that old exporters wrote (the model zoo's Tiny YOLOv2 at
// opset 8 begins with one) and that ONNX Runtime still runs at every
// opset: y = scale·x + bias[c] for an N×C×H×W input, bias one value per
// channel.
func imageScalerOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "input")
	if err != nil {
		return nil, err
	}
	if x.Rank() != 4 {
		return nil, c.Errorf("input has shape %v; want N×C×H×W", x.Shape())
	}
	y := ops.MulScalar(x, float64(c.Float("scale", 1)))
	if bias := c.FloatsAttr("bias", nil); len(bias) > 0 {
		if len(bias) != x.Dim(1) {
			return nil, c.Errorf("bias has %d values for %d channels", len(bias), x.Dim(1))
		}
		b := tensor.FromSlice(append([]float32(nil), bias...), 1, len(bias), 1, 1)
		y = ops.Add(y, ops.Cast(b, x.DType()))
	}
	return one(y)
}
