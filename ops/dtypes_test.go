package ops_test

import (
	"math"
	"reflect"
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
