package spore_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/optest"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// The equivalence suite runs every primitive and composite op eagerly
// (PyNative) and compiled (Graph mode) on the same inputs and compares: at
// O0 the results must be bitwise equal; at O1 within the documented float32
// tolerance |got − want| ≤ 1e-5·(1 + |want|) (fusion may use the vectorised
// transcendental kernels and reorder nothing else). Gradients are compared
// the same way: Grad eagerly against Jit(Grad).

type equivCase struct {
	name string
	in   []*spore.Tensor
	f    func(x ...*spore.Tensor) *spore.Tensor
	// grad differentiates with respect to the inputs diff lists, or every
	// float input when diff is nil.
	grad bool
	diff []int
}

// catalogueCases are optest's primitives at Float32. Primitives that draw
// random numbers (Fresh) are left out: a compiled plan draws anew, so its
// results differ from the eager run's by design.
func catalogueCases() []equivCase {
	var cs []equivCase
	for _, c := range optest.Cases() {
		if c.Prim.Traits.Fresh {
			continue
		}
		cs = append(cs, equivCase{name: c.Name, in: c.Inputs(spore.Float32), f: c.Fn, grad: c.Differentiable, diff: c.Diff})
	}
	return cs
}

func rnd(seed uint64, lo, hi float32, shape ...int) *spore.Tensor {
	r := rand.New(rand.NewPCG(seed, 11))
	d := make([]float32, tensor.Shape(shape).Size())
	for i := range d {
		d[i] = lo + (hi-lo)*r.Float32()
	}
	return tensor.FromSlice(d, shape...)
}

func equivCases() []equivCase {
	a := rnd(1, -2, 2, 4, 6)
	b := rnd(2, -2, 2, 4, 6)
	pos := rnd(3, 0.2, 3, 4, 6)
	row := rnd(4, -1, 1, 6)
	img := rnd(5, -1, 1, 2, 3, 8, 8)
	labels := tensor.FromSlice([]int32{0, 5, 2, 3}, 4)
	u := func(f func(*spore.Tensor) *spore.Tensor) func(...*spore.Tensor) *spore.Tensor {
		return func(x ...*spore.Tensor) *spore.Tensor { return f(x[0]) }
	}
	bi := func(f func(x, y *spore.Tensor) *spore.Tensor) func(...*spore.Tensor) *spore.Tensor {
		return func(x ...*spore.Tensor) *spore.Tensor { return f(x[0], x[1]) }
	}
	toF := func(t *spore.Tensor) *spore.Tensor { return ops.Cast(t, spore.Float32) }
	// The primitives come from optest's catalogue, at Float32, so that a
	// new primitive is checked here with no edit; what follows are the
	// composites (ops built of primitives) and attribute forms the
	// catalogue does not hold.
	cs := catalogueCases()
	cs = append(cs, []equivCase{
		{"Logical", []*spore.Tensor{a, b}, func(x ...*spore.Tensor) *spore.Tensor {
			p, q := ops.Greater(x[0], x[1]), ops.Less(x[0], ops.ScalarLike(x[0], 0))
			return toF(ops.LogicalOr(ops.LogicalAnd(p, q), ops.LogicalNot(q)))
		}, false, nil},
		{"Mean", []*spore.Tensor{a}, func(x ...*spore.Tensor) *spore.Tensor { return ops.MeanKeepDims(x[0], -1) }, true, nil},
		{"AnyAll", []*spore.Tensor{a}, func(x ...*spore.Tensor) *spore.Tensor {
			g := ops.Greater(x[0], ops.ScalarLike(x[0], 1))
			return ops.Add(toF(ops.Any(g, 1)), toF(ops.All(g, 1)))
		}, false, nil},
		{"MatMulT", []*spore.Tensor{a, b}, func(x ...*spore.Tensor) *spore.Tensor { return ops.MatMulT(x[0], x[1], true, false) }, true, nil},
		{"MatMulBatched", []*spore.Tensor{rnd(8, -1, 1, 3, 4, 6), b}, func(x ...*spore.Tensor) *spore.Tensor { return ops.MatMulT(x[0], x[1], false, true) }, true, nil},
		{"T", []*spore.Tensor{a}, u(ops.T), true, nil},
		{"ExpandSqueeze", []*spore.Tensor{a}, func(x ...*spore.Tensor) *spore.Tensor { return ops.Squeeze(ops.ExpandDims(x[0], 1), 1) }, true, nil},
		{"Stack", []*spore.Tensor{a, b}, func(x ...*spore.Tensor) *spore.Tensor { return ops.Stack(-1, x[0], x[1]) }, true, nil},
		{"Split", []*spore.Tensor{a}, func(x ...*spore.Tensor) *spore.Tensor {
			p := ops.Split(x[0], 1, 2, 4)
			return ops.Add(ops.Sum(p[0]), ops.Sum(ops.Mul(p[1], p[1])))
		}, true, nil},
		{"Slice", []*spore.Tensor{a}, func(x ...*spore.Tensor) *spore.Tensor { return ops.Slice(x[0], []int{1, 2}, []int{2, -1}) }, true, nil},
		{"Pad", []*spore.Tensor{a}, func(x ...*spore.Tensor) *spore.Tensor { return ops.Pad(x[0], [][2]int{{1, 0}, {2, 1}}) }, true, nil},
		{"Tile", []*spore.Tensor{row}, func(x ...*spore.Tensor) *spore.Tensor { return ops.Tile(x[0], 2, 2) }, true, nil},
		{"Conv2DGroups", []*spore.Tensor{rnd(9, -1, 1, 1, 4, 6, 6), rnd(10, -1, 1, 4, 2, 3, 3)}, func(x ...*spore.Tensor) *spore.Tensor {
			return ops.Conv2D(x[0], x[1], ops.Conv2DOpts{Groups: 2, Dilation: [2]int{2, 1}})
		}, true, nil},
		{"DropoutEval", []*spore.Tensor{a}, func(x ...*spore.Tensor) *spore.Tensor { return ops.Dropout(x[0], 0.5, false) }, true, nil},
		{"Softmax", []*spore.Tensor{a}, func(x ...*spore.Tensor) *spore.Tensor { return ops.Softmax(x[0], -1) }, true, nil},
		{"LogSoftmax", []*spore.Tensor{a}, func(x ...*spore.Tensor) *spore.Tensor { return ops.LogSoftmax(x[0], 0) }, true, nil},
		{"LogSumExp", []*spore.Tensor{a}, func(x ...*spore.Tensor) *spore.Tensor { return ops.LogSumExp(x[0], []int{1}, true) }, true, nil},
		{"CrossEntropy", []*spore.Tensor{a}, func(x ...*spore.Tensor) *spore.Tensor { return ops.CrossEntropy(x[0], labels, "mean") }, true, nil},
		{"CrossEntropyProbs", []*spore.Tensor{a, b}, func(x ...*spore.Tensor) *spore.Tensor {
			return ops.CrossEntropyProbs(x[0], ops.Softmax(x[1], -1), "sum")
		}, true, nil},
		{"MSE", []*spore.Tensor{a, b}, func(x ...*spore.Tensor) *spore.Tensor { return ops.MSE(x[0], x[1], "none") }, true, nil},
		{"Mod", []*spore.Tensor{a, pos}, bi(ops.Mod), true, nil},
		{"CumSumReverse", []*spore.Tensor{a}, func(x ...*spore.Tensor) *spore.Tensor { return ops.CumSum(x[0], 0, false, true) }, true, nil},
		{"Sort", []*spore.Tensor{a}, func(x ...*spore.Tensor) *spore.Tensor {
			v, i := ops.Sort(x[0], 0, true)
			return ops.Add(v, toF(i))
		}, true, nil},
		{"TopK", []*spore.Tensor{a}, func(x ...*spore.Tensor) *spore.Tensor {
			v, i := ops.TopK(x[0], 3)
			return ops.Mul(v, toF(i))
		}, true, nil},
		{"BatchNormTrain", []*spore.Tensor{img, rnd(12, 0.5, 1.5, 3), rnd(13, -1, 1, 3)}, func(x ...*spore.Tensor) *spore.Tensor {
			y, m, v := ops.BatchNorm(x[0], x[1], x[2], tensor.Zeros(spore.Float32, 3), tensor.Ones(spore.Float32, 3), true, 0.9, 1e-5)
			return ops.Add(ops.Sum(y, 0), ops.Reshape(ops.Add(m, v), 3, 1, 1))
		}, true, nil},
		{"BatchNormInfer", []*spore.Tensor{img, rnd(12, 0.5, 1.5, 3), rnd(13, -1, 1, 3)}, func(x ...*spore.Tensor) *spore.Tensor {
			y, _, _ := ops.BatchNorm(x[0], x[1], x[2], rnd(14, -0.1, 0.1, 3), rnd(15, 0.5, 2, 3), false, 0.9, 1e-5)
			return y
		}, true, nil},
	}...)
	return cs
}

// compare reports the first element where got and want differ by more than
// tol relative (0: bitwise).
func compare(got, want *spore.Tensor, tol float64) error {
	if !got.Shape().Equal(want.Shape()) || got.DType() != want.DType() {
		return fmt.Errorf("got %v %v, want %v %v", got.DType(), got.Shape(), want.DType(), want.Shape())
	}
	g, w := got.Float64s(), want.Float64s()
	for i := range g {
		same := g[i] == w[i] || (math.IsNaN(g[i]) && math.IsNaN(w[i]))
		if tol == 0 && !same && math.Float64bits(g[i]) != math.Float64bits(w[i]) {
			return fmt.Errorf("element %d: %v, want %v bitwise", i, g[i], w[i])
		}
		if tol > 0 && !same && math.Abs(g[i]-w[i]) > tol*(1+math.Abs(w[i])) {
			return fmt.Errorf("element %d: %v, want %v within %v", i, g[i], w[i], tol)
		}
	}
	return nil
}

// outcome runs f and returns its results, or the *tensor.Error it panicked
// with. Any other panic is a bug in itself and propagates.
func outcome(f func() []*spore.Tensor) (res []*spore.Tensor, err *tensor.Error) {
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(*tensor.Error)
			if !ok {
				panic(r)
			}
			err = e
		}
	}()
	return f(), nil
}

// sameOutcome says how a Graph-mode run (got, gotErr) differs from the
// PyNative one (want, wantErr): both must give results equal within tol,
// or both must refuse with the same error — the same op, message and
// source line.
func sameOutcome(got []*spore.Tensor, gotErr *tensor.Error, want []*spore.Tensor, wantErr *tensor.Error, tol float64) error {
	switch {
	case wantErr != nil && gotErr == nil:
		return fmt.Errorf("PyNative refused (%v), Graph mode returned a result", wantErr)
	case wantErr == nil && gotErr != nil:
		return fmt.Errorf("Graph mode refused (%v), PyNative returned a result", gotErr)
	case wantErr != nil:
		if *gotErr != *wantErr {
			return fmt.Errorf("Graph mode refused with %q, PyNative with %q", gotErr, wantErr)
		}
		return nil
	}
	if len(got) != len(want) {
		return fmt.Errorf("%d results, want %d", len(got), len(want))
	}
	for k := range want {
		if err := compare(got[k], want[k], tol); err != nil {
			return fmt.Errorf("result %d: %v", k, err)
		}
	}
	return nil
}

func one(t *spore.Tensor) []*spore.Tensor { return []*spore.Tensor{t} }

func TestEquivalencePyNativeGraph(t *testing.T) {
	levels := []struct {
		level spore.Level
		tol   float64
	}{{spore.O0, 0}, {spore.O1, 1e-5}}
	for _, c := range equivCases() {
		t.Run(c.name, func(t *testing.T) {
			want := c.f(c.in...)
			pos := c.diff
			if pos == nil {
				for i, x := range c.in {
					if x.DType() == spore.Float32 {
						pos = append(pos, i)
					}
				}
			}
			// Project non-scalar outputs on fixed weights so that every
			// element takes part in the gradient.
			// An output that is not floating point (a comparison, an
			// index) has no gradient to compare.
			w := rnd(77, 0.5, 1.5, want.Shape()...)
			differentiable := c.grad && want.DType().IsFloat()
			if differentiable && want.DType() != w.DType() {
				w = ops.Cast(w, want.DType())
			}
			loss := func(x ...*spore.Tensor) *spore.Tensor { return ops.Sum(ops.Mul(c.f(x...), w)) }
			grad := spore.Grad(loss, spore.GradPosition(pos...))
			var wantG []*spore.Tensor
			if differentiable {
				wantG = grad(c.in...)
			}
			for _, l := range levels {
				got := spore.Jit(c.f, spore.JitConfig{Level: l.level})(c.in...)
				if err := compare(got, want, l.tol); err != nil {
					t.Fatalf("%v forward: %v", l.level, err)
				}
				if !differentiable {
					continue
				}
				gotG := spore.Jit(func(x ...*spore.Tensor) []*spore.Tensor { return grad(x...) }, spore.JitConfig{Level: l.level})(c.in...)
				for k := range wantG {
					if err := compare(gotG[k], wantG[k], l.tol); err != nil {
						t.Fatalf("%v gradient %d: %v", l.level, k, err)
					}
				}
			}
		})
	}
}

// badValueCase is a program PyNative refuses because of a value (a label, an
// index, a divisor) that only exists when kernels run.
type badValueCase struct {
	name string
	in   []*spore.Tensor
	f    func(x ...*spore.Tensor) *spore.Tensor
	// refusal is part of PyNative's message, so that a case that stops
	// being bad (or fails for another reason) is noticed.
	refusal string
	// grad also compares Grad eagerly against Jit(Grad), with respect to
	// the Float32 inputs.
	grad bool
}

func badValueCases() []badValueCase {
	logits := rnd(21, -1, 1, 4, 10)
	x := rnd(22, -1, 1, 4, 6)
	ok := tensor.FromSlice([]int32{0, 9, 2, 3}, 4)
	high := tensor.FromSlice([]int32{0, 12, 2, 3}, 4)
	neg := tensor.FromSlice([]int64{0, 1, -1, 3}, 4)
	idx := tensor.FromSlice([]int64{3, 0, 15}, 3)
	ints := tensor.FromSlice([]int32{7, -3, 4, 19}, 4)
	zero := tensor.FromSlice([]int32{2, 0, 1, 5}, 4)
	spore.SetSeed(3)
	emb := nn.NewEmbedding(10, 3)
	nll, smooth := nn.NewNLLLoss(""), nn.NewCrossEntropyLoss("sum", 0.1)
	sparse := nn.NewSoftmaxCrossEntropyWithLogits(true, nn.Mean)
	ce := func(x ...*spore.Tensor) *spore.Tensor { return ops.CrossEntropy(x[0], x[1], "mean") }
	pred := func(x *spore.Tensor) *spore.Tensor { return ops.Greater(ops.Sum(x), ops.ScalarLike(x, -1e9)) }
	return []badValueCase{
		{"CrossEntropy/label12", []*spore.Tensor{logits, high}, ce, "label 12 at position 1 is out of range for 10 classes", true},
		{"CrossEntropy/label-1", []*spore.Tensor{logits, neg}, ce, "label -1 at position 2", true},
		{"CrossEntropy/sum", []*spore.Tensor{logits, high}, func(x ...*spore.Tensor) *spore.Tensor {
			return ops.CrossEntropy(x[0], x[1], "sum")
		}, "label 12", true},
		// The loss is computed and dropped: PyNative still checked it.
		{"CrossEntropy/unused", []*spore.Tensor{logits, high}, func(x ...*spore.Tensor) *spore.Tensor {
			ops.CrossEntropy(x[0], x[1], "none")
			return ops.Mul(x[0], x[0])
		}, "label 12", true},
		{"CrossEntropy/good", []*spore.Tensor{logits, ok}, ce, "", true},
		{"NLLLoss", []*spore.Tensor{logits, high}, func(x ...*spore.Tensor) *spore.Tensor {
			return nll.Construct(ops.LogSoftmax(x[0], -1), x[1])
		}, "nn.NLLLoss: label 12", true},
		{"CrossEntropyLoss/smoothing", []*spore.Tensor{logits, neg}, func(x ...*spore.Tensor) *spore.Tensor {
			return smooth.Construct(x[0], x[1])
		}, "nn.CrossEntropyLoss: label -1", true},
		{"SoftmaxCrossEntropyWithLogits", []*spore.Tensor{logits, high}, func(x ...*spore.Tensor) *spore.Tensor {
			return sparse.Construct(x[0], x[1])
		}, "label 12", true},
		{"Gather", []*spore.Tensor{x, idx}, func(x ...*spore.Tensor) *spore.Tensor { return ops.Gather(x[0], x[1], 1) }, "Gather: index 15 out of range", true},
		{"TakeAlongAxis", []*spore.Tensor{logits, high}, func(x ...*spore.Tensor) *spore.Tensor {
			return ops.TakeAlongAxis(x[0], ops.Reshape(x[1], 4, 1), 1)
		}, "TakeAlongAxis: index 12 out of range", true},
		{"Embedding", []*spore.Tensor{ints}, func(x ...*spore.Tensor) *spore.Tensor { return emb.Construct(x[0]) }, "Gather: index 19", false},
		{"FloorDiv", []*spore.Tensor{ints, zero}, func(x ...*spore.Tensor) *spore.Tensor {
			return ops.Cast(ops.FloorDiv(x[0], x[1]), spore.Float32)
		}, "FloorDiv: integer division by zero", false},
		{"Mod", []*spore.Tensor{ints, zero}, func(x ...*spore.Tensor) *spore.Tensor {
			return ops.Cast(ops.Mod(x[0], x[1]), spore.Float32)
		}, "integer division by zero", false},
		// Inside control-flow bodies, which compile to plans of their own.
		{"Cond", []*spore.Tensor{logits, high}, func(x ...*spore.Tensor) *spore.Tensor {
			return spore.Cond(pred(x[0]), func(v ...*spore.Tensor) []*spore.Tensor { return one(ops.CrossEntropy(v[0], v[1], "mean")) },
				func(v ...*spore.Tensor) []*spore.Tensor { return one(ops.Sum(v[0])) }, x...)[0]
		}, "label 12", true},
		{"Scan", []*spore.Tensor{ops.Reshape(logits, 2, 2, 10), ops.Reshape(high, 2, 2)}, func(x ...*spore.Tensor) *spore.Tensor {
			c, _ := spore.Scan(func(c, v []*spore.Tensor) ([]*spore.Tensor, []*spore.Tensor) {
				l := ops.CrossEntropy(v[0], v[1], "sum")
				return one(ops.Add(c[0], l)), one(l)
			}, one(tensor.Zeros(spore.Float32)), x)
			return c[0]
		}, "label 12 at position 1", true},
	}
}

// TestModesAgreeOnBadValues: whatever PyNative refuses because of a value,
// Graph mode refuses too, at every level, with the same *tensor.Error —
// forward and under differentiation.
func TestModesAgreeOnBadValues(t *testing.T) {
	for _, c := range badValueCases() {
		t.Run(c.name, func(t *testing.T) {
			want, wantErr := outcome(func() []*spore.Tensor { return one(c.f(c.in...)) })
			switch {
			case c.refusal == "" && wantErr != nil:
				t.Fatalf("PyNative refused a good program: %v", wantErr)
			case c.refusal != "" && (wantErr == nil || !strings.Contains(wantErr.Msg, c.refusal) && !strings.Contains(wantErr.Error(), c.refusal)):
				t.Fatalf("PyNative gave %v, want a refusal containing %q", wantErr, c.refusal)
			}
			var pos []int
			for i, x := range c.in {
				if x.DType() == spore.Float32 {
					pos = append(pos, i)
				}
			}
			grad := spore.Grad(func(x ...*spore.Tensor) *spore.Tensor { return ops.Sum(c.f(x...)) }, spore.GradPosition(pos...))
			wantG, wantGErr := outcome(func() []*spore.Tensor { return grad(c.in...) })
			for _, l := range []struct {
				level spore.Level
				tol   float64
			}{{spore.O0, 0}, {spore.O1, 1e-5}, {spore.O2, 1e-5}} {
				got, gotErr := outcome(func() []*spore.Tensor { return one(spore.Jit(c.f, spore.JitConfig{Level: l.level})(c.in...)) })
				if err := sameOutcome(got, gotErr, want, wantErr, l.tol); err != nil {
					t.Errorf("%v forward: %v", l.level, err)
				}
				if !c.grad {
					continue
				}
				jg := spore.Jit(func(x ...*spore.Tensor) []*spore.Tensor { return grad(x...) }, spore.JitConfig{Level: l.level})
				gotG, gotGErr := outcome(func() []*spore.Tensor { return jg(c.in...) })
				if err := sameOutcome(gotG, gotGErr, wantG, wantGErr, 1e-4); err != nil {
					t.Errorf("%v gradient: %v", l.level, err)
				}
			}
		})
	}
}
