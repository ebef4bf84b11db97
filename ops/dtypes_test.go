package ops_test

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// fromAny wraps a Go slice of one of the element types in a tensor.
func fromAny(t *testing.T, data any) *tensor.Tensor {
	t.Helper()
	switch d := data.(type) {
	case []float32:
		return tensor.FromSlice(d)
	case []float64:
		return tensor.FromSlice(d)
	case []int8:
		return tensor.FromSlice(d)
	case []int16:
		return tensor.FromSlice(d)
	case []int32:
		return tensor.FromSlice(d)
	case []int64:
		return tensor.FromSlice(d)
	case []uint8:
		return tensor.FromSlice(d)
	case []uint16:
		return tensor.FromSlice(d)
	case []uint32:
		return tensor.FromSlice(d)
	case []uint64:
		return tensor.FromSlice(d)
	case []bool:
		return tensor.FromSlice(d)
	case []tensor.BF16:
		return tensor.FromSlice(d)
	case []tensor.F16:
		return tensor.FromSlice(d)
	}
	t.Fatalf("no tensor of %T", data)
	return nil
}

// Cast converts between every pair of dtypes as C does: integers wrap to
// a narrower type, floats truncate toward zero (an out-of-range float
// wrapping through int64), 16-bit floats round to nearest with ties to
// even. The expected values are worked out by hand from those rules.
func TestCastIntegerTypes(t *testing.T) {
	f16 := func(v ...float32) []tensor.F16 {
		out := make([]tensor.F16, len(v))
		for i, x := range v {
			out[i] = tensor.F16From(x)
		}
		return out
	}
	bf16 := func(v ...float32) []tensor.BF16 {
		out := make([]tensor.BF16, len(v))
		for i, x := range v {
			out[i] = tensor.BF16From(x)
		}
		return out
	}
	cases := []struct {
		name string
		in   any
		to   tensor.DType
		want any
	}{
		{"int16 wraps to int8", []int16{300, -129, 127}, tensor.Int8, []int8{44, 127, 127}},
		{"uint8 to int8", []uint8{200, 128, 5}, tensor.Int8, []int8{-56, -128, 5}},
		{"int8 -1 to uint8", []int8{-1, 0}, tensor.Uint8, []uint8{255, 0}},
		{"int8 -1 to uint16", []int8{-1, 2}, tensor.Uint16, []uint16{65535, 2}},
		{"int8 -1 to uint32", []int8{-1, 2}, tensor.Uint32, []uint32{4294967295, 2}},
		{"int8 -1 to uint64", []int8{-1, 2}, tensor.Uint64, []uint64{math.MaxUint64, 2}},
		{"uint64 to int64", []uint64{math.MaxUint64, 1 << 63}, tensor.Int64, []int64{-1, math.MinInt64}},
		{"uint32 to int32", []uint32{4000000000, 7}, tensor.Int32, []int32{-294967296, 7}},
		{"uint16 to int16", []uint16{65535, 32768}, tensor.Int16, []int16{-1, -32768}},
		{"int64 to uint16", []int64{70000, -2}, tensor.Uint16, []uint16{4464, 65534}},
		{"float32 to uint8", []float32{-1.5, 255.9, 300}, tensor.Uint8, []uint8{255, 255, 44}},
		{"float32 to int8", []float32{2.9, -2.9, 128}, tensor.Int8, []int8{2, -2, -128}},
		{"float64 to int16", []float64{-32768.7, 40000}, tensor.Int16, []int16{-32768, -25536}},
		{"float64 to uint32", []float64{4294967295, -1}, tensor.Uint32, []uint32{4294967295, 4294967295}},
		{"float64 to uint64", []float64{1e19, -1, 2.5}, tensor.Uint64, []uint64{10000000000000000000, math.MaxUint64, 2}},
		{"float64 to int64 saturates", []float64{1e30, -1e30, math.NaN()}, tensor.Int64, []int64{math.MaxInt64, math.MinInt64, 0}},
		{"float64 to uint64 saturates", []float64{1e30, 18446744073709551615}, tensor.Uint64, []uint64{math.MaxUint64, math.MaxUint64}},
		{"uint64 to float64", []uint64{math.MaxUint64, 3}, tensor.Float64, []float64{1 << 64, 3}},
		{"uint32 to float32", []uint32{16777217, 4294967295}, tensor.Float32, []float32{16777216, 4294967296}},
		{"uint16 to float16 overflows", []uint16{65535, 65504, 65519}, tensor.Float16, f16(float32(math.Inf(1)), 65504, 65504)},
		{"int32 to float16 ties to even", []int32{2049, 2051, -2049}, tensor.Float16, f16(2048, 2052, -2048)},
		{"int16 to bfloat16 ties to even", []int16{257, 259, -257}, tensor.BFloat16, bf16(256, 260, -256)},
		{"uint64 to bfloat16", []uint64{1 << 40}, tensor.BFloat16, bf16(1 << 40)},
		{"float16 to int8", f16(-3.75, 100.5, 200), tensor.Int8, []int8{-3, 100, -56}},
		{"bfloat16 to uint64", bf16(-1, 3.5), tensor.Uint64, []uint64{math.MaxUint64, 3}},
		{"float16 to uint16", f16(65504, 1.5), tensor.Uint16, []uint16{65504, 1}},
		{"bool to int8", []bool{true, false}, tensor.Int8, []int8{1, 0}},
		{"bool to uint64", []bool{true, false}, tensor.Uint64, []uint64{1, 0}},
		{"bool to float16", []bool{true, false}, tensor.Float16, f16(1, 0)},
		{"int8 to bool", []int8{-3, 0}, tensor.Bool, []bool{true, false}},
		{"uint64 to bool", []uint64{1 << 63, 0}, tensor.Bool, []bool{true, false}},
		{"int16 to int16", []int16{-5, 9}, tensor.Int16, []int16{-5, 9}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := fromAny(t, c.in)
			eager := ops.Cast(x, c.to)
			graph := spore.Jit(func(xs ...*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{ops.Cast(xs[0], c.to)}
			}, spore.JitConfig{Name: "cast." + c.name})(x)[0]
			for mode, got := range map[string]*tensor.Tensor{"PyNative": eager, "Graph": graph} {
				if got.DType() != c.to || !reflect.DeepEqual(got.Data(), c.want) {
					t.Errorf("%s: Cast(%v, %v) = %v %v, want %v", mode, c.in, c.to, got.DType(), got.Data(), c.want)
				}
			}
		})
	}
}

// Every pair of dtypes has a cast, in both modes, and a value that every
// type holds exactly (0, 1, 5) survives any cast and the cast back.
func TestCastEveryPair(t *testing.T) {
	all := []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int8, tensor.Int16, tensor.Int32, tensor.Int64,
		tensor.Uint8, tensor.Uint16, tensor.Uint32, tensor.Uint64, tensor.BFloat16, tensor.Float16}
	src := tensor.FromSlice([]float32{0, 1, 5})
	for _, from := range all {
		for _, to := range all {
			x := ops.Cast(src, from)
			back := spore.Jit(func(xs ...*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{ops.Cast(ops.Cast(xs[0], to), from)}
			}, spore.JitConfig{Name: "castpair"})(x)[0]
			if back.DType() != from || !reflect.DeepEqual(back.Float64s(), []float64{0, 1, 5}) {
				t.Errorf("%v -> %v -> %v: %v %v", from, to, from, back.DType(), back.Float64s())
			}
			if b := ops.Cast(ops.Cast(x, to), tensor.Bool); !reflect.DeepEqual(b.Bools(), []bool{false, true, true}) {
				t.Errorf("%v -> %v -> Bool: %v", from, to, b.Bools())
			}
		}
	}
}

// An integer op case: f over the inputs, in both modes, against want
// (worked out by hand from C's wrap-around arithmetic).
type intCase struct {
	name string
	f    func(xs ...*tensor.Tensor) *tensor.Tensor
	in   []any
	want any
}

func runIntCases(t *testing.T, cases []intCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			xs := make([]*tensor.Tensor, len(c.in))
			for i, v := range c.in {
				if x, ok := v.(*tensor.Tensor); ok {
					xs[i] = x
				} else {
					xs[i] = fromAny(t, v)
				}
			}
			eager := c.f(xs...)
			graph := spore.Jit(func(xs ...*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{c.f(xs...)}
			}, spore.JitConfig{Name: "int." + c.name})(xs...)[0]
			for mode, got := range map[string]*tensor.Tensor{"PyNative": eager, "Graph": graph} {
				if !reflect.DeepEqual(got.Data(), c.want) {
					t.Errorf("%s: got %v %v, want %v", mode, got.DType(), got.Data(), c.want)
				}
			}
		})
	}
}

func bin(f func(a, b *tensor.Tensor) *tensor.Tensor) func(xs ...*tensor.Tensor) *tensor.Tensor {
	return func(xs ...*tensor.Tensor) *tensor.Tensor { return f(xs[0], xs[1]) }
}

func un(f func(x *tensor.Tensor) *tensor.Tensor) func(xs ...*tensor.Tensor) *tensor.Tensor {
	return func(xs ...*tensor.Tensor) *tensor.Tensor { return f(xs[0]) }
}

// Elementwise integer arithmetic wraps around as C's does, divides
// truncating toward zero (Div) or flooring (FloorDiv, Mod), and compares
// unsigned values as unsigned.
func TestIntegerArithmetic(t *testing.T) {
	runIntCases(t, []intCase{
		{"add int8 wraps", bin(ops.Add), []any{[]int8{127, -128}, []int8{1, -1}}, []int8{-128, 127}},
		{"sub uint8 wraps", bin(ops.Sub), []any{[]uint8{0, 5}, []uint8{1, 3}}, []uint8{255, 2}},
		{"mul int16 wraps", bin(ops.Mul), []any{[]int16{300, -2}, []int16{300, 3}}, []int16{24464, -6}},
		{"mul uint32 wraps", bin(ops.Mul), []any{[]uint32{65536, 3}, []uint32{65536, 5}}, []uint32{0, 15}},
		{"add uint64 wraps", bin(ops.Add), []any{[]uint64{math.MaxUint64, 1}, []uint64{1, 2}}, []uint64{0, 3}},
		{"add uint16 broadcasts", bin(ops.Add), []any{[]uint16{1, 2, 65535}, []uint16{1}}, []uint16{2, 3, 0}},
		{"div int8 truncates", bin(ops.Div), []any{[]int8{-7, 7, -128}, []int8{2, -2, -1}}, []int8{-3, -3, -128}},
		{"div uint16", bin(ops.Div), []any{[]uint16{65535, 7}, []uint16{2, 7}}, []uint16{32767, 1}},
		{"div uint64 above 2^63", bin(ops.Div), []any{[]uint64{1 << 63}, []uint64{3}}, []uint64{3074457345618258602}},
		{"floordiv int16 floors", bin(ops.FloorDiv), []any{[]int16{-7, 7}, []int16{2, -2}}, []int16{-4, -4}},
		{"mod int8 takes the divisor's sign", bin(ops.Mod), []any{[]int8{-7, 7}, []int8{2, -2}}, []int8{1, -1}},
		{"mod uint32", bin(ops.Mod), []any{[]uint32{7, 4000000000}, []uint32{3, 7}}, []uint32{1, 3}},
		{"maximum uint8", bin(ops.Maximum), []any{[]uint8{200, 3}, []uint8{100, 9}}, []uint8{200, 9}},
		{"maximum uint64 is unsigned", bin(ops.Maximum), []any{[]uint64{1 << 63, 1}, []uint64{1, 2}}, []uint64{1 << 63, 2}},
		{"minimum int16", bin(ops.Minimum), []any{[]int16{-32768, 3}, []int16{0, -3}}, []int16{-32768, -3}},
		{"neg int16 wraps at the minimum", un(ops.Neg), []any{[]int16{-32768, 5}}, []int16{-32768, -5}},
		{"abs int8", un(ops.Abs), []any{[]int8{-128, -3, 4}}, []int8{-128, 3, 4}},
		{"abs uint16 is the identity", un(ops.Abs), []any{[]uint16{65535, 0}}, []uint16{65535, 0}},
		{"sign int8", un(ops.Sign), []any{[]int8{-5, 0, 7}}, []int8{-1, 0, 1}},
		{"sign uint32", un(ops.Sign), []any{[]uint32{0, 9}}, []uint32{0, 1}},
		{"square uint8 wraps", un(ops.Square), []any{[]uint8{16, 3}}, []uint8{0, 9}},
		{"round int16 is the identity", un(ops.Round), []any{[]int16{-3, 4}}, []int16{-3, 4}},
		{"relu int8", un(ops.ReLU), []any{[]int8{-3, 4}}, []int8{0, 4}},
		{"less uint64 is unsigned", bin(ops.Less), []any{[]uint64{1 << 63, 0}, []uint64{1, 1}}, []bool{false, true}},
		{"equal int16", bin(ops.Equal), []any{[]int16{3, -1}, []int16{3, 1}}, []bool{true, false}},
		{"greater-equal uint16", bin(ops.GreaterEqual), []any{[]uint16{65535, 1}, []uint16{1, 2}}, []bool{true, false}},
		{"bitwise and uint8", bin(ops.BitwiseAnd), []any{[]uint8{12, 255}, []uint8{10, 15}}, []uint8{8, 15}},
		{"bitwise or int16", bin(ops.BitwiseOr), []any{[]int16{1, -32768}, []int16{2, 1}}, []int16{3, -32767}},
		{"bitwise xor uint64", bin(ops.BitwiseXor), []any{[]uint64{math.MaxUint64}, []uint64{1}}, []uint64{math.MaxUint64 - 1}},
		{"bitwise not int8", un(ops.BitwiseNot), []any{[]int8{0, 127}}, []int8{-1, -128}},
		{"bitwise not uint16", un(ops.BitwiseNot), []any{[]uint16{0, 65535}}, []uint16{65535, 0}},
		{"shift left uint8 drops bits", bin(ops.ShiftLeft), []any{[]uint8{1, 255}, []uint8{7, 1}}, []uint8{128, 254}},
		{"shift left uint32 by 32 is 0", bin(ops.ShiftLeft), []any{[]uint32{1}, []uint32{32}}, []uint32{0}},
		{"shift right uint8", bin(ops.ShiftRight), []any{[]uint8{128, 64}, []uint8{7, 3}}, []uint8{1, 8}},
		{"shift left uint64", bin(ops.ShiftLeft), []any{[]uint64{1, 3}, []uint64{63, 64}}, []uint64{1 << 63, 0}},
		{"shift right uint16 is logical", bin(ops.ShiftRight), []any{[]uint16{65535}, []uint16{15}}, []uint16{1}},
	})
}

// The integer dtypes reach the reductions, Clip, Select and the ops that
// move elements.
func TestIntegerReductionsAndMoves(t *testing.T) {
	runIntCases(t, []intCase{
		{"sum uint8 wraps", un(func(x *tensor.Tensor) *tensor.Tensor { return ops.Sum(x) }), []any{[]uint8{200, 100}}, []uint8{44}},
		{"sum int8 wraps", un(func(x *tensor.Tensor) *tensor.Tensor { return ops.Sum(x) }), []any{[]int8{100, 100}}, []int8{-56}},
		{"prod int16 wraps", un(func(x *tensor.Tensor) *tensor.Tensor { return ops.Prod(x) }), []any{[]int16{256, 256}}, []int16{0}},
		{"max uint16", un(func(x *tensor.Tensor) *tensor.Tensor { return ops.Max(x) }), []any{[]uint16{65535, 3}}, []uint16{65535}},
		{"min int8", un(func(x *tensor.Tensor) *tensor.Tensor { return ops.Min(x) }), []any{[]int8{5, -128}}, []int8{-128}},
		{"max uint64 is unsigned", un(func(x *tensor.Tensor) *tensor.Tensor { return ops.Max(x) }), []any{[]uint64{1, 1 << 63}}, []uint64{1 << 63}},
		{"argmax uint32", un(func(x *tensor.Tensor) *tensor.Tensor { return ops.ArgMax(x, 0) }), []any{[]uint32{1, 4000000000, 7}}, []int64{1}},
		{"cumsum uint8 wraps", un(func(x *tensor.Tensor) *tensor.Tensor { return ops.CumSum(x, 0, false, false) }), []any{[]uint8{200, 100}}, []uint8{200, 44}},
		{"clip int8 rounds the bounds inward", un(func(x *tensor.Tensor) *tensor.Tensor { return ops.Clip(x, -50.5, 50.5) }), []any{[]int8{-100, 0, 100}}, []int8{-50, 0, 50}},
		{"clip uint8 beyond its range", un(func(x *tensor.Tensor) *tensor.Tensor { return ops.Clip(x, -1, 300) }), []any{[]uint8{0, 200, 255}}, []uint8{0, 200, 255}},
		{"clip uint64", un(func(x *tensor.Tensor) *tensor.Tensor { return ops.Clip(x, 10, 100) }), []any{[]uint64{1, 50, 1 << 63}}, []uint64{10, 50, 100}},
		{"clip tensor int16", func(xs ...*tensor.Tensor) *tensor.Tensor { return ops.ClipTensor(xs[0], xs[1], xs[2]) },
			[]any{[]int16{-9, 0, 9}, []int16{-5}, []int16{5}}, []int16{-5, 0, 5}},
		{"select uint32", func(xs ...*tensor.Tensor) *tensor.Tensor { return ops.Select(xs[0], xs[1], xs[2]) },
			[]any{[]bool{true, false}, []uint32{1, 2}, []uint32{3, 4}}, []uint32{1, 4}},
		{"transpose int16", un(func(x *tensor.Tensor) *tensor.Tensor { return ops.Transpose(ops.Reshape(x, 2, 2), 1, 0) }),
			[]any{[]int16{1, 2, 3, 4}}, []int16{1, 3, 2, 4}},
		{"concat uint64", bin(func(a, b *tensor.Tensor) *tensor.Tensor { return ops.Concat(0, a, b) }),
			[]any{[]uint64{math.MaxUint64}, []uint64{2, 3}}, []uint64{math.MaxUint64, 2, 3}},
		{"gather uint16", bin(func(x, i *tensor.Tensor) *tensor.Tensor { return ops.Gather(x, i, 0) }),
			[]any{[]uint16{10, 20, 65535}, []int64{2, 0}}, []uint16{65535, 10}},
		{"slice int8", un(func(x *tensor.Tensor) *tensor.Tensor { return ops.Slice(x, []int{1}, []int{2}) }),
			[]any{[]int8{1, -2, 3, 4}}, []int8{-2, 3}},
		{"argsort int8", un(func(x *tensor.Tensor) *tensor.Tensor { return ops.ArgSort(x, 0, false) }),
			[]any{[]int8{3, -1, 2}}, []int64{1, 2, 0}},
		{"maxpool uint8", un(func(x *tensor.Tensor) *tensor.Tensor {
			return ops.MaxPool2D(ops.Reshape(x, 1, 1, 3, 3), [2]int{2, 2}, [2]int{1, 1})
		}), []any{[]uint8{1, 200, 3, 4, 5, 6, 255, 8, 9}}, []uint8{200, 200, 255, 9}},
		{"maxpool int8 padded", un(func(x *tensor.Tensor) *tensor.Tensor {
			return ops.MaxPool2D(ops.Reshape(x, 1, 1, 2, 2), [2]int{2, 2}, [2]int{1, 1}, ops.ExplicitPad(1, 0, 1, 0))
		}), []any{[]int8{-8, -7, -6, -5}}, []int8{-8, -7, -6, -5}},
	})
}

// Integer division by zero, shifts of signed integers and bitwise
// operations on floats are refused, naming the op.
func TestIntegerArithmeticErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func()
		want string
	}{
		{"div", func() { ops.Div(tensor.FromSlice([]uint8{1}), tensor.FromSlice([]uint8{0})) }, "division by zero"},
		{"mod", func() { ops.Mod(tensor.FromSlice([]int16{1}), tensor.FromSlice([]int16{0})) }, "division by zero"},
		{"shift signed", func() { ops.ShiftLeft(tensor.FromSlice([]int8{1}), tensor.FromSlice([]int8{1})) }, "ShiftLeft"},
		{"bitwise float", func() { ops.BitwiseAnd(tensor.FromSlice([]float32{1}), tensor.FromSlice([]float32{1})) }, "BitwiseAnd"},
		{"neg unsigned", func() { ops.Neg(tensor.FromSlice([]uint8{1})) }, "Neg"},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				e := recover()
				if e == nil {
					t.Fatalf("no panic")
				}
				var te *tensor.Error
				if err, ok := e.(error); !ok || !errors.As(err, &te) || !strings.Contains(te.Error(), c.want) {
					t.Fatalf("panic %v, want a *tensor.Error naming %q", e, c.want)
				}
			}()
			c.f()
		})
	}
}

// TruncBFloat16 rounds toward zero where Cast rounds to nearest: 1+2^-8+2^-9
// lies above the midpoint between bfloat16's 1 and 1+2^-7.
func TestTruncBFloat16(t *testing.T) {
	maxBF16 := float32(math.Float32frombits(0x7F7F0000))
	inf := math.Inf(1)
	cases := []struct {
		name string
		in   any
		want []float32
	}{
		{"float32", []float32{1 + 1.0/256 + 1.0/512, -(1 + 1.0/256 + 1.0/512), 3, float32(inf)}, []float32{1, -1, 3, float32(inf)}},
		{"float64", []float64{1 + 1.0/256 + 1.0/(1<<30), -1e300, 1e300, inf}, []float32{1, -maxBF16, maxBF16, float32(inf)}},
	}
	for _, c := range cases {
		x := fromAny(t, c.in)
		for mode, got := range map[string]*tensor.Tensor{
			"PyNative": ops.TruncBFloat16(x),
			"Graph": spore.Jit(func(xs ...*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{ops.TruncBFloat16(xs[0])}
			}, spore.JitConfig{Name: "truncbf16." + c.name})(x)[0],
		} {
			if got.DType() != tensor.BFloat16 || !reflect.DeepEqual(got.Float32s(), c.want) {
				t.Errorf("%s %s: %v %v, want %v", c.name, mode, got.DType(), got.Float32s(), c.want)
			}
		}
	}
	if r := ops.Cast(tensor.FromSlice([]float32{1 + 1.0/256 + 1.0/512}), tensor.BFloat16).Float32s()[0]; r != 1+1.0/128 {
		t.Errorf("Cast rounds 1+2^-8+2^-9 to %v, want 1+2^-7", r)
	}
	nan := ops.TruncBFloat16(tensor.FromSlice([]float32{math.Float32frombits(0x7F800001)})).Float32s()[0]
	if nan == nan {
		t.Errorf("a NaN with its payload in the low bits truncates to %v", nan)
	}
}
