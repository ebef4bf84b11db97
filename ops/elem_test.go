package ops_test

import (
	"math"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Special values for the tables below.
var (
	elemNaN    = math.NaN()
	elemInf    = math.Inf(1)
	elemNegInf = math.Inf(-1)
)

// elemCase is one hand-computed result.
type elemCase struct {
	name  string
	got   *tensor.Tensor
	shape []int
	want  []float64
}

func runElemCases(t *testing.T, cases []elemCase, tol float64) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { assertClose(t, c.name, c.got, c.shape, c.want, tol) })
	}
}

func TestUnaryValues(t *testing.T) {
	x := f64([]float64{-2, -0.5, 0, 0.5, 2}, 5)
	ln3 := math.Log(3)
	runElemCases(t, []elemCase{
		{"abs", ops.Abs(x), []int{5}, []float64{2, 0.5, 0, 0.5, 2}},
		{"sign", ops.Sign(x), []int{5}, []float64{-1, -1, 0, 1, 1}},
		{"square", ops.Square(x), []int{5}, []float64{4, 0.25, 0, 0.25, 4}},
		{"log1p", ops.Log1p(f64([]float64{0, 1e-10, math.E - 1, -0.5}, 2, 2)), []int{2, 2}, []float64{0, 9.999999999500001e-11, 1, -0.6931471805599453}},
		{"sqrt", ops.Sqrt(f64([]float64{0, 0.25, 4, 2}, 4)), []int{4}, []float64{0, 0.5, 2, math.Sqrt2}},
		{"rsqrt", ops.Rsqrt(f64([]float64{0.25, 4, 1}, 3)), []int{3}, []float64{2, 0.5, 1}},
		{"reciprocal", ops.Reciprocal(f64([]float64{-4, 0.5, 8}, 3)), []int{3}, []float64{-0.25, 2, 0.125}},
		{"sin", ops.Sin(f64([]float64{0, math.Pi / 6, math.Pi / 2, -math.Pi / 2}, 4)), []int{4}, []float64{0, 0.5, 1, -1}},
		{"cos", ops.Cos(f64([]float64{0, math.Pi / 3, math.Pi}, 3)), []int{3}, []float64{1, 0.5, -1}},
		{"sigmoid", ops.Sigmoid(f64([]float64{0, ln3, -ln3}, 3)), []int{3}, []float64{0.5, 0.75, 0.25}},
		{"erf", ops.Erf(f64([]float64{0, 0.5, -1}, 3)), []int{3}, []float64{0, 0.5204998778130465, -0.8427007929497149}},
		{"gelu", ops.GELU(f64([]float64{0, 1, -1, 2}, 4)), []int{4}, []float64{0, 0.8413447460685429, -0.15865525393145707, 1.9544997361036416}},
		{"softplus", ops.Softplus(f64([]float64{0, ln3, -ln3}, 3)), []int{3}, []float64{math.Ln2, 1.3862943611198906, 0.28768207245178085}},
		{"rank0", ops.Sqrt(tensor.Scalar(9.0)), []int{}, []float64{3}},
		{"empty", ops.Sigmoid(tensor.Zeros(tensor.Float64, 0, 3)), []int{0, 3}, nil},
	}, 1e-14)
}

// TestUnarySpecialValues pins down NaN, ±Inf and the tails where a naive
// formula overflows or cancels.
func TestUnarySpecialValues(t *testing.T) {
	v := func(xs ...float64) *tensor.Tensor { return f64(xs, len(xs)) }
	runElemCases(t, []elemCase{
		{"sqrt", ops.Sqrt(v(-1, elemInf, elemNaN, math.Copysign(0, -1))), []int{4}, []float64{elemNaN, elemInf, elemNaN, 0}},
		{"log1p", ops.Log1p(v(-1, -2, elemInf, elemNaN)), []int{4}, []float64{elemNegInf, elemNaN, elemInf, elemNaN}},
		{"rsqrt", ops.Rsqrt(v(0, -1, elemInf)), []int{3}, []float64{elemInf, elemNaN, 0}},
		{"reciprocal", ops.Reciprocal(v(0, math.Copysign(0, -1), elemInf)), []int{3}, []float64{elemInf, elemNegInf, 0}},
		{"sigmoid", ops.Sigmoid(v(elemNegInf, elemInf, -800, 800, elemNaN)), []int{5}, []float64{0, 1, 0, 1, elemNaN}},
		{"sigmoid tail", ops.Sigmoid(v(-40)), []int{1}, []float64{4.248354255291589e-18}},
		{"softplus", ops.Softplus(v(1000, -1000, elemInf, elemNegInf, elemNaN)), []int{5}, []float64{1000, 0, elemInf, 0, elemNaN}},
		{"softplus tail", ops.Softplus(v(-30)), []int{1}, []float64{9.357622968839737e-14}},
		{"gelu", ops.GELU(v(elemNegInf, elemInf, elemNaN)), []int{3}, []float64{0, elemInf, elemNaN}},
		{"gelu tail", ops.GELU(v(-10)), []int{1}, []float64{-7.619853024160593e-23}},
		{"erf", ops.Erf(v(elemInf, elemNegInf, elemNaN)), []int{3}, []float64{1, -1, elemNaN}},
		{"sin", ops.Sin(v(elemInf, elemNaN)), []int{2}, []float64{elemNaN, elemNaN}},
		{"sign", ops.Sign(v(elemNaN, elemNegInf, elemInf)), []int{3}, []float64{elemNaN, -1, 1}},
		{"abs", ops.Abs(v(elemNegInf, elemNaN)), []int{2}, []float64{elemInf, elemNaN}},
	}, 1e-13)
	// Sign and Abs keep and clear the sign of zero as NumPy does.
	if s := ops.Sign(v(math.Copysign(0, -1))).Item(); s != 0 || !math.Signbit(s) {
		t.Fatalf("Sign(-0) = %v (signbit %v), want -0", s, math.Signbit(s))
	}
	if a := ops.Abs(f32([]float32{float32(math.Copysign(0, -1))}, 1)).Item(); math.Signbit(a) {
		t.Fatal("Abs(-0) kept the sign bit")
	}
}

// TestUnaryFloat32 checks that each float32 kernel agrees with the float64
// one to float32 precision and keeps the dtype.
func TestUnaryFloat32(t *testing.T) {
	src := randT(11, -3, 3, 4, 5).Float64s()
	pos := randT(12, 0.1, 5, 4, 5).Float64s()
	ops1 := []struct {
		name string
		f    func(*tensor.Tensor) *tensor.Tensor
		in   []float64
	}{
		{"Abs", ops.Abs, src}, {"Sign", ops.Sign, src}, {"Log1p", ops.Log1p, pos},
		{"Sqrt", ops.Sqrt, pos}, {"Rsqrt", ops.Rsqrt, pos}, {"Square", ops.Square, src},
		{"Reciprocal", ops.Reciprocal, src}, {"Sin", ops.Sin, src}, {"Cos", ops.Cos, src},
		{"Sigmoid", ops.Sigmoid, src}, {"Erf", ops.Erf, src}, {"GELU", ops.GELU, src},
		{"Softplus", ops.Softplus, src},
	}
	for _, c := range ops1 {
		in32 := make([]float32, len(c.in))
		in64 := make([]float64, len(c.in))
		for i, v := range c.in {
			in32[i] = float32(v)
			in64[i] = float64(in32[i]) // the same inputs in both precisions
		}
		got := c.f(f32(in32, 4, 5))
		if got.DType() != tensor.Float32 {
			t.Fatalf("%s: dtype %v, want Float32", c.name, got.DType())
		}
		assertClose(t, c.name+" float32", got, []int{4, 5}, c.f(f64(in64, 4, 5)).Float64s(), 2e-7)
	}
}

func TestIntegerElementwise(t *testing.T) {
	i32 := tensor.FromSlice([]int32{-3, 0, 5, math.MinInt32}, 4)
	i64 := tensor.FromSlice([]int64{-7, 0, 9}, 3)
	cases := []struct {
		name string
		got  *tensor.Tensor
		dt   tensor.DType
		want []int64
	}{
		{"abs32", ops.Abs(i32), tensor.Int32, []int64{3, 0, 5, math.MinInt32}},
		{"abs64", ops.Abs(i64), tensor.Int64, []int64{7, 0, 9}},
		{"sign32", ops.Sign(i32), tensor.Int32, []int64{-1, 0, 1, -1}},
		{"sign64", ops.Sign(i64), tensor.Int64, []int64{-1, 0, 1}},
		{"square32", ops.Square(tensor.FromSlice([]int32{-3, 4}, 2)), tensor.Int32, []int64{9, 16}},
		{"square64", ops.Square(i64), tensor.Int64, []int64{49, 0, 81}},
		{"neg64", ops.Neg(i64), tensor.Int64, []int64{7, 0, -9}},
		{"max32 bcast", ops.Maximum(i32, tensor.Scalar[int32](1)), tensor.Int32, []int64{1, 1, 5, 1}},
		{"min64", ops.Minimum(i64, tensor.FromSlice([]int64{-8, 1, 1}, 3)), tensor.Int64, []int64{-8, 0, 1}},
		{"addscalar", ops.AddScalar(i64, 2), tensor.Int64, []int64{-5, 2, 11}},
		{"mulscalar", ops.MulScalar(i32, -1), tensor.Int32, []int64{3, 0, -5, math.MinInt32}},
	}
	for _, c := range cases {
		if c.got.DType() != c.dt {
			t.Fatalf("%s: dtype %v, want %v", c.name, c.got.DType(), c.dt)
		}
		got := c.got.Int64s()
		for i := range c.want {
			if got[i] != c.want[i] {
				t.Fatalf("%s: %v, want %v", c.name, got, c.want)
			}
		}
	}
}

func TestBinaryValues(t *testing.T) {
	col := f64([]float64{1, 2, 3}, 3, 1)
	row := f64([]float64{0, 1, 2}, 3)
	a := f64([]float64{1, 5, -2, 4}, 2, 2)
	b := f64([]float64{3, 2}, 2)
	runElemCases(t, []elemCase{
		{"pow", ops.Pow(f64([]float64{2, 3, 4}, 3), f64([]float64{3, 0.5, -1}, 3)), []int{3}, []float64{8, 1.7320508075688772, 0.25}},
		{"pow outer", ops.Pow(col, row), []int{3, 3}, []float64{1, 1, 1, 1, 2, 4, 1, 3, 9}},
		{"pow special", ops.Pow(f64([]float64{0, -8, 0, elemNaN, -2}, 5), f64([]float64{0, 1.0 / 3, -1, 0, 3}, 5)), []int{5}, []float64{1, elemNaN, elemInf, 1, -8}},
		{"maximum row", ops.Maximum(a, b), []int{2, 2}, []float64{3, 5, 3, 4}},
		{"minimum row", ops.Minimum(a, b), []int{2, 2}, []float64{1, 2, -2, 2}},
		{"maximum outer", ops.Maximum(col, row), []int{3, 3}, []float64{1, 1, 2, 2, 2, 2, 3, 3, 3}},
		{"maximum elemNaN", ops.Maximum(f64([]float64{elemNaN, 1, elemNegInf}, 3), f64([]float64{1, elemNaN, 3}, 3)), []int{3}, []float64{elemNaN, elemNaN, 3}},
		{"minimum elemNaN", ops.Minimum(f64([]float64{elemNaN, 1, elemInf}, 3), f64([]float64{1, elemNaN, 3}, 3)), []int{3}, []float64{elemNaN, elemNaN, 3}},
		{"maximum empty", ops.Maximum(tensor.Zeros(tensor.Float64, 0, 2), b), []int{0, 2}, nil},
		{"pow empty", ops.Pow(tensor.Zeros(tensor.Float64, 2, 0), tensor.Scalar(2.0)), []int{2, 0}, nil},
		{"addscalar", ops.AddScalar(b, 1.5), []int{2}, []float64{4.5, 3.5}},
		{"subscalar", ops.SubScalar(b, 1), []int{2}, []float64{2, 1}},
		{"mulscalar", ops.MulScalar(b, -2), []int{2}, []float64{-6, -4}},
		{"divscalar", ops.DivScalar(b, 4), []int{2}, []float64{0.75, 0.5}},
		{"powscalar", ops.PowScalar(b, 2), []int{2}, []float64{9, 4}},
		{"powscalar neg", ops.PowScalar(f64([]float64{-2}, 1), 3), []int{1}, []float64{-8}},
	}, 1e-14)
	// -0 and +0 compare equal, but Maximum orders them as IEEE maxNum does.
	if m := ops.Maximum(tensor.Scalar(math.Copysign(0, -1)), tensor.Scalar(0.0)).Item(); math.Signbit(m) {
		t.Fatal("Maximum(-0, +0) = -0")
	}
	// Size-1 axes on both sides broadcast against each other: compare with
	// the scalar definition element by element.
	p := randT(21, -1, 1, 2, 1, 3)
	q := randT(22, -1, 1, 1, 4, 1)
	for _, c := range []struct {
		name string
		got  *tensor.Tensor
		f    func(a, b float64) float64
	}{
		{"maximum", ops.Maximum(p, q), func(a, b float64) float64 { return max(a, b) }},
		{"minimum", ops.Minimum(p, q), func(a, b float64) float64 { return min(a, b) }},
		{"pow", ops.Pow(ops.Abs(p), q), func(a, b float64) float64 { return math.Pow(math.Abs(a), b) }},
	} {
		var want []float64
		for i := range 2 {
			for j := range 4 {
				for k := range 3 {
					want = append(want, c.f(p.At(i, 0, k), q.At(0, j, 0)))
				}
			}
		}
		assertClose(t, c.name+" rank3", c.got, []int{2, 4, 3}, want, 1e-15)
	}
	// float32 keeps its dtype.
	m32 := ops.Maximum(f32([]float32{1, 4}, 2), f32([]float32{3}, 1))
	if m32.DType() != tensor.Float32 {
		t.Fatalf("Maximum float32 gave %v", m32.DType())
	}
	assertClose(t, "maximum f32", m32, []int{2}, []float64{3, 4}, 0)
	assertClose(t, "pow f32", ops.Pow(f32([]float32{2, 9}, 2), f32([]float32{10, 0.5}, 2)), []int{2}, []float64{1024, 3}, 0)
}

func TestElementwiseErrors(t *testing.T) {
	i32 := tensor.Ones(tensor.Int32, 2)
	testkit.MustPanic(t, func() { ops.Sqrt(i32) }, "Sqrt", "Int32")
	testkit.MustPanic(t, func() { ops.Log1p(tensor.Ones(tensor.Uint8, 2)) }, "Log1p", "UInt8")
	testkit.MustPanic(t, func() { ops.Sigmoid(tensor.Ones(tensor.Bool, 2)) }, "Sigmoid", "Bool")
	testkit.MustPanic(t, func() { ops.Abs(tensor.Ones(tensor.Bool, 2)) }, "Abs", "Bool")
	testkit.MustPanic(t, func() { ops.GELU(tensor.Ones(tensor.Int64, 3)) }, "GELU", "Int64", "[3]")
	testkit.MustPanic(t, func() { ops.Pow(tensor.Ones(tensor.Int64, 2), tensor.Ones(tensor.Int64, 2)) }, "Pow", "Int64")
	testkit.MustPanic(t, func() { ops.Pow(tensor.Ones(tensor.Float32, 2), tensor.Ones(tensor.Float64, 2)) }, "Pow", "dtypes differ")
	testkit.MustPanic(t, func() { ops.Maximum(tensor.Ones(tensor.Float32, 2, 3), tensor.Ones(tensor.Float32, 3, 2)) }, "Maximum", "[2 3]", "[3 2]", "elem_test.go")
	testkit.MustPanic(t, func() { ops.Minimum(tensor.Ones(tensor.Bool, 2), tensor.Ones(tensor.Bool, 2)) }, "Minimum", "Bool")
	testkit.MustPanic(t, func() { ops.PowScalar(i32, 2) }, "Pow", "Int32")
}

// away returns n values in ±[lo, hi), so that kinks at 0 stay out of the
// finite-difference stencil.
func away(seed uint64, lo, hi float64, shape ...int) *tensor.Tensor {
	v := randT(seed, lo, hi, shape...).Float64s()
	s := randT(seed+1000, -1, 1, shape...).Float64s()
	for i := range v {
		if s[i] < 0 {
			v[i] = -v[i]
		}
	}
	return f64(v, shape...)
}

func TestElementwiseGradients(t *testing.T) {
	x := randT(31, -2.5, 2.5, 3, 4)
	nz := away(32, 0.3, 2, 3, 4)
	pos := randT(33, 0.4, 2.5, 3, 4)
	expo := randT(34, -2, 2, 4)
	b := randT(35, -2.5, 2.5, 4)
	un := func(f func(*tensor.Tensor) *tensor.Tensor) func(...*tensor.Tensor) *tensor.Tensor {
		return func(v ...*tensor.Tensor) *tensor.Tensor { return f(v[0]) }
	}
	bin := func(f func(a, b *tensor.Tensor) *tensor.Tensor) func(...*tensor.Tensor) *tensor.Tensor {
		return func(v ...*tensor.Tensor) *tensor.Tensor { return f(v[0], v[1]) }
	}
	cases := []struct {
		name string
		f    func(...*tensor.Tensor) *tensor.Tensor
		xs   []*tensor.Tensor
		ord2 bool
	}{
		{"abs", un(ops.Abs), []*tensor.Tensor{nz}, true},
		{"sign", un(ops.Sign), []*tensor.Tensor{nz}, false},
		{"log1p", un(ops.Log1p), []*tensor.Tensor{randT(36, -0.6, 2, 3, 4)}, true},
		{"sqrt", un(ops.Sqrt), []*tensor.Tensor{pos}, true},
		{"rsqrt", un(ops.Rsqrt), []*tensor.Tensor{pos}, true},
		{"square", un(ops.Square), []*tensor.Tensor{x}, true},
		{"reciprocal", un(ops.Reciprocal), []*tensor.Tensor{nz}, true},
		{"sin", un(ops.Sin), []*tensor.Tensor{x}, true},
		{"cos", un(ops.Cos), []*tensor.Tensor{x}, true},
		{"sigmoid", un(ops.Sigmoid), []*tensor.Tensor{x}, true},
		{"erf", un(ops.Erf), []*tensor.Tensor{x}, true},
		{"gelu", un(ops.GELU), []*tensor.Tensor{x}, true},
		{"softplus", un(ops.Softplus), []*tensor.Tensor{x}, true},
		{"pow", bin(ops.Pow), []*tensor.Tensor{pos, expo}, true},
		{"pow zero exponent", bin(ops.Pow), []*tensor.Tensor{pos, f64([]float64{0, 1, 0, -0.5}, 4)}, true},
		{"pow bcast base", bin(ops.Pow), []*tensor.Tensor{randT(37, 0.5, 2, 4), randT(38, -1, 2, 3, 4)}, false},
		{"maximum", bin(ops.Maximum), []*tensor.Tensor{x, b}, true},
		{"minimum", bin(ops.Minimum), []*tensor.Tensor{b, x}, true},
		{"powscalar", un(func(v *tensor.Tensor) *tensor.Tensor { return ops.PowScalar(v, 2.5) }), []*tensor.Tensor{pos}, true},
		{"powscalar negative base", un(func(v *tensor.Tensor) *tensor.Tensor { return ops.PowScalar(v, 3) }), []*tensor.Tensor{ops.Neg(pos)}, true},
		{"addscalar", un(func(v *tensor.Tensor) *tensor.Tensor { return ops.AddScalar(v, 3) }), []*tensor.Tensor{x}, false},
		{"subscalar", un(func(v *tensor.Tensor) *tensor.Tensor { return ops.SubScalar(v, 3) }), []*tensor.Tensor{x}, false},
		{"mulscalar", un(func(v *tensor.Tensor) *tensor.Tensor { return ops.MulScalar(v, -1.5) }), []*tensor.Tensor{x}, false},
		{"divscalar", un(func(v *tensor.Tensor) *tensor.Tensor { return ops.DivScalar(v, 4) }), []*tensor.Tensor{x}, false},
		{"chain", un(func(v *tensor.Tensor) *tensor.Tensor {
			return ops.Softplus(ops.Mul(ops.Sigmoid(v), ops.GELU(ops.Sin(v))))
		}), []*tensor.Tensor{x}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkGrad(t, c.name, c.f, c.xs...)
			if c.ord2 {
				checkGrad2(t, c.name, c.f, c.xs...)
			}
		})
	}
}

// gradsOf returns the gradients of Σ f(a, b) with respect to a and b.
func gradsOf(f func(a, b *tensor.Tensor) *tensor.Tensor, a, b *tensor.Tensor) []*tensor.Tensor {
	return spore.Grad(func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Sum(f(v[0], v[1])) }, spore.GradPosition(0, 1))(a, b)
}

// TestExtremumGradRouting checks the cases finite differences cannot:
// ties, NaN and broadcasting.
func TestExtremumGradRouting(t *testing.T) {
	a := f64([]float64{1, 3, 5, elemNaN}, 4)
	b := f64([]float64{2, 3, 4, 1}, 4)
	g := gradsOf(ops.Maximum, a, b)
	assertClose(t, "max da", g[0], []int{4}, []float64{0, 0.5, 1, 1}, 0)
	assertClose(t, "max db", g[1], []int{4}, []float64{1, 0.5, 0, 1}, 0)
	g = gradsOf(ops.Minimum, a, b)
	assertClose(t, "min da", g[0], []int{4}, []float64{1, 0.5, 0, 1}, 0)
	assertClose(t, "min db", g[1], []int{4}, []float64{0, 0.5, 1, 1}, 0)
	// A broadcast scalar collects the gradient of every element it wins.
	g = gradsOf(ops.Maximum, f64([]float64{1, 2, 3}, 3), tensor.Scalar(2.0))
	assertClose(t, "max bcast da", g[0], []int{3}, []float64{0, 0.5, 1}, 0)
	assertClose(t, "max bcast db", g[1], []int{}, []float64{1.5}, 0)
	// Maximum(x, x) = x, so the gradient is one, split and rejoined.
	gx := spore.Grad(func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Sum(ops.Maximum(v[0], v[0])) })(b)
	assertClose(t, "max(x,x)", gx[0], []int{4}, []float64{1, 1, 1, 1}, 0)
}

// TestPowGradEdges covers where x^y is not differentiable in y, and 0⁰.
func TestPowGradEdges(t *testing.T) {
	x := f64([]float64{0, 0, -2, 2, 0}, 5)
	y := f64([]float64{0, 2, 3, 0, 0.5}, 5)
	g := gradsOf(ops.Pow, x, y)
	assertClose(t, "dx", g[0], []int{5}, []float64{0, 0, 12, 0, elemInf}, 1e-15)
	assertClose(t, "dy", g[1], []int{5}, []float64{0, 0, 0, math.Ln2, 0}, 1e-15)
	// The Hessian at 0⁰ stays finite: no NaN was taped in either branch.
	h := spore.Grad(func(v ...*tensor.Tensor) *tensor.Tensor {
		gs := gradsOf(ops.Pow, v[0], v[1])
		return ops.Sum(ops.Add(gs[0], gs[1]))
	}, spore.GradPosition(0, 1))(f64([]float64{0}, 1), f64([]float64{0}, 1))
	for i, hv := range h {
		if v := hv.Item(); math.IsNaN(v) {
			t.Fatalf("second derivative %d at 0⁰ is NaN", i)
		}
	}
}

func TestCompareLogicalValues(t *testing.T) {
	a := f64([]float64{1, 2, 3}, 3)
	b := f64([]float64{2, 3}, 2, 1)
	n := f64([]float64{elemNaN, 1}, 2)
	runElemCases(t, []elemCase{
		{"equal", ops.Equal(a, b), []int{2, 3}, []float64{0, 1, 0, 0, 0, 1}},
		{"notequal", ops.NotEqual(a, b), []int{2, 3}, []float64{1, 0, 1, 1, 1, 0}},
		{"less", ops.Less(a, b), []int{2, 3}, []float64{1, 0, 0, 1, 1, 0}},
		{"lessequal", ops.LessEqual(a, b), []int{2, 3}, []float64{1, 1, 0, 1, 1, 1}},
		{"greater", ops.Greater(a, b), []int{2, 3}, []float64{0, 0, 1, 0, 0, 0}},
		{"greaterequal", ops.GreaterEqual(a, b), []int{2, 3}, []float64{0, 1, 1, 0, 0, 1}},
		{"elemNaN equal", ops.Equal(n, n), []int{2}, []float64{0, 1}},
		{"elemNaN notequal", ops.NotEqual(n, n), []int{2}, []float64{1, 0}},
		{"elemNaN less", ops.Less(n, tensor.Scalar(5.0)), []int{2}, []float64{0, 1}},
		{"int32", ops.Less(tensor.FromSlice([]int32{1, 5}, 2), tensor.Scalar[int32](3)), []int{2}, []float64{1, 0}},
		{"int64", ops.GreaterEqual(tensor.FromSlice([]int64{1, 5}, 2), tensor.Scalar[int64](5)), []int{2}, []float64{0, 1}},
		{"uint8", ops.Greater(tensor.FromSlice([]uint8{200, 5}, 2), tensor.Scalar[uint8](100)), []int{2}, []float64{1, 0}},
		{"float32", ops.Equal(f32([]float32{1, 2}, 2), f32([]float32{2}, 1)), []int{2}, []float64{0, 1}},
		{"empty", ops.Less(tensor.Zeros(tensor.Float64, 0, 3), a), []int{0, 3}, nil},
	}, 0)
	if ops.Equal(a, a).DType() != tensor.Bool {
		t.Fatal("comparison is not Bool")
	}
	tf := tensor.FromSlice([]bool{true, false}, 2, 1)
	ft := tensor.FromSlice([]bool{false, true, true}, 3)
	runElemCases(t, []elemCase{
		{"and", ops.LogicalAnd(tf, ft), []int{2, 3}, []float64{0, 1, 1, 0, 0, 0}},
		{"or", ops.LogicalOr(tf, ft), []int{2, 3}, []float64{1, 1, 1, 0, 1, 1}},
		{"not", ops.LogicalNot(ft), []int{3}, []float64{1, 0, 0}},
		{"and scalar", ops.LogicalAnd(ft, tensor.Scalar(true)), []int{3}, []float64{0, 1, 1}},
	}, 0)
}

func TestSelectValues(t *testing.T) {
	c := tensor.FromSlice([]bool{true, false}, 2, 1)
	a := f64([]float64{1, 2, 3}, 3)
	b := tensor.Scalar(-1.0)
	runElemCases(t, []elemCase{
		{"select bcast", ops.Select(c, a, b), []int{2, 3}, []float64{1, 2, 3, -1, -1, -1}},
		{"where", ops.Where(ops.Greater(a, tensor.Scalar(1.5)), a, ops.Neg(a)), []int{3}, []float64{-1, 2, 3}},
		{"select int", ops.Select(c, tensor.FromSlice([]int64{7}, 1), tensor.FromSlice([]int64{8}, 1)), []int{2, 1}, []float64{7, 8}},
		{"select bool", ops.Select(c, tensor.Scalar(false), tensor.Scalar(true)), []int{2, 1}, []float64{0, 1}},
		{"select empty", ops.Select(tensor.Zeros(tensor.Bool, 0), tensor.Zeros(tensor.Float64, 0), b), []int{0}, nil},
	}, 0)
	// Select's gradient goes to the chosen branch, summed over broadcasting.
	cond := tensor.FromSlice([]bool{true, false, false, true, true, false}, 2, 3)
	checkGrad(t, "select", func(v ...*tensor.Tensor) *tensor.Tensor { return ops.Select(cond, v[0], v[1]) },
		randT(41, -1, 1, 3), randT(42, -1, 1, 2, 3))
	g := gradsOf(func(x, y *tensor.Tensor) *tensor.Tensor { return ops.Select(cond, x, y) }, randT(41, -1, 1, 3), tensor.Scalar(0.0))
	assertClose(t, "select da", g[0], []int{3}, []float64{2, 1, 0}, 0)
	assertClose(t, "select db", g[1], []int{}, []float64{3}, 0)
}

func TestCompareSelectErrors(t *testing.T) {
	bl := tensor.Ones(tensor.Bool, 2)
	f := tensor.Ones(tensor.Float32, 2)
	testkit.MustPanic(t, func() { ops.Equal(bl, bl) }, "Equal", "Bool")
	testkit.MustPanic(t, func() { ops.Less(f, tensor.Ones(tensor.Float64, 2)) }, "Less", "Float32", "Float64")
	testkit.MustPanic(t, func() { ops.Greater(tensor.Ones(tensor.Float32, 3, 2), tensor.Ones(tensor.Float32, 3)) }, "Greater", "[3 2]", "[3]")
	testkit.MustPanic(t, func() { ops.LogicalAnd(bl, f) }, "LogicalAnd", "Float32")
	testkit.MustPanic(t, func() { ops.LogicalNot(f) }, "LogicalNot", "Float32")
	testkit.MustPanic(t, func() { ops.Select(f, f, f) }, "Select", "condition must be Bool")
	testkit.MustPanic(t, func() { ops.Select(bl, f, tensor.Ones(tensor.Float64, 2)) }, "Select", "differ in dtype")
	testkit.MustPanic(t, func() { ops.Select(tensor.Ones(tensor.Bool, 3), f, f) }, "Select", "[3]", "[2]")
	testkit.MustPanic(t, func() { ops.Cast(f, tensor.DType(42)) }, "Cast", "invalid target dtype")
}

var allDTypes = []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Bool, tensor.Uint8}

func TestCast(t *testing.T) {
	x := f64([]float64{-1.5, 0, 2.7, 300}, 4)
	runElemCases(t, []elemCase{
		{"to int32", ops.Cast(x, tensor.Int32), []int{4}, []float64{-1, 0, 2, 300}},
		{"to int64", ops.Cast(x, tensor.Int64), []int{4}, []float64{-1, 0, 2, 300}},
		{"to uint8 wraps", ops.Cast(x, tensor.Uint8), []int{4}, []float64{255, 0, 2, 44}},
		{"to bool", ops.Cast(x, tensor.Bool), []int{4}, []float64{1, 0, 1, 1}},
		{"to float32", ops.Cast(x, tensor.Float32), []int{4}, []float64{-1.5, 0, float64(float32(2.7)), 300}},
		{"bool to float", ops.Cast(tensor.FromSlice([]bool{true, false}, 2), tensor.Float64), []int{2}, []float64{1, 0}},
		{"bool to uint8", ops.Cast(tensor.FromSlice([]bool{false, true}, 2), tensor.Uint8), []int{2}, []float64{0, 1}},
		{"uint8 to int32", ops.Cast(tensor.FromSlice([]uint8{255, 7}, 2), tensor.Int32), []int{2}, []float64{255, 7}},
		{"int64 to float32", ops.Cast(tensor.FromSlice([]int64{-3, 1 << 40}, 2), tensor.Float32), []int{2}, []float64{-3, 1 << 40}},
		{"elemNaN to bool", ops.Cast(f64([]float64{elemNaN}, 1), tensor.Bool), []int{1}, []float64{1}},
		{"empty", ops.Cast(tensor.Zeros(tensor.Int32, 0, 2), tensor.Float32), []int{0, 2}, nil},
	}, 0)
	for _, from := range allDTypes {
		for _, to := range allDTypes {
			y := ops.Cast(tensor.Ones(from, 2, 3), to)
			if y.DType() != to || !y.Shape().Equal(tensor.Shape{2, 3}) {
				t.Fatalf("Cast %v -> %v: got %v %v", from, to, y.Shape(), y.DType())
			}
			assertClose(t, "ones "+from.String()+"->"+to.String(), y, []int{2, 3}, []float64{1, 1, 1, 1, 1, 1}, 0)
		}
	}
	// Gradients cross float precisions and stop at integers.
	w := f64([]float64{0.5, -2}, 2)
	gx := spore.Grad(func(v ...*tensor.Tensor) *tensor.Tensor {
		return ops.Sum(ops.Mul(ops.Cast(v[0], tensor.Float64), w))
	})(f32([]float32{1, 2}, 2))
	if gx[0].DType() != tensor.Float32 {
		t.Fatalf("Cast gradient dtype %v, want Float32", gx[0].DType())
	}
	assertClose(t, "cast grad", gx[0], []int{2}, []float64{0.5, -2}, 0)
	gi := spore.Grad(func(v ...*tensor.Tensor) *tensor.Tensor {
		return ops.Sum(ops.Cast(ops.Cast(v[0], tensor.Int32), tensor.Float64))
	})(f64([]float64{1.5, 2.5}, 2))
	assertClose(t, "cast grad through int", gi[0], []int{2}, []float64{0, 0}, 0)
}

// recorded returns the primitive and attributes that op applied, read from
// the autodiff record of a tracked application.
func recorded(op func(*tensor.Tensor) *tensor.Tensor, x *tensor.Tensor) *core.Node {
	return core.NodeOf(op(core.TrackLeaf(x)))
}

// TestKernelsDoNotAllocate runs kernels the way a compiled plan does, into
// a preallocated output, and counts allocations.
func TestKernelsDoNotAllocate(t *testing.T) {
	check := func(name string, n *core.Node) {
		t.Helper()
		out := core.NewOf(n.Out.Meta())
		k, err := n.Prim.KernelFor(core.KernelDType(n.Inputs, out.DType()), core.CPU)
		if err != nil {
			t.Fatal(err)
		}
		if a := testing.AllocsPerRun(50, func() { k(n.Attrs, n.Inputs, out) }); a != 0 {
			t.Errorf("%s kernel allocates %v times per call", name, a)
		}
	}
	for _, from := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for _, to := range allDTypes {
			n := recorded(func(v *tensor.Tensor) *tensor.Tensor { return ops.Cast(v, to) }, tensor.Ones(from, 64))
			check("Cast "+from.String()+"->"+to.String(), n)
		}
	}
	x := randT(51, 0.5, 2, 64)
	for name, op := range map[string]func(*tensor.Tensor) *tensor.Tensor{
		"Sigmoid":  ops.Sigmoid,
		"GELU":     ops.GELU,
		"Softplus": ops.Softplus,
		"Sqrt":     ops.Sqrt,
		"Abs":      ops.Abs,
		"Pow":      func(v *tensor.Tensor) *tensor.Tensor { return ops.PowScalar(v, 1.5) },
		"Maximum":  func(v *tensor.Tensor) *tensor.Tensor { return ops.Maximum(v, ops.Neg(v)) },
	} {
		check(name, recorded(op, x))
	}
}
