package onnx

import (
	"math"

	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Signal processing: DFT and STFT, the window functions (Hann, Hamming,
// Blackman) and MelWeightMatrix.
//
// DFT and STFT are matrix products with a constant twiddle matrix
// (cos and sin of 2πkn/L, built in float64 for the transform's length L),
// an O(L²) transform rather than an FFT: exact enough and fast for the
// short frames of spectrograms and the backend suite's sizes, and built
// of spore's MatMul, so it traces in Graph mode and is differentiable
// with respect to the signal (and STFT's window). A transform's length,
// frame step and frame length, and the sizes of windows and mel
// matrices, are read as values (c.Concrete): the output's shape depends
// on them. Windows and mel matrices are then constants.

func init() {
	register("DFT", 17, 0, dftOp)
	register("STFT", 17, 0, stftOp)
	register("HannWindow", 17, 0, windowOp([]float64{0.5, 0.5}))
	register("HammingWindow", 17, 0, windowOp([]float64{25.0 / 46, 21.0 / 46}))
	register("BlackmanWindow", 17, 0, windowOp([]float64{0.42, 0.5, 0.08}))
	register("MelWeightMatrix", 17, 0, melWeightMatrixOp)
}

// outputDType reads the output_datatype attribute (default float32).
func (c *nodeCtx) outputDType() (tensor.DType, error) {
	dt, err := dtypeOf(int32(c.Int("output_datatype", 1)))
	if err != nil {
		return tensor.Invalid, c.Errorf("attribute output_datatype: %v", err)
	}
	if dt == tensor.Bool {
		return tensor.Invalid, c.Errorf("attribute output_datatype: bool is not a numeric type")
	}
	return dt, nil
}

// scalarInt reads a one-element integer input as an int (a window's
// size, a frame step), which must be known when the node runs.
func (c *nodeCtx) scalarInt(t *tensor.Tensor, what string) (int, error) {
	if t == nil {
		return 0, c.Errorf("input %s is missing", what)
	}
	if _, err := c.Concrete(t, what); err != nil {
		return 0, err
	}
	if t.Size() != 1 {
		return 0, c.Errorf("input %s must hold one value, got shape %v", what, t.Shape())
	}
	v, err := c.intsInput(t, what)
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

// windowOp is a generalised cosine window: w[n] = Σ_k (−1)^k a_k ·
// cos(2πkn/D), with D = size when the attribute periodic is 1 (the
// default) and size − 1 otherwise. A symmetric window of size 1 divides by
// zero and is NaN, as ONNX's function definition of these ops computes.
func windowOp(a []float64) opFunc {
	return func(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
		n, err := c.scalarInt(c.In(ins, 0), "size")
		if err != nil {
			return nil, err
		}
		if err := c.checkMade([]int{n}, "window"); err != nil {
			return nil, err
		}
		dt, err := c.outputDType()
		if err != nil {
			return nil, err
		}
		d := float64(n)
		if c.Int("periodic", 1) == 0 {
			d--
		}
		w := make([]float64, n)
		for i := range w {
			sign := 1.0
			for k, ak := range a {
				w[i] += sign * ak * math.Cos(2*math.Pi*float64(k)*float64(i)/d)
				sign = -sign
			}
		}
		return one(castConst(tensor.FromSlice(w, n), dt))
	}
}

// castConst casts a concrete float64 constant to dt.
func castConst(t *tensor.Tensor, dt tensor.DType) *tensor.Tensor {
	if dt == tensor.Float64 {
		return t
	}
	return ops.Cast(t, dt)
}

// melWeightMatrixOp is MelWeightMatrix: [dft_length/2 + 1, num_mel_bins]
// triangular filters with peaks of 1, evenly spaced on the mel scale
// (mel(f) = 2595·log10(1 + f/700)) between lower_edge_hertz and
// upper_edge_hertz, each edge rounded down to a DFT bin; the arithmetic
// is ONNX Runtime's, in float64.
func melWeightMatrixOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	bins, err := c.scalarInt(c.In(ins, 0), "num_mel_bins")
	if err != nil {
		return nil, err
	}
	dftLen, err := c.scalarInt(c.In(ins, 1), "dft_length")
	if err != nil {
		return nil, err
	}
	rate, err := c.scalarInt(c.In(ins, 2), "sample_rate")
	if err != nil {
		return nil, err
	}
	var edges [2]float64
	for i, what := range []string{"lower_edge_hertz", "upper_edge_hertz"} {
		t := c.In(ins, 3+i)
		if t == nil {
			return nil, c.Errorf("input %s is missing", what)
		}
		if edges[i], err = c.scalarValue(t, what); err != nil {
			return nil, err
		}
	}
	if bins <= 0 || dftLen <= 0 || rate <= 0 {
		return nil, c.Errorf("num_mel_bins %d, dft_length %d and sample_rate %d must be positive", bins, dftLen, rate)
	}
	if !(edges[0] >= 0 && edges[0] < edges[1]) {
		return nil, c.Errorf("lower_edge_hertz %v and upper_edge_hertz %v: want 0 <= lower < upper", edges[0], edges[1])
	}
	dt, err := c.outputDType()
	if err != nil {
		return nil, err
	}
	specBins := dftLen/2 + 1
	if err := c.checkMade([]int{specBins, bins}, "output"); err != nil {
		return nil, err
	}
	toMel := func(hz float64) float64 { return 2595 * math.Log10(1+hz/700) }
	lo, hi := toMel(edges[0]), toMel(edges[1])
	points := bins + 2
	step := (hi - lo) / float64(points)
	idx := make([]int, points)
	for i := range idx {
		hz := 700 * (math.Pow(10, (lo+step*float64(i))/2595) - 1)
		idx[i] = int(math.Floor(float64(dftLen+1) * hz / float64(rate)))
		if idx[i] < 0 || idx[i] >= specBins {
			return nil, c.Errorf("upper_edge_hertz %v lies beyond the DFT's bins (sample_rate %d, dft_length %d): the filters would reach bin %d of %d", edges[1], rate, dftLen, idx[i], specBins)
		}
	}
	out := make([]float64, specBins*bins)
	for i := 0; i < bins; i++ {
		l, m, r := idx[i], idx[i+1], idx[i+2]
		if m == l {
			out[m*bins+i] = 1
		} else {
			for j := l; j <= m; j++ {
				out[j*bins+i] = float64(j-l) / float64(m-l)
			}
		}
		for j := m; j < r; j++ {
			out[j*bins+i] = float64(r-j) / float64(r-m)
		}
	}
	return one(castConst(tensor.FromSlice(out, specBins, bins), dt))
}

// twiddles returns the float64 matrices cos(2πnk/L) and sin(2πnk/L) of
// shape [n, k] for n < rows, k < cols, in dtype dt; nk is reduced modulo
// L first, so that the angles stay exact for long transforms.
func twiddles(l, rows, cols int, dt tensor.DType) (cos, sin *tensor.Tensor) {
	cv, sv := make([]float64, rows*cols), make([]float64, rows*cols)
	for n := 0; n < rows; n++ {
		for k := 0; k < cols; k++ {
			a := 2 * math.Pi * float64((n*k)%l) / float64(l)
			cv[n*cols+k], sv[n*cols+k] = math.Cos(a), math.Sin(a)
		}
	}
	return castConst(tensor.FromSlice(cv, rows, cols), dt), castConst(tensor.FromSlice(sv, rows, cols), dt)
}

// transform applies the DFT of length l along the last axis of the real
// and imaginary parts re and im (im nil: a real signal) of extent l,
// keeping k ≤ l output bins; inverse conjugates the exponent and scales
// by 1/l. It returns the output's real and imaginary parts.
func transform(re, im *tensor.Tensor, l, k int, inverse bool) (yr, yi *tensor.Tensor) {
	cos, sin := twiddles(l, l, k, re.DType())
	// Forward: X = Σ x·e^{−iθ}: Re = xr·cos + xi·sin, Im = xi·cos − xr·sin.
	// Inverse: e^{+iθ}: Re = xr·cos − xi·sin, Im = xi·cos + xr·sin.
	yr, yi = ops.MatMul(re, cos), ops.MatMul(re, sin)
	if !inverse {
		yi = ops.Neg(yi)
	}
	if im != nil {
		ic, is := ops.MatMul(im, cos), ops.MatMul(im, sin)
		if inverse {
			yr, yi = ops.Sub(yr, is), ops.Add(yi, ic)
		} else {
			yr, yi = ops.Add(yr, is), ops.Add(yi, ic)
		}
	}
	if inverse {
		yr, yi = ops.DivScalar(yr, float64(l)), ops.DivScalar(yi, float64(l))
	}
	return yr, yi
}

// complexParts splits a signal whose last axis holds 1 (real) or 2 (real,
// imaginary) components; im is nil for a real signal.
func (c *nodeCtx) complexParts(x *tensor.Tensor, what string) (re, im *tensor.Tensor, err error) {
	if !isFloat(x.DType()) {
		return nil, nil, c.Errorf("%s has dtype %v; want float32 or float64", what, x.DType())
	}
	if x.Rank() < 2 {
		return nil, nil, c.Errorf("%s has shape %v; want [batch, ..., 1 or 2]", what, x.Shape())
	}
	last := x.Rank() - 1
	switch x.Dim(last) {
	case 1:
		return ops.Squeeze(x, last), nil, nil
	case 2:
		parts := ops.Unstack(x, last)
		return parts[0], parts[1], nil
	}
	return nil, nil, c.Errorf("%s has shape %v; its last extent must be 1 (real) or 2 (complex)", what, x.Shape())
}

// dftOp is DFT: the discrete Fourier transform of the signal along one
// axis, as a matrix product (see the file's comment). The axis is an
// attribute (default 1) to opset 19 and an optional input (default −2)
// from 20; dft_length pads the signal with zeros or truncates it.
func dftOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "input")
	if err != nil {
		return nil, err
	}
	re, im, err := c.complexParts(x, "input")
	if err != nil {
		return nil, err
	}
	r := x.Rank()
	a := c.Int("axis", 1)
	if c.Opset >= 20 {
		a = -2
		if t := c.In(ins, 2); t != nil {
			v, err := c.scalarInt(t, "axis")
			if err != nil {
				return nil, err
			}
			a = int64(v)
		}
	}
	// The component axis is not a signal axis: accepted axes are
	// [−r, −2] and [0, r−2].
	if a < int64(-r) || a > int64(r-2) || a == -1 {
		return nil, c.Errorf("axis %d is out of range for an input of rank %d (the last axis holds the components)", a, r)
	}
	axis := int(a)
	if axis < 0 {
		axis += r
	}
	n := re.Dim(axis)
	l := n
	if t := c.In(ins, 1); t != nil {
		if l, err = c.scalarInt(t, "dft_length"); err != nil {
			return nil, err
		}
		if l <= 0 {
			return nil, c.Errorf("dft_length %d must be positive", l)
		}
	}
	onesided, inverse := c.Int("onesided", 0) != 0, c.Int("inverse", 0) != 0
	if onesided && (inverse || im != nil) {
		return nil, c.Errorf("onesided output is defined for the forward transform of a real signal only")
	}
	k := l
	if onesided {
		k = l/2 + 1
	}
	shape := append([]int(nil), x.Shape()...)
	shape[axis] = max(l, k)
	if err := c.checkMade([]int{l, k}, "twiddle matrix"); err != nil {
		return nil, err
	}
	if err := c.checkMade(shape, "output"); err != nil {
		return nil, err
	}
	prep := func(p *tensor.Tensor) *tensor.Tensor {
		if p == nil {
			return nil
		}
		p = ops.MoveAxis(p, axis, -1)
		if l < n {
			begin := make([]int, p.Rank())
			size := append([]int(nil), p.Shape()...)
			size[len(size)-1] = l
			p = ops.Slice(p, begin, size)
		} else if l > n {
			pads := make([][2]int, p.Rank())
			pads[len(pads)-1][1] = l - n
			p = ops.Pad(p, pads)
		}
		return p
	}
	yr, yi := transform(prep(re), prep(im), l, k, inverse)
	yr, yi = ops.MoveAxis(yr, -1, axis), ops.MoveAxis(yi, -1, axis)
	return one(ops.Stack(-1, yr, yi))
}

// stftOp is STFT: frames of frame_length samples every frame_step
// samples, each multiplied by the window when there is one, and the DFT
// of each (onesided, the default, keeps frame_length/2 + 1 bins of a real
// signal). The output is [batch, frames, bins, 2].
func stftOp(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := c.need(ins, 0, "signal")
	if err != nil {
		return nil, err
	}
	if x.Rank() != 3 {
		return nil, c.Errorf("signal has shape %v; want [batch, signal_length, 1 or 2]", x.Shape())
	}
	re, im, err := c.complexParts(x, "signal")
	if err != nil {
		return nil, err
	}
	step, err := c.scalarInt(c.In(ins, 1), "frame_step")
	if err != nil {
		return nil, err
	}
	window := c.In(ins, 2)
	length := -1
	if window != nil {
		if window.Rank() != 1 {
			return nil, c.Errorf("window has shape %v; want a vector", window.Shape())
		}
		if window.DType() != x.DType() {
			return nil, c.Errorf("window has dtype %v, signal %v; ONNX wants one", window.DType(), x.DType())
		}
		length = window.Dim(0)
	}
	if t := c.In(ins, 3); t != nil {
		fl, err := c.scalarInt(t, "frame_length")
		if err != nil {
			return nil, err
		}
		if length >= 0 && fl != length {
			return nil, c.Errorf("frame_length %d differs from the window's length %d", fl, length)
		}
		length = fl
	}
	if length < 0 {
		return nil, c.Errorf("needs a window or a frame_length")
	}
	sigLen := re.Dim(1)
	if step <= 0 || length <= 0 || length > sigLen {
		return nil, c.Errorf("frame_step %d and frame_length %d must be positive, the frame no longer than the signal (%d)", step, length, sigLen)
	}
	onesided := c.Int("onesided", 1) != 0
	if onesided && im != nil {
		return nil, c.Errorf("onesided output is defined for a real signal only")
	}
	frames := (sigLen-length)/step + 1
	k := length
	if onesided {
		k = length/2 + 1
	}
	if err := c.checkMade([]int{re.Dim(0), frames, max(k, length), 2}, "output"); err != nil {
		return nil, err
	}
	idx := make([]int64, frames*length)
	for f := 0; f < frames; f++ {
		for j := 0; j < length; j++ {
			idx[f*length+j] = int64(f*step + j)
		}
	}
	at := tensor.FromSlice(idx, frames, length)
	frame := func(p *tensor.Tensor) *tensor.Tensor {
		if p == nil {
			return nil
		}
		p = ops.Gather(p, at, 1) // [batch, frames, length]
		if window != nil {
			p = ops.Mul(p, window)
		}
		return p
	}
	yr, yi := transform(frame(re), frame(im), length, k, false)
	return one(ops.Stack(-1, yr, yi))
}
