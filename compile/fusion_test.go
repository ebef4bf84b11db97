package compile_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/compile"
	"github.com/sporeml/spore/exec"
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

func TestTransposeFold(t *testing.T) {
	mm := ops.MatMulPrim
	tr, perm := transposePrim()
	for _, tc := range []struct {
		name       string
		build      func(g *graph.Graph) *graph.Value
		transposes int
		matmuls    int
	}{
		{"a", func(g *graph.Graph) *graph.Value {
			a, b := g.Input(f32(5, 3)), g.Input(f32(5, 4))
			return g.Op(mm, ops.MatMulAttrs{}, g.Op(tr, perm(1, 0), a), b)
		}, 0, 1},
		{"b", func(g *graph.Graph) *graph.Value {
			a, b := g.Input(f32(3, 5)), g.Input(f32(4, 5))
			return g.Op(mm, ops.MatMulAttrs{}, a, g.Op(tr, perm(1, 0), b))
		}, 0, 1},
		{"both, already flagged", func(g *graph.Graph) *graph.Value {
			a, b := g.Input(f32(3, 5)), g.Input(f32(5, 4))
			return g.Op(mm, ops.MatMulAttrs{TransA: true, TransB: true}, g.Op(tr, perm(1, 0), a), g.Op(tr, perm(1, 0), b))
		}, 0, 1},
		{"batched", func(g *graph.Graph) *graph.Value {
			a, b := g.Input(f32(2, 5, 3)), g.Input(f32(2, 5, 4))
			return g.Op(mm, ops.MatMulAttrs{}, g.Op(tr, perm(0, 2, 1), a), b)
		}, 0, 1},
		{"batch permutation stays", func(g *graph.Graph) *graph.Value {
			a, b := g.Input(f32(3, 2, 5)), g.Input(f32(2, 5, 4))
			return g.Op(mm, ops.MatMulAttrs{}, g.Op(tr, perm(1, 0, 2), a), b)
		}, 1, 1},
		{"transposed product", func(g *graph.Graph) *graph.Value {
			a, b := g.Input(f32(3, 5)), g.Input(f32(5, 4))
			return g.Op(tr, perm(1, 0), g.Op(mm, ops.MatMulAttrs{TransB: false}, a, b))
		}, 0, 1},
		{"double transpose", func(g *graph.Graph) *graph.Value {
			a := g.Input(f32(2, 3, 4))
			return g.Op(tr, perm(2, 0, 1), g.Op(tr, perm(1, 2, 0), a))
		}, 0, 0},
		{"transpose composition", func(g *graph.Graph) *graph.Value {
			a := g.Input(f32(2, 3, 4))
			return g.Op(tr, perm(1, 0, 2), g.Op(tr, perm(1, 2, 0), a))
		}, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			build := func() *graph.Graph {
				g := graph.New("tfold")
				g.Outputs = []*graph.Value{tc.build(g)}
				return g
			}
			g := checkPasses(t, build, "simplify", "transposefold")
			if n := countOps(g, ops.TransposePrim); n != tc.transposes {
				t.Errorf("%d transposes left, want %d:\n%s", n, tc.transposes, g)
			}
			if n := countOps(g, ops.MatMulPrim); n != tc.matmuls {
				t.Errorf("%d matmuls, want %d:\n%s", n, tc.matmuls, g)
			}
		})
	}
}

// The GEMM epilogues the fused MatMulBiasAct used to cover (bias, ReLU,
// GELU, either operand order, transposes) are anchor fusion's now, and so
// are those it did not (a full-matrix addend, a batched product); a
// shared product or a float64 one stays unfused.
func TestGemmEpilogue(t *testing.T) {
	mm, add, relu := ops.MatMulPrim, ops.AddPrim, ops.ReluPrim
	gelu := ops.GeluPrim
	for _, tc := range []struct {
		name    string
		build   func(g *graph.Graph) []*graph.Value
		fused   int
		members []string // what the Anchor absorbed, when one
		left    int      // ops left in all
	}{
		{"bias relu", func(g *graph.Graph) []*graph.Value {
			x, w, b := g.Input(f32(7, 5)), g.Input(f32(5, 9)), g.Input(f32(9))
			return []*graph.Value{g.Op(relu, nil, g.Op(add, nil, g.Op(mm, ops.MatMulAttrs{}, x, w), b))}
		}, 1, []string{"MatMul", "Add", "ReLU"}, 1},
		{"bias first, [1,n], transposed", func(g *graph.Graph) []*graph.Value {
			x, w, b := g.Input(f32(5, 7)), g.Input(f32(9, 5)), g.Input(f32(1, 9))
			return []*graph.Value{g.Op(add, nil, b, g.Op(mm, ops.MatMulAttrs{TransA: true, TransB: true}, x, w))}
		}, 1, []string{"MatMul", "Add"}, 1},
		{"relu only", func(g *graph.Graph) []*graph.Value {
			x, w := g.Input(f32(7, 5)), g.Input(f32(5, 9))
			return []*graph.Value{g.Op(relu, nil, g.Op(mm, ops.MatMulAttrs{}, x, w))}
		}, 1, []string{"MatMul", "ReLU"}, 1},
		{"gelu", func(g *graph.Graph) []*graph.Value {
			x, w, b := g.Input(f32(70, 50)), g.Input(f32(50, 33)), g.Input(f32(33))
			return []*graph.Value{g.Op(gelu, nil, g.Op(add, nil, g.Op(mm, ops.MatMulAttrs{}, x, w), b))}
		}, 1, []string{"MatMul", "Add", "GELU"}, 1},
		{"product also an output", func(g *graph.Graph) []*graph.Value {
			x, w, b := g.Input(f32(7, 5)), g.Input(f32(5, 9)), g.Input(f32(9))
			p := g.Op(mm, ops.MatMulAttrs{}, x, w)
			return []*graph.Value{g.Op(add, nil, p, b), p}
		}, 0, nil, 2},
		{"sum used twice keeps the activation apart", func(g *graph.Graph) []*graph.Value {
			x, w, b := g.Input(f32(7, 5)), g.Input(f32(5, 9)), g.Input(f32(9))
			z := g.Op(add, nil, g.Op(mm, ops.MatMulAttrs{}, x, w), b)
			return []*graph.Value{g.Op(relu, nil, z), z}
		}, 1, []string{"MatMul", "Add"}, 2},
		{"full-matrix addend is a residual", func(g *graph.Graph) []*graph.Value {
			x, w, b := g.Input(f32(7, 5)), g.Input(f32(5, 9)), g.Input(f32(7, 9))
			return []*graph.Value{g.Op(add, nil, g.Op(mm, ops.MatMulAttrs{}, x, w), b)}
		}, 1, []string{"MatMul", "Add"}, 1},
		{"float64 stays", func(g *graph.Graph) []*graph.Value {
			m64 := func(s ...int) tensor.Meta { return tensor.Meta{Shape: s, DType: tensor.Float64} }
			x, w, b := g.Input(m64(7, 5)), g.Input(m64(5, 9)), g.Input(m64(9))
			return []*graph.Value{g.Op(relu, nil, g.Op(add, nil, g.Op(mm, ops.MatMulAttrs{}, x, w), b))}
		}, 0, nil, 3},
		{"batched by a weight", func(g *graph.Graph) []*graph.Value {
			x, w, b := g.Input(f32(2, 7, 5)), g.Input(f32(5, 9)), g.Input(f32(9))
			return []*graph.Value{g.Op(add, nil, g.Op(mm, ops.MatMulAttrs{}, x, w), b)}
		}, 1, []string{"MatMul", "Add"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			build := func() *graph.Graph {
				g := graph.New("epilogue")
				g.Outputs = tc.build(g)
				return g
			}
			g := checkPasses(t, build, "anchor")
			if n := countOps(g, compile.Anchor); n != tc.fused {
				t.Fatalf("%d Anchor, want %d:\n%s", n, tc.fused, g)
			}
			if n := numOps(g); n != tc.left {
				t.Errorf("%d ops, want %d:\n%s", n, tc.left, g)
			}
			for _, v := range g.Values {
				if v.Kind == graph.KindOp && v.Prim == compile.Anchor && !slices.Equal(compile.Absorbed(v), tc.members) {
					t.Errorf("absorbed %v, want %v:\n%s", compile.Absorbed(v), tc.members, g)
				}
			}
		})
	}
}

// TestGemmEpilogueGrad checks the Anchor's VJP (the unfused chain's,
// recomputed) against autodiff of the unfused chain, for a product with
// a bias and each activation.
func TestGemmEpilogueGrad(t *testing.T) {
	spore.SetSeed(3)
	a := tensor.RandNormal(tensor.Float32, 0, 1, 6, 4)
	b := tensor.RandNormal(tensor.Float32, 0, 1, 4, 5)
	bias := tensor.RandNormal(tensor.Float32, 0, 1, 1, 5)
	for _, act := range []*core.Prim{nil, ops.ReluPrim, ops.GeluPrim, ops.SigmoidPrim} {
		name := "none"
		if act != nil {
			name = act.Name
		}
		chain := func(xs ...*tensor.Tensor) *tensor.Tensor {
			z := ops.Add(ops.MatMul(xs[0], xs[1]), xs[2])
			if act != nil {
				z = core.Apply(act, nil, z)
			}
			return z
		}
		// The fused op, as anchor fusion builds it from the traced chain.
		g, err := graph.Trace("dense", []tensor.Meta{f32(6, 4), f32(4, 5), f32(1, 5)}, func(in []*tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{chain(in...)}
		})
		if err != nil {
			t.Fatal(err)
		}
		g.CountUses()
		compile.Anchors(g)
		fused := g.Outputs[0]
		if fused.Prim != compile.Anchor {
			t.Fatalf("%s: not fused:\n%s", name, g)
		}
		attrs := fused.Attrs
		unfused := func(xs ...*tensor.Tensor) *tensor.Tensor {
			z := chain(xs...)
			return ops.Sum(ops.Mul(z, z))
		}
		f := func(xs ...*tensor.Tensor) *tensor.Tensor {
			z := core.Apply(compile.Anchor, attrs, xs...)
			return ops.Sum(ops.Mul(z, z))
		}
		pos := spore.GradPosition(0, 1, 2)
		_, want := spore.ValueAndGrad(unfused, pos)(a, b, bias)
		_, got := spore.ValueAndGrad(f, pos)(a, b, bias)
		for i := range want {
			testkit.AssertClose(t, name+" grad "+string(rune('a'+i)), got[i], want[i], 1e-5)
		}
	}
}

func TestFuse(t *testing.T) {
	add, sub, mul, relu, exp := ops.AddPrim, ops.SubPrim, ops.MulPrim, ops.ReluPrim, ops.ExpPrim
	bc, sum, mm := ops.BroadcastToPrim, ops.SumPrim, ops.MatMulPrim
	for _, tc := range []struct {
		name  string
		build func(g *graph.Graph) []*graph.Value
		fused []string // names of the fused ops, in graph order
		left  int      // ops left in all
	}{
		{"chain with row and scalar operands", func(g *graph.Graph) []*graph.Value {
			x, b := g.Input(f32(70, 130)), g.Input(f32(130))
			return []*graph.Value{g.Op(relu, nil, g.Op(add, nil, g.Op(mul, nil, x, g.Const(scalar(0.5))), b))}
		}, []string{"Fused[Mul,Add,ReLU]"}, 1},
		{"tree with shared producer", func(g *graph.Graph) []*graph.Value {
			x, y := g.Input(f32(3, 5000)), g.Input(f32(3, 5000))
			e := g.Op(exp, nil, g.Op(sub, nil, x, y))
			return []*graph.Value{g.Op(add, nil, g.Op(mul, nil, e, e), y)}
		}, []string{"Fused[Sub,Exp,Mul,Add]"}, 1},
		{"column and broadcast operands", func(g *graph.Graph) []*graph.Value {
			x, m, r := g.Input(f32(4, 6)), g.Input(f32(4, 1)), g.Input(f32(1, 6))
			rb := g.Op(bc, ops.ShapeAttr{Shape: tensor.Shape{4, 6}}, r)
			return []*graph.Value{g.Op(mul, nil, g.Op(sub, nil, x, m), rb)}
		}, []string{"Fused[BroadcastTo,Sub,Mul]"}, 1},
		{"interior value used outside stays a boundary", func(g *graph.Graph) []*graph.Value {
			x, y := g.Input(f32(8, 8)), g.Input(f32(8, 8))
			s := g.Op(add, nil, g.Op(mul, nil, x, y), y) // also an output
			return []*graph.Value{g.Op(relu, nil, g.Op(exp, nil, s)), s}
		}, []string{"Fused[Mul,Add]", "Fused[Exp,ReLU]"}, 2},
		{"rank 0", func(g *graph.Graph) []*graph.Value {
			x, y := g.Input(f32()), g.Input(f32())
			return []*graph.Value{g.Op(exp, nil, g.Op(add, nil, x, y))}
		}, []string{"Fused[Add,Exp]"}, 1},
		{"lone op is not fused", func(g *graph.Graph) []*graph.Value {
			x, y := g.Input(f32(8, 8)), g.Input(f32(8, 8))
			return []*graph.Value{g.Op(add, nil, x, y)}
		}, nil, 1},
		{"reductions and matmuls are boundaries", func(g *graph.Graph) []*graph.Value {
			x, w := g.Input(f32(8, 8)), g.Input(f32(8, 8))
			h := g.Op(relu, nil, g.Op(mm, ops.MatMulAttrs{}, g.Op(exp, nil, g.Op(add, nil, x, x)), w))
			s := g.Op(sum, ops.ReduceAttrs{Axes: []int{1}, KeepDims: true}, h)
			return []*graph.Value{g.Op(exp, nil, g.Op(sub, nil, h, s))}
		}, []string{"Fused[Add,Exp]", "Fused[Sub,Exp]"}, 5},
		{"general broadcast is not fused", func(g *graph.Graph) []*graph.Value {
			x, y := g.Input(f32(2, 3, 4)), g.Input(f32(2, 1, 4))
			return []*graph.Value{g.Op(exp, nil, g.Op(add, nil, x, y))}
		}, []string{}, 2},
		{"float64 fuses", func(g *graph.Graph) []*graph.Value {
			m := tensor.Meta{Shape: tensor.Shape{4, 4}, DType: tensor.Float64}
			x := g.Input(m)
			return []*graph.Value{g.Op(exp, nil, g.Op(add, nil, x, x))}
		}, []string{"Fused[Add,Exp]"}, 1},
		{"dtypes change inside a group", func(g *graph.Graph) []*graph.Value {
			x, y := g.Input(f32(6, 700)), g.Input(f32(6, 700))
			c := g.Op(ops.GreaterPrim, nil, x, y)
			e, n := g.Op(exp, nil, x), g.Op(ops.NegPrim, nil, y)
			return []*graph.Value{g.Op(ops.CastPrim, tensor.Float64, g.Op(ops.SelectPrim, nil, c, e, n))}
		}, []string{"Fused[Greater,Exp,Neg,Select,Cast]"}, 1},
		{"registers change width", func(g *graph.Graph) []*graph.Value {
			x := g.Input(f32(3, 5000))
			w := g.Op(ops.CastPrim, tensor.Float64, x)
			b := g.Op(ops.CastPrim, tensor.Bool, g.Op(ops.CastPrim, tensor.Float32, g.Op(exp, nil, w)))
			return []*graph.Value{g.Op(ops.CastPrim, tensor.Float32, b)}
		}, []string{"Fused[Cast,Exp,Cast,Cast,Cast]"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			build := func() *graph.Graph {
				g := graph.New("fuse")
				g.Outputs = tc.build(g)
				return g
			}
			g := checkPasses(t, build, "fuse")
			var names []string
			for _, v := range g.Values {
				if v.Kind == graph.KindOp && strings.HasPrefix(v.Prim.Name, "Fused[") {
					names = append(names, v.Prim.Name)
				}
			}
			if strings.Join(names, " ") != strings.Join(tc.fused, " ") {
				t.Errorf("fused %v, want %v:\n%s", names, tc.fused, g)
			}
			if n := numOps(g); n != tc.left {
				t.Errorf("%d ops, want %d:\n%s", n, tc.left, g)
			}
		})
	}
}

// TestFusedInPlace runs a fused op whose result the planner places over a
// dying operand, and a fused op's IR text.
func TestFusedInPlace(t *testing.T) {
	add, mul, relu, mm := ops.AddPrim, ops.MulPrim, ops.ReluPrim, ops.MatMulPrim
	build := func() *graph.Graph {
		g := graph.New("inplace")
		x, w, y := g.Input(f32(3, 4)), g.Input(f32(4, 9000)), g.Input(f32(9000))
		e := g.Op(mm, ops.MatMulAttrs{}, x, w) // dies in the fused op: its buffer may take the result
		g.Outputs = []*graph.Value{g.Op(relu, nil, g.Op(add, nil, g.Op(mul, nil, e, y), e))}
		return g
	}
	g := checkPasses(t, build, "fuse")
	p, err := exec.Compile(g)
	if err != nil {
		t.Fatal(err)
	}
	if p.Reused != 1 {
		t.Errorf("%d buffers reused, want 1 (the fused result over the product)", p.Reused)
	}
	want := "Fused[Mul,Add,ReLU](%3, %2) {in r0 full, r1 row; r2 = Mul r0 r1; r2 = Add r2 r0; r2 = ReLU r2; out r2}"
	g.Renumber()
	if !strings.Contains(g.String(), want) {
		t.Errorf("want %s in\n%s", want, g)
	}
}
