package compile_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/compile"
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// anchorCase is a graph whose anchor (a GEMM or a convolution) is finished
// by an elementwise chain.
type anchorCase struct {
	name string
	in   [][]int
	// out builds the graph's outputs from its inputs.
	out func(in []*tensor.Tensor) []*tensor.Tensor
	// members are what the Anchor absorbed, in order (nil: nothing fuses).
	members []string
}

// perChannel returns a random [1, o, 1, 1] float32 constant.
func perChannel(o int) *tensor.Tensor { return tensor.RandNormal(tensor.Float32, 0, 1, 1, o, 1, 1) }

// positive returns a random [1, o, 1, 1] float32 constant in [0.5, 1.5).
func positive(o int) *tensor.Tensor {
	t := tensor.RandUniform(tensor.Float32, 0.5, 1.5, 1, o, 1, 1)
	return t
}

func anchorCases() []anchorCase {
	// conv draws each case's filter once, so that every trace of a case
	// convolves with the same one.
	filters := map[string]*tensor.Tensor{}
	conv := func(x *tensor.Tensor, o, k int, opts ops.Conv2DOpts) *tensor.Tensor {
		c := x.Shape()[1]
		g := max(opts.Groups, 1)
		key := fmt.Sprint(x.Shape(), o, k, opts)
		if filters[key] == nil {
			filters[key] = tensor.RandNormal(tensor.Float32, 0, 0.5, o, c/g, k, k)
		}
		return ops.Conv2D(x, filters[key], opts)
	}
	s2 := ops.Conv2DOpts{Stride: [2]int{2, 2}, Padding: ops.ExplicitPad(1, 1, 1, 1)}
	bnS, bnT := perChannel(5), perChannel(5)
	mean, std, gamma, beta := perChannel(7), positive(7), perChannel(7), perChannel(7)
	bias3 := perChannel(3)
	wd := tensor.RandNormal(tensor.Float32, 0, 0.5, 17, 9)
	bd := tensor.RandNormal(tensor.Float32, 0, 0.5, 17)
	w3 := tensor.RandNormal(tensor.Float32, 0, 0.5, 13, 6)
	b3 := tensor.RandNormal(tensor.Float32, 0, 0.5, 6)
	dyW := tensor.RandNormal(tensor.Float32, 0, 0.5, 4, 3, 3, 3)
	gradAttrs := ops.ConvGradAttrs{ConvAttrs: ops.ConvAttrs{Stride: [2]int{2, 2}, Pads: [4]int{1, 1, 1, 1}, Dilation: [2]int{1, 1}, Groups: 1}, Shape: tensor.Shape{2, 3, 9, 9}}
	momentumBuf := tensor.NewParameter("accum.w", tensor.RandNormal(tensor.Float32, 0, 0.1, 17, 9))
	filterAttrs := gradAttrs
	filterAttrs.Shape = tensor.Shape{4, 3, 3, 3}
	return []anchorCase{
		{"strided conv + BatchNorm + ReLU", [][]int{{3, 4, 9, 9}}, func(in []*tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{ops.ReLU(ops.Add(ops.Mul(conv(in[0], 5, 3, s2), bnS), bnT))}
		}, []string{"Conv2D", "Mul", "Add", "ReLU"}},
		{"BatchNorm as Sub, Div, Mul, Add + Hardswish", [][]int{{2, 3, 7, 6}}, func(in []*tensor.Tensor) []*tensor.Tensor {
			y := conv(in[0], 7, 3, ops.Conv2DOpts{Padding: ops.SamePad()})
			y = ops.Add(ops.Mul(ops.Div(ops.Sub(y, mean), std), gamma), beta)
			return []*tensor.Tensor{ops.Hardswish(y)}
		}, []string{"Conv2D", "Sub", "Div", "Mul", "Add", "Hardswish"}},
		{"depthwise dilated conv + SiLU", [][]int{{1, 4, 11, 7}}, func(in []*tensor.Tensor) []*tensor.Tensor {
			y := conv(in[0], 4, 3, ops.Conv2DOpts{Groups: 4, Dilation: [2]int{2, 1}, Padding: ops.ExplicitPad(2, 1, 0, 1)})
			return []*tensor.Tensor{ops.Mul(y, ops.Sigmoid(y))}
		}, []string{"Conv2D", "Sigmoid", "Mul"}},
		{"conv + bias + residual + ReLU", [][]int{{2, 3, 5, 5}, {2, 3, 5, 5}}, func(in []*tensor.Tensor) []*tensor.Tensor {
			y := ops.Add(conv(in[0], 3, 3, ops.Conv2DOpts{Padding: ops.SamePad(), Stride: [2]int{1, 1}}), bias3)
			return []*tensor.Tensor{ops.ReLU(ops.Add(in[1], y))}
		}, []string{"Conv2D", "Add", "Add", "ReLU"}},
		{"conv + Clip + Cast", [][]int{{2, 3, 6, 6}}, func(in []*tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{ops.Cast(ops.Clip(conv(in[0], 3, 1, s2), 0, 6), tensor.Float64)}
		}, []string{"Conv2D", "Clip", "Cast"}},
		{"dense + bias + Sigmoid", [][]int{{7, 9}}, func(in []*tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{ops.Sigmoid(ops.Add(ops.MatMulT(in[0], wd, false, true), bd))}
		}, []string{"MatMul", "Add", "Sigmoid"}},
		{"sequence dense + bias + GELU", [][]int{{3, 5, 13}}, func(in []*tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{ops.GELU(ops.Add(ops.MatMul(in[0], w3), b3))}
		}, []string{"MatMul", "Add", "GELU"}},
		{"many rows: row blocks", [][]int{{300, 13}}, func(in []*tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{ops.Softplus(ops.Add(ops.MatMul(in[0], w3), b3))}
		}, []string{"MatMul", "Add", "Softplus"}},
		{"transposed A by row blocks + residual", [][]int{{13, 300}, {13, 200}, {300, 200}}, func(in []*tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{ops.Add(ops.MatMulT(in[0], in[1], true, false), in[2])}
		}, []string{"MatMul", "Add"}},
		{"momentum of a long-k weight gradient", [][]int{{200, 17}, {200, 9}, {17, 9}}, func(in []*tensor.Tensor) []*tensor.Tensor {
			mu := tensor.Scalar(float32(0.9))
			return []*tensor.Tensor{ops.FlushSubnormal(ops.Add(ops.Mul(in[2], mu), ops.MatMulT(in[0], in[1], true, false)))}
		}, []string{"MatMul", "Mul", "Add", "FlushSubnormal"}},
		{"batched product + scale + Tanh", [][]int{{2, 3, 4}, {2, 4, 5}}, func(in []*tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{ops.Tanh(ops.Mul(ops.MatMul(in[0], in[1]), tensor.Scalar(float32(0.125))))}
		}, []string{"MatMul", "Mul", "Tanh"}},
		{"input gradient + mask", [][]int{{2, 4, 5, 5}, {2, 3, 9, 9}}, func(in []*tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{ops.Mul(ops.Conv2DBackpropInput(in[0], dyW, gradAttrs), in[1])}
		}, []string{"Conv2DBackpropInput", "Mul"}},
		{"filter gradient + weight update", [][]int{{2, 3, 9, 9}, {2, 4, 5, 5}, {4, 3, 3, 3}}, func(in []*tensor.Tensor) []*tensor.Tensor {
			dw := ops.Conv2DBackpropFilter(in[0], in[1], filterAttrs)
			return []*tensor.Tensor{ops.Sub(in[2], ops.Mul(dw, tensor.Scalar(float32(0.01))))}
		}, []string{"Conv2DBackpropFilter", "Mul", "Sub"}},
		{"an in-place update stays a loop", [][]int{{200, 17}, {200, 9}}, func(in []*tensor.Tensor) []*tensor.Tensor {
			nb := ops.FlushSubnormal(ops.Add(ops.Mul(momentumBuf, tensor.Scalar(float32(0.9))), ops.MatMulT(in[0], in[1], true, false)))
			momentumBuf.Assign(nb)
			return []*tensor.Tensor{ops.Sum(nb)}
		}, nil},
		{"shared anchor output is not absorbed", [][]int{{2, 3, 6, 6}}, func(in []*tensor.Tensor) []*tensor.Tensor {
			y := conv(in[0], 3, 3, s2)
			return []*tensor.Tensor{ops.ReLU(y), y}
		}, nil},
	}
}

// Every anchor takes the elementwise chain that finishes it into one
// Anchor whose result is bit for bit the loop-fused chain's (the same
// block bodies on the same GEMM or convolution result) and within float32
// tolerance of the unfused graph's.
func TestAnchorEpilogue(t *testing.T) {
	for _, c := range anchorCases() {
		t.Run(c.name, func(t *testing.T) {
			var metas []tensor.Meta
			for _, s := range c.in {
				metas = append(metas, f32(s...))
			}
			build := func() *graph.Graph {
				g, err := graph.Trace("anchor", metas, c.out)
				if err != nil {
					t.Fatal(err)
				}
				g.CountUses()
				return g
			}
			plain, looped, anchored := build(), build(), build()
			applyPasses(t, looped, "fuse")
			applyPasses(t, anchored, "anchor", "fuse")
			n := countOps(anchored, compile.Anchor)
			if c.members == nil {
				if n != 0 {
					t.Fatalf("%d anchors, want none:\n%s", n, anchored)
				}
			} else {
				if n != 1 {
					t.Fatalf("%d anchors, want 1:\n%s", n, anchored)
				}
				for _, v := range anchored.Values {
					if v.Kind == graph.KindOp && v.Prim == compile.Anchor {
						if got := compile.Absorbed(v); !slices.Equal(got, c.members) {
							t.Errorf("absorbed %v, want %v", got, c.members)
						}
					}
				}
			}
			if len(plain.Assigns) > 0 {
				return // each run updates the parameter: runs are not comparable
			}
			for seed := uint64(1); seed <= 2; seed++ {
				args := randArgs(plain, seed)
				want := runGraph(t, plain, args)
				fused := runGraph(t, looped, args)
				got := runGraph(t, anchored, args)
				for i := range want {
					what := fmt.Sprintf("seed %d output %d", seed, i)
					assertSame(t, what+" (vs loop fusion)", got[i], fused[i])
					testkit.AssertClose(t, what+" (vs unfused)", got[i], want[i], 1e-5)
				}
			}
		})
	}
}

// A compiled plan with anchors allocates nothing per call, for every
// anchor kind (a product by row blocks, a convolution by tiles, the
// convolution gradients and a batched product whole) and a Cast ending the epilogue (the anchor then writes a
// scratch buffer of its own).
func TestAnchorNoAllocs(t *testing.T) {
	for _, c := range anchorCases() {
		if c.members == nil {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			var metas []tensor.Meta
			for _, s := range c.in {
				metas = append(metas, f32(s...))
			}
			g, err := graph.Trace("anchor", metas, c.out)
			if err != nil {
				t.Fatal(err)
			}
			// Without the pooled convolution, which would take the
			// stride-1 chains first.
			res, err := compile.Run(g, compile.Options{Level: compile.O1, Disable: []string{"convepilogue"}})
			if err != nil {
				t.Fatal(err)
			}
			if countOps(res.Graph, compile.Anchor) == 0 {
				t.Fatalf("no Anchor at O1:\n%s", res.Graph)
			}
			args := randArgs(res.Graph, 1)
			outs := make([]*tensor.Tensor, len(res.Graph.Outputs))
			for i, o := range res.Graph.Outputs {
				outs[i] = tensor.New(o.Meta.DType, o.Meta.Shape...)
			}
			res.Plan.RunInto(args, outs)
			if n := testing.AllocsPerRun(10, func() { res.Plan.RunInto(args, outs) }); n > 0 {
				t.Errorf("%v allocations per call", n)
			}
		})
	}
}

// Jit at O1, which anchors the chains, computes what PyNative mode
// computes, within float32 tolerance (the vectorised transcendental
// functions of the fused bodies differ by a few ulp).
func TestAnchorJitMatchesEager(t *testing.T) {
	for _, c := range anchorCases() {
		t.Run(c.name, func(t *testing.T) {
			var args []*tensor.Tensor
			var metas []tensor.Meta
			for _, s := range c.in {
				args = append(args, tensor.RandNormal(tensor.Float32, 0, 1, s...))
				metas = append(metas, f32(s...))
			}
			if g, err := graph.Trace("probe", metas, c.out); err != nil || len(g.Assigns) > 0 {
				t.Skip("updates a parameter: a second run starts from another state")
			}
			want := c.out(args)
			got := spore.Jit(c.out)(args)
			for i := range want {
				testkit.AssertClose(t, fmt.Sprintf("output %d", i), got[i], want[i], 1e-5)
			}
		})
	}
}
