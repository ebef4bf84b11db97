package nn

import (
	"fmt"
	"math"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/nn/initializer"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// newParam creates a parameter named name from an initialiser.
func newParam(name string, init initializer.Initializer, dt tensor.DType, shape ...int) *spore.Tensor {
	return tensor.NewParameter(name, init.New(dt, shape...))
}

// floatType resolves a layer's dtype: Float32 unless set, and a float.
func floatType(op string, dt tensor.DType) tensor.DType {
	if dt == tensor.Invalid {
		return tensor.Float32
	}
	if !dt.IsFloat() {
		core.Panicf(op, "parameters must be Float32 or Float64, got %v", dt)
	}
	return dt
}

func positive(op string, what string, v int) {
	if v <= 0 {
		core.Panicf(op, "%s must be positive, got %d", what, v)
	}
}

// DenseConfig holds Dense's optional settings; the zero value is
// MindSpore 2.x's defaults.
type DenseConfig struct {
	// WeightInit initialises the [out, in] weight; nil means
	// HeUniform(√5), i.e. U(−1/√in, 1/√in).
	WeightInit initializer.Initializer
	// BiasInit initialises the [out] bias; nil means Uniform(1/√in).
	BiasInit initializer.Initializer
	// NoBias leaves the bias out (MindSpore's has_bias=False).
	NoBias bool
	// Activation, if not nil, is applied to the output (see Activation).
	Activation Layer
	// DType is the parameters' type; zero means Float32.
	DType tensor.DType
}

// Dense is the fully connected layer y = activation(x·Wᵀ + b),
// MindSpore's nn.Dense. The weight is stored [out, in], as in MindSpore
// and PyTorch, and multiplied with a transpose flag rather than a
// transposed copy. Inputs of rank above 2 are treated as batches of rows.
type Dense struct {
	Cell
	// Weight is the [out, in] weight, named "weight".
	Weight *spore.Tensor
	// Bias is the [out] bias, named "bias"; nil without bias.
	Bias *spore.Tensor
	// Activation is applied last; nil for none.
	Activation Layer
	// InChannels and OutChannels are the input and output widths.
	InChannels, OutChannels int
}

// NewDense returns a Dense layer from in to out features, initialised from
// the framework's random source.
func NewDense(in, out int, cfg ...DenseConfig) *Dense {
	const op = "nn.Dense"
	positive(op, "in_channels", in)
	positive(op, "out_channels", out)
	var c DenseConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	dt := floatType(op, c.DType)
	if c.WeightInit == nil {
		c.WeightInit = initializer.HeUniform(math.Sqrt(5))
	}
	d := &Dense{InChannels: in, OutChannels: out, Activation: c.Activation}
	d.Weight = newParam("weight", c.WeightInit, dt, out, in)
	if !c.NoBias {
		if c.BiasInit == nil {
			fanIn, _ := initializer.Fans(d.Weight.Shape())
			c.BiasInit = initializer.Uniform(1 / math.Sqrt(float64(fanIn)))
		}
		d.Bias = newParam("bias", c.BiasInit, dt, out)
	}
	return Init(d)
}

// Construct computes activation(x·Wᵀ + b) for x of shape [..., in].
func (d *Dense) Construct(x *spore.Tensor) *spore.Tensor {
	xs := x.Shape()
	if len(xs) == 0 || xs[len(xs)-1] != d.InChannels {
		core.Panicf("nn.Dense", "input %v does not end in in_channels=%d", xs, d.InChannels)
	}
	h := x
	if len(xs) != 2 {
		h = ops.Reshape(x, -1, d.InChannels)
	}
	y := ops.MatMulT(h, d.Weight, false, true)
	if d.Bias != nil {
		y = ops.Add(y, d.Bias)
	}
	if len(xs) != 2 {
		s := append(append([]int(nil), xs[:len(xs)-1]...), d.OutChannels)
		y = ops.Reshape(y, s...)
	}
	if d.Activation != nil {
		y = d.Activation.Base().Call(y)
	}
	return y
}

// ReLU is max(x, 0), MindSpore's nn.ReLU.
type ReLU struct{ Cell }

// NewReLU returns a ReLU cell.
func NewReLU() *ReLU { return Init(&ReLU{}) }

// Construct returns max(x, 0).
func (*ReLU) Construct(x *spore.Tensor) *spore.Tensor { return ops.ReLU(x) }

// GELU is the Gaussian error linear unit, MindSpore's nn.GELU. With
// Approximate (MindSpore's default) it is the tanh approximation
// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))); otherwise x·Φ(x) exactly.
type GELU struct {
	Cell
	// Approximate selects the tanh approximation.
	Approximate bool
}

// NewGELU returns a GELU cell; approximate selects the tanh form, which is
// MindSpore's default.
func NewGELU(approximate bool) *GELU { return Init(&GELU{Approximate: approximate}) }

// Construct applies GELU.
func (g *GELU) Construct(x *spore.Tensor) *spore.Tensor {
	if g.Approximate {
		return ops.GELUTanh(x)
	}
	return ops.GELU(x)
}

// Sigmoid is 1/(1+e⁻ˣ), MindSpore's nn.Sigmoid.
type Sigmoid struct{ Cell }

// NewSigmoid returns a Sigmoid cell.
func NewSigmoid() *Sigmoid { return Init(&Sigmoid{}) }

// Construct applies the logistic function.
func (*Sigmoid) Construct(x *spore.Tensor) *spore.Tensor { return ops.Sigmoid(x) }

// Tanh is the hyperbolic tangent, MindSpore's nn.Tanh.
type Tanh struct{ Cell }

// NewTanh returns a Tanh cell.
func NewTanh() *Tanh { return Init(&Tanh{}) }

// Construct applies tanh.
func (*Tanh) Construct(x *spore.Tensor) *spore.Tensor { return ops.Tanh(x) }

// Softmax is exp(x)/Σexp(x) along Axis, MindSpore's nn.Softmax.
type Softmax struct {
	Cell
	// Axis is the axis normalised over; negative counts from the end.
	Axis int
}

// NewSoftmax returns a Softmax over axis (MindSpore's default is -1).
func NewSoftmax(axis int) *Softmax { return Init(&Softmax{Axis: axis}) }

// Construct applies softmax along the axis.
func (s *Softmax) Construct(x *spore.Tensor) *spore.Tensor { return ops.Softmax(x, s.Axis) }

// LogSoftmax is log(softmax(x)) along Axis, MindSpore's nn.LogSoftmax.
type LogSoftmax struct {
	Cell
	// Axis is the axis normalised over; negative counts from the end.
	Axis int
}

// NewLogSoftmax returns a LogSoftmax over axis.
func NewLogSoftmax(axis int) *LogSoftmax { return Init(&LogSoftmax{Axis: axis}) }

// Construct applies log-softmax along the axis.
func (s *LogSoftmax) Construct(x *spore.Tensor) *spore.Tensor { return ops.LogSoftmax(x, s.Axis) }

// Activation returns the activation cell of a MindSpore name: "relu",
// "gelu" (tanh-approximated), "sigmoid", "tanh" or "softmax". It panics on
// other names.
func Activation(name string) Layer {
	switch name {
	case "relu":
		return NewReLU()
	case "gelu":
		return NewGELU(true)
	case "sigmoid":
		return NewSigmoid()
	case "tanh":
		return NewTanh()
	case "softmax":
		return NewSoftmax(-1)
	}
	panic(core.Errorf("nn.Activation", "unknown activation %q (want relu, gelu, sigmoid, tanh or softmax)", name))
}

// Flatten merges axes StartDim through EndDim into one, MindSpore 2.x's
// nn.Flatten (start_dim=1, end_dim=-1 by default: [N, ...] → [N, Π...]).
type Flatten struct {
	Cell
	// StartDim and EndDim are the first and last axes merged; negative
	// values count from the end.
	StartDim, EndDim int
}

// NewFlatten returns a Flatten of every axis but the first.
func NewFlatten() *Flatten { return Init(&Flatten{StartDim: 1, EndDim: -1}) }

// Construct reshapes x with the axes merged.
func (f *Flatten) Construct(x *spore.Tensor) *spore.Tensor {
	xs := x.Shape()
	if len(xs) == 0 {
		return ops.Reshape(x, 1)
	}
	s := core.NormAxis("nn.Flatten", f.StartDim, len(xs))
	e := core.NormAxis("nn.Flatten", f.EndDim, len(xs))
	if s > e {
		core.Panicf("nn.Flatten", "start_dim %d is after end_dim %d for input %v", f.StartDim, f.EndDim, xs)
	}
	if s == e {
		return x
	}
	merged := 1
	for _, d := range xs[s : e+1] {
		merged *= d
	}
	shape := append(append(append([]int(nil), xs[:s]...), merged), xs[e+1:]...)
	return ops.Reshape(x, shape...)
}

// Dropout zeroes each element with probability P in training and scales
// the others by 1/(1−P), MindSpore 2.x's nn.Dropout(p=...); in inference
// it is the identity. Masks draw from the framework's random source.
type Dropout struct {
	Cell
	// P is the drop probability, in [0, 1).
	P float64
}

// NewDropout returns a Dropout with drop probability p (MindSpore's
// default is 0.5).
func NewDropout(p float64) *Dropout {
	if !(p >= 0 && p < 1) {
		core.Panicf("nn.Dropout", "drop probability %v is not in [0, 1)", p)
	}
	return Init(&Dropout{P: p})
}

// Construct applies dropout when the cell is training.
func (d *Dropout) Construct(x *spore.Tensor) *spore.Tensor { return ops.Dropout(x, d.P, d.Training()) }

// SequentialCell chains one-input cells, MindSpore's nn.SequentialCell.
// Its children are named by position: "0", "1", ...
type SequentialCell struct {
	Cell
	// Cells are the chained cells, in order.
	Cells []Layer `nn:",inline"`
}

// NewSequentialCell returns the chain of cells.
func NewSequentialCell(cells ...Layer) *SequentialCell {
	for i, c := range cells {
		if c == nil {
			core.Panicf("nn.SequentialCell", "cell %d is nil", i)
		}
	}
	return Init(&SequentialCell{Cells: append([]Layer(nil), cells...)})
}

// Append adds a cell at the end. Call Init on the root again to rename
// parameters if the root was initialised already.
func (s *SequentialCell) Append(c Layer) {
	s.Cells = append(s.Cells, c)
	Init(s)
}

// Len returns the number of cells.
func (s *SequentialCell) Len() int { return len(s.Cells) }

// Construct feeds x through the cells in order.
func (s *SequentialCell) Construct(x *spore.Tensor) *spore.Tensor {
	for _, c := range s.Cells {
		x = c.Base().Call(x)
	}
	return x
}

// CellList holds cells in a list, MindSpore's nn.CellList: its children
// are registered (named "0", "1", ...) but it has no Construct; the
// owner decides how to call them.
type CellList struct {
	Cell
	// Cells are the listed cells.
	Cells []Module `nn:",inline"`
}

// NewCellList returns a list of the cells.
func NewCellList(cells ...Module) *CellList {
	return Init(&CellList{Cells: append([]Module(nil), cells...)})
}

// Append adds a cell at the end.
func (l *CellList) Append(c Module) {
	l.Cells = append(l.Cells, c)
	Init(l)
}

// Len returns the number of cells.
func (l *CellList) Len() int { return len(l.Cells) }

// At returns cell i.
func (l *CellList) At(i int) Module {
	if i < 0 || i >= len(l.Cells) {
		core.Panicf("nn.CellList", "index %d out of range for %d cells", i, len(l.Cells))
	}
	return l.Cells[i]
}

// String prints a Dense's sizes, as MindSpore's repr.
func (d *Dense) String() string {
	return fmt.Sprintf("Dense<input_channels=%d, output_channels=%d, has_bias=%v>", d.InChannels, d.OutChannels, d.Bias != nil)
}
