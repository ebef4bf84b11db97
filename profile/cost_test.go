package profile

import (
	"testing"

	"github.com/sporeml/spore/compile"
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

func meta(shape ...int) tensor.Meta {
	return tensor.Meta{Shape: tensor.Shape(shape), DType: tensor.Float32}
}

// lastOp traces f and returns the value of its last op (its result, or
// the multi-result op a projection reads).
func lastOp(t *testing.T, metas []tensor.Meta, f func(in []*tensor.Tensor) *tensor.Tensor) *graph.Value {
	t.Helper()
	g, err := graph.Trace("f", metas, func(in []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{f(in)} })
	if err != nil {
		t.Fatal(err)
	}
	v := g.Outputs[0]
	if v.Kind == graph.KindProj {
		v = v.Args[0]
	}
	return v
}

// TestFLOPs checks the cost model's counts against the formulas written
// out per case, over odd sizes, transposes, batches, groups and strides.
func TestFLOPs(t *testing.T) {
	cases := []struct {
		name  string
		metas []tensor.Meta
		f     func(in []*tensor.Tensor) *tensor.Tensor
		want  int64
	}{
		{"matmul 7x17·17x3", []tensor.Meta{meta(7, 17), meta(17, 3)},
			func(in []*tensor.Tensor) *tensor.Tensor { return ops.MatMul(in[0], in[1]) }, 2 * 7 * 3 * 17},
		{"matmul transA 17x7ᵀ·17x3", []tensor.Meta{meta(17, 7), meta(17, 3)},
			func(in []*tensor.Tensor) *tensor.Tensor { return ops.MatMulT(in[0], in[1], true, false) }, 2 * 7 * 3 * 17},
		{"matmul transB 1x5·3x5ᵀ", []tensor.Meta{meta(1, 5), meta(3, 5)},
			func(in []*tensor.Tensor) *tensor.Tensor { return ops.MatMulT(in[0], in[1], false, true) }, 2 * 1 * 3 * 5},
		{"batched matmul 4x7x9·9x3", []tensor.Meta{meta(4, 7, 9), meta(9, 3)},
			func(in []*tensor.Tensor) *tensor.Tensor { return ops.MatMul(in[0], in[1]) }, 4 * 2 * 7 * 3 * 9},
		{"conv 3→8, 3x3, stride 2", []tensor.Meta{meta(2, 3, 17, 17), meta(8, 3, 3, 3)},
			func(in []*tensor.Tensor) *tensor.Tensor {
				return ops.Conv2D(in[0], in[1], ops.Conv2DOpts{Stride: [2]int{2, 2}})
			}, 2 * (2 * 8 * 8 * 8) * (3 * 3 * 3)},
		{"grouped conv 6→6, groups 3, 1x1", []tensor.Meta{meta(1, 6, 7, 7), meta(6, 2, 1, 1)},
			func(in []*tensor.Tensor) *tensor.Tensor {
				return ops.Conv2D(in[0], in[1], ops.Conv2DOpts{Groups: 3})
			}, 2 * (6 * 7 * 7) * 2},
		{"exp, elementwise", []tensor.Meta{meta(3, 17)},
			func(in []*tensor.Tensor) *tensor.Tensor { return ops.Exp(in[0]) }, 3 * 17 * int64(max(ops.ExpPrim.Traits.Cost, 1))},
		{"sum, a reduction", []tensor.Meta{meta(7, 3)},
			func(in []*tensor.Tensor) *tensor.Tensor { return ops.Sum(in[0], 1) }, 7 * 3},
		{"transpose, no arithmetic", []tensor.Meta{meta(7, 3)},
			func(in []*tensor.Tensor) *tensor.Tensor { return ops.Transpose(in[0], 1, 0) }, 0},
		{"attention L=5 S=7 E=3 Ev=3, 2 heads", []tensor.Meta{meta(2, 5, 3), meta(2, 7, 3), meta(2, 7, 3)},
			func(in []*tensor.Tensor) *tensor.Tensor {
				return ops.ScaledDotProductAttention(in[0], in[1], in[2], ops.AttentionOptions{})
			}, 2 * 5 * 7 * (2*3 + 2*3 + 5)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := lastOp(t, c.metas, c.f)
			if got := FLOPs(v); got != c.want {
				t.Errorf("%s: %d FLOPs, want %d", v.Prim.Name, got, c.want)
			}
		})
	}
}

// TestFLOPsFused: a fused GEMM epilogue counts its product and the work
// per element it absorbed, and a fused loop its members' costs.
func TestFLOPsFused(t *testing.T) {
	const m, k, n = 7, 17, 3
	g, err := graph.Trace("f", []tensor.Meta{meta(m, k), meta(k, n), meta(n)}, func(in []*tensor.Tensor) []*tensor.Tensor {
		return []*tensor.Tensor{ops.ReLU(ops.Add(ops.MatMul(in[0], in[1]), in[2]))}
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := compile.Run(g, compile.Options{Level: compile.O1})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, v := range res.Plan.Graph().Values {
		if v.Kind == graph.KindOp && v.Prim == compile.Anchor {
			found = true
			if got, want := FLOPs(v), int64(m*n*(2*k+2)); got != want {
				t.Errorf("Anchor: %d FLOPs, want %d", got, want)
			}
			if got, want := Bytes(v), int64(4*(m*k+k*n+n+m*n)); got != want {
				t.Errorf("Anchor: %d bytes, want %d", got, want)
			}
		}
	}
	if !found {
		t.Fatal("the anchor pass did not fuse this chain")
	}
}

func TestBytes(t *testing.T) {
	v := lastOp(t, []tensor.Meta{meta(7, 17), meta(17, 3)}, func(in []*tensor.Tensor) *tensor.Tensor { return ops.MatMul(in[0], in[1]) })
	if got, want := Bytes(v), int64(4*(7*17+17*3+7*3)); got != want {
		t.Errorf("%d bytes, want %d", got, want)
	}
	if FLOPs(nil) != 0 || Bytes(nil) != 0 {
		t.Error("a nil value costs something")
	}
}
