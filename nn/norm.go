package nn

import (
	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/nn/initializer"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// BatchNormConfig holds BatchNorm's optional settings; the zero value is
// MindSpore's defaults.
type BatchNormConfig struct {
	// Eps is added to the variance; 0 means 1e-5.
	Eps float64
	// Momentum weighs the old running statistics (MindSpore's convention:
	// new = momentum·old + (1−momentum)·batch); 0 means 0.9.
	Momentum float64
	// NoAffine freezes gamma at one and beta at zero (affine=False).
	NoAffine bool
	// GammaInit, BetaInit, MovingMeanInit and MovingVarInit initialise the
	// parameters; nil means One, Zero, Zero and One.
	GammaInit, BetaInit, MovingMeanInit, MovingVarInit initializer.Initializer
	// DType is the parameters' type; zero means Float32.
	DType tensor.DType
}

// BatchNorm normalises each channel by batch statistics in training and
// by running statistics in inference, then scales by gamma and shifts by
// beta: MindSpore's nn.BatchNorm1d (input [N, C]) and nn.BatchNorm2d
// (input [N, C, H, W]). In training, Construct updates the running
// statistics in place (Assign) — in Graph mode as an in-place update
// performed by the compiled plan. The running statistics are parameters
// that do not require gradients, so that checkpoints include them.
type BatchNorm struct {
	Cell
	// Gamma and Beta are the [C] scale and shift.
	Gamma, Beta *spore.Tensor
	// MovingMean and MovingVariance are the [C] running statistics.
	MovingMean, MovingVariance *spore.Tensor
	// Eps and Momentum are as in BatchNormConfig.
	Eps, Momentum float64
	// Rank is the input rank: 2 for BatchNorm1d, 4 for BatchNorm2d.
	Rank int
}

// NewBatchNorm1d returns a batch normalisation of [N, C] input.
func NewBatchNorm1d(numFeatures int, cfg ...BatchNormConfig) *BatchNorm {
	return newBatchNorm("nn.BatchNorm1d", 2, numFeatures, cfg)
}

// NewBatchNorm2d returns a batch normalisation of NCHW input.
func NewBatchNorm2d(numFeatures int, cfg ...BatchNormConfig) *BatchNorm {
	return newBatchNorm("nn.BatchNorm2d", 4, numFeatures, cfg)
}

func newBatchNorm(op string, rank, c int, cfg []BatchNormConfig) *BatchNorm {
	positive(op, "num_features", c)
	var bc BatchNormConfig
	if len(cfg) > 0 {
		bc = cfg[0]
	}
	dt := floatType(op, bc.DType)
	or := func(i, d initializer.Initializer) initializer.Initializer {
		if i == nil {
			return d
		}
		return i
	}
	b := &BatchNorm{Eps: bc.Eps, Momentum: bc.Momentum, Rank: rank}
	if b.Eps == 0 {
		b.Eps = 1e-5
	}
	if b.Momentum == 0 {
		b.Momentum = 0.9
	}
	if !(b.Momentum >= 0 && b.Momentum <= 1) || b.Eps < 0 {
		core.Panicf(op, "momentum %v must be in [0, 1] and eps %v not negative", b.Momentum, b.Eps)
	}
	b.Gamma = newParam("gamma", or(bc.GammaInit, initializer.One()), dt, c)
	b.Beta = newParam("beta", or(bc.BetaInit, initializer.Zero()), dt, c)
	b.MovingMean = newParam("moving_mean", or(bc.MovingMeanInit, initializer.Zero()), dt, c)
	b.MovingVariance = newParam("moving_variance", or(bc.MovingVarInit, initializer.One()), dt, c)
	b.MovingMean.SetRequiresGrad(false)
	b.MovingVariance.SetRequiresGrad(false)
	if bc.NoAffine {
		b.Gamma.SetRequiresGrad(false)
		b.Beta.SetRequiresGrad(false)
	}
	return Init(b)
}

// Construct normalises x and, in training, updates the running statistics.
func (b *BatchNorm) Construct(x *spore.Tensor) *spore.Tensor {
	if x.Rank() != b.Rank {
		name := "nn.BatchNorm1d"
		if b.Rank == 4 {
			name = "nn.BatchNorm2d"
		}
		core.Panicf(name, "want input of rank %d, got %v", b.Rank, x.Shape())
	}
	training := b.Training()
	y, mean, variance := ops.BatchNorm(x, b.Gamma, b.Beta, b.MovingMean, b.MovingVariance, training, b.Momentum, b.Eps)
	if training {
		b.MovingMean.Assign(mean)
		b.MovingVariance.Assign(variance)
	}
	return y
}

// LayerNormConfig holds LayerNorm's optional settings; the zero value is
// MindSpore's defaults.
type LayerNormConfig struct {
	// Eps is added to the variance; 0 means 1e-7 (MindSpore's default).
	Eps float64
	// GammaInit and BetaInit initialise the parameters; nil means One and
	// Zero.
	GammaInit, BetaInit initializer.Initializer
	// DType is the parameters' type; zero means Float32.
	DType tensor.DType
}

// LayerNorm normalises over the trailing axes of shape NormalizedShape to
// zero mean and unit (biased) variance, then scales by gamma and shifts by
// beta of that shape: MindSpore's nn.LayerNorm with begin_norm_axis and
// begin_params_axis at the first normalised axis.
type LayerNorm struct {
	Cell
	// Gamma and Beta are the scale and shift, shaped NormalizedShape.
	Gamma, Beta *spore.Tensor
	// NormalizedShape is the shape of the normalised trailing axes.
	NormalizedShape []int
	// Eps is added to the variance.
	Eps float64
}

// NewLayerNorm returns a layer normalisation over trailing axes of the
// given shape.
func NewLayerNorm(normalizedShape []int, cfg ...LayerNormConfig) *LayerNorm {
	const op = "nn.LayerNorm"
	if len(normalizedShape) == 0 {
		core.Panicf(op, "normalized_shape is empty")
	}
	for _, d := range normalizedShape {
		positive(op, "normalized_shape extent", d)
	}
	var c LayerNormConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	dt := floatType(op, c.DType)
	if c.Eps == 0 {
		c.Eps = 1e-7
	}
	if c.GammaInit == nil {
		c.GammaInit = initializer.One()
	}
	if c.BetaInit == nil {
		c.BetaInit = initializer.Zero()
	}
	s := append([]int(nil), normalizedShape...)
	l := &LayerNorm{NormalizedShape: s, Eps: c.Eps}
	l.Gamma = newParam("gamma", c.GammaInit, dt, s...)
	l.Beta = newParam("beta", c.BetaInit, dt, s...)
	return Init(l)
}

// Construct normalises x over its trailing axes.
func (l *LayerNorm) Construct(x *spore.Tensor) *spore.Tensor {
	axis := x.Rank() - len(l.NormalizedShape)
	if axis < 0 || !x.Shape()[axis:].Equal(l.NormalizedShape) {
		core.Panicf("nn.LayerNorm", "input %v does not end in normalized_shape %v", x.Shape(), tensor.Shape(l.NormalizedShape))
	}
	return ops.LayerNorm(x, l.Gamma, l.Beta, axis, l.Eps)
}

// EmbeddingConfig holds Embedding's optional settings.
type EmbeddingConfig struct {
	// Init initialises the table; nil means Normal(0.01, 0), MindSpore's
	// 'normal'.
	Init initializer.Initializer
	// PaddingIdx, if not nil, is a row initialised to zeros.
	PaddingIdx *int
	// DType is the table's type; zero means Float32.
	DType tensor.DType
}

// Embedding maps integer ids to rows of a [vocab, dim] table, MindSpore's
// nn.Embedding. Its gradient adds into the rows looked up.
type Embedding struct {
	Cell
	// EmbeddingTable is the [vocab, dim] table, named "embedding_table".
	EmbeddingTable *spore.Tensor
	// VocabSize and EmbeddingSize are the table's extents.
	VocabSize, EmbeddingSize int
}

// NewEmbedding returns an embedding of vocab ids into dim-vectors.
func NewEmbedding(vocab, dim int, cfg ...EmbeddingConfig) *Embedding {
	const op = "nn.Embedding"
	positive(op, "vocab_size", vocab)
	positive(op, "embedding_size", dim)
	var c EmbeddingConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	dt := floatType(op, c.DType)
	if c.Init == nil {
		c.Init = initializer.Normal(0.01, 0)
	}
	init := c.Init.New(dt, vocab, dim)
	if c.PaddingIdx != nil {
		p := *c.PaddingIdx
		if p < 0 || p >= vocab {
			core.Panicf(op, "padding_idx %d out of range for vocab_size %d", p, vocab)
		}
		core.CopyElems(init, p*dim, tensor.Zeros(dt, dim), 0, dim)
	}
	e := &Embedding{VocabSize: vocab, EmbeddingSize: dim}
	e.EmbeddingTable = tensor.NewParameter("embedding_table", init)
	return Init(e)
}

// Construct looks up ids (Int32 or Int64, any shape S) and returns
// S+[dim] embeddings.
func (e *Embedding) Construct(ids *spore.Tensor) *spore.Tensor {
	return ops.Gather(e.EmbeddingTable, ids, 0)
}
