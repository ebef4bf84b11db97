package exec_test

import (
	"testing"
	"unsafe"

	"github.com/sporeml/spore/exec"
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// TestResultsInArg plans an op that unpacks its argument into pieces
// (Traits.ResultsInArg): each result must be placed in the argument's
// buffer at its offset, views of a result must see the same elements, and
// the values must be those of a plan that copies.
func TestResultsInArg(t *testing.T) {
	var aliased int
	unpackPrim := func(inArg bool) *core.Prim {
		p := &core.Prim{
			Name:   "TestUnpack",
			Traits: core.Traits{Impure: true, ResultsInArg: inArg},
			InferN: func(_ any, in []*tensor.Tensor) []tensor.Meta {
				return []tensor.Meta{{Shape: tensor.Shape{2}, DType: tensor.Float32}, {Shape: tensor.Shape{4}, DType: tensor.Float32}}
			},
		}
		// The kernel doubles each piece, in place when it is there.
		p.RegisterNAll(core.CPU, func(_ any, in []*tensor.Tensor, outs []*tensor.Tensor) {
			src := in[0].Data().([]float32)
			off := 0
			for _, o := range outs {
				d := o.Data().([]float32)
				if unsafe.Pointer(&d[0]) == unsafe.Pointer(&src[off]) {
					aliased++
				} else {
					copy(d, src[off:off+len(d)])
				}
				for i := range d {
					d[i] *= 2
				}
				off += len(d)
			}
		})
		return p
	}
	build := func(p *core.Prim) *graph.Graph {
		g := graph.New("unpack")
		x := g.Input(tensor.Meta{Shape: tensor.Shape{6}, DType: tensor.Float32})
		sum := g.Op(ops.AddPrim, nil, x, x)
		res := g.OpN(p, nil, []tensor.Meta{{Shape: tensor.Shape{2}, DType: tensor.Float32}, {Shape: tensor.Shape{4}, DType: tensor.Float32}}, sum)
		view := g.Op(ops.ReshapePrim, ops.ShapeAttr{Shape: tensor.Shape{2, 2}}, res[1])
		g.Outputs = []*graph.Value{g.Op(ops.NegPrim, nil, res[0]), view}
		g.CountUses()
		return g
	}
	x := tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6})
	run := func(inArg bool) []*tensor.Tensor {
		p, err := exec.Compile(build(unpackPrim(inArg)))
		if err != nil {
			t.Fatal(err)
		}
		return p.Run([]*tensor.Tensor{x})
	}
	want := run(false)
	if aliased != 0 {
		t.Fatalf("results placed in the argument without ResultsInArg")
	}
	got := run(true)
	if aliased != 2 {
		t.Errorf("%d of 2 results placed in the argument's buffer", aliased)
	}
	for i := range want {
		if !got[i].Shape().Equal(want[i].Shape()) {
			t.Fatalf("result %d: shape %v, want %v", i, got[i].Shape(), want[i].Shape())
		}
		for j, v := range want[i].Float32s() {
			if got[i].Float32s()[j] != v {
				t.Fatalf("result %d: %v, want %v", i, got[i], want[i])
			}
		}
	}
	if w := want[1].Float32s(); w[0] != 12 || w[3] != 24 {
		t.Errorf("view of the second piece = %v, want [[12 16] [20 24]]", want[1])
	}
}

// TestArgsInResult plans an op that packs its arguments (Traits.
// ArgsInResult) and then overwrites its result, as an all-reduce does: an
// argument computed by an op and read by nothing else is computed straight
// into its place; one read again later, and an argument of the function,
// are copied, so the later reader still sees its value.
func TestArgsInResult(t *testing.T) {
	var placed int
	packPrim := func(inResult bool) *core.Prim {
		p := &core.Prim{
			Name:   "TestPack",
			Traits: core.Traits{Impure: true, ArgsInResult: inResult},
			Infer: func(_ any, in []*tensor.Tensor) tensor.Meta {
				n := 0
				for _, x := range in {
					n += x.Size()
				}
				return tensor.Meta{Shape: tensor.Shape{n}, DType: tensor.Float32}
			},
		}
		p.RegisterAll(core.CPU, func(_ any, in []*tensor.Tensor, out *tensor.Tensor) {
			d := out.Data().([]float32)
			off := 0
			for _, x := range in {
				xs := x.Data().([]float32)
				if unsafe.Pointer(&xs[0]) == unsafe.Pointer(&d[off]) {
					placed++
				} else {
					copy(d[off:], xs)
				}
				off += len(xs)
			}
			for i := range d {
				d[i] *= 10
			}
		})
		return p
	}
	build := func(p *core.Prim) *graph.Graph {
		g := graph.New("pack")
		x := g.Input(tensor.Meta{Shape: tensor.Shape{2, 2}, DType: tensor.Float32})
		a := g.Op(ops.AddPrim, nil, x, x)                                                            // read only by the pack
		v := g.Op(ops.ReshapePrim, ops.ShapeAttr{Shape: tensor.Shape{4}}, g.Op(ops.ExpPrim, nil, x)) // a view, read only by the pack
		b := g.Op(ops.NegPrim, nil, x)                                                               // read again below
		packed := g.Op(p, nil, a, v, b, x)
		g.Outputs = []*graph.Value{packed, g.Op(ops.MulPrim, nil, b, b)}
		g.CountUses()
		return g
	}
	x := tensor.FromSlice([]float32{1, 2, 3, 4}, 2, 2)
	run := func(inResult bool) []*tensor.Tensor {
		p, err := exec.Compile(build(packPrim(inResult)))
		if err != nil {
			t.Fatal(err)
		}
		return p.Run([]*tensor.Tensor{x})
	}
	want := run(false)
	if placed != 0 {
		t.Fatalf("arguments placed in the result without ArgsInResult")
	}
	got := run(true)
	if placed != 2 {
		t.Errorf("%d of 4 arguments computed in place, want 2 (the sum and the view)", placed)
	}
	for i := range want {
		for j, v := range want[i].Float32s() {
			if got[i].Float32s()[j] != v {
				t.Fatalf("result %d: %v, want %v", i, got[i], want[i])
			}
		}
	}
}
