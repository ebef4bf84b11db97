package train

import (
	"fmt"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Metric accumulates a measure over the batches of an evaluation,
// MindSpore's Metric (clear, update, eval).
type Metric interface {
	// Name is the metric's key in Eval's result.
	Name() string
	// Reset clears the accumulated state.
	Reset()
	// Update adds one batch: the network's output, the labels and the
	// batch's loss.
	Update(logits, labels *tensor.Tensor, loss float64)
	// Value returns the metric over the batches so far.
	Value() float64
}

// Summable is a Metric whose state is a few sums, such as correct and
// total counts. Under data parallelism Eval adds the ranks' sums before
// reading Value, so that accuracy over a sharded test set is the accuracy
// over the whole of it (a ratio of sums, not a mean of the ranks' ratios,
// which would weigh a rank with fewer samples as much as one with more).
// Every metric here is Summable; Eval refuses a metric that is not when
// the ranks' results must be combined.
type Summable interface {
	Metric
	// Sums returns the state as numbers that add across ranks.
	Sums() []float64
	// SetSums replaces the state by sums as Sums returned them, added up.
	SetSums([]float64)
}

// classes returns the predicted class of each row of logits [N, C] and
// the label classes, from class indices [N] or one-hot / probability rows
// [N, C].
func classes(op string, logits, labels *tensor.Tensor) (pred []int64, want []int64) {
	if logits.Rank() != 2 {
		core.Panicf(op, "want logits [N C], got %v", logits.Shape())
	}
	n := logits.Dim(0)
	switch {
	case labels.Rank() == 1 && labels.Dim(0) == n:
		want = labels.Int64s()
		for i, y := range want {
			if y < 0 || y >= int64(logits.Dim(1)) {
				core.Panicf(op, "label %d at row %d is out of range for %d classes", y, i, logits.Dim(1))
			}
		}
	case labels.Rank() == 2 && labels.Shape().Equal(logits.Shape()):
		want = ops.ArgMax(labels, 1).Int64s()
	default:
		core.Panicf(op, "labels %v do not match logits %v (want [N] class indices or [N C])", labels.Shape(), logits.Shape())
	}
	return ops.ArgMax(logits, 1).Int64s(), want
}

// Accuracy is the fraction of rows whose largest logit is the label's
// class, MindSpore's Accuracy('classification').
type Accuracy struct{ correct, total int }

// NewAccuracy returns the metric, named "accuracy".
func NewAccuracy() *Accuracy { return &Accuracy{} }

// Name returns "accuracy".
func (*Accuracy) Name() string { return "accuracy" }

// Reset clears the counts.
func (a *Accuracy) Reset() { a.correct, a.total = 0, 0 }

// Update counts a batch.
func (a *Accuracy) Update(logits, labels *tensor.Tensor, _ float64) {
	pred, want := classes("train.Accuracy", logits, labels)
	for i := range pred {
		if pred[i] == want[i] {
			a.correct++
		}
	}
	a.total += len(pred)
}

// Sums returns (correct, total).
func (a *Accuracy) Sums() []float64 { return []float64{float64(a.correct), float64(a.total)} }

// SetSums sets (correct, total).
func (a *Accuracy) SetSums(s []float64) { a.correct, a.total = int(s[0]), int(s[1]) }

// Value returns correct/total (0 before any batch).
func (a *Accuracy) Value() float64 {
	if a.total == 0 {
		return 0
	}
	return float64(a.correct) / float64(a.total)
}

// Loss is the mean loss per sample: each batch's loss weighted by its
// size, which for a mean-reduced loss is the loss over the whole dataset
// even when the last batch is short. (MindSpore's Loss averages per batch.)
type Loss struct {
	sum float64
	n   int
}

// NewLoss returns the metric, named "loss".
func NewLoss() *Loss { return &Loss{} }

// Name returns "loss".
func (*Loss) Name() string { return "loss" }

// Reset clears the sums.
func (l *Loss) Reset() { l.sum, l.n = 0, 0 }

// Update adds a batch's loss.
func (l *Loss) Update(logits, _ *tensor.Tensor, loss float64) {
	n := 1
	if logits.Rank() > 0 {
		n = logits.Dim(0)
	}
	l.sum += loss * float64(n)
	l.n += n
}

// Sums returns (the loss summed over samples, the number of samples).
func (l *Loss) Sums() []float64 { return []float64{l.sum, float64(l.n)} }

// SetSums sets the sums.
func (l *Loss) SetSums(s []float64) { l.sum, l.n = s[0], int(s[1]) }

// Value returns the mean loss.
func (l *Loss) Value() float64 {
	if l.n == 0 {
		return 0
	}
	return l.sum / float64(l.n)
}

// TopK is the fraction of rows whose label is among the k largest logits,
// MindSpore's TopKCategoricalAccuracy(k). Ties with the label's logit
// count against it, so the measure never flatters.
type TopK struct {
	k              int
	correct, total int
}

// TopKCategoricalAccuracy returns the top-k metric, named
// "top_<k>_categorical_accuracy".
func TopKCategoricalAccuracy(k int) *TopK {
	if k < 1 {
		core.Panicf("train.TopKCategoricalAccuracy", "k %d must be at least 1", k)
	}
	return &TopK{k: k}
}

// Name returns "top_<k>_categorical_accuracy".
func (t *TopK) Name() string { return fmt.Sprintf("top_%d_categorical_accuracy", t.k) }

// Reset clears the counts.
func (t *TopK) Reset() { t.correct, t.total = 0, 0 }

// Update counts a batch.
func (t *TopK) Update(logits, labels *tensor.Tensor, _ float64) {
	_, want := classes("train.TopKCategoricalAccuracy", logits, labels)
	c := logits.Dim(1)
	v := logits.Float64s()
	for i, y := range want {
		row := v[i*c : (i+1)*c]
		target := row[y]
		above := 0
		for j, x := range row {
			if x > target || x == target && j != int(y) {
				above++
			}
		}
		if above < t.k {
			t.correct++
		}
	}
	t.total += len(want)
}

// Sums returns (correct, total).
func (t *TopK) Sums() []float64 { return []float64{float64(t.correct), float64(t.total)} }

// SetSums sets (correct, total).
func (t *TopK) SetSums(s []float64) { t.correct, t.total = int(s[0]), int(s[1]) }

// Value returns correct/total (0 before any batch).
func (t *TopK) Value() float64 {
	if t.total == 0 {
		return 0
	}
	return float64(t.correct) / float64(t.total)
}
