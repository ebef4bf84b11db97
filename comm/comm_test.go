package comm_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/comm"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// panicErr runs f and returns the *tensor.Error it panicked with, or nil.
func panicErr(t *testing.T, f func()) (err *tensor.Error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(error)
			if !ok || !errors.As(e, &err) {
				t.Fatalf("panicked with %v (%T), want a *tensor.Error", r, r)
			}
		}
	}()
	f()
	return nil
}

func TestLifecycleSingle(t *testing.T) {
	if comm.Initialized() || comm.Rank() != 0 || comm.Size() != 1 {
		t.Fatalf("before Init: initialized=%v rank=%d size=%d", comm.Initialized(), comm.Rank(), comm.Size())
	}
	for range 2 { // idempotent
		if err := comm.Init(); err != nil {
			t.Fatal(err)
		}
	}
	if !comm.Initialized() || comm.Rank() != 0 || comm.Size() != 1 || comm.Backend() != "single-process" {
		t.Fatalf("after Init: initialized=%v rank=%d size=%d backend=%q", comm.Initialized(), comm.Rank(), comm.Size(), comm.Backend())
	}
	if err := comm.Barrier(); err != nil {
		t.Fatal(err)
	}
	if err := comm.Finalize(); err != nil {
		t.Fatal(err)
	}
	if comm.Initialized() {
		t.Fatal("Initialized after Finalize")
	}
}

// In one process every collective returns its input, eagerly and under
// Jit alike.
func TestCollectivesSingle(t *testing.T) {
	x := tensor.FromSlice([]float32{1, -2, 3, 4.5}, 2, 2)
	cases := []struct {
		name string
		fn   func(*tensor.Tensor) *tensor.Tensor
		want []float32
	}{
		{"AllReduceSum", func(x *tensor.Tensor) *tensor.Tensor { return comm.AllReduce(x, comm.Sum) }, []float32{1, -2, 3, 4.5}},
		{"AllReduceMean", func(x *tensor.Tensor) *tensor.Tensor { return comm.AllReduce(x, comm.Mean) }, []float32{1, -2, 3, 4.5}},
		{"AllReduceMax", func(x *tensor.Tensor) *tensor.Tensor { return comm.AllReduce(x, comm.Max) }, []float32{1, -2, 3, 4.5}},
		{"StartWait", func(x *tensor.Tensor) *tensor.Tensor {
			return comm.AllReduceWait(comm.AllReduceStart(comm.Mean, ops.Mul(x, x)), comm.Mean, x.Shape())[0]
		}, []float32{1, 4, 9, 20.25}},
		{"Broadcast", func(x *tensor.Tensor) *tensor.Tensor { return comm.Broadcast(x, 0) }, []float32{1, -2, 3, 4.5}},
		{"AllGather", comm.AllGather, []float32{1, -2, 3, 4.5}},
		{"Reduce", func(x *tensor.Tensor) *tensor.Tensor { return comm.Reduce(x, 0) }, []float32{1, -2, 3, 4.5}},
		{"ReduceScatter", comm.ReduceScatter, []float32{1, -2, 3, 4.5}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			eager := c.fn(x)
			graph := spore.Jit(c.fn)(x)
			for _, got := range []*tensor.Tensor{eager, graph} {
				if !got.Shape().Equal(x.Shape()) {
					t.Fatalf("shape %v, want %v", got.Shape(), x.Shape())
				}
				for i, v := range got.Float32s() {
					if v != c.want[i] {
						t.Fatalf("got %v, want %v", got.Float32s(), c.want)
					}
				}
			}
		})
	}
}

func TestCollectiveErrors(t *testing.T) {
	cases := []struct {
		name, want string
		fn         func()
	}{
		{"MeanOfInts", "mean needs a float", func() { comm.AllReduce(tensor.FromSlice([]int32{1}), comm.Mean) }},
		{"UnknownOp", "unknown reduction", func() { comm.AllReduce(tensor.FromSlice([]float32{1}), comm.ReduceOp(9)) }},
		{"BoolSum", "unsupported dtype", func() { comm.AllReduce(tensor.FromSlice([]bool{true}), comm.Sum) }},
		{"BroadcastRoot", "root rank 1 is out of range for 1 ranks", func() { comm.Broadcast(tensor.FromSlice([]float32{1}), 1) }},
		{"GatherScalar", "needs a tensor with an axis 0", func() { comm.AllGather(tensor.Scalar[float32](1)) }},
		{"ReduceRoot", "root rank -1 is out of range", func() { comm.Reduce(tensor.FromSlice([]float32{1}), -1) }},
		{"ReduceBool", "unsupported dtype", func() { comm.Reduce(tensor.FromSlice([]bool{true}), 0) }},
		{"ScatterScalar", "needs an axis 0 divisible", func() { comm.ReduceScatter(tensor.Scalar[float32](1)) }},
		{"WaitWithoutStart", "not the handle of an all-reduce", func() {
			comm.AllReduceWait(tensor.FromSlice([]float32{1, 2}), comm.Sum, tensor.Shape{2})
		}},
		{"WaitShapes", "shapes [[3]] hold 3 elements, the handle [2]", func() {
			comm.AllReduceWait(comm.AllReduceStart(comm.Sum, tensor.FromSlice([]float32{1, 2})), comm.Sum, tensor.Shape{3})
		}},
		{"StartMixed", "a bucket holds one dtype", func() {
			comm.AllReduceStart(comm.Sum, tensor.FromSlice([]float32{1}), tensor.FromSlice([]float64{1}))
		}},
		{"StartNothing", "no tensors to reduce", func() { comm.AllReduceStart(comm.Sum) }},
		{"MaxGrad", "max is not differentiable", func() {
			spore.Grad(func(x *tensor.Tensor) *tensor.Tensor { return ops.Sum(comm.AllReduce(x, comm.Max)) })(tensor.FromSlice([]float64{1, 2}))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := panicErr(t, c.fn)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// The gradient of a collective is its adjoint collective of the
// cotangent: in one process, the cotangent itself.
func TestCollectiveGrads(t *testing.T) {
	x := tensor.FromSlice([]float64{1, 2, 3})
	for name, c := range map[string]func(*tensor.Tensor) *tensor.Tensor{
		"AllReduceSum":  func(x *tensor.Tensor) *tensor.Tensor { return comm.AllReduce(x, comm.Sum) },
		"AllReduceMean": func(x *tensor.Tensor) *tensor.Tensor { return comm.AllReduce(x, comm.Mean) },
		"Broadcast":     func(x *tensor.Tensor) *tensor.Tensor { return comm.Broadcast(x, 0) },
		"Reduce":        func(x *tensor.Tensor) *tensor.Tensor { return comm.Reduce(x, 0) },
		"AllGather":     comm.AllGather,
		"ReduceScatter": comm.ReduceScatter,
	} {
		f := func(x *tensor.Tensor) *tensor.Tensor { return ops.Sum(ops.Mul(c(x), x)) }
		for mode, g := range map[string][]*tensor.Tensor{"eager": spore.Grad(f)(x), "graph": spore.Jit(spore.Grad(f))(x)} {
			got := g[0].Float64s()
			for i, v := range []float64{2, 4, 6} {
				if got[i] != v {
					t.Errorf("%s %s: grad %v, want [2 4 6]", name, mode, got)
					break
				}
			}
		}
	}
}

func TestCollectivesInIR(t *testing.T) {
	f := func(x *tensor.Tensor) *tensor.Tensor {
		h := comm.AllReduceStart(comm.Mean, x, x)
		r := comm.AllReduceWait(h, comm.Mean, x.Shape(), x.Shape())
		return ops.Add(comm.AllReduce(x, comm.Sum), ops.Mul(r[0], r[1]))
	}
	ir, err := spore.IR(f, []any{tensor.FromSlice([]float32{1, 2})})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"AllReduce(", "AllReduceStart(", "AllReduceWait(", "op=sum", "op=mean"} {
		if !strings.Contains(ir, want) {
			t.Errorf("IR lacks %q:\n%s", want, ir)
		}
	}
}

func TestHelpersSingle(t *testing.T) {
	v := []float64{1, 2.5}
	for _, op := range []comm.ReduceOp{comm.Sum, comm.Mean, comm.Max} {
		if err := comm.AllReduceFloat64s(v, op); err != nil || v[0] != 1 || v[1] != 2.5 {
			t.Fatalf("AllReduceFloat64s %v: %v %v", op, v, err)
		}
	}
	if err := comm.AllReduceFloat64s(v, comm.ReduceOp(7)); err == nil {
		t.Error("AllReduceFloat64s accepted an unknown reduction")
	}
	got, err := comm.AllGatherBytes([]byte("abc"))
	if err != nil || len(got) != 1 || string(got[0]) != "abc" {
		t.Fatalf("AllGatherBytes: %q %v", got, err)
	}
	w := tensor.NewParameter("w", tensor.FromSlice([]float32{1, 2}))
	if err := comm.BroadcastParameters([]*tensor.Tensor{w}, 0); err != nil {
		t.Fatal(err)
	}
	if w.Float32s()[1] != 2 {
		t.Errorf("BroadcastParameters changed w to %v", w)
	}
	for _, bad := range []struct {
		params []*tensor.Tensor
		root   int
		want   string
	}{
		{[]*tensor.Tensor{w}, 3, "root rank 3 is out of range"},
		{[]*tensor.Tensor{w, nil}, 0, "parameter 1 is nil"},
	} {
		if err := comm.BroadcastParameters(bad.params, bad.root); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("BroadcastParameters: error %v, want %q", err, bad.want)
		}
	}
}
