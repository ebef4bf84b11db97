package tensor_test

import (
	"math"
	"reflect"
	"testing"

	"github.com/sporeml/spore/tensor"
)

// The integer dtypes added for ONNX and NumPy (Int8, Int16, Uint16,
// Uint32, Uint64) are whole dtypes: named, sized, classified, made from Go
// slices and read back converted, filled and printed.
func TestIntegerDTypes(t *testing.T) {
	cases := []struct {
		dt       tensor.DType
		name     string
		size     int
		signed   bool
		data     any // FromSlice's argument: -1 (or its wrap), 0 and the largest value
		int64s   []int64
		float64s []float64
		full     any // Full(dt, -1.5): truncated toward zero, then wrapped
		str      string
	}{
		{tensor.Int8, "Int8", 1, true, []int8{-128, 0, 127}, []int64{-128, 0, 127}, []float64{-128, 0, 127}, []int8{-1}, "[-128    0  127]"},
		{tensor.Int16, "Int16", 2, true, []int16{-32768, 0, 32767}, []int64{-32768, 0, 32767}, []float64{-32768, 0, 32767}, []int16{-1}, "[-32768      0  32767]"},
		{tensor.Uint16, "UInt16", 2, false, []uint16{65535, 0, 1}, []int64{65535, 0, 1}, []float64{65535, 0, 1}, []uint16{65535}, "[65535     0     1]"},
		{tensor.Uint32, "UInt32", 4, false, []uint32{4294967295, 0, 1}, []int64{4294967295, 0, 1}, []float64{4294967295, 0, 1}, []uint32{4294967295}, "[4294967295          0          1]"},
		{tensor.Uint64, "UInt64", 8, false, []uint64{math.MaxUint64, 0, 1}, []int64{-1, 0, 1}, []float64{1 << 64, 0, 1}, []uint64{math.MaxUint64}, "[18446744073709551615                    0                    1]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.dt.String() != c.name || c.dt.Size() != c.size || !c.dt.IsInt() || c.dt.IsFloat() || c.dt.IsSignedInt() != c.signed || c.dt.IsUnsigned() == c.signed {
				t.Errorf("%v: name %q size %d int %v signed %v unsigned %v", c.dt, c.dt.String(), c.dt.Size(), c.dt.IsInt(), c.dt.IsSignedInt(), c.dt.IsUnsigned())
			}
			var x *tensor.Tensor
			switch d := c.data.(type) {
			case []int8:
				x = tensor.FromSlice(d)
			case []int16:
				x = tensor.FromSlice(d)
			case []uint16:
				x = tensor.FromSlice(d)
			case []uint32:
				x = tensor.FromSlice(d)
			case []uint64:
				x = tensor.FromSlice(d)
			}
			if x.DType() != c.dt {
				t.Fatalf("FromSlice(%T) has dtype %v", c.data, x.DType())
			}
			if !reflect.DeepEqual(x.Data(), c.data) {
				t.Errorf("Data() = %v, want %v", x.Data(), c.data)
			}
			if got := x.Int64s(); !reflect.DeepEqual(got, c.int64s) {
				t.Errorf("Int64s() = %v, want %v", got, c.int64s)
			}
			if got := x.Float64s(); !reflect.DeepEqual(got, c.float64s) {
				t.Errorf("Float64s() = %v, want %v", got, c.float64s)
			}
			if got := x.Bools(); !reflect.DeepEqual(got, []bool{true, false, true}) {
				t.Errorf("Bools() = %v", got)
			}
			if got := x.String(); got != c.str {
				t.Errorf("String() = %q, want %q", got, c.str)
			}
			if got := tensor.Full(c.dt, -1.5, 1).Data(); !reflect.DeepEqual(got, c.full) {
				t.Errorf("Full(-1.5) = %v, want %v", got, c.full)
			}
			if z := tensor.Zeros(c.dt, 2, 3); z.DType() != c.dt || z.Size() != 6 || z.Clone().DType() != c.dt {
				t.Errorf("Zeros: %v %v", z.DType(), z.Shape())
			}
		})
	}
	if got := tensor.Scalar(int8(-7)).String(); got != "-7" {
		t.Errorf("Scalar(int8(-7)) prints %q", got)
	}
	if got := tensor.Scalar(uint64(math.MaxUint64)).String(); got != "18446744073709551615" {
		t.Errorf("Scalar(MaxUint64) prints %q", got)
	}
}
