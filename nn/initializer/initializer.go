package initializer

import (
	"fmt"
	"math"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// Initializer fills a new tensor of a given type and shape. The random
// ones draw from the framework's random source (spore.SetSeed), so a
// seeded program builds the same weights every run.
type Initializer interface {
	// New returns a tensor of dtype dt and the given shape.
	New(dt tensor.DType, shape ...int) *tensor.Tensor
	// String names the initialiser and its settings.
	String() string
}

// Mode chooses the fan that He initialisers scale by.
type Mode string

// The fan modes.
const (
	FanIn  Mode = "fan_in"  // preserve the forward pass's variance (default)
	FanOut Mode = "fan_out" // preserve the backward pass's variance
)

// Fans returns the fan-in and fan-out of a weight of the given shape, as
// MindSpore (and PyTorch) compute them: for a Dense weight [out, in] they
// are in and out; for a convolution weight [out, in/groups, k...] each is
// multiplied by the receptive field size Π k. Shapes of fewer than two
// axes have no fans and panic.
func Fans(shape []int) (fanIn, fanOut int) {
	if len(shape) < 2 {
		core.Panicf("initializer.Fans", "fan-in and fan-out need a shape of at least 2 axes, got %v", tensor.Shape(shape))
	}
	rf := 1
	for _, d := range shape[2:] {
		rf *= d
	}
	return shape[1] * rf, shape[0] * rf
}

// Gain returns the recommended gain of a nonlinearity (MindSpore's and
// PyTorch's calculate_gain): 1 for linear, conv and sigmoid, 5/3 for tanh,
// √2 for relu, √(2/(1+a²)) for leaky_relu with negative slope a, 3/4 for
// selu.
func Gain(nonlinearity string, a float64) float64 {
	switch nonlinearity {
	case "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "sigmoid":
		return 1
	case "tanh":
		return 5.0 / 3
	case "relu":
		return math.Sqrt2
	case "leaky_relu":
		return math.Sqrt(2 / (1 + a*a))
	case "selu":
		return 0.75
	}
	core.Panicf("initializer.Gain", "unknown nonlinearity %q", nonlinearity)
	return 0
}

type constant struct {
	v    float64
	name string
}

func (c constant) New(dt tensor.DType, shape ...int) *tensor.Tensor {
	return tensor.Full(dt, c.v, shape...)
}
func (c constant) String() string { return c.name }

// Zero fills with zeros.
func Zero() Initializer { return constant{0, "Zero"} }

// One fills with ones.
func One() Initializer { return constant{1, "One"} }

// Constant fills with v.
func Constant(v float64) Initializer { return constant{v, fmt.Sprintf("Constant(%v)", v)} }

type normal struct{ sigma, mean float64 }

func (n normal) New(dt tensor.DType, shape ...int) *tensor.Tensor {
	return tensor.RandNormal(dt, n.mean, n.sigma, shape...)
}
func (n normal) String() string { return fmt.Sprintf("Normal(sigma=%v, mean=%v)", n.sigma, n.mean) }

// Normal draws from N(mean, sigma²); MindSpore's default is sigma 0.01,
// mean 0.
func Normal(sigma, mean float64) Initializer { return normal{sigma, mean} }

type uniform struct{ scale float64 }

func (u uniform) New(dt tensor.DType, shape ...int) *tensor.Tensor {
	return tensor.RandUniform(dt, -u.scale, u.scale, shape...)
}
func (u uniform) String() string { return fmt.Sprintf("Uniform(scale=%v)", u.scale) }

// Uniform draws from U(−scale, scale); MindSpore's default scale is 0.07.
func Uniform(scale float64) Initializer { return uniform{scale} }

type truncNormal struct{ sigma, mean, a, b float64 }

func (t truncNormal) New(dt tensor.DType, shape ...int) *tensor.Tensor {
	n := tensor.Shape(shape).Size()
	out := make([]float64, 0, n)
	// Rejection sampling in batches: each round draws as many values as
	// are still missing and keeps those inside [a, b]. All draws come from
	// the framework source, so the result is reproducible.
	for len(out) < n {
		for _, v := range tensor.RandNormal(tensor.Float64, t.mean, t.sigma, n-len(out)).Float64s() {
			if v >= t.a && v <= t.b {
				out = append(out, v)
			}
		}
	}
	return castTo(tensor.FromSlice(out, shape...), dt)
}

func (t truncNormal) String() string {
	return fmt.Sprintf("TruncatedNormal(sigma=%v, mean=%v, a=%v, b=%v)", t.sigma, t.mean, t.a, t.b)
}

// TruncatedNormal draws from N(0, sigma²) restricted to [−2, 2] (absolute
// bounds, as MindSpore's and PyTorch's defaults); MindSpore's default
// sigma is 0.01.
func TruncatedNormal(sigma float64) Initializer { return truncNormal{sigma, 0, -2, 2} }

// TruncatedNormalRange draws from N(mean, sigma²) restricted to [a, b].
func TruncatedNormalRange(sigma, mean, a, b float64) Initializer {
	if !(a < b) || !(sigma > 0) {
		core.Panicf("initializer.TruncatedNormal", "need sigma > 0 and a < b, got sigma=%v a=%v b=%v", sigma, a, b)
	}
	return truncNormal{sigma, mean, a, b}
}

type xavier struct {
	gain    float64
	uniform bool
}

func (x xavier) New(dt tensor.DType, shape ...int) *tensor.Tensor {
	fi, fo := Fans(shape)
	std := x.gain * math.Sqrt(2/float64(fi+fo))
	if x.uniform {
		b := math.Sqrt(3) * std
		return tensor.RandUniform(dt, -b, b, shape...)
	}
	return tensor.RandNormal(dt, 0, std, shape...)
}

func (x xavier) String() string {
	if x.uniform {
		return fmt.Sprintf("XavierUniform(gain=%v)", x.gain)
	}
	return fmt.Sprintf("XavierNormal(gain=%v)", x.gain)
}

// XavierUniform (Glorot) draws from U(−b, b) with
// b = gain·√(6/(fan_in+fan_out)).
func XavierUniform(gain float64) Initializer { return xavier{gain, true} }

// XavierNormal (Glorot) draws from N(0, σ²) with
// σ = gain·√(2/(fan_in+fan_out)).
func XavierNormal(gain float64) Initializer { return xavier{gain, false} }

type he struct {
	a            float64
	mode         Mode
	nonlinearity string
	uniform      bool
}

func (h he) New(dt tensor.DType, shape ...int) *tensor.Tensor {
	fi, fo := Fans(shape)
	fan := fi
	switch h.mode {
	case FanIn:
	case FanOut:
		fan = fo
	default:
		core.Panicf(h.String(), "unknown mode %q (want fan_in or fan_out)", h.mode)
	}
	std := Gain(h.nonlinearity, h.a) / math.Sqrt(float64(fan))
	if h.uniform {
		b := math.Sqrt(3) * std
		return tensor.RandUniform(dt, -b, b, shape...)
	}
	return tensor.RandNormal(dt, 0, std, shape...)
}

func (h he) String() string {
	kind := "HeNormal"
	if h.uniform {
		kind = "HeUniform"
	}
	return fmt.Sprintf("%s(negative_slope=%v, mode=%s, nonlinearity=%s)", kind, h.a, h.mode, h.nonlinearity)
}

// HeUniform (Kaiming) draws from U(−b, b) with b = gain·√(3/fan_in) and
// the leaky_relu gain √(2/(1+a²)) for negative slope a. With a = √5 —
// Dense's and Conv2d's default in MindSpore 2.x — b is 1/√fan_in.
func HeUniform(negativeSlope float64) Initializer {
	return he{negativeSlope, FanIn, "leaky_relu", true}
}

// HeNormal (Kaiming) draws from N(0, σ²) with σ = gain/√fan_in and the
// leaky_relu gain for negative slope a.
func HeNormal(negativeSlope float64) Initializer {
	return he{negativeSlope, FanIn, "leaky_relu", false}
}

// HeUniformMode is HeUniform with a chosen fan mode and nonlinearity (see
// Gain; a is used by leaky_relu only).
func HeUniformMode(a float64, mode Mode, nonlinearity string) Initializer {
	Gain(nonlinearity, a)
	return he{a, mode, nonlinearity, true}
}

// HeNormalMode is HeNormal with a chosen fan mode and nonlinearity.
func HeNormalMode(a float64, mode Mode, nonlinearity string) Initializer {
	Gain(nonlinearity, a)
	return he{a, mode, nonlinearity, false}
}

// castTo converts a concrete float64 tensor to dt.
func castTo(t *tensor.Tensor, dt tensor.DType) *tensor.Tensor {
	if dt == tensor.Float64 {
		return t
	}
	out := tensor.New(dt, t.Shape()...)
	vals := t.Float64s()
	switch o := out.Data().(type) {
	case []float32:
		for i, v := range vals {
			o[i] = float32(v)
		}
	default:
		core.Panicf("initializer", "unsupported dtype %v", dt)
	}
	return out
}
