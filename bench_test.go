package spore_test

import (
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// The seed network (Flatten → Dense 784→512 → ReLU → Dense 512→512 → ReLU
// → Dense 512→10) at batch 64, written with the core API, in PyNative mode
// and compiled; and a full training step (forward, cross-entropy, backward,
// SGD update) in both modes. Compare the pairs side by side in one run:
//
//	go test -run XXX -bench 'Seed|Dispatch' -benchmem .

func seedBatch() (*spore.Tensor, *spore.Tensor) {
	x := tensor.Ones(spore.Float32, 64, 1, 28, 28)
	labels := make([]int32, 64)
	for i := range labels {
		labels[i] = int32(i % 10)
	}
	return x, tensor.FromSlice(labels, 64)
}

func (m *seedMLP) params() []*spore.Tensor {
	return []*spore.Tensor{m.w1, m.b1, m.w2, m.b2, m.w3, m.b3}
}

// trainStep returns the SGD training step of m: loss, gradients and the
// in-place update, as one function.
func (m *seedMLP) trainStep(lr float64) func(x, y *spore.Tensor) *spore.Tensor {
	ps := m.params()
	grad := spore.ValueAndGrad(func(x, y *spore.Tensor) *spore.Tensor {
		return ops.CrossEntropy(m.forward(x), y, "mean")
	}, spore.GradPosition(), spore.Weights(ps...))
	return func(x, y *spore.Tensor) *spore.Tensor {
		loss, gs := grad(x, y)
		for i, p := range ps {
			p.Assign(ops.Sub(p, ops.Mul(gs[i], ops.ScalarLike(gs[i], lr))))
		}
		return loss
	}
}

func BenchmarkDispatchAdd4(b *testing.B) {
	t := tensor.Ones(spore.Float32, 4)
	b.ReportAllocs()
	for b.Loop() {
		ops.Add(t, t)
	}
}

func BenchmarkSeedInferPyNative(b *testing.B) {
	m := newSeedMLP()
	x, _ := seedBatch()
	b.ReportAllocs()
	for b.Loop() {
		m.forward(x)
	}
}

func BenchmarkSeedInferGraph(b *testing.B) {
	m := newSeedMLP()
	x, _ := seedBatch()
	j := spore.NewJit(m.forward)
	out := []*spore.Tensor{tensor.Zeros(spore.Float32, 64, 10)}
	j.RunInto([]*spore.Tensor{x}, out)
	b.ReportAllocs()
	for b.Loop() {
		j.RunInto([]*spore.Tensor{x}, out)
	}
}

func BenchmarkSeedTrainPyNative(b *testing.B) {
	m := newSeedMLP()
	x, y := seedBatch()
	step := m.trainStep(0.01)
	b.ReportAllocs()
	for b.Loop() {
		step(x, y)
	}
}

func BenchmarkSeedTrainGraph(b *testing.B) {
	m := newSeedMLP()
	x, y := seedBatch()
	j := spore.NewJit(m.trainStep(0.01))
	out := []*spore.Tensor{tensor.Zeros(spore.Float32)}
	j.RunInto([]*spore.Tensor{x, y}, out)
	b.ReportAllocs()
	for b.Loop() {
		j.RunInto([]*spore.Tensor{x, y}, out)
	}
	b.ReportMetric(float64(j.Stats().LastCompileTime.Microseconds())/1000, "compile-ms")
}
