package compile_test

import (
	"testing"

	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

func TestCSE(t *testing.T) {
	add, mul, exp := ops.AddPrim, ops.MulPrim, ops.ExpPrim
	build := func() *graph.Graph {
		g := graph.New("cse")
		x, y := g.Input(f32(3, 4)), g.Input(f32(3, 4))
		a1 := g.Op(add, nil, x, y)
		a2 := g.Op(add, nil, y, x) // commutative: the same sum
		e1, e2 := g.Op(exp, nil, a1), g.Op(exp, nil, a2)
		c1, c2 := g.Const(scalar(2)), g.Const(scalar(2))
		m := g.Op(mul, nil, g.Op(mul, nil, e1, c1), g.Op(mul, nil, e2, c2))
		g.Outputs = []*graph.Value{m, a2}
		return g
	}
	g := checkPasses(t, build, "cse")
	if n := countOps(g, ops.AddPrim); n != 1 {
		t.Errorf("%d Adds after CSE, want 1:\n%s", n, g)
	}
	if n := countOps(g, ops.ExpPrim); n != 1 {
		t.Errorf("%d Exps after CSE, want 1:\n%s", n, g)
	}
	consts := 0
	for _, v := range g.Values {
		if v.Kind == graph.KindConst {
			consts++
		}
	}
	if consts != 1 {
		t.Errorf("%d constants after CSE, want 1:\n%s", consts, g)
	}
	if n := countOps(g, ops.MulPrim); n != 2 {
		t.Errorf("%d Muls after CSE, want 2 (e·2 twice merged, then the product):\n%s", n, g)
	}
}

func TestCSEKeepsDistinct(t *testing.T) {
	sub := ops.SubPrim
	sum := ops.SumPrim
	// A test-local impure op standing for a random draw: two draws differ.
	impure := &core.Prim{
		Name:   "TestDraw",
		Traits: core.Traits{Impure: true},
		Infer:  func(_ any, in []*tensor.Tensor) tensor.Meta { return in[0].Meta() },
	}
	impure.RegisterAll(core.CPU, func(_ any, in []*tensor.Tensor, out *tensor.Tensor) { core.Copy(out, in[0]) })
	g := graph.New("distinct")
	x, y := g.Input(f32(3, 4)), g.Input(f32(3, 4))
	s1, s2 := g.Op(sub, nil, x, y), g.Op(sub, nil, y, x) // not commutative
	r1 := g.Op(sum, ops.ReduceAttrs{Axes: []int{0}}, x)
	r2 := g.Op(sum, ops.ReduceAttrs{Axes: []int{1}}, x) // different attrs
	d1, d2 := g.Op(impure, nil, x), g.Op(impure, nil, x)
	g.Outputs = []*graph.Value{s1, s2, r1, r2, d1, d2}
	g.CountUses()
	applyPasses(t, g, "cse")
	if n := numOps(g); n != 6 {
		t.Fatalf("CSE merged distinct ops (%d left, want 6):\n%s", n, g)
	}
}

func TestConstFold(t *testing.T) {
	add, mul, bc := ops.AddPrim, ops.MulPrim, ops.BroadcastToPrim
	var w *tensor.Tensor
	build := func() *graph.Graph {
		g := graph.New("fold")
		x := g.Input(f32(20, 30))
		c := g.Op(mul, nil, g.Const(full(3, 20, 30)), g.Op(add, nil, g.Const(scalar(1)), g.Const(scalar(2))))
		if w == nil {
			w = tensor.NewParameter("w", full(5, 20, 30))
		}
		p := g.Op(add, nil, g.Param(w), g.Const(scalar(1))) // a parameter is not a constant
		b := g.Op(bc, ops.ShapeAttr{Shape: tensor.Shape{20, 30}}, g.Const(scalar(4)))
		small := g.Op(bc, ops.ShapeAttr{Shape: tensor.Shape{30}}, g.Const(scalar(4)))
		g.Outputs = []*graph.Value{g.Op(add, nil, g.Op(add, nil, x, c), g.Op(add, nil, p, g.Op(add, nil, b, small)))}
		return g
	}
	g := checkPasses(t, build, "constfold")
	if n := countOps(g, ops.MulPrim); n != 0 {
		t.Errorf("Mul of constants not folded:\n%s", g)
	}
	if n := countOps(g, ops.BroadcastToPrim); n != 1 {
		t.Errorf("want the large BroadcastTo kept and the small one folded:\n%s", g)
	}
	if n := countOps(g, ops.AddPrim); n != 5 {
		t.Errorf("%d Adds after folding, want 5 (x+c, w+1, b+small, p+that, the sum):\n%s", n, g)
	}
	for _, v := range g.Values {
		if v.Kind == graph.KindConst && v.Meta.Shape.Size() == 600 && v.Tensor.Float32s()[0] != 9 {
			t.Errorf("folded constant %v, want 3·(1+2) = 9", v.Tensor.Float32s()[:3])
		}
	}
}

func TestSimplify(t *testing.T) {
	add, sub, mul, div, neg := ops.AddPrim, ops.SubPrim, ops.MulPrim, ops.DivPrim, ops.NegPrim
	reshape, bc, cast := ops.ReshapePrim, ops.BroadcastToPrim, ops.CastPrim
	relu, reluGrad := ops.ReluPrim, ops.ReluGradPrim
	shape := func(s ...int) ops.ShapeAttr { return ops.ShapeAttr{Shape: s} }
	for _, tc := range []struct {
		name  string
		build func(g *graph.Graph, x *graph.Value) *graph.Value
		ops   int // ops left
	}{
		{"x+0", func(g *graph.Graph, x *graph.Value) *graph.Value { return g.Op(add, nil, x, g.Const(scalar(0))) }, 0},
		{"0+x", func(g *graph.Graph, x *graph.Value) *graph.Value { return g.Op(add, nil, g.Const(full(0, 4)), x) }, 0},
		{"x-0", func(g *graph.Graph, x *graph.Value) *graph.Value { return g.Op(sub, nil, x, g.Const(scalar(0))) }, 0},
		{"0-x stays", func(g *graph.Graph, x *graph.Value) *graph.Value { return g.Op(sub, nil, g.Const(scalar(0)), x) }, 1},
		{"x*1", func(g *graph.Graph, x *graph.Value) *graph.Value { return g.Op(mul, nil, x, g.Const(full(1, 1, 4))) }, 0},
		{"1*x", func(g *graph.Graph, x *graph.Value) *graph.Value { return g.Op(mul, nil, g.Const(scalar(1)), x) }, 0},
		{"x/1", func(g *graph.Graph, x *graph.Value) *graph.Value { return g.Op(div, nil, x, g.Const(scalar(1))) }, 0},
		{"x*2 stays", func(g *graph.Graph, x *graph.Value) *graph.Value { return g.Op(mul, nil, x, g.Const(scalar(2))) }, 1},
		{"x+0 broadcasting stays", func(g *graph.Graph, x *graph.Value) *graph.Value {
			return g.Op(add, nil, x, g.Const(full(0, 2, 3, 4)))
		}, 1},
		{"neg neg", func(g *graph.Graph, x *graph.Value) *graph.Value {
			return g.Op(neg, nil, g.Op(neg, nil, g.Op(neg, nil, g.Op(neg, nil, x))))
		}, 0},
		{"reshape chain", func(g *graph.Graph, x *graph.Value) *graph.Value {
			return g.Op(reshape, shape(12), g.Op(reshape, shape(4, 3), g.Op(reshape, shape(2, 6), x)))
		}, 1},
		{"reshape round trip", func(g *graph.Graph, x *graph.Value) *graph.Value {
			return g.Op(reshape, shape(3, 4), g.Op(reshape, shape(12), x))
		}, 0},
		{"broadcast to own shape", func(g *graph.Graph, x *graph.Value) *graph.Value { return g.Op(bc, shape(3, 4), x) }, 0},
		{"broadcast wider stays", func(g *graph.Graph, x *graph.Value) *graph.Value { return g.Op(bc, shape(2, 3, 4), x) }, 1},
		{"cast to own dtype", func(g *graph.Graph, x *graph.Value) *graph.Value { return g.Op(cast, tensor.Float32, x) }, 0},
		{"cast to float64 stays", func(g *graph.Graph, x *graph.Value) *graph.Value { return g.Op(cast, tensor.Float64, x) }, 1},
		{"relugrad reads the activation", func(g *graph.Graph, x *graph.Value) *graph.Value {
			y := g.Op(relu, nil, g.Op(add, nil, x, x))
			return g.Op(add, nil, y, g.Op(reluGrad, nil, y.Args[0], x))
		}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			build := func() *graph.Graph {
				g := graph.New("simplify")
				x := g.Input(f32(3, 4))
				g.Outputs = []*graph.Value{tc.build(g, x)}
				return g
			}
			g := checkPasses(t, build, "simplify")
			if n := numOps(g); n != tc.ops {
				t.Errorf("%d ops left, want %d:\n%s", n, tc.ops, g)
			}
		})
	}
}

func TestSimplifyReLUGrad(t *testing.T) {
	add, relu, reluGrad := ops.AddPrim, ops.ReluPrim, ops.ReluGradPrim
	g := graph.New("relugrad")
	x, dy := g.Input(f32(3, 4)), g.Input(f32(3, 4))
	z := g.Op(add, nil, x, x)
	y := g.Op(relu, nil, z)
	dz := g.Op(reluGrad, nil, z, dy)
	g.Outputs = []*graph.Value{y, dz}
	g.CountUses()
	applyPasses(t, g, "simplify")
	if dz.Args[0] != y {
		t.Fatalf("ReLUGrad still reads the pre-activation:\n%s", g)
	}
	if z.Uses != 1 {
		t.Fatalf("pre-activation has %d uses, want 1 (the ReLU)", z.Uses)
	}
}

// TestTableKernels checks that the passes see a primitive whose kernels
// are registered in the kernel table (and whose legacy Kernel field is
// nil) as an ordinary op: constant folding evaluates it, for the dtypes
// it has kernels for.
func TestTableKernels(t *testing.T) {
	twice := &core.Prim{
		Name:   "Twice",
		Traits: core.Traits{Elementwise: true, Cost: 1},
		Infer:  func(_ any, in []*tensor.Tensor) tensor.Meta { return in[0].Meta() },
	}
	twice.Register(tensor.Float32, core.CPU, func(_ any, in []*tensor.Tensor, out *tensor.Tensor) {
		o := out.Data().([]float32)
		for i, x := range in[0].Data().([]float32) {
			o[i] = 2 * x
		}
	})
	for _, tc := range []struct {
		name  string
		build func(g *graph.Graph) *graph.Value
		pass  string
		ops   int
	}{
		{"folded", func(g *graph.Graph) *graph.Value {
			return g.Op(ops.AddPrim, nil, g.Input(f32(3)), g.Op(twice, nil, g.Const(full(1.5, 3))))
		}, "constfold", 1},
		{"int32 has no kernel: not folded", func(g *graph.Graph) *graph.Value {
			g.Outputs = append(g.Outputs, g.Input(f32(3)))
			return g.Op(twice, nil, g.Const(tensor.FromSlice([]int32{1, 2, 3}, 3)))
		}, "constfold", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := graph.New("table")
			g.Outputs = append(g.Outputs, tc.build(g))
			g.CountUses()
			applyPasses(t, g, tc.pass)
			if n := numOps(g); n != tc.ops {
				t.Errorf("%d ops left, want %d:\n%s", n, tc.ops, g)
			}
		})
	}
}

// transposePrim returns the framework's Transpose and a constructor of its
// attributes, for the table-driven graphs of the transpose tests.
func transposePrim() (*core.Prim, func(perm ...int) any) {
	return ops.TransposePrim, func(perm ...int) any { return ops.PermAttr{Perm: perm} }
}

// TestTransposeFoldReal folds the framework's own Transpose, traced from
// ops.Transpose, into MatMul.
func TestTransposeFoldReal(t *testing.T) {
	build := func() *graph.Graph {
		g, err := graph.Trace("real", []tensor.Meta{f32(5, 3), f32(4, 5)}, func(xs []*tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{ops.Transpose(ops.MatMul(ops.Transpose(xs[0], 1, 0), ops.Transpose(xs[1], 1, 0)), 1, 0)}
		})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	g := checkPasses(t, build, "simplify", "transposefold")
	if n := countOps(g, ops.TransposePrim); n != 0 {
		t.Errorf("%d transposes left:\n%s", n, g)
	}
}
