package ops_test

import (
	"math"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// layerNormUnfused is layer normalisation composed of ordinary ops: the
// reference the fused primitives must match.
func layerNormUnfused(x, gamma, beta *tensor.Tensor, begin int, eps float64) *tensor.Tensor {
	axes := []int{}
	for i := begin; i < x.Rank(); i++ {
		axes = append(axes, i)
	}
	n := x.Shape()[begin:].Size()
	mean := func(t *tensor.Tensor) *tensor.Tensor {
		return ops.Mul(ops.SumKeepDims(t, axes...), ops.ScalarLike(t, 1/float64(n)))
	}
	xc := ops.Sub(x, mean(x))
	v := mean(ops.Mul(xc, xc))
	xhat := ops.Mul(xc, ops.Rsqrt(ops.Add(v, ops.ScalarLike(v, eps))))
	return ops.Add(ops.Mul(xhat, gamma), beta)
}

type lnCase struct {
	name  string
	shape []int
	begin int
	eps   float64
}

var lnCases = []lnCase{
	{"last axis", []int{4, 6, 8}, 2, 1e-5},
	{"two trailing axes", []int{5, 3, 4}, 1, 1e-7},
	{"all axes", []int{3, 5}, 0, 1e-5},
	{"ViT rows", []int{16, 17, 64}, 2, 1e-5},
}

// inputs returns x (offset, so that the mean matters), gamma and beta of
// c's shapes in dt, and a weight for the projected loss.
func (c lnCase) inputs(dt tensor.DType) (x, gamma, beta, w *tensor.Tensor) {
	ps := c.shape[c.begin:]
	x = ops.Cast(randT(21, 2, 6, c.shape...), dt)
	gamma = ops.Cast(randT(22, 0.5, 1.5, ps...), dt)
	beta = ops.Cast(randT(23, -1, 1, ps...), dt)
	w = ops.Cast(randT(24, -1, 1, c.shape...), dt)
	return
}

// TestLayerNormMatchesUnfused checks the fused primitives, eagerly and
// compiled, against the composition of ops: the output and the gradients
// of x, gamma and beta, in float32; and the two modes agree exactly.
func TestLayerNormMatchesUnfused(t *testing.T) {
	const tol = 1e-5
	names := []string{"y", "dx", "dgamma", "dbeta"}
	for _, c := range lnCases {
		t.Run(c.name, func(t *testing.T) {
			x, gamma, beta, w := c.inputs(tensor.Float32)
			run := func(ln func(x, g, b *tensor.Tensor) *tensor.Tensor) func(...*tensor.Tensor) []*tensor.Tensor {
				return func(xs ...*tensor.Tensor) []*tensor.Tensor {
					L := func(xs ...*tensor.Tensor) *tensor.Tensor { return ops.Sum(ops.Mul(ln(xs[0], xs[1], xs[2]), w)) }
					gs := spore.Grad(L, spore.GradPosition(0, 1, 2))(xs...)
					return append([]*tensor.Tensor{ln(xs[0], xs[1], xs[2])}, gs...)
				}
			}
			ref := run(func(x, g, b *tensor.Tensor) *tensor.Tensor { return layerNormUnfused(x, g, b, c.begin, c.eps) })(x, gamma, beta)
			fused := run(func(x, g, b *tensor.Tensor) *tensor.Tensor { return ops.LayerNorm(x, g, b, c.begin, c.eps) })
			var modes [2][]*tensor.Tensor
			for mi, f := range []func(...*tensor.Tensor) []*tensor.Tensor{fused, spore.Jit(fused, spore.JitConfig{Name: "layernorm." + c.name})} {
				got := f(x, gamma, beta)
				for i := range got {
					if !got[i].Shape().Equal(ref[i].Shape()) {
						t.Fatalf("mode %d %s: shape %v, want %v", mi, names[i], got[i].Shape(), ref[i].Shape())
					}
					if e := relErr(got[i], ref[i]); !(e <= tol) {
						t.Errorf("mode %d %s: relative error %.3g against the unfused composition", mi, names[i], e)
					}
				}
				modes[mi] = got
			}
			for i := range modes[0] {
				if e := relErr(modes[1][i], modes[0][i]); e != 0 {
					t.Errorf("%s: Graph mode differs from PyNative by %.3g", names[i], e)
				}
			}
		})
	}
}

// TestLayerNormCompiledUsesFusedPrimitives checks that a compiled training
// step runs LayerNorm and LayerNormGrad, not their decomposition.
func TestLayerNormCompiledUsesFusedPrimitives(t *testing.T) {
	c := lnCases[0]
	x, gamma, beta, w := c.inputs(tensor.Float32)
	L := func(xs ...*tensor.Tensor) *tensor.Tensor {
		return ops.Sum(ops.Mul(ops.LayerNorm(xs[0], xs[1], xs[2], c.begin, c.eps), w))
	}
	var ir string
	stop := spore.WatchCompiles(func(r spore.CompileRecord) {
		if r.Name == "layernorm.grad" {
			ir = r.Passes[len(r.Passes)-1].Text
		}
	})
	step := func(xs ...*tensor.Tensor) []*tensor.Tensor {
		v, gs := spore.ValueAndGrad(L, spore.GradPosition(0, 1, 2))(xs...)
		return append(gs, v)
	}
	spore.Jit(step, spore.JitConfig{Name: "layernorm.grad"})(x, gamma, beta)
	stop()
	for _, want := range []string{"LayerNorm(", "LayerNormGrad("} {
		if !contains(ir, want) {
			t.Errorf("compiled IR has no %s:\n%s", want, ir)
		}
	}
	if contains(ir, "Rsqrt") {
		t.Errorf("compiled IR still decomposes the normalisation:\n%s", ir)
	}
}

// TestLayerNormGradFiniteDifferences checks first and second derivatives
// (the gradient primitive's own gradient) in float64.
func TestLayerNormGradFiniteDifferences(t *testing.T) {
	for _, c := range []lnCase{{"last axis", []int{3, 5}, 1, 1e-5}, {"two axes", []int{2, 3, 4}, 1, 1e-3}} {
		x, gamma, beta, _ := c.inputs(tensor.Float64)
		f := func(xs ...*tensor.Tensor) *tensor.Tensor { return ops.LayerNorm(xs[0], xs[1], xs[2], c.begin, c.eps) }
		checkGrad(t, c.name, f, x, gamma, beta)
		checkGrad2(t, c.name, f, x, gamma, beta)
	}
}

// numJVP is the central finite difference of f along the tangents ts.
func numJVP(f func(...*tensor.Tensor) *tensor.Tensor, xs, ts []*tensor.Tensor, eps float64) []float64 {
	at := func(s float64) []float64 {
		args := make([]*tensor.Tensor, len(xs))
		for i := range xs {
			args[i] = ops.Add(xs[i], ops.Mul(ts[i], ops.ScalarLike(ts[i], s)))
		}
		return f(args...).Float64s()
	}
	p, m := at(eps), at(-eps)
	for i := range p {
		p[i] = (p[i] - m[i]) / (2 * eps)
	}
	return p
}

// TestLayerNormJVP checks the forward-mode rules of both primitives
// against finite differences: of LayerNorm, and of its gradient (forward
// over reverse, a Hessian-vector product).
func TestLayerNormJVP(t *testing.T) {
	c := lnCase{"two axes", []int{2, 3, 4}, 1, 1e-3}
	x, gamma, beta, w := c.inputs(tensor.Float64)
	xs := []*tensor.Tensor{x, gamma, beta}
	ts := []*tensor.Tensor{randT(31, -1, 1, x.Shape()...), randT(32, -1, 1, gamma.Shape()...), randT(33, -1, 1, beta.Shape()...)}
	ln := func(xs ...*tensor.Tensor) *tensor.Tensor { return ops.LayerNorm(xs[0], xs[1], xs[2], c.begin, c.eps) }
	L := func(xs ...*tensor.Tensor) *tensor.Tensor { return ops.Sum(ops.Mul(ln(xs...), w)) }
	// The gradients of x and gamma, flattened into one vector.
	grad := func(xs ...*tensor.Tensor) *tensor.Tensor {
		gs := spore.Grad(L, spore.GradPosition(0, 1, 2))(xs...)
		return ops.Concat(0, ops.Reshape(gs[0], -1), ops.Reshape(gs[1], -1), ops.Reshape(gs[2], -1))
	}
	for _, f := range []struct {
		name string
		fn   func(...*tensor.Tensor) *tensor.Tensor
	}{{"LayerNorm", ln}, {"its gradient", grad}} {
		_, got := spore.JVP(f.fn, xs, ts)
		want := numJVP(f.fn, xs, ts, 1e-6)
		g := got.Float64s()
		for i := range want {
			if math.Abs(g[i]-want[i]) > 1e-5*(1+math.Abs(want[i])) {
				t.Fatalf("%s: tangent element %d = %.9g, finite difference %.9g", f.name, i, g[i], want[i])
			}
		}
	}
}

// TestLayerNormVmap checks the batching rules against a loop over the
// examples: with only x batched (the primitive one axis further), with
// batched parameters (ordinary ops), and the gradient primitive's rule
// under a vectorised gradient.
func TestLayerNormVmap(t *testing.T) {
	c := lnCase{"rows", []int{3, 2, 5}, 2, 1e-5}
	x, gamma, beta, w := c.inputs(tensor.Float64)
	gammas := randT(41, 0.5, 1.5, 3, 5)
	ln := func(xs ...*tensor.Tensor) *tensor.Tensor { return ops.LayerNorm(xs[0], xs[1], xs[2], 1, c.eps) }
	w0 := ops.Reshape(ops.Slice(w, []int{0, 0, 0}, []int{1, 2, 5}), 2, 5)
	gradX := func(xs ...*tensor.Tensor) *tensor.Tensor {
		L := func(xs ...*tensor.Tensor) *tensor.Tensor { return ops.Sum(ops.Mul(ln(xs...), w0)) }
		gs := spore.Grad(L, spore.GradPosition(0, 1))(xs...)
		return ops.Concat(0, ops.Reshape(gs[0], -1), ops.Reshape(gs[1], -1))
	}
	for _, v := range []struct {
		name string
		fn   func(...*tensor.Tensor) *tensor.Tensor
		g    *tensor.Tensor
		axes spore.Axes
	}{
		{"x batched", ln, gamma, spore.Axes{0, spore.NotBatched, spore.NotBatched}},
		{"gamma batched", ln, gammas, spore.Axes{0, 0, spore.NotBatched}},
		{"gradient, x batched", gradX, gamma, spore.Axes{0, spore.NotBatched, spore.NotBatched}},
		{"gradient, gamma batched", gradX, gammas, spore.Axes{0, 0, spore.NotBatched}},
	} {
		got := spore.Vmap(v.fn, v.axes, spore.Axes{0})(x, v.g, beta)
		for i := range 3 {
			gi := v.g
			if v.axes[1] == 0 {
				gi = ops.Reshape(ops.Slice(v.g, []int{i, 0}, []int{1, 5}), 5)
			}
			xi := ops.Reshape(ops.Slice(x, []int{i, 0, 0}, []int{1, 2, 5}), 2, 5)
			want := v.fn(xi, gi, beta)
			row := ops.Reshape(ops.Slice(got, append([]int{i}, make([]int, want.Rank())...), append([]int{1}, want.Shape()...)), want.Shape()...)
			if e := relErr(row, want); e > 1e-12 {
				t.Errorf("%s: example %d differs from the unbatched call by %.3g", v.name, i, e)
			}
		}
	}
}

func TestLayerNormErrors(t *testing.T) {
	x := tensor.Zeros(tensor.Float32, 2, 3)
	g3 := tensor.Zeros(tensor.Float32, 3)
	for _, c := range []struct {
		name  string
		run   func()
		wants []string
	}{
		{"gamma shape", func() { ops.LayerNorm(x, tensor.Zeros(tensor.Float32, 2), g3, -1, 1e-5) }, []string{"LayerNorm", "gamma and beta must be [3]", "got [2]"}},
		{"beta dtype", func() { ops.LayerNorm(x, g3, tensor.Zeros(tensor.Float64, 3), -1, 1e-5) }, []string{"LayerNorm", "Float64"}},
		{"axis", func() { ops.LayerNorm(x, g3, g3, 2, 1e-5) }, []string{"LayerNorm", "axis 2"}},
		{"eps", func() { ops.LayerNorm(x, g3, g3, -1, -1) }, []string{"LayerNorm", "eps -1"}},
		{"int x", func() { ops.LayerNorm(tensor.Zeros(tensor.Int32, 2, 3), g3, g3, -1, 1e-5) }, []string{"LayerNorm"}},
	} {
		t.Run(c.name, func(t *testing.T) { testkit.MustPanic(t, c.run, c.wants...) })
	}
}

// BenchmarkLayerNormStep times a compiled forward and backward pass of
// layer normalisation at the ViT's activation shape [128, 17, 64], fused
// and as the composition of ops, side by side: compare the two within
// one run.
func BenchmarkLayerNormStep(b *testing.B) {
	c := lnCase{"ViT", []int{128, 17, 64}, 2, 1e-5}
	x, gamma, beta, w := c.inputs(tensor.Float32)
	for _, v := range []struct {
		name string
		ln   func(x, g, b *tensor.Tensor) *tensor.Tensor
	}{
		{"Fused", func(x, g, b *tensor.Tensor) *tensor.Tensor { return ops.LayerNorm(x, g, b, c.begin, c.eps) }},
		{"Unfused", func(x, g, b *tensor.Tensor) *tensor.Tensor { return layerNormUnfused(x, g, b, c.begin, c.eps) }},
	} {
		b.Run(v.name, func(b *testing.B) {
			L := func(xs ...*tensor.Tensor) *tensor.Tensor { return ops.Sum(ops.Mul(v.ln(xs[0], xs[1], xs[2]), w)) }
			step := spore.Jit(func(xs ...*tensor.Tensor) []*tensor.Tensor {
				l, gs := spore.ValueAndGrad(L, spore.GradPosition(0, 1, 2))(xs...)
				return append(gs, l)
			}, spore.JitConfig{Name: "layernorm.bench." + v.name})
			step(x, gamma, beta)
			for b.Loop() {
				step(x, gamma, beta)
			}
		})
	}
}

func TestLayerNorm(t *testing.T) {
	x := f64([]float64{1, 2, 3, 2, 2, 5}, 2, 3)
	eps := 1e-5
	s0 := 1 / math.Sqrt(2.0/3+eps)
	s1 := 1 / math.Sqrt(2+eps) // row 2: mean 3, deviations −1 −1 2, var 2
	gamma := f64([]float64{1, 2, 3}, 3)
	beta := f64([]float64{0, 1, -1}, 3)
	assertClose(t, "last axis", ops.LayerNorm(x, gamma, beta, -1, eps), []int{2, 3},
		[]float64{-s0, 1, 3*s0 - 1, -s1, 1 - 2*s1, 6*s1 - 1}, 1e-12)
	// begin_norm_axis 0 normalises over everything: mean 2.5, var 19/12.
	all := 1 / math.Sqrt(19.0/12+eps)
	ones, zeros := tensor.Ones(tensor.Float64, 2, 3), tensor.Zeros(tensor.Float64, 2, 3)
	assertClose(t, "all axes", ops.LayerNorm(x, ones, zeros, 0, eps), []int{2, 3},
		[]float64{-1.5 * all, -0.5 * all, 0.5 * all, -0.5 * all, -0.5 * all, 2.5 * all}, 1e-12)
	testkit.MustPanic(t, func() { ops.LayerNorm(x, ones, beta, -1, eps) }, "LayerNorm", "[3]", "[2 3]")
	testkit.MustPanic(t, func() { ops.LayerNorm(x, gamma, beta, 2, eps) }, "LayerNorm", "axis 2")
}

// TestLayerNormGradients checks LayerNorm's gradients, over the last axis and over all against finite differences (and second
// derivatives where marked).
func TestLayerNormGradients(t *testing.T) {
	x := randT(1, -2, 2, 3, 4)
	gamma := randT(3, 0.5, 1.5, 4)
	beta := randT(4, -1, 1, 4)
	checkGradCases(t, []gradCase{
		{"layernorm", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.LayerNorm(v[0], v[1], v[2], -1, 1e-5) }, []*tensor.Tensor{x, gamma, beta}, false},
		{"layernorm axis0", func(v ...*tensor.Tensor) *tensor.Tensor {
			return ops.LayerNorm(v[0], v[1], v[2], 0, 1e-5)
		}, []*tensor.Tensor{x, randT(11, 0.5, 1.5, 3, 4), randT(12, -1, 1, 3, 4)}, false},
	})
}
