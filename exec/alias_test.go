package exec_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/sporeml/spore/exec"
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// aliasCase is a traced function whose plan shares buffers between values
// (views, Concat's placed arguments, in-place updates), what the plan must
// show of that sharing, and inputs to run it on.
type aliasCase struct {
	name   string
	shapes []tensor.Shape
	f      func(in []*tensor.Tensor) []*tensor.Tensor
	// placed and noOps are the plan's PlacedArgs and NoOpPacks.
	placed, noOps int
}

func aliasCases() []aliasCase {
	exp, neg := ops.Exp, ops.Neg
	return []aliasCase{
		{name: "view whose source is then updated in place", shapes: []tensor.Shape{{2, 3}},
			f: func(in []*tensor.Tensor) []*tensor.Tensor {
				a := exp(in[0])
				v := ops.Reshape(a, 6)
				w := neg(a) // must not overwrite a while v is still read
				return []*tensor.Tensor{w, ops.AddScalar(v, 1)}
			}},
		{name: "view of a graph input", shapes: []tensor.Shape{{2, 3}},
			f: func(in []*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{ops.Reshape(in[0], 3, 2), ops.Sum(ops.Reshape(in[0], 6), 0)}
			}},
		{name: "view returned as a result beside its source", shapes: []tensor.Shape{{4}},
			f: func(in []*tensor.Tensor) []*tensor.Tensor {
				a := exp(in[0])
				return []*tensor.Tensor{ops.Reshape(a, 2, 2), a, ops.Reshape(a, 1, 4, 1)}
			}},
		{name: "concat of two producers on axis 1 at batch 1", shapes: []tensor.Shape{{1, 3, 5}, {1, 2, 5}},
			f: func(in []*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{ops.Concat(1, exp(in[0]), ops.Tanh(in[1]))}
			},
			placed: 2, noOps: 1},
		{name: "concat on an axis with a batch before it", shapes: []tensor.Shape{{2, 3, 5}, {2, 2, 5}},
			f: func(in []*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{ops.Concat(1, exp(in[0]), ops.Tanh(in[1]))}
			}},
		{name: "concat of a graph input copies it", shapes: []tensor.Shape{{3, 4}, {5, 4}},
			f: func(in []*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{ops.Concat(0, in[0], exp(in[1]))}
			},
			placed: 1},
		{name: "concat whose producer is read after it", shapes: []tensor.Shape{{3}, {4}},
			f: func(in []*tensor.Tensor) []*tensor.Tensor {
				a := exp(in[0])
				c := ops.Concat(0, a, exp(in[1]))
				// a, read by the Mul after the Concat, keeps its own
				// buffer, so that neg(c) can update c's in place.
				n := neg(c)
				return []*tensor.Tensor{n, ops.Mul(a, a)}
			},
			placed: 1},
		{name: "concat whose producer is read before it", shapes: []tensor.Shape{{3}, {4}},
			f: func(in []*tensor.Tensor) []*tensor.Tensor {
				a := exp(in[0])
				s := ops.Sum(a, 0)
				return []*tensor.Tensor{ops.Concat(0, a, exp(in[1])), s}
			},
			placed: 2, noOps: 1},
		{name: "concat updated in place after", shapes: []tensor.Shape{{1, 7}, {1, 9}},
			f: func(in []*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{ops.ReLU(neg(ops.Concat(1, exp(in[0]), exp(in[1]))))}
			},
			placed: 2, noOps: 1},
		{name: "concat of a view of a producer", shapes: []tensor.Shape{{2, 3}, {4}},
			f: func(in []*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{ops.Concat(0, ops.Reshape(exp(in[0]), 6), exp(in[1]))}
			},
			placed: 2, noOps: 1},
		{name: "nested concats", shapes: []tensor.Shape{{1, 2}, {1, 3}, {1, 5}},
			f: func(in []*tensor.Tensor) []*tensor.Tensor {
				inner := ops.Concat(1, exp(in[0]), exp(in[1]))
				return []*tensor.Tensor{ops.Concat(1, inner, exp(in[2]))}
			},
			placed: 4, noOps: 2},
		{name: "the same value twice", shapes: []tensor.Shape{{3}},
			f: func(in []*tensor.Tensor) []*tensor.Tensor {
				a := exp(in[0])
				return []*tensor.Tensor{ops.Concat(0, a, a, neg(in[0]))}
			},
			placed: 2},
		{name: "concat of an in-place result", shapes: []tensor.Shape{{17}, {3}},
			f: func(in []*tensor.Tensor) []*tensor.Tensor {
				// neg(exp(x)) shares exp's buffer: such a chain keeps it.
				return []*tensor.Tensor{ops.Concat(0, neg(exp(in[0])), exp(in[1]))}
			},
			placed: 1},
	}
}

// TestAliasedBuffers checks, for every case, that the plan computes what
// the ops compute eagerly, bit for bit, over two runs on different inputs
// (so that a rebinding or a stale placement shows), that the results it
// returns do not change with later runs, and that it places what it
// should.
func TestAliasedBuffers(t *testing.T) {
	for _, c := range aliasCases() {
		t.Run(c.name, func(t *testing.T) {
			metas := make([]tensor.Meta, len(c.shapes))
			for i, s := range c.shapes {
				metas[i] = tensor.Meta{Shape: s, DType: tensor.Float32}
			}
			g, err := graph.Trace("f", metas, c.f)
			if err != nil {
				t.Fatal(err)
			}
			p, err := exec.Compile(g)
			if err != nil {
				t.Fatal(err)
			}
			if p.PlacedArgs != c.placed || p.NoOpPacks != c.noOps {
				t.Errorf("placed %d arguments, %d concats without a step; want %d and %d", p.PlacedArgs, p.NoOpPacks, c.placed, c.noOps)
			}
			var first, firstWant []*tensor.Tensor
			for run := range 2 {
				in := make([]*tensor.Tensor, len(c.shapes))
				for i, s := range c.shapes {
					tensor.SetSeed(int64(10*run + i))
					in[i] = tensor.RandNormal(tensor.Float32, 0, 1, s...)
				}
				want := c.f(in)
				got := p.Run(in)
				sameTensors(t, fmt.Sprintf("run %d", run), got, want)
				if run == 0 {
					first, firstWant = got, want
				}
			}
			sameTensors(t, "the first run's results after the second", first, firstWant)
		})
	}
}

func sameTensors(t *testing.T, what string, got, want []*tensor.Tensor) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d results, want %d", what, len(got), len(want))
	}
	for k := range want {
		if !got[k].Shape().Equal(want[k].Shape()) {
			t.Fatalf("%s: result %d has shape %v, want %v", what, k, got[k].Shape(), want[k].Shape())
		}
		a, b := got[k].Float32s(), want[k].Float32s()
		for i := range b {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				t.Fatalf("%s: result %d element %d is %v, want %v", what, k, i, a[i], b[i])
			}
		}
	}
}
