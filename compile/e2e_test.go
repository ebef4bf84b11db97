package compile_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/compile"
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// mlp is the seed network (Flatten → Dense 784→512 → ReLU → Dense 512→512
// → ReLU → Dense 512→10), as in the root package's tests.
type mlp struct{ params []*tensor.Tensor }

func newMLP() *mlp {
	spore.SetSeed(1)
	p := func(name string, shape ...int) *tensor.Tensor {
		return tensor.NewParameter(name, tensor.RandUniform(tensor.Float32, -0.05, 0.05, shape...))
	}
	return &mlp{[]*tensor.Tensor{p("w1", 784, 512), p("b1", 512), p("w2", 512, 512), p("b2", 512), p("w3", 512, 10), p("b3", 10)}}
}

func (m *mlp) forward(x *tensor.Tensor) *tensor.Tensor {
	w := m.params
	h := ops.Reshape(x, x.Dim(0), -1)
	h = ops.ReLU(ops.Add(ops.MatMul(h, w[0]), w[1]))
	h = ops.ReLU(ops.Add(ops.MatMul(h, w[2]), w[3]))
	return ops.Add(ops.MatMul(h, w[4]), w[5])
}

// loss is the mean softmax cross-entropy of the logits against labels.
func (m *mlp) loss(x, labels *tensor.Tensor) *tensor.Tensor {
	return ops.CrossEntropy(m.forward(x), labels, "mean")
}

// trainStep is one SGD step, traced as a whole: forward, backward and the
// parameter updates. It returns the loss.
func (m *mlp) trainStep(args []*tensor.Tensor) []*tensor.Tensor {
	x, labels := args[0], args[1]
	vg := spore.ValueAndGrad(func(xs ...*tensor.Tensor) *tensor.Tensor { return m.loss(xs[0], xs[1]) },
		spore.GradPosition(), spore.Weights(m.params...))
	loss, grads := vg(x, labels)
	lr := tensor.Scalar(float32(0.1))
	for i, p := range m.params {
		p.Assign(ops.Sub(p, ops.Mul(grads[i], lr)))
	}
	return []*tensor.Tensor{loss}
}

// mlpInputs are a batch of images and labels.
func mlpInputs(batch int) []*tensor.Tensor {
	spore.SetSeed(7)
	x := tensor.RandNormal(tensor.Float32, 0, 1, batch, 1, 28, 28)
	labels := make([]int32, batch)
	for i := range labels {
		labels[i] = int32((i * 7) % 10)
	}
	return []*tensor.Tensor{x, tensor.FromSlice(labels, batch)}
}

func traceMLP(t testing.TB, m *mlp, train bool, args []*tensor.Tensor) *graph.Graph {
	metas := make([]tensor.Meta, len(args))
	for i, a := range args {
		metas[i] = a.Meta()
	}
	fn := func(xs []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{m.forward(xs[0])} }
	name := "forward"
	if train {
		fn, name = m.trainStep, "train_step"
	} else {
		metas = metas[:1]
	}
	g, err := graph.Trace(name, metas, fn)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// snapshot copies the parameters' values; restore puts them back.
func snapshot(ps []*tensor.Tensor) []*tensor.Tensor {
	s := make([]*tensor.Tensor, len(ps))
	for i, p := range ps {
		s[i] = p.Clone()
	}
	return s
}

func restore(ps, s []*tensor.Tensor) {
	for i, p := range ps {
		core.Copy(p, s[i])
	}
}

// TestSeedMLP compiles the seed network's inference and training step at
// O0 and O1 and checks that O1 fused what it should, runs fewer kernels,
// and computes the same results (loss and updated parameters) within
// float32 tolerance.
func TestSeedMLP(t *testing.T) {
	for _, train := range []bool{false, true} {
		m := newMLP()
		args := mlpInputs(64)
		g := traceMLP(t, m, train, args)
		if !train {
			args = args[:1]
		}
		r0, err := compile.Run(g.Clone(), compile.Options{Level: compile.O0, Verify: true})
		if err != nil {
			t.Fatal(err)
		}
		r1, err := compile.Run(g.Clone(), compile.Options{Level: compile.O1, Verify: true})
		if err != nil {
			t.Fatal(err)
		}
		ir := r1.Graph.String()
		what := map[bool]string{false: "inference", true: "training step"}[train]
		t.Logf("%s: %d steps at O0, %d at O1; arena %d KiB at O0, %d KiB at O1\n%s", what,
			r0.Plan.NumSteps(), r1.Plan.NumSteps(), r0.Plan.ArenaBytes>>10, r1.Plan.ArenaBytes>>10, ir)
		// Each layer's product takes its bias (and, in inference, its
		// ReLU) as an epilogue; a training step's backward products take
		// the ReLU gradients too.
		if n := strings.Count(ir, "Anchor("); n < 3 {
			t.Errorf("%s: %d Anchor, want at least 3 (one per layer)", what, n)
		}
		if train && !strings.Contains(ir, "Fused[") {
			t.Errorf("%s: no fused elementwise op", what)
		}
		if r1.Plan.NumSteps() >= r0.Plan.NumSteps() {
			t.Errorf("%s: O1 runs %d steps, O0 %d", what, r1.Plan.NumSteps(), r0.Plan.NumSteps())
		}
		start := snapshot(m.params)
		want := r0.Plan.Run(args)
		wantParams := snapshot(m.params)
		restore(m.params, start)
		got := r1.Plan.Run(args)
		for i := range want {
			testkit.AssertClose(t, what+" result", got[i], want[i], 1e-5)
		}
		for i, p := range m.params {
			testkit.AssertClose(t, fmt.Sprintf("%s: parameter %s", what, p.Name()), p, wantParams[i], 1e-5)
		}
		// The eager run agrees with both.
		restore(m.params, start)
		var eager []*tensor.Tensor
		if train {
			eager = m.trainStep(args)
		} else {
			eager = []*tensor.Tensor{m.forward(args[0])}
		}
		for i := range eager {
			testkit.AssertClose(t, what+" eager vs O1", got[i], eager[i], 1e-5)
		}
	}
}
