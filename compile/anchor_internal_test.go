package compile

import (
	"testing"

	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/kernels/fuse"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// The convolution anchor's tile callback gives the same bits over any
// tiling of the output into blocks of channels by stretches of positions,
// as the convolution engine may deliver them, as over whole planes.
func TestAnchorConvTiles(t *testing.T) {
	w := tensor.RandNormal(tensor.Float32, 0, 0.5, 7, 3, 3, 3)
	s, b := tensor.RandNormal(tensor.Float32, 0, 1, 1, 7, 1, 1), tensor.RandNormal(tensor.Float32, 0, 1, 1, 7, 1, 1)
	xs := []int{2, 3, 9, 11}
	g, err := graph.Trace("tiles", []tensor.Meta{{Shape: xs, DType: tensor.Float32}}, func(in []*tensor.Tensor) []*tensor.Tensor {
		y := ops.Add(ops.Mul(ops.Conv2D(in[0], w, ops.Conv2DOpts{Padding: ops.SamePad()}), s), b)
		return []*tensor.Tensor{ops.Mul(y, ops.Sigmoid(y))}
	})
	if err != nil {
		t.Fatal(err)
	}
	g.CountUses()
	Anchors(g)
	root := g.Outputs[0]
	a, ok := root.Attrs.(*AnchorAttrs)
	if !ok {
		t.Fatalf("not anchored:\n%s", g)
	}
	x := tensor.RandNormal(tensor.Float32, 0, 1, xs...)
	in := []*tensor.Tensor{x, w}
	for _, arg := range root.Args[a.NumOpArgs:] {
		in = append(in, arg.Tensor)
	}
	conv := ops.Conv2D(x, w, ops.Conv2DOpts{Padding: ops.SamePad()}).Data().([]float32)
	whole := make([]float32, len(conv))
	run := func(dst []float32, visit func(c *anchorCall)) {
		copy(dst, conv)
		c := &anchorCall{attrs: a, ins: make([]fuse.Input, len(a.In)), outs: []any{dst}, planeO: a.OpShape[1], planeP: a.OpShape[2] * a.OpShape[3]}
		c.ins[0] = fuse.Input{Data: dst, Mode: fuse.Full}
		for i, t := range in[a.NumOpArgs:] {
			d := a.In[i+1]
			c.ins[i+1] = fuse.Input{Data: t.Data(), Mode: d.Mode, Period: d.Period, Inner: d.Inner}
		}
		visit(c)
	}
	run(whole, func(c *anchorCall) { c.span(0, len(whole)) })
	o, p := a.OpShape[1], a.OpShape[2]*a.OpShape[3]
	for _, tc := range [][2]int{{1, 1}, {3, 17}, {7, 99}, {2, 5}, {7, 1}} {
		tiled := make([]float32, len(conv))
		run(tiled, func(c *anchorCall) {
			for n := range a.OpShape[0] {
				for c0 := 0; c0 < o; c0 += tc[0] {
					for p0 := 0; p0 < p; p0 += tc[1] {
						c.tile(n, c0, min(c0+tc[0], o), p0, min(p0+tc[1], p))
					}
				}
			}
		})
		for i := range whole {
			if tiled[i] != whole[i] {
				t.Fatalf("tiles %v: element %d = %v, whole planes give %v", tc, i, tiled[i], whole[i])
			}
		}
	}
}

// TestAccumulateClash checks that no Anchor that does not update in place
// is built computing the value assigned to its third operand (the
// executor would hand it that parameter's buffer as its output), and that
// an update may be.
func TestAccumulateClash(t *testing.T) {
	p := graph.New("clash")
	x := p.Input(tensor.Meta{Shape: tensor.Shape{1, 4}, DType: tensor.Float32})
	w := p.Input(tensor.Meta{Shape: tensor.Shape{4, 4}, DType: tensor.Float32})
	b := p.Param(tensor.New(tensor.Float32, 1, 4))
	v := p.Op(ops.AddPrim, nil, p.Op(ops.MatMulPrim, ops.MatMulAttrs{}, x, w), b)
	p.Assigns = append(p.Assigns, graph.Assign{Param: b, Val: v})
	args := []*graph.Value{x, w, b}
	for _, c := range []struct {
		u    AnchorUpdate
		want bool
	}{{UpdateNone, true}, {UpdateAccumulate, false}, {UpdateMomentum, false}} {
		if got := accumulateClash(p, v, args, c.u); got != c.want {
			t.Errorf("update %v: clash %v, want %v", c.u, got, c.want)
		}
	}
	if accumulateClash(p, v, args[:2], UpdateNone) {
		t.Error("two operands: clash")
	}
	if _, err := FixedAnchor(AnchorSpec{Op: ops.Conv2DPrim, Precision: tensor.BFloat16}, ops.ConvEpilogueAttrs{}); err == nil {
		t.Error("FixedAnchor gave a bfloat16 pooled convolution")
	}
}
