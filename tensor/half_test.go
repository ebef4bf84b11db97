package tensor_test

import (
	"math"
	"testing"

	"github.com/sporeml/spore/tensor"
)

// Float16 tensors print as NumPy prints float16 arrays (the strings below
// are NumPy 1.24's str of np.array(v, dtype=np.float16)): each value in
// the fewest digits that identify it among float16 values.
func TestHalfPrintsLikeNumPy(t *testing.T) {
	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	negZero := float32(math.Copysign(0, -1))
	cases := []struct {
		in   []float32
		want string
	}{
		{[]float32{0.1, 1, -2.5, 65504, inf, 6e-8}, "[ 1.00e-01  1.00e+00 -2.50e+00  6.55e+04       inf  5.96e-08]"},
		{[]float32{1, 2, 3}, "[1. 2. 3.]"},
		{[]float32{0.1, 0.2, 0.3333}, "[0.1    0.2    0.3333]"},
		{[]float32{negZero, nan, 1.5}, "[-0.   nan  1.5]"},
		{[]float32{1e-5, 3}, "[1.e-05 3.e+00]"},
		{[]float32{65504, 1}, "[6.55e+04 1.00e+00]"},
		{[]float32{2049, 0.5}, "[2.048e+03 5.000e-01]"},
	}
	for _, c := range cases {
		x := toHalf(tensor.Float16, c.in)
		if got := x.String(); got != c.want {
			t.Errorf("Float16 %v prints\n%s\nwant\n%s", c.in, got, c.want)
		}
	}
	scalars := []struct {
		in   float32
		want string
	}{{0.1, "0.1"}, {3, "3.0"}, {1e-5, "1e-05"}, {negZero, "-0.0"}, {65504, "65500.0"}, {inf, "inf"}}
	for _, c := range scalars {
		if got := tensor.Scalar(tensor.F16From(c.in)).String(); got != c.want {
			t.Errorf("Float16 scalar %v prints %s, want %s", c.in, got, c.want)
		}
	}
}

// A BFloat16 tensor prints its values with the fewest digits that identify
// them among bfloat16 values: 0.1 rounds to 0.10009765625 and prints as
// 0.1, where its float32 value would print as 0.100097656.
func TestBFloat16Prints(t *testing.T) {
	cases := []struct {
		in   []float32
		want string
	}{
		{[]float32{0.1, 1, -2.5}, "[ 0.1  1.  -2.5]"},
		{[]float32{1000, 1001, 3}, "[1000. 1000.    3.]"}, // 1001 rounds to 1000
		{[]float32{1e20, 1}, "[1.e+20 1.e+00]"},
	}
	for _, c := range cases {
		x := toHalf(tensor.BFloat16, c.in)
		if got := x.String(); got != c.want {
			t.Errorf("BFloat16 %v prints\n%s\nwant\n%s", c.in, got, c.want)
		}
	}
	want := "Tensor(shape=[2], dtype=BFloat16, value=\n[0.1 0.2])"
	if got := toHalf(tensor.BFloat16, []float32{0.1, 0.2}).Verbose(); got != want {
		t.Errorf("Verbose = %q, want %q", got, want)
	}
}

func toHalf(dt tensor.DType, v []float32) *tensor.Tensor {
	switch dt {
	case tensor.BFloat16:
		h := make([]tensor.BF16, len(v))
		for i, x := range v {
			h[i] = tensor.BF16From(x)
		}
		return tensor.FromSlice(h)
	case tensor.Float16:
		h := make([]tensor.F16, len(v))
		for i, x := range v {
			h[i] = tensor.F16From(x)
		}
		return tensor.FromSlice(h)
	}
	panic("not a 16-bit float: " + dt.String())
}

// Creating and reading 16-bit tensors: the constructors round to the type,
// the readers return its values exactly, and the dtype answers its
// questions.
func TestHalfCreateAndRead(t *testing.T) {
	for _, c := range []struct {
		dt     tensor.DType
		name   string
		in     float64
		stored float64 // in rounded to the type
	}{
		{tensor.BFloat16, "BFloat16", 0.1, 0.10009765625},
		{tensor.BFloat16, "BFloat16", 1 + 1.0/256, 1},             // a tie: to even
		{tensor.BFloat16, "BFloat16", 1 + 3.0/256, 1 + 4.0/256},   // a tie: to even
		{tensor.BFloat16, "BFloat16", 3e38, math.Ldexp(226, 120)}, // 1.765625 × 2^127
		{tensor.Float16, "Float16", 0.1, 0.0999755859375},
		{tensor.Float16, "Float16", 70000, math.Inf(1)},
		{tensor.Float16, "Float16", 1e-7, 1.1920928955078125e-07}, // subnormal
	} {
		if c.dt.String() != c.name || c.dt.Size() != 2 || !c.dt.IsFloat() || !c.dt.IsHalf() || c.dt.IsInt() {
			t.Errorf("%v: name %q size %d float %v half %v int %v", c.dt, c.dt.String(), c.dt.Size(), c.dt.IsFloat(), c.dt.IsHalf(), c.dt.IsInt())
		}
		for _, x := range []*tensor.Tensor{
			tensor.Full(c.dt, c.in, 2, 2),
			tensor.FromSlice([]tensor.BF16{tensor.BF16From(float32(c.in))}),
		} {
			if x.DType() != c.dt {
				continue // the FromSlice row is for BFloat16 only
			}
			if got := x.Float32s()[0]; float64(got) != c.stored {
				t.Errorf("%v(%v).Float32s()[0] = %v, want %v", c.dt, c.in, got, c.stored)
			}
			if got := x.Float64s()[0]; got != c.stored {
				t.Errorf("%v(%v).Float64s()[0] = %v, want %v", c.dt, c.in, got, c.stored)
			}
			if got := x.At(make([]int, x.Rank())...); got != c.stored {
				t.Errorf("%v(%v).At = %v, want %v", c.dt, c.in, got, c.stored)
			}
		}
	}
	if d := tensor.DTypeOf[tensor.BF16](); d != tensor.BFloat16 {
		t.Errorf("DTypeOf[BF16] = %v", d)
	}
	if d := tensor.DTypeOf[tensor.F16](); d != tensor.Float16 {
		t.Errorf("DTypeOf[F16] = %v", d)
	}
	e := tensor.Eye(tensor.BFloat16, 2)
	if got := e.Float32s(); got[0] != 1 || got[1] != 0 || got[3] != 1 {
		t.Errorf("Eye(BFloat16, 2) = %v", got)
	}
	if b := e.Bools(); !b[0] || b[1] {
		t.Errorf("Eye(BFloat16, 2).Bools() = %v", b)
	}
	if got := tensor.Bits16(e); len(got) != 4 || got[0] != 0x3f80 {
		t.Errorf("Bits16(Eye) = %#x, want 0x3f80 first (bfloat16 1.0)", got)
	}
	p := tensor.NewParameter("w", tensor.Ones(tensor.Float16, 3))
	p.Assign(tensor.Full(tensor.Float16, 0.5, 3))
	if got := p.Float32s(); got[2] != 0.5 {
		t.Errorf("Float16 parameter after Assign(0.5) = %v", got)
	}
	c := p.Clone()
	if c.DType() != tensor.Float16 || c.Float32s()[0] != 0.5 {
		t.Errorf("Clone of a Float16 parameter = %v %v", c.DType(), c)
	}
}
