package onnx

import (
	"errors"
	"fmt"
	"math"

	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/control"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// exportEmit writes the ONNX nodes computing op value v from inputs named
// in into outputs named outs (one per result of v).
type exportEmit func(x *exporter, v *graph.Value, in, outs []string) error

// exportEmitters maps each primitive Export can write to its translation.
// Keyed by the primitive's handle, never by its name. Fused primitives
// (GEMM epilogues, fused loops) are absent on purpose: Export skips the
// passes that make them, so the graph it translates holds only these.
var exportEmitters = map[*core.Prim]exportEmit{}

// exScanLayout reads a Scan node's layout from its attributes.
func exScanLayout(attrs any) (nc, nx int, reverse, ok bool) { return control.ScanLayout(attrs) }

// exSame1 translates a primitive to the ONNX op of the same meaning, with
// its inputs in order.
func exSame1(op string) exportEmit {
	return func(x *exporter, v *graph.Value, in, outs []string) error {
		x.node(op, in, outs)
		return nil
	}
}

// exFloatOr is exSame1 for ONNX ops defined on floats only; on integers
// it writes intOp instead (Identity: rounding an integer changes nothing),
// or fails when intOp is "".
func exFloatOr(op, intOp string) exportEmit {
	return func(x *exporter, v *graph.Value, in, outs []string) error {
		if v.Meta.DType.IsFloat() {
			x.node(op, in, outs)
			return nil
		}
		if intOp == "" {
			return fmt.Errorf("no ONNX translation for %v operands", v.Meta.DType)
		}
		x.node(intOp, in, outs)
		return nil
	}
}

// exReduceOp translates a reduction whose axes are an attribute before
// opset 18 and an input from 18 on (ReduceSum's became an input in 13).
func exReduceOp(op string, inputFrom int64) exportEmit {
	return func(x *exporter, v *graph.Value, in, outs []string) error {
		a := v.Attrs.(ops.ReduceAttrs)
		return x.reduce(op, inputFrom, in[0], exInts64(a.Axes), a.KeepDims, outs)
	}
}

func (x *exporter) reduce(op string, inputFrom int64, in string, axes []int64, keep bool, outs []string) error {
	k := int64(0)
	if keep {
		k = 1
	}
	if x.cfg.opset >= inputFrom {
		x.node(op, []string{in, x.constInts(axes...)}, outs, exAInt("keepdims", k))
	} else {
		x.node(op, []string{in}, outs, exAInts("axes", axes...), exAInt("keepdims", k))
	}
	return nil
}

func init() {
	exCfCond, exCfWhile, exCfScan = control.Prims()
	e := exportEmitters
	e[exCfCond] = exEmitCond
	e[exCfWhile] = exEmitWhile
	e[exCfScan] = exEmitScan
	e[core.IdentityPrim()] = exSame1("Identity")
	// The index checks raise spore's errors for out-of-range indices;
	// ONNX Runtime checks Gather's indices itself.
	e[ops.CheckIndicesPrim] = exSame1("Identity")
	e[ops.CheckLabelsPrim] = exSame1("Identity")

	for p, op := range map[*core.Prim]string{
		ops.AddPrim: "Add", ops.SubPrim: "Sub", ops.MulPrim: "Mul", ops.DivPrim: "Div",
		ops.PowPrim: "Pow", ops.MaximumPrim: "Max", ops.MinimumPrim: "Min",
		ops.NegPrim: "Neg", ops.ExpPrim: "Exp", ops.LogPrim: "Log", ops.TanhPrim: "Tanh",
		ops.ReluPrim: "Relu", ops.AbsPrim: "Abs", ops.SignPrim: "Sign", ops.SqrtPrim: "Sqrt",
		ops.ReciprocalPrim: "Reciprocal", ops.SinPrim: "Sin", ops.CosPrim: "Cos",
		ops.SigmoidPrim: "Sigmoid", ops.ErfPrim: "Erf", ops.SoftplusPrim: "Softplus",
		ops.EqualPrim: "Equal", ops.LessPrim: "Less", ops.LessEqualPrim: "LessOrEqual",
		ops.GreaterPrim: "Greater", ops.GreaterEqualPrim: "GreaterOrEqual",
		ops.LogicalAndPrim: "And", ops.LogicalOrPrim: "Or", ops.LogicalNotPrim: "Not",
		ops.SelectPrim: "Where", ops.HardswishPrim: "HardSwish",
	} {
		e[p] = exSame1(op)
	}
	e[ops.FloorPrim] = exFloatOr("Floor", "Identity")
	e[ops.CeilPrim] = exFloatOr("Ceil", "Identity")
	e[ops.RoundPrim] = exFloatOr("Round", "Identity") // both round half to even
	e[ops.TruncPrim] = func(x *exporter, v *graph.Value, in, outs []string) error {
		if !v.Meta.DType.IsFloat() {
			x.node("Identity", in, outs)
			return nil
		}
		// ONNX has no Trunc: sign(x)·⌊|x|⌋, exact in floating point.
		x.node("Mul", []string{x.op1("Sign", in), x.op1("Floor", []string{x.op1("Abs", in)})}, outs)
		return nil
	}
	e[ops.NotEqualPrim] = func(x *exporter, v *graph.Value, in, outs []string) error {
		x.node("Not", []string{x.op1("Equal", in)}, outs)
		return nil
	}
	e[ops.RsqrtPrim] = func(x *exporter, v *graph.Value, in, outs []string) error {
		x.node("Reciprocal", []string{x.op1("Sqrt", in)}, outs)
		return nil
	}
	e[ops.SquarePrim] = func(x *exporter, v *graph.Value, in, outs []string) error {
		x.node("Mul", []string{in[0], in[0]}, outs)
		return nil
	}
	e[ops.Log1pPrim] = func(x *exporter, v *graph.Value, in, outs []string) error {
		one, err := x.constScalar(v.Meta.DType, 1)
		if err != nil {
			return err
		}
		x.node("Log", []string{x.op1("Add", []string{in[0], one})}, outs)
		return nil
	}
	e[ops.GeluPrim] = exEmitGelu
	e[ops.FloorDivPrim] = func(x *exporter, v *graph.Value, in, outs []string) error {
		if !v.Meta.DType.IsFloat() {
			return fmt.Errorf("no ONNX translation for %v operands (ONNX's integer Div truncates)", v.Meta.DType)
		}
		x.node("Floor", []string{x.op1("Div", in)}, outs)
		return nil
	}
	e[ops.FloorModPrim] = func(x *exporter, v *graph.Value, in, outs []string) error {
		if v.Meta.DType.IsFloat() {
			// a − ⌊a/b⌋·b, the sign of b like Python's %.
			q := x.op1("Floor", []string{x.op1("Div", in)})
			x.node("Sub", []string{in[0], x.op1("Mul", []string{q, in[1]})}, outs)
			return nil
		}
		x.node("Mod", in, outs, exAInt("fmod", 0))
		return nil
	}
	e[ops.CastPrim] = func(x *exporter, v *graph.Value, in, outs []string) error {
		dt, err := exportDType(v.Meta.DType)
		if err != nil {
			return err
		}
		x.node("Cast", in, outs, exAInt("to", int64(dt)))
		return nil
	}
	e[ops.ClipPrim] = func(x *exporter, v *graph.Value, in, outs []string) error {
		a := v.Attrs.(ops.ClipAttrs)
		lo, hi := a.Lo, a.Hi
		if !v.Meta.DType.IsFloat() {
			// Integer bounds: the integers within [lo, hi].
			lo, hi = math.Ceil(lo), math.Floor(hi)
			lim := float64(math.MaxInt32)
			if v.Meta.DType == tensor.Int64 {
				lim = math.MaxInt64 / 2
			}
			lo, hi = math.Max(lo, -lim), math.Min(hi, lim)
		}
		l, err := x.constScalar(v.Meta.DType, lo)
		if err != nil {
			return err
		}
		h, err := x.constScalar(v.Meta.DType, hi)
		if err != nil {
			return err
		}
		x.node("Clip", []string{in[0], l, h}, outs)
		return nil
	}
	e[ops.ClipTensorPrim] = func(x *exporter, v *graph.Value, in, outs []string) error {
		x.node("Min", []string{x.op1("Max", []string{in[0], in[1]}), in[2]}, outs)
		return nil
	}

	e[ops.SumPrim] = exReduceOp("ReduceSum", 13)
	e[ops.MaxPrim] = exReduceOp("ReduceMax", 18)
	e[ops.MinPrim] = exReduceOp("ReduceMin", 18)
	e[ops.ProdPrim] = exReduceOp("ReduceProd", 18)
	boolReduce := func(op string) exportEmit {
		return func(x *exporter, v *graph.Value, in, outs []string) error {
			a := v.Attrs.(ops.ReduceAttrs)
			i := x.op1("Cast", in, exAInt("to", int64(onnxpb.TensorProto_INT32)))
			r := x.tmp()
			if err := x.reduce(op, 18, i, exInts64(a.Axes), a.KeepDims, []string{r}); err != nil {
				return err
			}
			x.node("Cast", []string{r}, outs, exAInt("to", int64(onnxpb.TensorProto_BOOL)))
			return nil
		}
	}
	e[ops.AnyPrim] = boolReduce("ReduceMax")
	e[ops.AllPrim] = boolReduce("ReduceMin")
	arg := func(op string) exportEmit {
		return func(x *exporter, v *graph.Value, in, outs []string) error {
			a := v.Attrs.(ops.ArgAttrs)
			k := int64(0)
			if a.KeepDims {
				k = 1
			}
			attrs := []*onnxpb.AttributeProto{exAInt("axis", int64(a.Axis)), exAInt("keepdims", k)}
			if v.Meta.DType == tensor.Int64 {
				x.node(op, in, outs, attrs...)
				return nil
			}
			dt, err := exportDType(v.Meta.DType)
			if err != nil {
				return err
			}
			x.node("Cast", []string{x.op1(op, in, attrs...)}, outs, exAInt("to", int64(dt)))
			return nil
		}
	}
	e[ops.ArgMaxPrim] = arg("ArgMax")
	e[ops.ArgMinPrim] = arg("ArgMin")
	e[ops.CumSumPrim] = func(x *exporter, v *graph.Value, in, outs []string) error {
		a := v.Attrs.(ops.ScanAttrs)
		b2i := map[bool]int64{false: 0, true: 1}
		x.node("CumSum", []string{in[0], x.constInts(int64(a.Axis))}, outs, exAInt("exclusive", b2i[a.Exclusive]), exAInt("reverse", b2i[a.Reverse]))
		return nil
	}

	e[ops.MatMulPrim] = exEmitMatMul
	e[ops.Conv2DPrim] = func(x *exporter, v *graph.Value, in, outs []string) error {
		if !v.Meta.DType.IsFloat() {
			// ONNX's Conv is defined on floats only (ConvInteger widens
			// to int32 from 8-bit operands, which this is not).
			return fmt.Errorf("no ONNX translation for a %v convolution", v.Meta.DType)
		}
		a := v.Attrs.(ops.ConvAttrs)
		ws := v.Args[1].Meta.Shape
		x.node("Conv", in, outs,
			exAInts("kernel_shape", int64(ws[2]), int64(ws[3])),
			exAInts("strides", int64(a.Stride[0]), int64(a.Stride[1])),
			exAInts("pads", int64(a.Pads[0]), int64(a.Pads[2]), int64(a.Pads[1]), int64(a.Pads[3])),
			exAInts("dilations", int64(a.Dilation[0]), int64(a.Dilation[1])),
			exAInt("group", int64(max(a.Groups, 1))))
		return nil
	}
	e[ops.Conv2DBackpropInputPrim] = exEmitConvTranspose
	e[ops.ArgTopKPrim] = func(x *exporter, v *graph.Value, in, outs []string) error {
		k := v.Attrs.(ops.TopKAttrs).K
		// ONNX's TopK breaks ties towards the lower position, as spore's.
		x.node("TopK", []string{in[0], x.constInts(int64(k))}, []string{x.tmp(), outs[0]}, exAInt("axis", -1), exAInt("largest", 1), exAInt("sorted", 1))
		return nil
	}
	e[ops.ArgSortPrim] = func(x *exporter, v *graph.Value, in, outs []string) error {
		a := v.Attrs.(ops.SortAttrs)
		n := v.Args[0].Meta.Shape[a.Axis]
		largest := int64(0)
		if a.Descending {
			largest = 1
		}
		// A sort is a TopK of every element; ties keep their order both
		// ways in both.
		x.node("TopK", []string{in[0], x.constInts(int64(n))}, []string{x.tmp(), outs[0]}, exAInt("axis", int64(a.Axis)), exAInt("largest", largest), exAInt("sorted", 1))
		return nil
	}
	pool := func(op string) exportEmit {
		return func(x *exporter, v *graph.Value, in, outs []string) error {
			a := v.Attrs.(ops.PoolAttrs)
			attrs := []*onnxpb.AttributeProto{
				exAInts("kernel_shape", int64(a.Kernel[0]), int64(a.Kernel[1])),
				exAInts("strides", int64(a.Stride[0]), int64(a.Stride[1])),
				exAInts("pads", int64(a.Pads[0]), int64(a.Pads[2]), int64(a.Pads[1]), int64(a.Pads[3])),
			}
			if op == "AveragePool" && a.CountPad {
				attrs = append(attrs, exAInt("count_include_pad", 1))
			}
			x.node(op, in, outs, attrs...)
			return nil
		}
	}
	e[ops.MaxPoolPrim] = pool("MaxPool")
	e[ops.AvgPoolPrim] = pool("AveragePool")

	e[ops.ReshapePrim] = exEmitReshape
	e[ops.BroadcastToPrim] = exEmitBroadcastTo
	e[ops.TransposePrim] = func(x *exporter, v *graph.Value, in, outs []string) error {
		x.node("Transpose", in, outs, exAInts("perm", exInts64(v.Attrs.(ops.PermAttr).Perm)...))
		return nil
	}
	e[ops.ConcatPrim] = func(x *exporter, v *graph.Value, in, outs []string) error {
		x.node("Concat", in, outs, exAInt("axis", int64(v.Attrs.(ops.AxisAttr).Axis)))
		return nil
	}
	e[ops.UnstackPrim] = func(x *exporter, v *graph.Value, in, outs []string) error {
		ax := int64(v.Attrs.(ops.AxisAttr).Axis)
		n := len(outs)
		ones := make([]int64, n)
		parts := make([]string, n)
		for i := range ones {
			ones[i] = 1
			parts[i] = x.tmp()
		}
		x.node("Split", []string{in[0], x.constInts(ones...)}, parts, exAInt("axis", ax))
		for i, p := range parts {
			x.node("Squeeze", []string{p, x.constInts(ax)}, []string{outs[i]})
		}
		return nil
	}
	e[ops.ResizePrim] = exportResize
	e[ops.GatherPrim] = func(x *exporter, v *graph.Value, in, outs []string) error {
		x.node("Gather", in, outs, exAInt("axis", int64(v.Attrs.(ops.AxisAttr).Axis)))
		return nil
	}
	e[ops.TakeAlongAxisPrim] = func(x *exporter, v *graph.Value, in, outs []string) error {
		x.node("GatherElements", in, outs, exAInt("axis", int64(v.Attrs.(ops.AxisAttr).Axis)))
		return nil
	}
	e[ops.OneHotPrim] = func(x *exporter, v *graph.Value, in, outs []string) error {
		a := v.Attrs.(ops.OneHotAttrs)
		var vals *tensor.Tensor
		switch a.DType {
		case tensor.Float32:
			vals = tensor.FromSlice([]float32{0, 1})
		case tensor.Float64:
			vals = tensor.FromSlice([]float64{0, 1})
		case tensor.Int32:
			vals = tensor.FromSlice([]int32{0, 1})
		case tensor.Int64:
			vals = tensor.FromSlice([]int64{0, 1})
		default:
			return fmt.Errorf("no ONNX translation for %v one-hot values", a.DType)
		}
		vn, err := x.initializer(vals, "onehot_values")
		if err != nil {
			return err
		}
		x.node("OneHot", []string{in[0], x.constInts(int64(a.Depth)), vn}, outs, exAInt("axis", -1))
		return nil
	}
	e[ops.StridedSlicePrim] = exEmitSlice
	e[ops.StridedSliceGradPrim] = exEmitPadWindow
	e[ops.ScaledDotProductAttentionPrim] = exEmitAttention
	e[ops.AttentionSeedPrim] = func(x *exporter, v *graph.Value, in, outs []string) error {
		// Only attention with dropout draws a seed.
		return errors.New("attention dropout has no ONNX translation; export the cell in evaluation mode, or call attention with DropoutP 0")
	}
	e[ops.LayerNormPrim] = exEmitLayerNorm
}

// exEmitLayerNorm writes LayerNorm as LayerNormalization (opset 17) over
// the axes from the first normalised one, gamma and beta as its Scale and
// B. ONNX stashes the statistics in stash_type, float32 unless told: a
// float64 input is told float64, so that they keep its precision as
// spore's kernel does.
func exEmitLayerNorm(x *exporter, v *graph.Value, in, outs []string) error {
	a := v.Attrs.(ops.LayerNormAttrs)
	attrs := []*onnxpb.AttributeProto{exAInt("axis", int64(a.Begin)), exAFloat("epsilon", float32(a.Eps))}
	if v.Meta.DType == tensor.Float64 {
		attrs = append(attrs, exAInt("stash_type", int64(onnxpb.TensorProto_DOUBLE)))
	}
	x.node("LayerNormalization", in, outs, attrs...)
	return nil
}

// exEmitConvTranspose writes Conv2DBackpropInput — the gradient of a
// convolution with respect to its input, which is what a transposed
// convolution computes — as ConvTranspose: spore's filter [O, C/groups,
// kh, kw] is ONNX's ConvTranspose weight as it is. The output's extent,
// which strides leave ambiguous, is pinned with output_padding.
func exEmitConvTranspose(x *exporter, v *graph.Value, in, outs []string) error {
	a := v.Attrs.(ops.ConvGradAttrs)
	dy, ws := v.Args[0].Meta.Shape, v.Args[1].Meta.Shape
	var outPad [2]int64
	for i := range 2 {
		natural := a.Stride[i]*(dy[2+i]-1) + (ws[2+i]-1)*a.Dilation[i] + 1 - a.Pads[2*i] - a.Pads[2*i+1]
		outPad[i] = int64(a.Shape[2+i] - natural)
		if outPad[i] < 0 || outPad[i] >= int64(max(a.Stride[i], a.Dilation[i])) {
			return fmt.Errorf("output extent %d on axis %d is not reachable with ConvTranspose's output_padding", a.Shape[2+i], 2+i)
		}
	}
	x.node("ConvTranspose", in, outs,
		exAInts("kernel_shape", int64(ws[2]), int64(ws[3])),
		exAInts("strides", int64(a.Stride[0]), int64(a.Stride[1])),
		exAInts("pads", int64(a.Pads[0]), int64(a.Pads[2]), int64(a.Pads[1]), int64(a.Pads[3])),
		exAInts("dilations", int64(a.Dilation[0]), int64(a.Dilation[1])),
		exAInts("output_padding", outPad[0], outPad[1]),
		exAInt("group", int64(max(a.Groups, 1))))
	return nil
}

// exEmitGelu writes GELU as the Gelu op from opset 20 on, and before that
// as x·½(1 + erf(x/√2)), the definition that op has.
func exEmitGelu(x *exporter, v *graph.Value, in, outs []string) error {
	if x.cfg.opset >= 20 {
		x.node("Gelu", in, outs)
		return nil
	}
	dt := v.Meta.DType
	rs2, err := x.constScalar(dt, math.Sqrt2)
	if err != nil {
		return err
	}
	one, _ := x.constScalar(dt, 1)
	half, _ := x.constScalar(dt, 0.5)
	e := x.op1("Erf", []string{x.op1("Div", []string{in[0], rs2})})
	cdf := x.op1("Mul", []string{x.op1("Add", []string{e, one}), half})
	x.node("Mul", []string{in[0], cdf}, outs)
	return nil
}

// transposeLast2 transposes the last two axes of a rank-r value.
func (x *exporter) transposeLast2(name string, r int) string {
	perm := make([]int64, r)
	for i := range perm {
		perm[i] = int64(i)
	}
	perm[r-2], perm[r-1] = perm[r-1], perm[r-2]
	return x.op1("Transpose", []string{name}, exAInts("perm", perm...))
}

// exEmitMatMul writes Gemm for a product of matrices (it takes the
// transpositions as attributes) and MatMul, after explicit Transposes,
// for batched products.
func exEmitMatMul(x *exporter, v *graph.Value, in, outs []string) error {
	a := v.Attrs.(ops.MatMulAttrs)
	ra, rb := v.Args[0].Meta.Shape, v.Args[1].Meta.Shape
	b2i := map[bool]int64{false: 0, true: 1}
	if len(ra) == 2 && len(rb) == 2 && v.Meta.DType.IsFloat() {
		x.node("Gemm", in, outs, exAInt("transA", b2i[a.TransA]), exAInt("transB", b2i[a.TransB]))
		return nil
	}
	l, r := in[0], in[1]
	if a.TransA {
		if len(ra) < 2 {
			return fmt.Errorf("transposed operand of rank %d", len(ra))
		}
		l = x.transposeLast2(l, len(ra))
	}
	if a.TransB {
		if len(rb) < 2 {
			return fmt.Errorf("transposed operand of rank %d", len(rb))
		}
		r = x.transposeLast2(r, len(rb))
	}
	x.node("MatMul", []string{l, r}, outs)
	return nil
}

// exEmitReshape writes Reshape to the traced shape; under DynamicBatch the
// batch axis's extent is written -1, inferred from the input's at run
// time (the other extents do not change with the batch).
func exEmitReshape(x *exporter, v *graph.Value, in, outs []string) error {
	shape := exInts64(v.Meta.Shape)
	if b := x.baxOf(v); b >= 0 {
		shape[b] = -1
	}
	x.node("Reshape", []string{in[0], x.constInts(shape...)}, outs)
	return nil
}

// exEmitBroadcastTo writes Expand. Under DynamicBatch, the target extent of
// a batch axis the operand has too is written 1 (Expand broadcasts both
// ways, so the operand's extent wins); one the operand lacks is computed
// from the input's batch.
func exEmitBroadcastTo(x *exporter, v *graph.Value, in, outs []string) error {
	b := x.baxOf(v)
	if b < 0 {
		x.node("Expand", []string{in[0], x.constInts(exInts64(v.Meta.Shape)...)}, outs)
		return nil
	}
	shape := exInts64(v.Meta.Shape)
	if ob := x.argBax(v, 0); ob >= 0 && ob+len(v.Meta.Shape)-len(v.Args[0].Meta.Shape) == b {
		shape[b] = 1
		x.node("Expand", []string{in[0], x.constInts(shape...)}, outs)
		return nil
	}
	x.node("Expand", []string{in[0], x.batchShape(v.Meta.Shape, b)}, outs)
	return nil
}

// exEmitSlice writes StridedSlice as Slice over every axis. Under
// DynamicBatch, a whole batch axis is sliced to the end, whatever it is.
func exEmitSlice(x *exporter, v *graph.Value, in, outs []string) error {
	a := v.Attrs.(ops.SliceAttrs)
	r := len(a.Begin)
	starts, ends, axes, steps := make([]int64, r), make([]int64, r), make([]int64, r), make([]int64, r)
	b := -1
	if x.baxOf(v) >= 0 && x.baxOf(v) == x.argBax(v, 0) {
		b = x.baxOf(v) // the whole batch, whatever its size
	}
	for i := range r {
		starts[i], steps[i], axes[i] = int64(a.Begin[i]), int64(a.Strides[i]), int64(i)
		end := int64(a.Begin[i] + a.Size[i]*a.Strides[i])
		switch {
		// The whole batch axis (the only slice of it whose extent is a
		// multiple of the batch), forwards or backwards, at any batch.
		case i == b && a.Strides[i] == 1 && a.Size[i] == a.Shape[i]:
			starts[i], end = 0, math.MaxInt64
		case i == b && a.Strides[i] == -1 && a.Size[i] == a.Shape[i]:
			starts[i], end = -1, math.MinInt64
		case a.Strides[i] < 0 && end < 0:
			end = math.MinInt64 // past the first element; -1 would mean the last
		}
		ends[i] = end
	}
	x.node("Slice", []string{in[0], x.constInts(starts...), x.constInts(ends...), x.constInts(axes...), x.constInts(steps...)}, outs)
	return nil
}

// exEmitPadWindow writes StridedSliceGrad — its operand placed in a window
// of zeros — as Pad when the window is dense (ops.Pad).
func exEmitPadWindow(x *exporter, v *graph.Value, in, outs []string) error {
	a := v.Attrs.(ops.SliceAttrs)
	r := len(a.Begin)
	pads := make([]int64, 2*r)
	for i := range r {
		if a.Strides[i] != 1 {
			return fmt.Errorf("a strided window (strides %v) has no ONNX translation", a.Strides)
		}
		pads[i] = int64(a.Begin[i])
		pads[r+i] = int64(a.Shape[i] - a.Begin[i] - a.Size[i])
	}
	x.node("Pad", []string{in[0], x.constInts(pads...)}, outs)
	return nil
}

// exEmitAttention writes scaled dot-product attention as the ops torch
// exports it to: softmax(q·kᵀ·scale + mask)·v, with a causal mask as a
// lower triangle. Its second result, the scores' log-sum-exp per query,
// is written too (runtimes drop it when nothing reads it). The packed
// form (AttentionAttrs.Packed) reads q, k and v from one projection and
// writes the heads side by side; it becomes the same ops between a split
// and a merge of the heads.
func exEmitAttention(x *exporter, v *graph.Value, in, outs []string) error {
	a := v.Attrs.(ops.AttentionAttrs)
	if a.P != 0 {
		return fmt.Errorf("attention dropout (p=%v) has no ONNX translation; export the cell in evaluation mode", a.P)
	}
	if a.Packed > 0 {
		return exEmitPackedAttention(x, v, a, in, outs)
	}
	q, k := v.Args[0].Meta.Shape, v.Args[1].Meta.Shape
	at := exAttn{
		q: in[0], k: in[1], v: in[2], dt: v.Args[0].Meta.DType,
		L: q[len(q)-2], S: k[len(k)-2], rankK: len(k),
		// A sequence axis that follows the batch: its extent is known
		// only at run time.
		dynSeq: x.argBax(v, 0) == len(q)-2 || x.argBax(v, 1) == len(k)-2,
	}
	if a.HasMask {
		at.mask, at.boolMask = in[3], v.Args[3].Meta.DType == tensor.Bool
	}
	return x.attention(a, at, outs[0], outs[1])
}

// exAttn is one attention call for exporter.attention: the names of q
// [..., L, E], k [..., S, E], v [..., S, Ev] and the optional mask, and
// what the translation needs of their types and shapes.
type exAttn struct {
	q, k, v, mask string
	boolMask      bool
	dt            tensor.DType
	L, S, rankK   int
	// dynSeq says L or S varies with the batch (DynamicBatch), so that a
	// causal mask is built from the scores' shape at run time.
	dynSeq bool
}

// attention writes softmax(q·kᵀ·scale + mask)·v into out and the scores'
// log-sum-exp per query into lse.
func (x *exporter) attention(a ops.AttentionAttrs, at exAttn, out, lse string) error {
	dt := at.dt
	kt := x.transposeLast2(at.k, at.rankK)
	sc, err := x.constScalar(dt, a.Scale)
	if err != nil {
		return err
	}
	scores := x.op1("Mul", []string{x.op1("MatMul", []string{at.q, kt}), sc})
	ninf, _ := x.constScalar(dt, math.Inf(-1))
	if a.HasMask {
		if at.boolMask {
			scores = x.op1("Where", []string{at.mask, scores, ninf})
		} else {
			scores = x.op1("Add", []string{scores, at.mask})
		}
	}
	if a.Causal {
		tn, err := x.causalMask(scores, at)
		if err != nil {
			return err
		}
		scores = x.op1("Where", []string{tn, scores, ninf})
	}
	p := x.op1("Softmax", []string{scores}, exAInt("axis", -1))
	if !a.HasMask {
		x.node("MatMul", []string{p, at.v}, []string{out})
		return x.reduce("ReduceLogSumExp", 18, scores, []int64{-1}, false, []string{lse})
	}
	// A query whose keys are all masked attends nothing: spore gives it
	// a zero output and a log-sum-exp of +Inf where a plain softmax gives
	// NaN.
	rowMax := x.tmp()
	if err := x.reduce("ReduceMax", 18, scores, []int64{-1}, true, []string{rowMax}); err != nil {
		return err
	}
	dead := x.op1("Equal", []string{rowMax, ninf})
	zero, _ := x.constScalar(dt, 0)
	pinf, _ := x.constScalar(dt, math.Inf(1))
	p = x.op1("Where", []string{dead, zero, p})
	x.node("MatMul", []string{p, at.v}, []string{out})
	l := x.tmp()
	if err := x.reduce("ReduceLogSumExp", 18, scores, []int64{-1}, false, []string{l}); err != nil {
		return err
	}
	x.node("Where", []string{x.op1("Squeeze", []string{dead, x.constInts(-1)}), pinf, l}, []string{lse})
	return nil
}

// causalMask returns the name of a Bool [L, S] value, true where key j
// may be attended by query i (j ≤ i): a constant lower triangle, or, when
// L or S follows the batch, one computed from the scores' last two
// extents at run time.
func (x *exporter) causalMask(scores string, at exAttn) (string, error) {
	if !at.dynSeq {
		L, S := at.L, at.S
		tri := make([]bool, L*S)
		for i := range L {
			for j := 0; j <= i && j < S; j++ {
				tri[i*S+j] = true
			}
		}
		return x.initializer(tensor.FromSlice(tri, L, S), "causal_mask")
	}
	zero, err := x.constScalar(tensor.Int64, 0)
	if err != nil {
		return "", err
	}
	one, _ := x.constScalar(tensor.Int64, 1)
	ls := x.op1("Shape", []string{scores}, exAInt("start", -2)) // [L, S]
	iota := func(k int64) string {
		n := x.op1("Squeeze", []string{x.op1("Slice", []string{ls, x.constInts(k), x.constInts(k + 1)}), x.constInts(0)})
		return x.op1("Range", []string{zero, n, one})
	}
	rows := x.op1("Unsqueeze", []string{iota(0), x.constInts(1)}) // [L, 1]
	cols := x.op1("Unsqueeze", []string{iota(1), x.constInts(0)}) // [1, S]
	return x.op1("GreaterOrEqual", []string{rows, cols}), nil
}

// exEmitPackedAttention writes packed self-attention (ops.
// PackedSelfAttention): qkv [N, L, 3·H·D] (or [L, N, 3·H·D]) is sliced
// into q, k and v along its last axis, each reshaped to [N, L, H, D] (or
// [L, N, H, D]) and transposed to [N, H, L, D]; after the attention the
// heads go back to [N, L, H, D] (or [L, N, H, D]) and merge into
// [N, L, H·D] (or [L, N, H·D]). The reshapes copy the two leading
// extents from their input (a 0 in ONNX's Reshape), so that either may
// follow the batch. A mask broadcasts to [N, H, L, L] as the scores do.
func exEmitPackedAttention(x *exporter, v *graph.Value, a ops.AttentionAttrs, in, outs []string) error {
	qs := v.Args[0].Meta.Shape
	h := int64(a.Packed)
	hd := int64(qs[2]) / 3
	d := hd / h
	seqAxis, perm, back := 1, []int64{0, 2, 1, 3}, []int64{0, 2, 1, 3}
	if a.SeqFirst {
		seqAxis, perm, back = 0, []int64{1, 2, 0, 3}, []int64{2, 0, 1, 3}
	}
	heads := func(i int64) string {
		part := x.op1("Slice", []string{in[0], x.constInts(i * hd), x.constInts((i + 1) * hd), x.constInts(2)})
		split := x.op1("Reshape", []string{part, x.constInts(0, 0, h, d)})
		return x.op1("Transpose", []string{split}, exAInts("perm", perm...))
	}
	L := qs[seqAxis]
	at := exAttn{
		q: heads(0), k: heads(1), v: heads(2), dt: v.Args[0].Meta.DType,
		L: L, S: L, rankK: 4, dynSeq: x.argBax(v, 0) == seqAxis,
	}
	if a.HasMask {
		at.mask, at.boolMask = in[1], v.Args[1].Meta.DType == tensor.Bool
	}
	o := x.tmp()
	if err := x.attention(a, at, o, outs[1]); err != nil {
		return err
	}
	merged := x.op1("Transpose", []string{o}, exAInts("perm", back...))
	x.node("Reshape", []string{merged, x.constInts(0, 0, hd)}, outs[:1])
	return nil
}
