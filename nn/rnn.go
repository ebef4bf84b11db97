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

// RNNConfig holds the optional settings of RNN, LSTM and GRU; the zero
// value is MindSpore 2.x's defaults.
type RNNConfig struct {
	// NumLayers is the number of stacked layers; zero means 1.
	NumLayers int
	// NoBias leaves the biases out (MindSpore's has_bias=False).
	NoBias bool
	// BatchFirst makes inputs and outputs [batch, seq, feature] instead of
	// [seq, batch, feature]. States are [layers·directions, batch, hidden]
	// either way.
	BatchFirst bool
	// Dropout is the probability of zeroing the outputs of every layer but
	// the last, in training; MindSpore's dropout.
	Dropout float64
	// Bidirectional adds a second pass over the sequence in reverse, whose
	// outputs are concatenated to the forward pass's along the feature
	// axis.
	Bidirectional bool
	// Nonlinearity is RNN's activation, "tanh" (the default) or "relu".
	// LSTM and GRU have fixed gate activations and reject it.
	Nonlinearity string
	// DType is the parameters' type; zero means Float32.
	DType tensor.DType
}

// rnnKind selects the recurrence of an RNNBase.
type rnnKind int

const (
	kindRNN rnnKind = iota
	kindLSTM
	kindGRU
)

// gates is the number of hidden-sized blocks stacked in each weight: the
// gate order is PyTorch's (LSTM: i, f, g, o; GRU: r, z, n).
func (k rnnKind) gates() int { return [...]int{1, 4, 3}[k] }

func (k rnnKind) String() string { return [...]string{"RNN", "LSTM", "GRU"}[k] }

// RNNBase holds what RNN, LSTM and GRU share, MindSpore's _RNNBase: the
// sizes, the settings and the parameters. For layer k (0 ≤ k < NumLayers)
// and G = 1 (RNN), 4 (LSTM) or 3 (GRU) gates:
//
//	weight_ih_lk   [G·hidden, in_k]   in_0 = input_size, in_k = directions·hidden
//	weight_hh_lk   [G·hidden, hidden]
//	bias_ih_lk     [G·hidden]
//	bias_hh_lk     [G·hidden]
//
// and the same with the suffix _reverse for the backward direction of a
// bidirectional layer. All are drawn from U(−1/√hidden, 1/√hidden), as in
// MindSpore and PyTorch. Without biases, the bias entries are absent.
type RNNBase struct {
	Cell

	// Params holds the parameters of each layer and direction, in
	// PyTorch's order, under MindSpore's names (weight_ih_l0, ...).
	Params ParamList `nn:",inline"`

	// InputSize and HiddenSize are the feature widths of the input and of
	// the hidden state.
	InputSize, HiddenSize int
	// NumLayers is the number of stacked layers.
	NumLayers int
	// BatchFirst says inputs and outputs are [batch, seq, feature].
	BatchFirst bool
	// Bidirectional says each layer also runs over the reversed sequence.
	Bidirectional bool
	// Dropout is the drop probability between layers, in training.
	Dropout float64
	// Nonlinearity is RNN's activation, "tanh" or "relu"; empty for LSTM
	// and GRU.
	Nonlinearity string

	kind rnnKind
	// slots index Params for each layer and direction (weight_ih,
	// weight_hh, bias_ih, bias_hh; −1 for an absent bias), so that a
	// parameter replaced in Params after construction is still seen.
	slots [][2][4]int
}

// RNN is the Elman recurrent layer, MindSpore's nn.RNN: for each layer
// and time step,
//
//	h_t = act(x_t·W_ihᵀ + b_ih + h_{t−1}·W_hhᵀ + b_hh)
//
// with act tanh or ReLU. Construct maps an input [seq, batch, input_size]
// (or [batch, seq, input_size] with BatchFirst) to the top layer's states
// [seq, batch, directions·hidden]; Forward also takes an initial state and
// returns the final one.
type RNN RNNBase

// LSTM is the long short-term memory layer, MindSpore's nn.LSTM: for
// each layer and time step, with σ the logistic function and ⊙ the
// elementwise product,
//
//	i, f, g, o = split(x_t·W_ihᵀ + b_ih + h_{t−1}·W_hhᵀ + b_hh)
//	c_t = σ(f)⊙c_{t−1} + σ(i)⊙tanh(g)
//	h_t = σ(o)⊙tanh(c_t)
//
// Construct maps an input [seq, batch, input_size] (or [batch, seq,
// input_size] with BatchFirst) to the top layer's h_t for every t; Forward
// also takes initial states and returns the final (h, c).
type LSTM RNNBase

// GRU is the gated recurrent unit layer, MindSpore's nn.GRU: for each
// layer and time step,
//
//	r = σ(x_t·W_irᵀ + b_ir + h_{t−1}·W_hrᵀ + b_hr)
//	z = σ(x_t·W_izᵀ + b_iz + h_{t−1}·W_hzᵀ + b_hz)
//	n = tanh(x_t·W_inᵀ + b_in + r⊙(h_{t−1}·W_hnᵀ + b_hn))
//	h_t = (1 − z)⊙n + z⊙h_{t−1}
//
// Construct maps an input [seq, batch, input_size] (or [batch, seq,
// input_size] with BatchFirst) to the top layer's states; Forward also
// takes an initial state and returns the final one.
type GRU RNNBase

// NewRNN returns an RNN layer from inputSize to hiddenSize features,
// initialised from the framework's random source.
func NewRNN(inputSize, hiddenSize int, cfg ...RNNConfig) *RNN {
	return Init((*RNN)(newRNNBase(kindRNN, inputSize, hiddenSize, cfg)))
}

// NewLSTM returns an LSTM layer from inputSize to hiddenSize features,
// initialised from the framework's random source.
func NewLSTM(inputSize, hiddenSize int, cfg ...RNNConfig) *LSTM {
	return Init((*LSTM)(newRNNBase(kindLSTM, inputSize, hiddenSize, cfg)))
}

// NewGRU returns a GRU layer from inputSize to hiddenSize features,
// initialised from the framework's random source.
func NewGRU(inputSize, hiddenSize int, cfg ...RNNConfig) *GRU {
	return Init((*GRU)(newRNNBase(kindGRU, inputSize, hiddenSize, cfg)))
}

// rnnActivation resolves and checks a nonlinearity name.
func rnnActivation(op string, k rnnKind, name string) string {
	if k != kindRNN {
		if name != "" {
			core.Panicf(op, "nonlinearity %q is for RNN only; %s's gate activations are fixed", name, k)
		}
		return ""
	}
	switch name {
	case "":
		return "tanh"
	case "tanh", "relu":
		return name
	}
	panic(core.Errorf(op, "unknown nonlinearity %q (want tanh or relu)", name))
}

func newRNNBase(k rnnKind, in, hidden int, cfg []RNNConfig) *RNNBase {
	op := "nn." + k.String()
	positive(op, "input_size", in)
	positive(op, "hidden_size", hidden)
	var c RNNConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	if c.NumLayers == 0 {
		c.NumLayers = 1
	}
	positive(op, "num_layers", c.NumLayers)
	if !(c.Dropout >= 0 && c.Dropout < 1) {
		core.Panicf(op, "dropout %v is not in [0, 1)", c.Dropout)
	}
	dt := floatType(op, c.DType)
	r := &RNNBase{
		InputSize: in, HiddenSize: hidden, NumLayers: c.NumLayers,
		BatchFirst: c.BatchFirst, Bidirectional: c.Bidirectional, Dropout: c.Dropout,
		Nonlinearity: rnnActivation(op, k, c.Nonlinearity), kind: k,
	}
	init := initializer.Uniform(1 / math.Sqrt(float64(hidden)))
	g := k.gates() * hidden
	add := func(name string, shape ...int) int {
		r.Params = append(r.Params, Param{Name: name, Tensor: newParam(name, init, dt, shape...)})
		return len(r.Params) - 1
	}
	r.slots = make([][2][4]int, c.NumLayers)
	for l := range c.NumLayers {
		inL := in
		if l > 0 {
			inL = hidden * r.directions()
		}
		for d := range r.directions() {
			suffix := fmt.Sprintf("_l%d", l)
			if d == 1 {
				suffix += "_reverse"
			}
			s := [4]int{-1, -1, -1, -1}
			s[0] = add("weight_ih"+suffix, g, inL)
			s[1] = add("weight_hh"+suffix, g, hidden)
			if !c.NoBias {
				s[2] = add("bias_ih"+suffix, g)
				s[3] = add("bias_hh"+suffix, g)
			}
			r.slots[l][d] = s
		}
	}
	return r
}

func (r *RNNBase) directions() int {
	if r.Bidirectional {
		return 2
	}
	return 1
}

func (r *RNNBase) dtype() tensor.DType { return r.Params[r.slots[0][0][0]].Tensor.DType() }

// weights returns the parameters of one layer and direction: weight_ih,
// weight_hh, bias_ih, bias_hh (nil biases when absent).
func (r *RNNBase) weights(l, d int) [4]*spore.Tensor {
	var w [4]*spore.Tensor
	for i, k := range r.slots[l][d] {
		if k >= 0 {
			w[i] = r.Params[k].Tensor
		}
	}
	return w
}

// Construct returns the top layer's hidden state at every time step:
// [seq, batch, directions·hidden], or [batch, seq, directions·hidden] with
// BatchFirst. The initial state is zero.
func (r *RNN) Construct(x *spore.Tensor) *spore.Tensor {
	y, _, _ := (*RNNBase)(r).forward(x, nil, nil)
	return y
}

// Forward runs the layer from the initial state hx ([layers·directions,
// batch, hidden]; nil means zeros) and returns the output sequence, as
// Construct, and the final state of every layer and direction, shaped as
// hx: MindSpore's (output, h_n). It runs eagerly, or is traced when called
// on symbolic tensors (inside spore.Jit or a compiled Construct).
func (r *RNN) Forward(x, hx *spore.Tensor) (output, hn *spore.Tensor) {
	y, h, _ := (*RNNBase)(r).forward(x, hx, nil)
	return y, h
}

// Construct returns the top layer's h_t at every time step: [seq, batch,
// directions·hidden], or [batch, seq, directions·hidden] with BatchFirst.
// The initial states are zero.
func (l *LSTM) Construct(x *spore.Tensor) *spore.Tensor {
	y, _, _ := (*RNNBase)(l).forward(x, nil, nil)
	return y
}

// Forward runs the layer from the initial states hx and cx (each
// [layers·directions, batch, hidden]; nil means zeros) and returns the
// output sequence, as Construct, and the final h and c of every layer and
// direction: MindSpore's (output, (h_n, c_n)). It runs eagerly, or is
// traced when called on symbolic tensors.
func (l *LSTM) Forward(x, hx, cx *spore.Tensor) (output, hn, cn *spore.Tensor) {
	return (*RNNBase)(l).forward(x, hx, cx)
}

// Construct returns the top layer's hidden state at every time step:
// [seq, batch, directions·hidden], or [batch, seq, directions·hidden] with
// BatchFirst. The initial state is zero.
func (g *GRU) Construct(x *spore.Tensor) *spore.Tensor {
	y, _, _ := (*RNNBase)(g).forward(x, nil, nil)
	return y
}

// Forward runs the layer from the initial state hx ([layers·directions,
// batch, hidden]; nil means zeros) and returns the output sequence, as
// Construct, and the final state of every layer and direction: MindSpore's
// (output, h_n). It runs eagerly, or is traced when called on symbolic
// tensors.
func (g *GRU) Forward(x, hx *spore.Tensor) (output, hn *spore.Tensor) {
	y, h, _ := (*RNNBase)(g).forward(x, hx, nil)
	return y, h
}

// checkState validates an initial state against [layers·directions,
// batch, hidden] and returns it, or zeros when it is nil.
func (r *RNNBase) checkState(op, what string, s *spore.Tensor, batch int) *spore.Tensor {
	want := tensor.Shape{r.NumLayers * r.directions(), batch, r.HiddenSize}
	if s == nil {
		return tensor.Zeros(r.dtype(), want...)
	}
	if !s.Shape().Equal(want) || s.DType() != r.dtype() {
		core.Panicf(op, "initial state %s is %v %v, want %v %v ([num_layers·directions, batch, hidden_size])", what, s.Shape(), s.DType(), want, r.dtype())
	}
	return s
}

// forward runs every layer over the sequence. Each layer and direction
// is one Scan: the input projection x·W_ihᵀ + b_ih of all time steps is a
// single MatMul before the loop, so that the body holds only the
// recurrent h·W_hhᵀ — the one product that must wait for the previous
// step. cx is used by LSTM only, and cn is nil for the others.
func (r *RNNBase) forward(x, hx, cx *spore.Tensor) (y, hn, cn *spore.Tensor) {
	op := "nn." + r.kind.String()
	r.mustInit(op)
	xs := x.Shape()
	layout := "[seq, batch, input_size]"
	if r.BatchFirst {
		layout = "[batch, seq, input_size]"
	}
	if len(xs) != 3 || xs[2] != r.InputSize {
		core.Panicf(op, "input %v is not %s with input_size=%d", xs, layout, r.InputSize)
	}
	if x.DType() != r.dtype() {
		core.Panicf(op, "input %v is %v but the parameters are %v", xs, x.DType(), r.dtype())
	}
	if r.BatchFirst {
		x = ops.Transpose(x, 1, 0, 2)
	}
	T, B := x.Dim(0), x.Dim(1)
	if T == 0 || B == 0 {
		core.Panicf(op, "input %v is empty", xs)
	}
	h0 := splitState(r.checkState(op, "hx", hx, B))
	var c0 []*spore.Tensor
	if r.kind == kindLSTM {
		c0 = splitState(r.checkState(op, "cx", cx, B))
	} else if cx != nil {
		core.Panicf(op, "has no cell state, got cx %v", cx.Shape())
	}
	hs := make([]*spore.Tensor, 0, len(h0))
	cs := make([]*spore.Tensor, 0, len(c0))
	for l := range r.NumLayers {
		if l > 0 && r.Dropout > 0 {
			x = ops.Dropout(x, r.Dropout, r.Training())
		}
		outs := make([]*spore.Tensor, r.directions())
		for d := range outs {
			k := l*r.directions() + d
			var c *spore.Tensor
			if c0 != nil {
				c = c0[k]
			}
			var hT, cT *spore.Tensor
			outs[d], hT, cT = r.layer(x, h0[k], c, r.weights(l, d), d == 1)
			hs, cs = append(hs, hT), append(cs, cT)
		}
		x = outs[0]
		if len(outs) == 2 {
			x = ops.Concat(2, outs...)
		}
	}
	if r.BatchFirst {
		x = ops.Transpose(x, 1, 0, 2)
	}
	hn = ops.Stack(0, hs...)
	if r.kind == kindLSTM {
		cn = ops.Stack(0, cs...)
	}
	return x, hn, cn
}

// splitState cuts a [k, batch, hidden] state into k [batch, hidden] ones.
func splitState(s *spore.Tensor) []*spore.Tensor {
	n := s.Dim(0)
	sizes := make([]int, n)
	for i := range sizes {
		sizes[i] = 1
	}
	parts := ops.Split(s, 0, sizes...)
	for i, p := range parts {
		parts[i] = ops.Squeeze(p, 0)
	}
	return parts
}

// layer runs one direction of one layer over x [T, B, in] from state h
// (and c for LSTM), returning the states at every step [T, B, H] and the
// final ones.
func (r *RNNBase) layer(x, h, c *spore.Tensor, w [4]*spore.Tensor, reverse bool) (y, hT, cT *spore.Tensor) {
	wih, whh, bih, bhh := w[0], w[1], w[2], w[3]
	T, B, in := x.Dim(0), x.Dim(1), x.Dim(2)
	gi := ops.MatMulT(ops.Reshape(x, T*B, in), wih, false, true)
	// RNN and LSTM add b_hh straight to the gates, so it joins b_ih
	// outside the loop; GRU's b_hn sits inside r⊙(...), so GRU keeps b_hh
	// in the body.
	if bih != nil {
		b := bih
		if r.kind != kindGRU {
			b = ops.Add(bih, bhh)
			bhh = nil
		}
		gi = ops.Add(gi, b)
	}
	gi = ops.Reshape(gi, T, B, gi.Dim(1))
	init := []*spore.Tensor{h}
	if r.kind == kindLSTM {
		init = append(init, c)
	}
	body := func(carry, xt []*spore.Tensor) ([]*spore.Tensor, []*spore.Tensor) {
		var cPrev *spore.Tensor
		if len(carry) == 2 {
			cPrev = carry[1]
		}
		h, c := rnnStep(r.kind, r.Nonlinearity, xt[0], carry[0], cPrev, whh, bhh)
		if c != nil {
			return []*spore.Tensor{h, c}, []*spore.Tensor{h}
		}
		return []*spore.Tensor{h}, []*spore.Tensor{h}
	}
	// The backward direction runs a forward Scan over the time-reversed
	// projection rather than spore.ScanReverse: with ScanReverse, a GRU's
	// Graph-mode gradients differ from PyNative's in the last bit (an
	// accumulation order), and O0 promises bitwise equality; the two flips
	// are cheap copies next to the loop.
	if reverse {
		gi = flipTime(gi)
	}
	carry, ys := spore.Scan(body, init, []*spore.Tensor{gi})
	y = ys[0]
	if reverse {
		y = flipTime(y)
	}
	if len(carry) == 2 {
		cT = carry[1]
	}
	return y, carry[0], cT
}

// flipTime reverses x along its leading (time) axis.
func flipTime(x *spore.Tensor) *spore.Tensor {
	return ops.StridedSlice(x, []int{math.MaxInt}, []int{math.MinInt}, []int{-1})
}

// rnnStep is one time step of every recurrence, shared by the layers and
// the single-step cells. gi is the input projection x_t·W_ihᵀ + b_ih
// [B, G·H], which for RNN and LSTM already includes b_hh (bhh is nil
// then); for GRU bhh may be non-nil. c is LSTM's cell state, nil
// otherwise, and so is the returned c.
func rnnStep(k rnnKind, act string, gi, h, c, whh, bhh *spore.Tensor) (*spore.Tensor, *spore.Tensor) {
	gh := ops.MatMulT(h, whh, false, true)
	if bhh != nil {
		gh = ops.Add(gh, bhh)
	}
	switch k {
	case kindLSTM:
		g := ops.SplitN(ops.Add(gi, gh), 1, 4)
		c = ops.Add(ops.Mul(ops.Sigmoid(g[1]), c), ops.Mul(ops.Sigmoid(g[0]), ops.Tanh(g[2])))
		return ops.Mul(ops.Sigmoid(g[3]), ops.Tanh(c)), c
	case kindGRU:
		i, hh := ops.SplitN(gi, 1, 3), ops.SplitN(gh, 1, 3)
		rg := ops.Sigmoid(ops.Add(i[0], hh[0]))
		z := ops.Sigmoid(ops.Add(i[1], hh[1]))
		n := ops.Tanh(ops.Add(i[2], ops.Mul(rg, hh[2])))
		// (1 − z)⊙n + z⊙h written as n + z⊙(h − n): one op fewer.
		return ops.Add(n, ops.Mul(z, ops.Sub(h, n))), nil
	}
	a := ops.Add(gi, gh)
	if act == "relu" {
		return ops.ReLU(a), nil
	}
	return ops.Tanh(a), nil
}

// RNNCellConfig holds the optional settings of RNNCell, LSTMCell and
// GRUCell; the zero value is MindSpore 2.x's defaults.
type RNNCellConfig struct {
	// NoBias leaves the biases out (MindSpore's has_bias=False).
	NoBias bool
	// Nonlinearity is RNNCell's activation, "tanh" (the default) or
	// "relu"; LSTMCell and GRUCell reject it.
	Nonlinearity string
	// DType is the parameters' type; zero means Float32.
	DType tensor.DType
}

// RNNCellBase holds what the single-step cells share: sizes and the
// parameters weight_ih [G·hidden, input], weight_hh [G·hidden, hidden],
// bias_ih and bias_hh [G·hidden], drawn from U(−1/√hidden, 1/√hidden), with
// the gates in PyTorch's order (LSTMCell: i, f, g, o; GRUCell: r, z, n).
type RNNCellBase struct {
	Cell
	// WeightIh, WeightHh, BiasIh and BiasHh are the parameters; the biases
	// are nil without bias.
	WeightIh, WeightHh, BiasIh, BiasHh *spore.Tensor
	// InputSize and HiddenSize are the widths of the input and the state.
	InputSize, HiddenSize int
	// Nonlinearity is RNNCell's activation, "tanh" or "relu".
	Nonlinearity string

	kind rnnKind
}

// RNNCell is one step of RNN, MindSpore's nn.RNNCell:
// h' = act(x·W_ihᵀ + b_ih + h·W_hhᵀ + b_hh).
type RNNCell RNNCellBase

// LSTMCell is one step of LSTM, MindSpore's nn.LSTMCell. It has two
// states, so it is stepped with Forward rather than Call.
type LSTMCell RNNCellBase

// GRUCell is one step of GRU, MindSpore's nn.GRUCell.
type GRUCell RNNCellBase

// NewRNNCell returns an RNNCell from inputSize to hiddenSize features.
func NewRNNCell(inputSize, hiddenSize int, cfg ...RNNCellConfig) *RNNCell {
	return Init((*RNNCell)(newRNNCellBase(kindRNN, inputSize, hiddenSize, cfg)))
}

// NewLSTMCell returns an LSTMCell from inputSize to hiddenSize features.
func NewLSTMCell(inputSize, hiddenSize int, cfg ...RNNCellConfig) *LSTMCell {
	return Init((*LSTMCell)(newRNNCellBase(kindLSTM, inputSize, hiddenSize, cfg)))
}

// NewGRUCell returns a GRUCell from inputSize to hiddenSize features.
func NewGRUCell(inputSize, hiddenSize int, cfg ...RNNCellConfig) *GRUCell {
	return Init((*GRUCell)(newRNNCellBase(kindGRU, inputSize, hiddenSize, cfg)))
}

func newRNNCellBase(k rnnKind, in, hidden int, cfg []RNNCellConfig) *RNNCellBase {
	op := "nn." + k.String() + "Cell"
	positive(op, "input_size", in)
	positive(op, "hidden_size", hidden)
	var c RNNCellConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	dt := floatType(op, c.DType)
	init := initializer.Uniform(1 / math.Sqrt(float64(hidden)))
	g := k.gates() * hidden
	r := &RNNCellBase{InputSize: in, HiddenSize: hidden, Nonlinearity: rnnActivation(op, k, c.Nonlinearity), kind: k}
	r.WeightIh = newParam("weight_ih", init, dt, g, in)
	r.WeightHh = newParam("weight_hh", init, dt, g, hidden)
	if !c.NoBias {
		r.BiasIh = newParam("bias_ih", init, dt, g)
		r.BiasHh = newParam("bias_hh", init, dt, g)
	}
	return r
}

// step checks the input and states and runs one step.
func (r *RNNCellBase) step(x, h, c *spore.Tensor) (*spore.Tensor, *spore.Tensor) {
	op := "nn." + r.kind.String() + "Cell"
	r.mustInit(op)
	dt := r.WeightIh.DType()
	xs := x.Shape()
	if len(xs) != 2 || xs[1] != r.InputSize {
		core.Panicf(op, "input %v is not [batch, input_size] with input_size=%d", xs, r.InputSize)
	}
	if x.DType() != dt {
		core.Panicf(op, "input %v is %v but the parameters are %v", xs, x.DType(), dt)
	}
	want := tensor.Shape{xs[0], r.HiddenSize}
	state := func(what string, s *spore.Tensor) *spore.Tensor {
		if s == nil {
			return tensor.Zeros(dt, want...)
		}
		if !s.Shape().Equal(want) || s.DType() != dt {
			core.Panicf(op, "state %s is %v %v, want %v %v ([batch, hidden_size]) for input %v", what, s.Shape(), s.DType(), want, dt, xs)
		}
		return s
	}
	h = state("hx", h)
	if r.kind == kindLSTM {
		c = state("cx", c)
	}
	gi := ops.MatMulT(x, r.WeightIh, false, true)
	bhh := r.BiasHh
	if r.BiasIh != nil {
		b := r.BiasIh
		if r.kind != kindGRU {
			b, bhh = ops.Add(r.BiasIh, r.BiasHh), nil
		}
		gi = ops.Add(gi, b)
	}
	return rnnStep(r.kind, r.Nonlinearity, gi, h, c, r.WeightHh, bhh)
}

// Construct returns the next state for input x [batch, input_size] and
// state hx [batch, hidden_size] (nil means zeros).
func (r *RNNCell) Construct(x, hx *spore.Tensor) *spore.Tensor {
	h, _ := (*RNNCellBase)(r).step(x, hx, nil)
	return h
}

// Forward returns the next (h, c) for input x [batch, input_size] and
// states hx, cx [batch, hidden_size] (nil means zeros): MindSpore's
// LSTMCell construct. It runs eagerly, or is traced on symbolic tensors.
func (l *LSTMCell) Forward(x, hx, cx *spore.Tensor) (h, c *spore.Tensor) {
	return (*RNNCellBase)(l).step(x, hx, cx)
}

// Construct returns the next state for input x [batch, input_size] and
// state hx [batch, hidden_size] (nil means zeros).
func (g *GRUCell) Construct(x, hx *spore.Tensor) *spore.Tensor {
	h, _ := (*RNNCellBase)(g).step(x, hx, nil)
	return h
}
