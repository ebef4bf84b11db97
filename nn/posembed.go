package nn

import (
	"math"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/nn/initializer"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// PositionalEmbeddingConfig holds PositionalEmbedding's optional settings.
type PositionalEmbeddingConfig struct {
	// Init initialises the table; nil means Normal(0.02, 0), the scale of
	// GPT-2's and ViT's position embeddings.
	Init initializer.Initializer
	// BatchFirst says inputs are [batch, seq, dim] rather than [seq,
	// batch, dim].
	BatchFirst bool
	// DType is the table's type; zero means Float32.
	DType tensor.DType
}

// PositionalEmbedding adds a learned vector per position to its input:
// y[t] = x[t] + embedding_table[t] for positions t < max_len, the
// position embedding of GPT and BERT (a trainable [max_len, dim] table).
type PositionalEmbedding struct {
	Cell
	// EmbeddingTable is the [max_len, dim] table, named
	// "embedding_table" as Embedding's.
	EmbeddingTable *spore.Tensor
	// MaxLen and Dim are the table's extents.
	MaxLen, Dim int
	// BatchFirst says rank-3 inputs are [batch, seq, dim].
	BatchFirst bool
}

// NewPositionalEmbedding returns a learned embedding of up to maxLen
// positions into dim-vectors.
func NewPositionalEmbedding(maxLen, dim int, cfg ...PositionalEmbeddingConfig) *PositionalEmbedding {
	const op = "nn.PositionalEmbedding"
	positive(op, "max_len", maxLen)
	positive(op, "dim", dim)
	var c PositionalEmbeddingConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	dt := floatType(op, c.DType)
	if c.Init == nil {
		c.Init = initializer.Normal(0.02, 0)
	}
	p := &PositionalEmbedding{MaxLen: maxLen, Dim: dim, BatchFirst: c.BatchFirst}
	p.EmbeddingTable = newParam("embedding_table", c.Init, dt, maxLen, dim)
	return Init(p)
}

// Construct returns x plus the embeddings of positions 0 … L−1, for x
// [L, batch, dim], [batch, L, dim] with BatchFirst, or [L, dim].
func (p *PositionalEmbedding) Construct(x *spore.Tensor) *spore.Tensor {
	const op = "nn.PositionalEmbedding"
	L := seqLen(op, x, p.Dim, p.MaxLen, p.BatchFirst, p.EmbeddingTable.DType())
	return ops.Add(x, alignPositions(p.Positions(L), x.Rank(), p.BatchFirst))
}

// Positions returns the [n, dim] embeddings of positions 0 … n−1.
func (p *PositionalEmbedding) Positions(n int) *spore.Tensor {
	if n <= 0 || n > p.MaxLen {
		core.Panicf("nn.PositionalEmbedding", "%d positions asked of a table of max_len %d", n, p.MaxLen)
	}
	if n == p.MaxLen {
		return p.EmbeddingTable
	}
	return ops.Slice(p.EmbeddingTable, []int{0, 0}, []int{n, p.Dim})
}

// SinusoidalPositionalEncodingConfig holds SinusoidalPositionalEncoding's
// optional settings.
type SinusoidalPositionalEncodingConfig struct {
	// MaxLen is the longest sequence; zero means 5000.
	MaxLen int
	// Dropout is applied to the sum, in training (as in the Transformer
	// paper and PyTorch's tutorial); zero means none.
	Dropout float64
	// BatchFirst says inputs are [batch, seq, dim] rather than [seq,
	// batch, dim].
	BatchFirst bool
	// DType is the encoding's type; zero means Float32.
	DType tensor.DType
}

// SinusoidalPositionalEncoding adds the fixed encoding of "Attention Is
// All You Need" to its input: for position t and feature j of dim,
//
//	PE[t, 2i]   = sin(t / 10000^(2i/dim))
//	PE[t, 2i+1] = cos(t / 10000^(2i/dim))
//
// then applies dropout. It has no parameters: the table is computed once,
// in float64 and rounded to the dtype, and is a constant of any graph
// that uses it. An odd dim ends with a sine column.
type SinusoidalPositionalEncoding struct {
	Cell
	// Drop is the dropout applied to the sum.
	Drop *Dropout
	// MaxLen and Dim are the table's extents.
	MaxLen, Dim int
	// BatchFirst says rank-3 inputs are [batch, seq, dim].
	BatchFirst bool

	table *spore.Tensor // [MaxLen, Dim], not a parameter
}

// NewSinusoidalPositionalEncoding returns the encoding for dim-wide
// features.
func NewSinusoidalPositionalEncoding(dim int, cfg ...SinusoidalPositionalEncodingConfig) *SinusoidalPositionalEncoding {
	const op = "nn.SinusoidalPositionalEncoding"
	positive(op, "dim", dim)
	var c SinusoidalPositionalEncodingConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	if c.MaxLen == 0 {
		c.MaxLen = 5000
	}
	positive(op, "max_len", c.MaxLen)
	dt := floatType(op, c.DType)
	return Init(&SinusoidalPositionalEncoding{
		Drop: NewDropout(c.Dropout), MaxLen: c.MaxLen, Dim: dim, BatchFirst: c.BatchFirst,
		table: ops.Cast(SinusoidalTable(c.MaxLen, dim), dt),
	})
}

// SinusoidalTable returns the float64 [n, dim] table of
// SinusoidalPositionalEncoding.
func SinusoidalTable(n, dim int) *spore.Tensor {
	v := make([]float64, n*dim)
	for t := range n {
		for j := range dim {
			// The angle's frequency is shared by the pair (2i, 2i+1).
			a := float64(t) * math.Exp(-math.Log(10000)*float64(j&^1)/float64(dim))
			if j%2 == 0 {
				v[t*dim+j] = math.Sin(a)
			} else {
				v[t*dim+j] = math.Cos(a)
			}
		}
	}
	return tensor.FromSlice(v, n, dim)
}

// Construct returns dropout(x + PE[:L]) for x [L, batch, dim], [batch, L,
// dim] with BatchFirst, or [L, dim].
func (s *SinusoidalPositionalEncoding) Construct(x *spore.Tensor) *spore.Tensor {
	const op = "nn.SinusoidalPositionalEncoding"
	L := seqLen(op, x, s.Dim, s.MaxLen, s.BatchFirst, s.table.DType())
	pe := s.table
	if L < s.MaxLen {
		pe = ops.Slice(pe, []int{0, 0}, []int{L, s.Dim})
	}
	return s.Drop.Construct(ops.Add(x, alignPositions(pe, x.Rank(), s.BatchFirst)))
}

// seqLen checks x against a position table and returns its sequence
// length.
func seqLen(op string, x *spore.Tensor, dim, maxLen int, batchFirst bool, dt tensor.DType) int {
	xs := x.Shape()
	layout := "[seq, batch, dim]"
	seq := 0
	if batchFirst {
		layout, seq = "[batch, seq, dim]", 1
	}
	if len(xs) == 2 {
		seq = 0
	}
	if len(xs) != 2 && len(xs) != 3 || xs[len(xs)-1] != dim {
		core.Panicf(op, "input %v is not %s or [seq, dim] with dim=%d", xs, layout, dim)
	}
	if x.DType() != dt {
		core.Panicf(op, "input %v is %v but the table is %v", xs, x.DType(), dt)
	}
	if xs[seq] == 0 || xs[seq] > maxLen {
		core.Panicf(op, "input %v has %d positions; the table holds 1 to max_len=%d", xs, xs[seq], maxLen)
	}
	return xs[seq]
}

// alignPositions shapes a [L, dim] table to broadcast against an input of
// the given rank: [L, 1, dim] for sequence-first rank-3 input.
func alignPositions(pe *spore.Tensor, rank int, batchFirst bool) *spore.Tensor {
	if rank == 3 && !batchFirst {
		return ops.ExpandDims(pe, 1)
	}
	return pe
}
