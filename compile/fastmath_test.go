package compile_test

import (
	"strings"
	"testing"

	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

func TestFastMath(t *testing.T) {
	// y = ((x / c) · 3) · 0.5 with c a [3] constant row.
	build := func() *graph.Graph {
		g := graph.New("fm")
		x := g.Input(f32(2, 3))
		c := g.Const(tensor.FromSlice([]float32{2, 4, -8}, 3))
		d := g.Op(ops.DivPrim, nil, x, c)
		m1 := g.Op(ops.MulPrim, nil, d, g.Const(scalar(3)))
		m2 := g.Op(ops.MulPrim, nil, g.Const(scalar(0.5)), m1)
		g.Outputs = append(g.Outputs, m2)
		return g
	}
	after := checkPasses(t, build, "fastmath")
	text := after.String()
	if strings.Contains(text, "Div(") || countOps(after, ops.MulPrim) != 2 {
		t.Fatalf("want the division turned into a multiply and the two scalings merged:\n%s", text)
	}
	// Integers are left alone: their division is not a multiplication.
	g := graph.New("int")
	x := g.Input(tensor.Meta{Shape: tensor.Shape{3}, DType: tensor.Int32})
	g.Outputs = append(g.Outputs, g.Op(ops.FloorDivPrim, nil, x, g.Const(tensor.FromSlice([]int32{2, 2, 2}, 3))))
	applyPasses(t, g, "fastmath")
	if countOps(g, ops.FloorDivPrim) != 1 {
		t.Fatalf("integer division rewritten:\n%s", g)
	}
}
