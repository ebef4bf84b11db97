package nn

import (
	"math"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/nn/initializer"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Conv2dConfig holds Conv2d's optional settings; the zero value is
// MindSpore 2.x's defaults (stride 1, pad_mode "same", no bias).
type Conv2dConfig struct {
	// KernelSize, when not zero, sets a rectangular [height, width] kernel,
	// overriding NewConv2d's square kernel argument.
	KernelSize [2]int
	// Stride is the step of the window, the same in both directions; 0
	// means 1.
	Stride int
	// PadMode is "same" (the default: output ⌈in/stride⌉), "valid" (no
	// padding) or "pad" (Padding).
	PadMode string
	// Padding is the top, bottom, left and right padding of pad mode "pad".
	Padding [4]int
	// Dilation is the spacing of kernel taps; 0 means 1.
	Dilation int
	// Group splits the channels into groups convolved separately; 0 means
	// 1. Both channel counts must be divisible by it.
	Group int
	// HasBias adds a per-channel bias (MindSpore's default is without).
	HasBias bool
	// WeightInit initialises the weight; nil means HeUniform(√5).
	WeightInit initializer.Initializer
	// BiasInit initialises the bias; nil means Uniform(1/√fan_in).
	BiasInit initializer.Initializer
	// DType is the parameters' type; zero means Float32.
	DType tensor.DType
}

// Conv2d is a 2-D convolution over NCHW input, MindSpore's nn.Conv2d. The
// weight has MindSpore's layout [out, in/group, kh, kw].
type Conv2d struct {
	Cell
	// Weight is the [out, in/group, kh, kw] filter, named "weight".
	Weight *spore.Tensor
	// Bias is the [out] bias, named "bias"; nil without bias.
	Bias *spore.Tensor
	// Opts are the convolution's stride, padding, dilation and groups.
	Opts ops.Conv2DOpts
	// InChannels and OutChannels are the channel counts.
	InChannels, OutChannels int
}

// NewConv2d returns a convolution from in to out channels with a
// kernel×kernel window (see Conv2dConfig for the rest).
func NewConv2d(in, out, kernel int, cfg ...Conv2dConfig) *Conv2d {
	const op = "nn.Conv2d"
	var c Conv2dConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	positive(op, "in_channels", in)
	positive(op, "out_channels", out)
	k := [2]int{kernel, kernel}
	if c.KernelSize != ([2]int{}) {
		k = c.KernelSize
	}
	positive(op, "kernel height", k[0])
	positive(op, "kernel width", k[1])
	stride, dil, group := max(c.Stride, 1), max(c.Dilation, 1), max(c.Group, 1)
	if in%group != 0 || out%group != 0 {
		core.Panicf(op, "in_channels %d and out_channels %d must be divisible by group %d", in, out, group)
	}
	var pad ops.Padding
	switch c.PadMode {
	case "", "same":
		pad = ops.SamePad()
	case "valid":
		pad = ops.ValidPad()
	case "pad":
		p := c.Padding
		pad = ops.ExplicitPad(p[0], p[1], p[2], p[3])
	default:
		core.Panicf(op, "unknown pad_mode %q (want same, valid or pad)", c.PadMode)
	}
	if c.PadMode != "pad" && c.Padding != ([4]int{}) {
		core.Panicf(op, "padding %v needs pad_mode \"pad\", got %q", c.Padding, c.PadMode)
	}
	dt := floatType(op, c.DType)
	if c.WeightInit == nil {
		c.WeightInit = initializer.HeUniform(math.Sqrt(5))
	}
	cv := &Conv2d{
		InChannels: in, OutChannels: out,
		Opts: ops.Conv2DOpts{Stride: [2]int{stride, stride}, Padding: pad, Dilation: [2]int{dil, dil}, Groups: group},
	}
	cv.Weight = newParam("weight", c.WeightInit, dt, out, in/group, k[0], k[1])
	if c.HasBias {
		if c.BiasInit == nil {
			fanIn, _ := initializer.Fans(cv.Weight.Shape())
			c.BiasInit = initializer.Uniform(1 / math.Sqrt(float64(fanIn)))
		}
		cv.Bias = newParam("bias", c.BiasInit, dt, out)
	}
	return Init(cv)
}

// Construct convolves x [N, in, H, W] into [N, out, H', W'].
func (cv *Conv2d) Construct(x *spore.Tensor) *spore.Tensor {
	y := ops.Conv2D(x, cv.Weight, cv.Opts)
	if cv.Bias != nil {
		y = ops.Add(y, ops.Reshape(cv.Bias, 1, cv.OutChannels, 1, 1))
	}
	return y
}

// poolPadding resolves a pooling pad mode.
func poolPadding(op, mode string) ops.Padding {
	switch mode {
	case "", "valid":
		return ops.ValidPad()
	case "same":
		return ops.SamePad()
	}
	core.Panicf(op, "unknown pad_mode %q (want valid or same)", mode)
	return ops.Padding{}
}

// MaxPool2d takes the maximum over windows of NCHW input, MindSpore's
// nn.MaxPool2d.
type MaxPool2d struct {
	Cell
	// Kernel and Stride are the window's [height, width] and step.
	Kernel, Stride [2]int
	// Padding is the border treatment (valid unless set).
	Padding ops.Padding
}

// NewMaxPool2d returns a max pooling with a square kernel and stride and
// pad mode "valid" or "same" ("" is valid, MindSpore's default).
func NewMaxPool2d(kernel, stride int, padMode string) *MaxPool2d {
	positive("nn.MaxPool2d", "kernel_size", kernel)
	positive("nn.MaxPool2d", "stride", stride)
	return Init(&MaxPool2d{Kernel: [2]int{kernel, kernel}, Stride: [2]int{stride, stride}, Padding: poolPadding("nn.MaxPool2d", padMode)})
}

// Construct pools x.
func (p *MaxPool2d) Construct(x *spore.Tensor) *spore.Tensor {
	return ops.MaxPool2D(x, p.Kernel, p.Stride, p.Padding)
}

// AvgPool2d averages over windows of NCHW input, MindSpore's nn.AvgPool2d.
type AvgPool2d struct {
	Cell
	// Kernel and Stride are the window's [height, width] and step.
	Kernel, Stride [2]int
	// Padding is the border treatment (valid unless set).
	Padding ops.Padding
	// CountIncludePad, when not nil, says whether padded cells count in
	// each window's divisor. Nil keeps MindSpore's default: explicit
	// padding (pad mode "pad") counts, "same" padding does not.
	CountIncludePad *bool
}

// AvgPool2dConfig holds NewAvgPool2d's optional settings; the zero value is
// MindSpore 2.x's defaults.
type AvgPool2dConfig struct {
	// Padding is the top, bottom, left and right padding of pad mode
	// "pad" (MindSpore's padding).
	Padding [4]int
	// CountIncludePad is MindSpore's count_include_pad: whether padded
	// cells count in each window's divisor. Nil means MindSpore's default,
	// true for pad mode "pad"; pad mode "same" then leaves them out, as
	// MindSpore's "same" average pooling does. Set it with new(false) or
	// new(true).
	CountIncludePad *bool
}

// NewAvgPool2d returns an average pooling with a square kernel and stride
// and pad mode "valid", "same" or "pad" ("" is valid, MindSpore's default);
// the optional config sets mode "pad"'s padding and count_include_pad.
func NewAvgPool2d(kernel, stride int, padMode string, cfg ...AvgPool2dConfig) *AvgPool2d {
	const op = "nn.AvgPool2d"
	positive(op, "kernel_size", kernel)
	positive(op, "stride", stride)
	if len(cfg) > 1 {
		core.Panicf(op, "at most one AvgPool2dConfig, got %d", len(cfg))
	}
	var c AvgPool2dConfig
	if len(cfg) == 1 {
		c = cfg[0]
	}
	var pad ops.Padding
	switch padMode {
	case "pad":
		for _, v := range c.Padding {
			if v < 0 {
				core.Panicf(op, "negative padding %v", c.Padding)
			}
		}
		pad = ops.ExplicitPad(c.Padding[0], c.Padding[1], c.Padding[2], c.Padding[3])
	case "", "valid", "same":
		if c.Padding != ([4]int{}) {
			core.Panicf(op, "padding %v needs pad_mode \"pad\", got %q", c.Padding, padMode)
		}
		pad = poolPadding(op, padMode)
	default:
		core.Panicf(op, "unknown pad_mode %q (want valid, same or pad)", padMode)
	}
	p := &AvgPool2d{Kernel: [2]int{kernel, kernel}, Stride: [2]int{stride, stride}, Padding: pad}
	if c.CountIncludePad != nil {
		p.CountIncludePad = new(*c.CountIncludePad)
	}
	return Init(p)
}

// Construct pools x.
func (p *AvgPool2d) Construct(x *spore.Tensor) *spore.Tensor {
	if p.CountIncludePad != nil {
		return ops.AvgPool2D(x, p.Kernel, p.Stride, p.Padding, ops.CountIncludePad(*p.CountIncludePad))
	}
	return ops.AvgPool2D(x, p.Kernel, p.Stride, p.Padding)
}
