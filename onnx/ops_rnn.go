package onnx

import (
	"math"
	"strings"

	"github.com/sporeml/spore/internal/control"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// The recurrent ops RNN, GRU and LSTM, every version (RNN and LSTM 1, 7,
// 14; GRU 1, 3, 7, 14: the versions differ only in attributes that the
// one implementation reads when present — output_sequence of version 1,
// which changes nothing about the values, linear_before_reset from GRU 3,
// layout from 14).
//
// They are built the way nn.LSTM and nn.GRU are: the input projection
// X·Wᵀ + Wb of all time steps is one MatMul before the loop, and the
// recurrence is a Scan (control.Scan) whose body holds only what must wait
// for the previous step — the product with R, the gates and the state
// update. A Scan traces to one loop node in Graph mode and differentiates
// in both modes, so an imported recurrent model fine-tunes.
//
// sequence_lens is honoured per batch entry with a mask scanned alongside
// the projection: a step past a sequence's length keeps its state and
// writes zeros to Y, so that Y_h (and Y_c) hold each sequence's state at
// its own last step. The reverse direction visits each sequence backward
// within its own length: the projection is permuted within each length
// before the loop (a TakeAlongAxis along time), the loop runs forward, and
// Y is permuted back. Lengths known when the node runs must lie in
// [0, T]; lengths computed from the model's inputs are clamped to it,
// since a compiled plan cannot check them before it runs.
//
// The dtypes are float32 and float64; float16 is refused.

func init() {
	register("RNN", 1, 0, rnnOp)
	register("GRU", 1, 0, gruOp)
	register("LSTM", 1, 0, lstmOp)
}

// rnnKindONNX tells the three ops apart where they share code.
type rnnKindONNX int

const (
	onnxRNN rnnKindONNX = iota
	onnxGRU
	onnxLSTM
)

// gates is the number of H-row blocks of W and R: RNN 1, GRU 3 (z, r, h),
// LSTM 4 (i, o, f, c).
func (k rnnKindONNX) gates() int { return [...]int{1, 3, 4}[k] }

// defaultActs lists the activations of one direction when the node sets
// none; its length is how many each direction takes.
func (k rnnKindONNX) defaultActs() []string {
	return [...][]string{{"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}}[k]
}

// rnnAct is one activation of the activations attribute, with its alpha
// and beta bound.
type rnnAct func(x *tensor.Tensor) *tensor.Tensor

// rnnActDefaults lists the activations the recurrent ops accept (ONNX's
// names, matched without regard to case) with whether each reads alpha
// and beta and their defaults, those of the ONNX operators of the same
// name.
var rnnActDefaults = map[string]struct {
	usesAlpha, usesBeta bool
	alpha, beta         float32
}{
	"relu":            {},
	"tanh":            {},
	"sigmoid":         {},
	"softsign":        {},
	"softplus":        {},
	"affine":          {true, true, 1, 0},
	"leakyrelu":       {true, false, 0.01, 0},
	"thresholdedrelu": {true, false, 1, 0},
	"scaledtanh":      {true, true, 1, 1},
	"hardsigmoid":     {true, true, 0.2, 0.5},
	"elu":             {true, false, 1, 0},
}

// makeRNNAct returns the activation called name with alpha and beta.
func makeRNNAct(name string, alpha, beta float64) rnnAct {
	switch name {
	case "relu":
		return ops.ReLU
	case "tanh":
		return ops.Tanh
	case "sigmoid":
		return ops.Sigmoid
	case "softsign":
		return func(x *tensor.Tensor) *tensor.Tensor { return ops.Div(x, ops.AddScalar(ops.Abs(x), 1)) }
	case "softplus":
		return ops.Softplus
	case "affine":
		return func(x *tensor.Tensor) *tensor.Tensor { return ops.AddScalar(ops.MulScalar(x, alpha), beta) }
	case "leakyrelu":
		return func(x *tensor.Tensor) *tensor.Tensor {
			return ops.Select(ops.Less(x, ops.ScalarLike(x, 0)), ops.MulScalar(x, alpha), x)
		}
	case "thresholdedrelu":
		return func(x *tensor.Tensor) *tensor.Tensor {
			return ops.Select(ops.Greater(x, ops.ScalarLike(x, alpha)), x, ops.ScalarLike(x, 0))
		}
	case "scaledtanh":
		return func(x *tensor.Tensor) *tensor.Tensor { return ops.MulScalar(ops.Tanh(ops.MulScalar(x, beta)), alpha) }
	case "hardsigmoid":
		return func(x *tensor.Tensor) *tensor.Tensor {
			return ops.Clip(ops.AddScalar(ops.MulScalar(x, alpha), beta), 0, 1)
		}
	case "elu":
		return func(x *tensor.Tensor) *tensor.Tensor {
			neg := ops.MulScalar(ops.SubScalar(ops.Exp(x), 1), alpha)
			return ops.Select(ops.Less(x, ops.ScalarLike(x, 0)), neg, x)
		}
	}
	return nil
}

// rnnActivations reads the activations, activation_alpha and
// activation_beta attributes into per direction lists of n activations.
// As in ONNX Runtime, the alphas and betas are consumed in order by the
// activations that take them, and an activation for which none is left
// gets its operator's default. A bidirectional node that lists only one
// direction's activations uses them for both.
func (c *nodeCtx) rnnActivations(k rnnKindONNX, dirs int) ([][]rnnAct, error) {
	n := len(k.defaultActs())
	var names []string
	if c.Has("activations") {
		for _, s := range c.attr("activations").GetStrings() {
			names = append(names, string(s))
		}
	} else {
		for range dirs {
			names = append(names, k.defaultActs()...)
		}
	}
	if len(names) == n && dirs == 2 {
		names = append(names, names...)
	}
	if len(names) != n*dirs {
		return nil, c.Errorf("attribute activations lists %d activations %v, want %d (%d per direction, %d direction(s))", len(names), names, n*dirs, n, dirs)
	}
	alphas, betas := c.FloatsAttr("activation_alpha", nil), c.FloatsAttr("activation_beta", nil)
	out := make([][]rnnAct, dirs)
	for i, name := range names {
		key := strings.ToLower(name)
		d, ok := rnnActDefaults[key]
		if !ok {
			return nil, c.Errorf("activation %q is not supported (want one of Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus)", name)
		}
		alpha, beta := d.alpha, d.beta
		if d.usesAlpha && len(alphas) > 0 {
			alpha, alphas = alphas[0], alphas[1:]
		}
		if d.usesBeta && len(betas) > 0 {
			beta, betas = betas[0], betas[1:]
		}
		out[i/n] = append(out[i/n], makeRNNAct(key, float64(alpha), float64(beta)))
	}
	return out, nil
}

// rnnSpec is what the three ops share once their inputs and attributes
// are read: X time-major [T, B, I], the weights, the optional inputs, and
// the settings.
type rnnSpec struct {
	kind          rnnKindONNX
	x, w, r, b    *tensor.Tensor
	h0, c0, p     *tensor.Tensor // [D, B, H], or nil
	lens          *tensor.Tensor // [B] int64, or nil
	T, B, I, H, D int
	reverse       []bool // per direction
	acts          [][]rnnAct
	clip          float64 // 0: no clip
	lbr           bool    // GRU's linear_before_reset
	inputForget   bool    // LSTM's input_forget
	layout        int64
}

func rnnOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return runRecurrent(c, ins, onnxRNN)
}

func gruOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return runRecurrent(c, ins, onnxGRU)
}

func lstmOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return runRecurrent(c, ins, onnxLSTM)
}

// readRNN checks the node's inputs and attributes.
func (c *nodeCtx) readRNN(ins []*tensor.Tensor, k rnnKindONNX) (*rnnSpec, error) {
	req, err := c.needs(ins, "X", "W", "R")
	if err != nil {
		return nil, err
	}
	s := &rnnSpec{kind: k, x: req[0], w: req[1], r: req[2], b: c.In(ins, 3), h0: c.In(ins, 5)}
	if k == onnxLSTM {
		s.c0, s.p = c.In(ins, 6), c.In(ins, 7)
	} else if c.In(ins, 6) != nil || c.In(ins, 7) != nil {
		return nil, c.Errorf("has %d inputs; %s takes at most 6", len(ins), c.Node.GetOpType())
	}
	dt := s.x.DType()
	if !isFloat(dt) {
		return nil, c.Errorf("input X has dtype %v, want float32 or float64", dt)
	}
	for _, in := range []struct {
		name string
		t    *tensor.Tensor
	}{{"W", s.w}, {"R", s.r}, {"B", s.b}, {"initial_h", s.h0}, {"initial_c", s.c0}, {"P", s.p}} {
		if in.t != nil && in.t.DType() != dt {
			return nil, c.Errorf("input %s has dtype %v, but X is %v", in.name, in.t.DType(), dt)
		}
	}
	s.layout = c.Int("layout", 0)
	if s.layout != 0 && s.layout != 1 {
		return nil, c.Errorf("attribute layout %d is not 0 or 1", s.layout)
	}
	if s.x.Rank() != 3 {
		return nil, c.Errorf("input X has shape %v, want rank 3", s.x.Shape())
	}
	if s.layout == 1 {
		s.x = ops.Transpose(s.x, 1, 0, 2)
	}
	s.T, s.B, s.I = s.x.Dim(0), s.x.Dim(1), s.x.Dim(2)
	if s.T == 0 || s.B == 0 {
		return nil, c.Errorf("input X has shape %v: an empty sequence or batch", req[0].Shape())
	}
	switch dir := c.String("direction", "forward"); dir {
	case "forward":
		s.reverse = []bool{false}
	case "reverse":
		s.reverse = []bool{true}
	case "bidirectional":
		s.reverse = []bool{false, true}
	default:
		return nil, c.Errorf("attribute direction %q is not forward, reverse or bidirectional", dir)
	}
	s.D = len(s.reverse)
	if s.r.Rank() != 3 {
		return nil, c.Errorf("input R has shape %v, want [num_directions, %d·hidden_size, hidden_size]", s.r.Shape(), k.gates())
	}
	s.H = s.r.Dim(2)
	if c.Has("hidden_size") && c.Int("hidden_size", 0) != int64(s.H) {
		return nil, c.Errorf("attribute hidden_size %d does not match R's shape %v", c.Int("hidden_size", 0), s.r.Shape())
	}
	G := k.gates()
	want := func(name string, t *tensor.Tensor, shape ...int) error {
		if t != nil && !t.Shape().Equal(tensor.Shape(shape)) {
			return c.Errorf("input %s has shape %v, want %v", name, t.Shape(), tensor.Shape(shape))
		}
		return nil
	}
	checks := []error{
		want("W", s.w, s.D, G*s.H, s.I),
		want("R", s.r, s.D, G*s.H, s.H),
		want("B", s.b, s.D, 2*G*s.H),
		want("P", s.p, s.D, 3*s.H),
	}
	for i, st := range []*tensor.Tensor{s.h0, s.c0} {
		name := [...]string{"initial_h", "initial_c"}[i]
		if st == nil {
			continue
		}
		if s.layout == 1 {
			checks = append(checks, want(name, st, s.B, s.D, s.H))
		} else {
			checks = append(checks, want(name, st, s.D, s.B, s.H))
		}
	}
	for _, e := range checks {
		if e != nil {
			return nil, e
		}
	}
	if s.layout == 1 {
		if s.h0 != nil {
			s.h0 = ops.Transpose(s.h0, 1, 0, 2)
		}
		if s.c0 != nil {
			s.c0 = ops.Transpose(s.c0, 1, 0, 2)
		}
	}
	if s.acts, err = c.rnnActivations(k, s.D); err != nil {
		return nil, err
	}
	if c.Has("clip") {
		s.clip = float64(c.Float("clip", 0))
		if !(s.clip > 0) {
			return nil, c.Errorf("attribute clip %v is not positive", s.clip)
		}
	}
	s.lbr = k == onnxGRU && c.Int("linear_before_reset", 0) != 0
	s.inputForget = k == onnxLSTM && c.Int("input_forget", 0) != 0
	if lens := c.In(ins, 4); lens != nil {
		if err := s.readLens(c, lens); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// readLens checks sequence_lens. Values known when the node runs (from
// constants and shapes) must lie in [0, T], or the node fails; values
// computed from the model's inputs are clamped to that range in both
// modes, because a compiled plan learns them only when it runs, and an
// index out of range must not reach the gather.
func (s *rnnSpec) readLens(c *nodeCtx, lens *tensor.Tensor) error {
	if lens.DType() != tensor.Int32 && lens.DType() != tensor.Int64 {
		return c.Errorf("input sequence_lens has dtype %v, want int32", lens.DType())
	}
	if !lens.Shape().Equal(tensor.Shape{s.B}) {
		return c.Errorf("input sequence_lens has shape %v, want [%d] (the batch)", lens.Shape(), s.B)
	}
	orig := lens
	if lens.DType() != tensor.Int64 {
		lens = ops.Cast(lens, tensor.Int64)
	}
	if !c.dynamic(orig) {
		for i, v := range lens.Int64s() {
			if v < 0 || v > int64(s.T) {
				return c.Errorf("sequence_lens[%d] = %d is outside [0, %d], the sequence length of X", i, v, s.T)
			}
		}
	} else {
		lens = ops.Clip(lens, 0, float64(s.T))
	}
	s.lens = lens
	return nil
}

// runRecurrent runs every direction and assembles Y, Y_h and Y_c.
func runRecurrent(c *nodeCtx, ins []*tensor.Tensor, k rnnKindONNX) ([]*tensor.Tensor, error) {
	s, err := c.readRNN(ins, k)
	if err != nil {
		return nil, err
	}
	var mask, perm *tensor.Tensor // [T, B, 1] float and [T, B] int64
	if s.lens != nil {
		t := tensor.FromSlice(rnnIota(s.T), s.T, 1)
		lens := ops.Reshape(s.lens, 1, s.B)
		valid := ops.Less(t, lens)
		mask = ops.Reshape(ops.Cast(valid, s.x.DType()), s.T, s.B, 1)
		// Step t of a sequence of length L reads step L−1−t when t < L and
		// stays where it is in the padding.
		perm = ops.Select(valid, ops.Sub(ops.SubScalar(lens, 1), t), ops.BroadcastTo(t, s.T, s.B))
	}
	G, H := k.gates(), s.H
	ys := make([]*tensor.Tensor, s.D)
	hs := make([]*tensor.Tensor, s.D)
	cs := make([]*tensor.Tensor, s.D)
	for d := range s.D {
		w := rnnPick(s.w, d)
		r := rnnPick(s.r, d)
		gi := ops.MatMulT(ops.Reshape(s.x, s.T*s.B, s.I), w, false, true)
		var wb, rb *tensor.Tensor
		if s.b != nil {
			bb := rnnPick(s.b, d)
			wb = ops.Slice(bb, []int{0}, []int{G * H})
			rb = ops.Slice(bb, []int{G * H}, []int{G * H})
		}
		// Biases that add straight to a gate join the projection outside
		// the loop; only GRU's Rbh under linear_before_reset, which r
		// multiplies, stays in the body.
		var bodyBias *tensor.Tensor
		if wb != nil {
			bias := ops.Add(wb, rb)
			if s.lbr {
				zr := ops.Slice(rb, []int{0}, []int{2 * H})
				bias = ops.Add(wb, ops.Concat(0, zr, ops.ZerosLike(ops.Slice(rb, []int{2 * H}, []int{H}))))
				bodyBias = ops.Slice(rb, []int{2 * H}, []int{H})
			}
			gi = ops.Add(gi, bias)
		}
		gi = ops.Reshape(gi, s.T, s.B, G*H)
		rev := s.reverse[d]
		if rev {
			gi = s.permute(gi, perm)
		}
		h0 := rnnZerosOr(s.h0, d, s.B, H, s.x.DType())
		init := []*tensor.Tensor{h0}
		if k == onnxLSTM {
			init = append(init, rnnZerosOr(s.c0, d, s.B, H, s.x.DType()))
		}
		xs := []*tensor.Tensor{gi}
		if mask != nil {
			xs = append(xs, mask)
		}
		var peep [3]*tensor.Tensor
		if s.p != nil {
			peep = [3]*tensor.Tensor(ops.SplitN(rnnPick(s.p, d), 0, 3))
		}
		step := s.stepFunc(d, r, bodyBias, peep)
		carry, out := control.Scan(func(carry, x []*tensor.Tensor) ([]*tensor.Tensor, []*tensor.Tensor) {
			next := step(carry, x[0])
			if len(x) == 1 {
				return next, next[:1]
			}
			// Past a sequence's end the state holds and Y is zero.
			m := x[1]
			for i := range next {
				next[i] = ops.Add(carry[i], ops.Mul(m, ops.Sub(next[i], carry[i])))
			}
			return next, []*tensor.Tensor{ops.Mul(m, next[0])}
		}, init, xs)
		y := out[0]
		if rev {
			y = s.permute(y, perm)
		}
		ys[d], hs[d] = y, carry[0]
		if k == onnxLSTM {
			cs[d] = carry[1]
		}
	}
	outs := make([]*tensor.Tensor, 2, 3)
	if c.wantOutput(0) {
		var y *tensor.Tensor // [T, D, B, H]
		if s.D == 1 {
			y = ops.Reshape(ys[0], s.T, 1, s.B, H) // no copy
		} else {
			y = ops.Stack(1, ys...)
		}
		if s.layout == 1 {
			y = ops.Transpose(y, 2, 0, 1, 3)
		}
		outs[0] = y
	}
	state := func(st []*tensor.Tensor) *tensor.Tensor {
		if s.layout == 1 {
			return ops.Stack(1, st...)
		}
		return ops.Stack(0, st...)
	}
	if c.wantOutput(1) {
		outs[1] = state(hs)
	}
	if k == onnxLSTM && c.wantOutput(2) {
		outs = append(outs, state(cs))
	}
	return outs, nil
}

// stepFunc returns one time step of direction d: from the carries (h, or
// h and c) and the step's input projection gi [B, G·H], the new carries.
func (s *rnnSpec) stepFunc(d int, r, bodyBias *tensor.Tensor, peep [3]*tensor.Tensor) func(carry []*tensor.Tensor, gi *tensor.Tensor) []*tensor.Tensor {
	acts, H := s.acts[d], s.H
	clip := func(x *tensor.Tensor) *tensor.Tensor {
		if s.clip > 0 {
			return ops.Clip(x, -s.clip, s.clip)
		}
		return x
	}
	switch s.kind {
	case onnxLSTM:
		f, g, h := acts[0], acts[1], acts[2]
		return func(carry []*tensor.Tensor, gi *tensor.Tensor) []*tensor.Tensor {
			hp, cp := carry[0], carry[1]
			a := ops.SplitN(ops.Add(gi, ops.MatMulT(hp, r, false, true)), 1, 4) // i, o, f, c
			ai, ao, af, ac := a[0], a[1], a[2], a[3]
			if peep[0] != nil {
				ai = ops.Add(ai, ops.Mul(peep[0], cp))
				af = ops.Add(af, ops.Mul(peep[2], cp))
			}
			it := f(clip(ai))
			var ft *tensor.Tensor
			if s.inputForget {
				ft = ops.Sub(ops.OnesLike(it), it)
			} else {
				ft = f(clip(af))
			}
			ct := ops.Add(ops.Mul(ft, cp), ops.Mul(it, g(clip(ac))))
			if peep[1] != nil {
				ao = ops.Add(ao, ops.Mul(peep[1], ct))
			}
			return []*tensor.Tensor{ops.Mul(f(clip(ao)), h(ct)), ct}
		}
	case onnxGRU:
		f, g := acts[0], acts[1]
		rzr := ops.Slice(r, []int{0, 0}, []int{2 * H, H})
		rh := ops.Slice(r, []int{2 * H, 0}, []int{H, H})
		return func(carry []*tensor.Tensor, gi *tensor.Tensor) []*tensor.Tensor {
			hp := carry[0]
			in := ops.SplitN(gi, 1, 3) // z, r, h
			zr := ops.SplitN(ops.MatMulT(hp, rzr, false, true), 1, 2)
			z := f(clip(ops.Add(in[0], zr[0])))
			rt := f(clip(ops.Add(in[1], zr[1])))
			var pre *tensor.Tensor
			if s.lbr {
				hr := ops.MatMulT(hp, rh, false, true)
				if bodyBias != nil {
					hr = ops.Add(hr, bodyBias)
				}
				pre = ops.Add(in[2], ops.Mul(rt, hr))
			} else {
				pre = ops.Add(in[2], ops.MatMulT(ops.Mul(rt, hp), rh, false, true))
			}
			ht := g(clip(pre))
			// (1 − z)⊙h̃ + z⊙h written as h̃ + z⊙(h − h̃).
			return []*tensor.Tensor{ops.Add(ht, ops.Mul(z, ops.Sub(hp, ht)))}
		}
	}
	f := acts[0]
	return func(carry []*tensor.Tensor, gi *tensor.Tensor) []*tensor.Tensor {
		return []*tensor.Tensor{f(clip(ops.Add(gi, ops.MatMulT(carry[0], r, false, true))))}
	}
}

// permute reorders x [T, B, F] along time by perm [T, B] (nil: reverse
// the whole time axis): each batch entry's steps are reversed within its
// own length. The permutation is its own inverse, so it maps Y back too.
func (s *rnnSpec) permute(x, perm *tensor.Tensor) *tensor.Tensor {
	if perm == nil {
		return ops.StridedSlice(x, []int{math.MaxInt}, []int{math.MinInt}, []int{-1})
	}
	idx := ops.BroadcastTo(ops.Reshape(perm, s.T, s.B, 1), s.T, s.B, x.Dim(2))
	return ops.TakeAlongAxis(x, idx, 0)
}

// rnnPick returns direction d of a tensor whose leading axis is the
// direction, without that axis.
func rnnPick(x *tensor.Tensor, d int) *tensor.Tensor {
	if x.Dim(0) == 1 {
		return ops.Reshape(x, x.Shape()[1:]...) // no copy
	}
	begin := make([]int, x.Rank())
	size := append([]int(nil), x.Shape()...)
	begin[0], size[0] = d, 1
	return ops.Squeeze(ops.Slice(x, begin, size), 0)
}

// rnnZerosOr returns direction d of the initial state st [D, B, H], or zeros
// when the node has none.
func rnnZerosOr(st *tensor.Tensor, d, b, h int, dt tensor.DType) *tensor.Tensor {
	if st == nil {
		return tensor.Zeros(dt, b, h)
	}
	return rnnPick(st, d)
}

// rnnIota returns 0, 1, …, n−1.
func rnnIota(n int) []int64 {
	v := make([]int64, n)
	for i := range v {
		v[i] = int64(i)
	}
	return v
}
