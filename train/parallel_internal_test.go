package train

import (
	"math"
	"strings"
	"testing"

	"github.com/sporeml/spore/checkpoint"
	"github.com/sporeml/spore/tensor"
)

func TestFirstDifference(t *testing.T) {
	for _, tc := range []struct {
		name string
		all  []string
		want string // "" for no difference
	}{
		{"one rank", []string{"a f32 [2]\n"}, ""},
		{"equal", []string{"a f32 [2]\nb f32 [3]\n", "a f32 [2]\nb f32 [3]\n", "a f32 [2]\nb f32 [3]\n"}, ""},
		{"shape", []string{"a f32 [2]\nb f32 [3]\n", "a f32 [2]\nb f32 [4]\n"},
			"entry 1: rank 0 has b f32 [3], rank 1 has b f32 [4]"},
		{"third rank", []string{"a\n", "a\n", "z\n"}, "entry 0: rank 0 has a, rank 2 has z"},
		{"shorter", []string{"a\nb\n", "a\n"}, "entry 1: rank 0 has b, rank 1 has (none)"},
		{"longer", []string{"a\n", "a\nb\n"}, "entry 1: rank 0 has (none), rank 1 has b"},
		{"empty", []string{"", "a\n"}, "entry 0: rank 0 has (none), rank 1 has a"},
	} {
		all := make([][]byte, len(tc.all))
		for i, s := range tc.all {
			all[i] = []byte(s)
		}
		err := firstDifference(all, "parameters", "(none)")
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want no difference", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// TestDigests checks that the replica check can fail: one flipped bit in
// one tensor changes that tensor's line, and only that one.
func TestDigests(t *testing.T) {
	params := func(last float32) checkpoint.Params {
		return checkpoint.Params{
			{Name: "w", Tensor: tensor.FromSlice([]float32{1, 2, 3}, 3)},
			{Name: "b", Tensor: tensor.FromSlice([]float32{0.5, last}, 2)},
			{Name: "global_step", Tensor: tensor.FromSlice([]int32{7}, 1)},
			{Name: "d", Tensor: tensor.FromSlice([]float64{math.Copysign(0, -1)}, 1)},
		}
	}
	a := digests(params(4))
	if b := digests(params(4)); string(a) != string(b) {
		t.Fatalf("the same values hash differently:\n%s\n%s", a, b)
	}
	next := float32(4) + 1.0/(1<<21) // the next float32 after 4
	b := digests(params(next))
	err := firstDifference([][]byte{a, b}, "parameter", "nothing")
	if err == nil || !strings.Contains(err.Error(), "entry 1: rank 0 has b sha256:") {
		t.Fatalf("a one-bit change in b: %v", err)
	}
	// Zero and negative zero compare equal but are different bits.
	z := params(4)
	z[3].Tensor = tensor.FromSlice([]float64{0}, 1)
	if err := firstDifference([][]byte{a, digests(z)}, "parameter", "nothing"); err == nil || !strings.Contains(err.Error(), "rank 0 has d sha256:") {
		t.Fatalf("-0 and +0: %v", err)
	}
}

// TestSumsCombine checks what Eval relies on under data parallelism:
// adding the ranks' sums gives the metric of the whole set, even when the
// ranks' shares differ in size (where a mean of the ranks' values would
// not).
func TestSumsCombine(t *testing.T) {
	logits := []float32{
		1, 0, 0, // class 0
		0, 1, 0, // 1
		0, 0, 1, // 2
		1, 0, 0, // 0
		0, 1, 0, // 1
	}
	labels := []int32{0, 1, 0, 1, 1}
	// Rows lo..hi-1 as a batch.
	batch := func(lo, hi int) (*tensor.Tensor, *tensor.Tensor) {
		return tensor.FromSlice(append([]float32(nil), logits[3*lo:3*hi]...), hi-lo, 3),
			tensor.FromSlice(append([]int32(nil), labels[lo:hi]...), hi-lo)
	}
	x0, y0 := batch(0, 1)
	x1, y1 := batch(1, 5)
	losses := []float64{0.5, 1.5}
	metrics := func() []Summable { return []Summable{NewAccuracy(), NewLoss(), TopKCategoricalAccuracy(2)} }
	whole, parts := metrics(), [2][]Summable{metrics(), metrics()}
	for _, m := range whole {
		// The whole set as two batches of the sizes the ranks have.
		m.Update(x0, y0, losses[0])
		m.Update(x1, y1, losses[1])
	}
	for i, m := range parts[0] {
		m.Update(x0, y0, losses[0])
		parts[1][i].Update(x1, y1, losses[1])
	}
	for i, w := range whole {
		a, b := parts[0][i].Sums(), parts[1][i].Sums()
		sum := make([]float64, len(a))
		for k := range a {
			sum[k] = a[k] + b[k]
		}
		combined := metrics()[i]
		combined.SetSums(sum)
		if combined.Value() != w.Value() {
			t.Errorf("%s: combined sums give %v, the whole set %v", w.Name(), combined.Value(), w.Value())
		}
		if mean := (parts[0][i].Value() + parts[1][i].Value()) / 2; mean == w.Value() {
			t.Errorf("%s: the shares are chosen so that a mean of the ranks' values (%v) is wrong, but it equals %v", w.Name(), mean, w.Value())
		}
	}
}

type plainMetric struct{ Accuracy }

func (plainMetric) Sums()    {}
func (plainMetric) SetSums() {}

func TestReduceMetricsOneRank(t *testing.T) {
	a := NewAccuracy()
	a.correct, a.total = 3, 4
	n := 2
	if err := reduceMetrics([]Metric{a}, &n); err != nil {
		t.Fatal(err)
	}
	if a.correct != 3 || a.total != 4 || n != 2 {
		t.Errorf("one rank: reduced to correct %d total %d batches %d, want 3 4 2", a.correct, a.total, n)
	}
	err := reduceMetrics([]Metric{a, &plainMetric{}}, &n)
	if err == nil || !strings.Contains(err.Error(), `metric "accuracy" cannot be combined across ranks`) {
		t.Errorf("a metric without sums: %v", err)
	}
}
