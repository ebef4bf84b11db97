package exec_test

import (
	"testing"

	"github.com/sporeml/spore/exec"
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

func compile(t *testing.T, metas []tensor.Meta, f func(in []*tensor.Tensor) []*tensor.Tensor) *exec.Plan {
	t.Helper()
	g, err := graph.Trace("f", metas, f)
	if err != nil {
		t.Fatal(err)
	}
	p, err := exec.Compile(g)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestArenaReusesDeadBuffers(t *testing.T) {
	m := tensor.Meta{Shape: tensor.Shape{1024}, DType: tensor.Float32}
	// A chain of non-elementwise steps (sums keep their input alive only
	// until they run), each producing a 1024-element value.
	p := compile(t, []tensor.Meta{m}, func(in []*tensor.Tensor) []*tensor.Tensor {
		x := in[0]
		for range 6 {
			x = ops.MatMul(ops.Reshape(x, 32, 32), tensor.Eye(tensor.Float32, 32))
			x = ops.Reshape(x, 1024)
		}
		return []*tensor.Tensor{x}
	})
	if p.ArenaBytes > 3*1024*4 {
		t.Fatalf("arena of %d bytes for a chain whose values live one step each", p.ArenaBytes)
	}
	x := tensor.RandUniform(tensor.Float32, -1, 1, 1024)
	out := p.Run([]*tensor.Tensor{x})[0]
	a, b := out.Float32s(), x.Float32s()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("element %d: %v, want %v", i, a[i], b[i])
		}
	}
}

func TestRunRebindsInputsAndViews(t *testing.T) {
	m := tensor.Meta{Shape: tensor.Shape{2, 3}, DType: tensor.Float32}
	p := compile(t, []tensor.Meta{m}, func(in []*tensor.Tensor) []*tensor.Tensor {
		return []*tensor.Tensor{ops.Sum(ops.Reshape(in[0], 6), 0)}
	})
	for _, v := range []float32{1, 2, 5} {
		got := p.Run([]*tensor.Tensor{tensor.Full(tensor.Float32, float64(v), 2, 3)})[0].Item()
		if got != float64(6*v) {
			t.Fatalf("sum of 6 × %v = %v", v, got)
		}
	}
}

func TestResultsDoNotAliasTheArena(t *testing.T) {
	m := tensor.Meta{Shape: tensor.Shape{3}, DType: tensor.Float32}
	p := compile(t, []tensor.Meta{m}, func(in []*tensor.Tensor) []*tensor.Tensor {
		return []*tensor.Tensor{ops.Exp(in[0])}
	})
	first := p.Run([]*tensor.Tensor{tensor.Zeros(tensor.Float32, 3)})[0]
	p.Run([]*tensor.Tensor{tensor.Ones(tensor.Float32, 3)})
	if first.Float32s()[0] != 1 {
		t.Fatalf("an earlier result changed: %v", first)
	}
}

func TestAssignmentsHappenInPlaceAfterReads(t *testing.T) {
	w := tensor.NewParameter("w", tensor.FromSlice([]float32{1, 2}, 2))
	m := tensor.Meta{Shape: tensor.Shape{2}, DType: tensor.Float32}
	p := compile(t, []tensor.Meta{m}, func(in []*tensor.Tensor) []*tensor.Tensor {
		old := ops.Mul(w, in[0]) // reads w before the update
		w.Assign(ops.Add(w, in[0]))
		return []*tensor.Tensor{old}
	})
	buf := w.Data().([]float32)
	out := p.Run([]*tensor.Tensor{tensor.FromSlice([]float32{10, 10}, 2)})[0].Float32s()
	if out[0] != 10 || out[1] != 20 {
		t.Fatalf("read after the update: %v", out)
	}
	if got := w.Float32s(); got[0] != 11 || got[1] != 12 {
		t.Fatalf("w = %v, want [11 12]", got)
	}
	if &w.Data().([]float32)[0] != &buf[0] {
		t.Fatal("the parameter's buffer was replaced, not updated in place")
	}
	if p.InPlaceAssigns != 1 {
		t.Fatalf("the update was not computed into the parameter: %d in-place assignments", p.InPlaceAssigns)
	}
}

func TestAssignAfterLaterReadIsCopied(t *testing.T) {
	w := tensor.NewParameter("w", tensor.FromSlice([]float32{1, 2}, 2))
	m := tensor.Meta{Shape: tensor.Shape{2}, DType: tensor.Float32}
	p := compile(t, []tensor.Meta{m}, func(in []*tensor.Tensor) []*tensor.Tensor {
		nw := ops.Add(w, in[0])
		late := ops.Mul(w, w) // reads the old w after the new value exists
		w.Assign(nw)
		return []*tensor.Tensor{late}
	})
	out := p.Run([]*tensor.Tensor{tensor.FromSlice([]float32{10, 10}, 2)})[0].Float32s()
	if out[0] != 1 || out[1] != 4 || p.InPlaceAssigns != 0 {
		t.Fatalf("late read saw %v (in-place assignments %d), want [1 4] from the old w", out, p.InPlaceAssigns)
	}
	if got := w.Float32s(); got[0] != 11 || got[1] != 12 {
		t.Fatalf("w = %v", got)
	}
}

func TestRunIntoAllocatesNothing(t *testing.T) {
	m := tensor.Meta{Shape: tensor.Shape{64, 32}, DType: tensor.Float32}
	w := tensor.NewParameter("w", tensor.RandUniform(tensor.Float32, -1, 1, 32, 16))
	p := compile(t, []tensor.Meta{m}, func(in []*tensor.Tensor) []*tensor.Tensor {
		return []*tensor.Tensor{ops.Sum(ops.Tanh(ops.MatMul(in[0], w)), 1)}
	})
	args := []*tensor.Tensor{tensor.Ones(tensor.Float32, 64, 32)}
	outs := []*tensor.Tensor{tensor.Zeros(tensor.Float32, 64)}
	p.RunInto(args, outs)
	if n := testing.AllocsPerRun(50, func() { p.RunInto(args, outs) }); n != 0 {
		t.Fatalf("RunInto allocates %v times", n)
	}
}

func TestRunRejectsWrongArguments(t *testing.T) {
	m := tensor.Meta{Shape: tensor.Shape{3}, DType: tensor.Float32}
	p := compile(t, []tensor.Meta{m}, func(in []*tensor.Tensor) []*tensor.Tensor { return in })
	defer func() {
		if r := recover(); r == nil {
			t.Fatal("a wrongly shaped argument was accepted")
		}
	}()
	p.Run([]*tensor.Tensor{tensor.Zeros(tensor.Float32, 4)})
}
