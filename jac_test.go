package spore_test

import (
	"math"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/optest"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// TestJacfwdEqualsJacrev computes Jacobians both ways on functions of one
// and two inputs (elementwise, reductions, MatMul, a composite softmax, a
// convolution), checks that they agree to 1e-12 and that both match
// central finite differences, and that Jit(Jacfwd) and Jit(Jacrev) give
// the eager result.
func TestJacfwdEqualsJacrev(t *testing.T) {
	v := func(seed int, shape ...int) *tensor.Tensor { return optest.Vals(tensor.Float64, -1, 1, seed, shape...) }
	cases := []struct {
		name string
		f    func(...*tensor.Tensor) *tensor.Tensor
		in   []*tensor.Tensor
		pos  []int
	}{
		{"reduce", func(a ...*tensor.Tensor) *tensor.Tensor { return ops.Sum(ops.Mul(ops.Tanh(a[0]), a[0]), 1) },
			[]*tensor.Tensor{v(0, 2, 3)}, []int{0}},
		{"scalar", func(a ...*tensor.Tensor) *tensor.Tensor { return ops.Sum(ops.Square(ops.Sin(a[0]))) },
			[]*tensor.Tensor{v(1, 4)}, []int{0}},
		{"matmul", func(a ...*tensor.Tensor) *tensor.Tensor { return ops.Sigmoid(ops.MatMul(a[0], a[1])) },
			[]*tensor.Tensor{v(2, 2, 3), v(3, 3, 2)}, []int{0, 1}},
		{"second input only", func(a ...*tensor.Tensor) *tensor.Tensor { return ops.Mul(ops.Exp(a[0]), ops.Sum(a[1])) },
			[]*tensor.Tensor{v(4, 3), v(5, 2, 2)}, []int{1}},
		{"log_softmax", func(a ...*tensor.Tensor) *tensor.Tensor { return ops.LogSoftmax(a[0], -1) },
			[]*tensor.Tensor{v(6, 2, 4)}, []int{0}},
		{"conv", func(a ...*tensor.Tensor) *tensor.Tensor {
			return ops.Tanh(ops.Conv2D(a[0], a[1], ops.Conv2DOpts{Padding: ops.SamePad()}))
		}, []*tensor.Tensor{v(7, 1, 1, 3, 3), v(8, 2, 1, 2, 2)}, []int{0, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fwd := spore.Jacfwd(c.f, spore.GradPosition(c.pos...))(c.in...)
			rev := spore.Jacrev(c.f, spore.GradPosition(c.pos...))(c.in...)
			jf := spore.Jit(spore.Jacfwd(c.f, spore.GradPosition(c.pos...)), spore.JitConfig{Name: "jacfwd." + c.name})(c.in...)
			jr := spore.Jit(spore.Jacrev(c.f, spore.GradPosition(c.pos...)), spore.JitConfig{Name: "jacrev." + c.name})(c.in...)
			y := c.f(c.in...)
			for k, p := range c.pos {
				want := append(y.Shape().Clone(), c.in[p].Shape()...)
				if !fwd[k].Shape().Equal(want) {
					t.Fatalf("Jacfwd %d: shape %v, want %v", k, fwd[k].Shape(), want)
				}
				testkit.AssertClose(t, "Jacrev vs Jacfwd", rev[k], fwd[k], 1e-12)
				testkit.AssertClose(t, "Jit(Jacfwd)", jf[k], fwd[k], 1e-12)
				testkit.AssertClose(t, "Jit(Jacrev)", jr[k], rev[k], 1e-12)
				testkit.AssertClose(t, "Jacfwd vs finite differences", fwd[k], finiteJacobian(c.f, c.in, p), 1e-7)
			}
		})
	}
}

// finiteJacobian is ∂f/∂x_p by central differences, shaped y ++ x_p.
func finiteJacobian(f func(...*tensor.Tensor) *tensor.Tensor, in []*tensor.Tensor, p int) *tensor.Tensor {
	const h = 1e-6
	x := in[p].Float64s()
	y := f(in...)
	m, n := y.Size(), len(x)
	jac := make([]float64, m*n)
	at := func(d float64, j int) []float64 {
		xs := append([]float64(nil), x...)
		xs[j] += d
		args := append([]*tensor.Tensor(nil), in...)
		args[p] = tensor.FromSlice(xs, in[p].Shape()...)
		return f(args...).Float64s()
	}
	for j := range n {
		hi, lo := at(h, j), at(-h, j)
		for i := range m {
			jac[i*n+j] = (hi[i] - lo[i]) / (2 * h)
		}
	}
	return tensor.FromSlice(jac, append(y.Shape().Clone(), in[p].Shape()...)...)
}

// packedMLPLoss is the mean squared error of a two-layer tanh network whose 26
// parameters (W1 3×4, b1 4, W2 4×2, b2 2) are packed in one vector θ.
func packedMLPLoss(theta *tensor.Tensor) *tensor.Tensor {
	x := optest.Vals(tensor.Float64, -1, 1, 40, 5, 3)
	target := optest.Vals(tensor.Float64, -1, 1, 41, 5, 2)
	w1 := ops.Reshape(ops.Slice(theta, []int{0}, []int{12}), 3, 4)
	b1 := ops.Slice(theta, []int{12}, []int{4})
	w2 := ops.Reshape(ops.Slice(theta, []int{16}, []int{8}), 4, 2)
	b2 := ops.Slice(theta, []int{24}, []int{2})
	h := ops.Tanh(ops.Add(ops.MatMul(x, w1), b1))
	y := ops.Add(ops.MatMul(h, w2), b2)
	return ops.Mean(ops.Square(ops.Sub(ops.Sigmoid(y), target)))
}

// TestHessianMLP checks the Hessian of a small MLP's loss (Jacfwd of
// Jacrev) against central finite differences of the loss in float64, its
// symmetry, and that Jit(Hessian) gives the eager result.
func TestHessianMLP(t *testing.T) {
	theta := optest.Vals(tensor.Float64, -1, 1, 7, 26)
	hess := spore.Hessian(packedMLPLoss)(theta)[0][0]
	if !hess.Shape().Equal(tensor.Shape{26, 26}) {
		t.Fatalf("Hessian shape %v, want [26 26]", hess.Shape())
	}
	h := hess.Float64s()
	th := theta.Float64s()
	f := func(d map[int]float64) float64 {
		x := append([]float64(nil), th...)
		for i, v := range d {
			x[i] += v
		}
		return packedMLPLoss(tensor.FromSlice(x, 26)).Item()
	}
	const e = 1e-4
	maxAbs := 0.0
	for _, v := range h {
		maxAbs = math.Max(maxAbs, math.Abs(v))
	}
	for i := range 26 {
		for j := i; j < 26; j++ {
			var fd float64
			if i == j {
				fd = (f(map[int]float64{i: 2 * e}) - 2*f(nil) + f(map[int]float64{i: -2 * e})) / (4 * e * e)
			} else {
				fd = (f(map[int]float64{i: e, j: e}) - f(map[int]float64{i: e, j: -e}) -
					f(map[int]float64{i: -e, j: e}) + f(map[int]float64{i: -e, j: -e})) / (4 * e * e)
			}
			if d := math.Abs(h[i*26+j] - fd); d > 1e-6*maxAbs || math.IsNaN(d) {
				t.Errorf("H[%d][%d] = %.12g, finite differences give %.12g", i, j, h[i*26+j], fd)
			}
			if d := math.Abs(h[i*26+j] - h[j*26+i]); d > 1e-12*maxAbs {
				t.Errorf("H[%d][%d] = %.17g but H[%d][%d] = %.17g", i, j, h[i*26+j], j, i, h[j*26+i])
			}
		}
	}
	jit := spore.Jit(func(x *tensor.Tensor) *tensor.Tensor { return spore.Hessian(packedMLPLoss)(x)[0][0] },
		spore.JitConfig{Name: "hessian.mlp"})
	testkit.AssertClose(t, "Jit(Hessian)", jit(theta), hess, 1e-12)
}

// TestHVP checks Hessian-vector products, JVP of Grad (forward over
// reverse), against the Hessian times the vector and against central
// differences of the gradient, eagerly and in Graph mode.
func TestHVP(t *testing.T) {
	theta := optest.Vals(tensor.Float64, -1, 1, 7, 26)
	vec := optest.Vals(tensor.Float64, -1, 1, 99, 26)
	grad := func(x *tensor.Tensor) *tensor.Tensor { return spore.Grad(packedMLPLoss)(x)[0] }
	hvp := func(x, v *tensor.Tensor) *tensor.Tensor {
		_, t := spore.JVP(grad, []*tensor.Tensor{x}, []*tensor.Tensor{v})
		return t
	}
	got := hvp(theta, vec)
	// H·v from the full Hessian.
	h, v := spore.Hessian(packedMLPLoss)(theta)[0][0].Float64s(), vec.Float64s()
	hv := make([]float64, 26)
	for i := range 26 {
		for j := range 26 {
			hv[i] += h[i*26+j] * v[j]
		}
	}
	testkit.AssertClose(t, "HVP vs Hessian·v", got, tensor.FromSlice(hv, 26), 1e-12)
	const e = 1e-5
	hi := grad(ops.Add(theta, ops.MulScalar(vec, e))).Float64s()
	lo := grad(ops.Sub(theta, ops.MulScalar(vec, e))).Float64s()
	fd := make([]float64, 26)
	for i := range fd {
		fd[i] = (hi[i] - lo[i]) / (2 * e)
	}
	testkit.AssertClose(t, "HVP vs finite differences of the gradient", got, tensor.FromSlice(fd, 26), 1e-7)
	jit := spore.Jit(hvp, spore.JitConfig{Name: "hvp"})
	testkit.AssertClose(t, "Jit(HVP)", jit(theta, vec), got, 1e-12)
}

// TestJacobianOptionErrors checks that options without meaning for the
// Jacobian transforms are refused.
func TestJacobianOptionErrors(t *testing.T) {
	x := optest.Vals(tensor.Float64, -1, 1, 0, 3)
	f := func(x *tensor.Tensor) *tensor.Tensor { return ops.Exp(x) }
	w := tensor.NewParameter("w", optest.Vals(tensor.Float64, -1, 1, 0, 3))
	cases := []struct {
		name string
		run  func()
	}{
		{"Jacfwd Weights", func() { spore.Jacfwd(f, spore.Weights(w))(x) }},
		{"Jacrev WithSens", func() { spore.Jacrev(f, spore.WithSens())(x) }},
		{"Jacfwd no position", func() { spore.Jacfwd(f, spore.GradPosition())(x) }},
		{"Jacrev position out of range", func() { spore.Jacrev(f, spore.GradPosition(1))(x) }},
		{"Jacfwd integer input", func() { spore.Jacfwd(f)(tensor.FromSlice([]int32{1, 2})) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil {
					t.Errorf("no error")
				}
			}()
			c.run()
		})
	}
}

// TestHVPThroughScan takes second derivatives through a loop: the Hessian
// and a Hessian-vector product of a loss computed by Scan, in Graph mode
// (where JVP meets the Scan nodes of both the forward and the backward
// pass) and eagerly (a Go loop), checked against each other and against
// central differences of the gradient.
func TestHVPThroughScan(t *testing.T) {
	xs := optest.Vals(tensor.Float64, -1, 1, 0, 4, 3)
	loss := func(w *tensor.Tensor) *tensor.Tensor {
		c, _ := spore.Scan(func(c, x []*tensor.Tensor) ([]*tensor.Tensor, []*tensor.Tensor) {
			return []*tensor.Tensor{ops.Tanh(ops.Add(ops.Mul(c[0], w), x[0]))}, nil
		}, []*tensor.Tensor{ops.ZerosLike(w)}, []*tensor.Tensor{xs})
		return ops.Sum(ops.Square(c[0]))
	}
	grad := func(x *tensor.Tensor) *tensor.Tensor { return spore.Grad(loss)(x)[0] }
	hvp := func(x, v *tensor.Tensor) *tensor.Tensor {
		_, t := spore.JVP(grad, []*tensor.Tensor{x}, []*tensor.Tensor{v})
		return t
	}
	w := optest.Vals(tensor.Float64, -1, 1, 5, 3)
	v := optest.Vals(tensor.Float64, -1, 1, 9, 3)
	eager := hvp(w, v)
	testkit.AssertClose(t, "Jit(HVP)", spore.Jit(hvp, spore.JitConfig{Name: "hvp.scan"})(w, v), eager, 1e-12)
	const e = 1e-5
	hi := grad(ops.Add(w, ops.MulScalar(v, e))).Float64s()
	lo := grad(ops.Sub(w, ops.MulScalar(v, e))).Float64s()
	fd := make([]float64, len(hi))
	for i := range fd {
		fd[i] = (hi[i] - lo[i]) / (2 * e)
	}
	testkit.AssertClose(t, "HVP vs finite differences of the gradient", eager, tensor.FromSlice(fd, 3), 1e-7)
	hess := spore.Hessian(loss)(w)[0][0]
	jitHess := spore.Jit(func(x *tensor.Tensor) *tensor.Tensor { return spore.Hessian(loss)(x)[0][0] },
		spore.JitConfig{Name: "hessian.scan"})(w)
	testkit.AssertClose(t, "Jit(Hessian)", jitHess, hess, 1e-12)
}

// TestHessianBlocks checks the blocks of a Hessian over two inputs: the
// mixed blocks are each other's transposes, and each block matches
// central differences of the corresponding gradient.
func TestHessianBlocks(t *testing.T) {
	f := func(a, b *tensor.Tensor) *tensor.Tensor {
		return ops.Sum(ops.Mul(ops.Sin(ops.MatMul(a, b)), ops.Exp(ops.Sum(a, 1, 0))))
	}
	a := optest.Vals(tensor.Float64, -1, 1, 1, 1, 2)
	b := optest.Vals(tensor.Float64, -1, 1, 2, 2, 3)
	h := spore.Hessian(f, spore.GradPosition(0, 1))(a, b)
	if !h[0][1].Shape().Equal(tensor.Shape{1, 2, 2, 3}) || !h[1][0].Shape().Equal(tensor.Shape{2, 3, 1, 2}) {
		t.Fatalf("mixed blocks have shapes %v and %v", h[0][1].Shape(), h[1][0].Shape())
	}
	testkit.AssertClose(t, "H[1][0] vs H[0][1]ᵀ", h[1][0], ops.Reshape(ops.Transpose(ops.Reshape(h[0][1], 2, 6), 1, 0), 2, 3, 1, 2), 1e-12)
	in := []*tensor.Tensor{a, b}
	for i := range 2 {
		gi := func(xs ...*tensor.Tensor) *tensor.Tensor {
			return spore.Grad(f, spore.GradPosition(0, 1))(xs...)[i]
		}
		for j := range 2 {
			testkit.AssertClose(t, "Hessian block vs finite differences", h[i][j], finiteJacobian(gi, in, j), 1e-7)
		}
	}
}
