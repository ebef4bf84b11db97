package spore_test

import (
	"slices"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/models"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// A compiled call allocates nothing once its signature is compiled: every
// intermediate lives in the plan's arena. Counts are averaged over 50 calls
// (AllocsPerRun rounds down): a scratch pool that a garbage collection
// emptied refills once, which is no allocation per call.
func TestCompiledCallsDoNotAllocate(t *testing.T) {
	for _, lvl := range []spore.Level{spore.O0, spore.O1} {
		m := newSeedMLP()
		x, y := seedBatch()
		infer := spore.NewJit(m.forward, spore.JitConfig{Level: lvl})
		train := spore.NewJit(m.trainStep(0.01), spore.JitConfig{Level: lvl})
		out := []*spore.Tensor{tensor.Zeros(spore.Float32, 64, 10)}
		loss := []*spore.Tensor{tensor.Zeros(spore.Float32)}
		inArgs, trainArgs := []*spore.Tensor{x}, []*spore.Tensor{x, y}
		infer.RunInto(inArgs, out)
		train.RunInto(trainArgs, loss)
		if n := testing.AllocsPerRun(50, func() { infer.RunInto(inArgs, out) }); n != 0 {
			t.Errorf("%v: compiled inference allocates %v times per call", lvl, n)
		}
		if n := testing.AllocsPerRun(50, func() { train.RunInto(trainArgs, loss) }); n != 0 {
			t.Errorf("%v: compiled training step allocates %v times per call", lvl, n)
		}
		// The plain call allocates its result (and the slices carrying it)
		// and nothing per intermediate: as much as a one-op function does.
		one := spore.NewJit(func(x *spore.Tensor) *spore.Tensor { return ops.Neg(ops.Sum(x, 1, 2, 3)) }, spore.JitConfig{Level: lvl})
		one.Fn(x)
		base := testing.AllocsPerRun(50, func() { one.Fn(x) })
		if n := testing.AllocsPerRun(50, func() { infer.Fn(x) }); n > base {
			t.Errorf("%v: the compiled seed network allocates %v times per call, a one-op function %v", lvl, n, base)
		}
	}
}

// Training in Graph mode follows PyNative step for step.
func TestTrainingGraphMatchesPyNative(t *testing.T) {
	eager, graph := newSeedMLP(), newSeedMLP()
	x, y := seedBatch()
	x = tensor.RandNormal(spore.Float32, 0, 1, 64, 1, 28, 28)
	es := eager.trainStep(0.05)
	gs := spore.Jit(graph.trainStep(0.05))
	for step := range 5 {
		le, lg := es(x, y).Item(), gs(x, y).Item()
		if d := le - lg; d > 1e-5*(1+le) || d < -1e-5*(1+le) {
			t.Fatalf("step %d: PyNative loss %v, Graph loss %v", step, le, lg)
		}
	}
	if l := gs(x, y).Item(); !(l < es(x, y).Item()+1e-4) {
		t.Fatalf("loss did not stay in step: %v", l)
	}
}

// The path `spore bench` measures — a cell called in Graph mode, returning
// a fresh tensor — allocates that result and nothing else: no argument
// slices, closures, result slices or shape copies. A call that returns a
// new tensor must allocate it (tensors have value semantics, so a result
// cannot be the plan's buffer, which the next call overwrites); RunInto,
// into tensors the caller owns, allocates nothing at all.
func TestGraphCellCallAllocatesOnlyItsResult(t *testing.T) {
	defer spore.SetContext(spore.WithMode(spore.GetContext().Mode))
	spore.SetContext(spore.WithMode(spore.GraphMode))
	spore.SetSeed(1)
	net := models.NewNetwork()
	x := models.Ones(64)
	y := net.Call(x)
	var sink *spore.Tensor
	result := testing.AllocsPerRun(50, func() { sink = core.NewOf(y.Meta()) })
	if n := testing.AllocsPerRun(50, func() { sink = net.Call(x) }); n > result {
		t.Errorf("a Graph-mode cell call allocates %v times, its result alone %v", n, result)
	}
	f := spore.NewJit(net.Construct)
	f.Fn(x)
	if n := testing.AllocsPerRun(50, func() { sink = f.Fn(x) }); n > result {
		t.Errorf("a jitted function call allocates %v times, its result alone %v", n, result)
	}
	_ = sink
	// Into a reused output, what spore bench measures as inference, a
	// compiled call allocates nothing at all.
	outs := []*spore.Tensor{y}
	if n := testing.AllocsPerRun(50, func() { net.CallInto(outs, x) }); n != 0 {
		t.Errorf("a Graph-mode CallInto allocates %v times per call", n)
	}
	if got, want := outs[0].Float32s(), net.Call(x).Float32s(); !slices.Equal(got, want) {
		t.Errorf("CallInto wrote %v, Call returns %v", got[:4], want[:4])
	}
}
