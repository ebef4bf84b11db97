package nn

import (
	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Reduction says how a loss folds its per-element values.
type Reduction string

// The reductions, MindSpore's reduction argument.
const (
	// Mean averages over all elements (of the batch, for per-sample losses).
	Mean Reduction = "mean"
	// Sum adds all elements.
	Sum Reduction = "sum"
	// None returns the unreduced losses.
	None Reduction = "none"
)

// resolve returns r, or def when r is empty, and rejects unknown values.
func (r Reduction) resolve(op string, def Reduction) Reduction {
	switch r {
	case "":
		return def
	case Mean, Sum, None:
		return r
	}
	core.Panicf(op, "unknown reduction %q (want mean, sum or none)", string(r))
	return ""
}

// reduce folds per-element losses l.
func reduce(op string, l *spore.Tensor, r Reduction) *spore.Tensor {
	switch r {
	case Mean:
		if l.Size() == 0 {
			core.Panicf(op, "mean of an empty batch (losses %v)", l.Shape())
		}
		return ops.MulScalar(ops.Sum(l), 1/float64(l.Size()))
	case Sum:
		return ops.Sum(l)
	}
	return l
}

func checkSame(op string, a, b *spore.Tensor) {
	if !a.Shape().Equal(b.Shape()) || a.DType() != b.DType() {
		core.Panicf(op, "prediction %v %v and target %v %v must have the same shape and dtype", a.Shape(), a.DType(), b.Shape(), b.DType())
	}
	if !a.DType().IsFloat() {
		core.Panicf(op, "want float inputs, got %v", a.DType())
	}
}

// classLabels checks integer class labels [N] for logits [N, C] and
// returns them through ops.CheckLabels, which refuses labels out of range
// in PyNative and Graph mode alike.
func classLabels(op string, logits, labels *spore.Tensor) *spore.Tensor {
	ls, ys := logits.Shape(), labels.Shape()
	if len(ls) != 2 || len(ys) != 1 || ys[0] != ls[0] {
		core.Panicf(op, "want predictions [N C] and labels [N], got %v and %v", ls, ys)
	}
	if labels.DType() != tensor.Int32 && labels.DType() != tensor.Int64 {
		core.Panicf(op, "class labels must be Int32 or Int64, got %v %v", ys, labels.DType())
	}
	return ops.CheckLabels(op, logits, labels)
}

// SoftmaxCrossEntropyWithLogits is the cross-entropy of softmax(logits)
// [N, C] against labels, MindSpore's nn.SoftmaxCrossEntropyWithLogits:
// with Sparse, labels are class indices [N] (Int32 or Int64); otherwise
// they are [N, C] probabilities (one-hot or soft).
type SoftmaxCrossEntropyWithLogits struct {
	Cell
	// Sparse selects class-index labels.
	Sparse bool
	// Reduction folds the [N] losses.
	Reduction Reduction
}

// NewSoftmaxCrossEntropyWithLogits returns the loss; an empty reduction
// is "none", MindSpore's default for this loss.
func NewSoftmaxCrossEntropyWithLogits(sparse bool, reduction Reduction) *SoftmaxCrossEntropyWithLogits {
	r := reduction.resolve("nn.SoftmaxCrossEntropyWithLogits", None)
	return Init(&SoftmaxCrossEntropyWithLogits{Sparse: sparse, Reduction: r})
}

// Construct returns the loss of logits against labels.
func (s *SoftmaxCrossEntropyWithLogits) Construct(logits, labels *spore.Tensor) *spore.Tensor {
	if s.Sparse {
		return ops.CrossEntropy(logits, labels, string(s.Reduction))
	}
	return ops.CrossEntropyProbs(logits, labels, string(s.Reduction))
}

// CrossEntropyLoss is the cross-entropy of softmax(logits) [N, C] against
// class indices [N] (Int32 or Int64) or class probabilities [N, C],
// MindSpore's nn.CrossEntropyLoss, with optional label smoothing: the
// target becomes (1−ε)·target + ε/C.
type CrossEntropyLoss struct {
	Cell
	// Reduction folds the [N] losses.
	Reduction Reduction
	// LabelSmoothing is ε, in [0, 1].
	LabelSmoothing float64
}

// NewCrossEntropyLoss returns the loss; an empty reduction is "mean".
func NewCrossEntropyLoss(reduction Reduction, labelSmoothing float64) *CrossEntropyLoss {
	const op = "nn.CrossEntropyLoss"
	r := reduction.resolve(op, Mean)
	if !(labelSmoothing >= 0 && labelSmoothing <= 1) {
		core.Panicf(op, "label_smoothing %v is not in [0, 1]", labelSmoothing)
	}
	return Init(&CrossEntropyLoss{Reduction: r, LabelSmoothing: labelSmoothing})
}

// Construct returns the loss of logits against labels.
func (c *CrossEntropyLoss) Construct(logits, labels *spore.Tensor) *spore.Tensor {
	const op = "nn.CrossEntropyLoss"
	r := string(c.Reduction)
	if labels.DType().IsInt() {
		if c.LabelSmoothing == 0 {
			return ops.CrossEntropy(logits, labels, r)
		}
		labels = ops.OneHot(classLabels(op, logits, labels), logits.Dim(1), logits.DType())
	}
	if c.LabelSmoothing != 0 {
		eps := c.LabelSmoothing
		labels = ops.AddScalar(ops.MulScalar(labels, 1-eps), eps/float64(logits.Dim(-1)))
	}
	return ops.CrossEntropyProbs(logits, labels, r)
}

// NLLLoss is the negative log-likelihood of log-probabilities [N, C] at
// class indices [N] (Int32 or Int64): −logp[i, label[i]], MindSpore's
// nn.NLLLoss.
type NLLLoss struct {
	Cell
	// Reduction folds the [N] losses.
	Reduction Reduction
}

// NewNLLLoss returns the loss; an empty reduction is "mean".
func NewNLLLoss(reduction Reduction) *NLLLoss {
	return Init(&NLLLoss{Reduction: reduction.resolve("nn.NLLLoss", Mean)})
}

// Construct returns the loss of log-probabilities logp against labels.
func (n *NLLLoss) Construct(logp, labels *spore.Tensor) *spore.Tensor {
	const op = "nn.NLLLoss"
	labels = classLabels(op, logp, labels)
	if !logp.DType().IsFloat() {
		core.Panicf(op, "want float log-probabilities, got %v", logp.DType())
	}
	onehot := ops.OneHot(labels, logp.Dim(1), logp.DType())
	return reduce(op, ops.Neg(ops.Sum(ops.Mul(onehot, logp), -1)), n.Reduction)
}

// MSELoss is the squared error (x − y)², MindSpore's nn.MSELoss.
type MSELoss struct {
	Cell
	// Reduction folds the elementwise losses.
	Reduction Reduction
}

// NewMSELoss returns the loss; an empty reduction is "mean".
func NewMSELoss(reduction Reduction) *MSELoss {
	return Init(&MSELoss{Reduction: reduction.resolve("nn.MSELoss", Mean)})
}

// Construct returns the loss of x against y (same shape).
func (m *MSELoss) Construct(x, y *spore.Tensor) *spore.Tensor {
	checkSame("nn.MSELoss", x, y)
	d := ops.Sub(x, y)
	return reduce("nn.MSELoss", ops.Mul(d, d), m.Reduction)
}

// L1Loss is the absolute error |x − y|, MindSpore's nn.L1Loss.
type L1Loss struct {
	Cell
	// Reduction folds the elementwise losses.
	Reduction Reduction
}

// NewL1Loss returns the loss; an empty reduction is "mean".
func NewL1Loss(reduction Reduction) *L1Loss {
	return Init(&L1Loss{Reduction: reduction.resolve("nn.L1Loss", Mean)})
}

// Construct returns the loss of x against y (same shape).
func (l *L1Loss) Construct(x, y *spore.Tensor) *spore.Tensor {
	checkSame("nn.L1Loss", x, y)
	return reduce("nn.L1Loss", ops.Abs(ops.Sub(x, y)), l.Reduction)
}

// BCEWithLogitsLoss is the binary cross-entropy of sigmoid(x) against
// targets y in [0, 1], computed stably from the logits, MindSpore's
// nn.BCEWithLogitsLoss:
//
//	l = w · (p·y·log(1+e⁻ˣ) + (1−y)·log(1+eˣ))
//
// with w the optional Weight and p the optional PosWeight (both
// broadcasting against x; nil means 1).
type BCEWithLogitsLoss struct {
	Cell
	// Reduction folds the elementwise losses.
	Reduction Reduction
	// Weight rescales each element's loss; nil for none. It is a constant,
	// not a parameter.
	Weight *spore.Tensor `nn:"-"`
	// PosWeight weighs the positive term (per class); nil for none.
	PosWeight *spore.Tensor `nn:"-"`
}

// NewBCEWithLogitsLoss returns the loss; an empty reduction is "mean".
func NewBCEWithLogitsLoss(reduction Reduction) *BCEWithLogitsLoss {
	return Init(&BCEWithLogitsLoss{Reduction: reduction.resolve("nn.BCEWithLogitsLoss", Mean)})
}

// Construct returns the loss of logits x against targets y (same shape).
func (b *BCEWithLogitsLoss) Construct(x, y *spore.Tensor) *spore.Tensor {
	const op = "nn.BCEWithLogitsLoss"
	checkSame(op, x, y)
	// log(1+e⁻ˣ) = softplus(−x) and log(1+eˣ) = softplus(x) = x + softplus(−x).
	spNeg := ops.Softplus(ops.Neg(x))
	neg := ops.Mul(ops.SubScalar(ops.Neg(y), -1), ops.Add(x, spNeg)) // (1−y)·softplus(x)
	pos := ops.Mul(y, spNeg)
	if b.PosWeight != nil {
		pos = ops.Mul(pos, b.PosWeight)
	}
	l := ops.Add(pos, neg)
	if b.Weight != nil {
		l = ops.Mul(l, b.Weight)
	}
	return reduce(op, l, b.Reduction)
}

// WithLossCell joins a network and a loss into a cell computing the scalar
// loss of the network's output against a label, MindSpore's
// nn.WithLossCell. Like MindSpore's (auto_prefix=False), it adds no name
// segment: its parameters keep the backbone's names, so checkpoints of the
// training network and of the backbone agree.
type WithLossCell struct {
	Cell
	// Backbone is the network.
	Backbone Layer `nn:",inline"`
	// LossFn is the loss.
	LossFn Loss `nn:",inline"`
}

// NewWithLossCell returns the network-with-loss cell.
func NewWithLossCell(backbone Layer, loss Loss) *WithLossCell {
	if backbone == nil || loss == nil {
		core.Panicf("nn.WithLossCell", "backbone and loss must not be nil")
	}
	return Init(&WithLossCell{Backbone: backbone, LossFn: loss})
}

// Construct returns the loss of Backbone(data) against label.
func (w *WithLossCell) Construct(data, label *spore.Tensor) *spore.Tensor {
	return w.LossFn.Base().Call(w.Backbone.Base().Call(data), label)
}
