package nn

import (
	"fmt"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/tensor"
)

// planBuckets fills buckets last gradient first, closes one when the next
// gradient would pass the limit or has another dtype, never leaves one
// empty (a gradient larger than the limit gets a bucket of its own), and
// skips nil gradients.
func TestPlanBuckets(t *testing.T) {
	f32 := func(n int) *spore.Tensor { return tensor.New(tensor.Float32, n) }
	f64 := func(n int) *spore.Tensor { return tensor.New(tensor.Float64, n) }
	cases := []struct {
		name  string
		grads []*spore.Tensor
		limit int
		want  string
	}{
		{"one bucket", []*spore.Tensor{f32(4), f32(4), f32(4)}, 1 << 20, "[[2 1 0]]"},
		{"by size", []*spore.Tensor{f32(4), f32(4), f32(4)}, 32, "[[2 1] [0]]"},
		{"exactly full", []*spore.Tensor{f32(2), f32(2), f32(4)}, 16, "[[2] [1 0]]"},
		{"larger than the limit", []*spore.Tensor{f32(100), f32(1)}, 16, "[[1] [0]]"},
		{"by dtype", []*spore.Tensor{f64(1), f32(1), f32(1)}, 1 << 20, "[[2 1] [0]]"},
		{"nil skipped", []*spore.Tensor{f32(1), nil, f32(1)}, 1 << 20, "[[2 0]]"},
		{"none", nil, 16, "[]"},
	}
	for _, c := range cases {
		var got [][]int
		for _, b := range planBuckets(c.grads, c.limit) {
			got = append(got, b.idx)
		}
		if s := fmt.Sprint(got); s != c.want {
			t.Errorf("%s: buckets %s, want %s", c.name, s, c.want)
		}
	}
}

// Gradients of two dtypes, a scalar one and a nil one, and a loss whose
// dtype is not the first bucket's (so it travels alone): the step keeps
// the loss and every gradient's shape and dtype.
func TestAllReduceStepShapes(t *testing.T) {
	loss := tensor.Scalar[float64](2)
	grads := []*spore.Tensor{tensor.Scalar[float64](1), tensor.New(tensor.Float64, 2, 3), nil, tensor.New(tensor.Float32, 4)}
	pc := spore.AutoParallelContext{ParallelMode: spore.DataParallel, GradientsMean: true, BucketBytes: 8}
	l, out := allReduceStep(loss, grads, pc)
	if l.Item() != 2 || len(l.Shape()) != 0 {
		t.Errorf("loss %v, want the scalar 2", l)
	}
	for i, g := range grads {
		if g == nil {
			if out[i] != nil {
				t.Errorf("gradient %d: %v, want nil", i, out[i])
			}
			continue
		}
		if !out[i].Shape().Equal(g.Shape()) || out[i].DType() != g.DType() {
			t.Errorf("gradient %d: %v %v, want %v %v", i, out[i].Shape(), out[i].DType(), g.Shape(), g.DType())
		}
	}
}
