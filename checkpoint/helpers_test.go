package checkpoint

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// sampleTensor returns a tensor of type dt and the given shape with varied
// values, including negative numbers, NaN and ±Inf for floats.
func sampleTensor(dt tensor.DType, shape ...int) *tensor.Tensor {
	n := tensor.Shape(shape).Size()
	switch dt {
	case tensor.Float32:
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(i)*1.25 - 3
		}
		if n > 2 {
			v[0], v[1], v[2] = float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))
		}
		return core.FromBuffer(v, tensor.Shape(shape).Clone())
	case tensor.Float64:
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(i)*1e-300 - 1e300
		}
		if n > 1 {
			v[1] = math.Copysign(0, -1)
		}
		return core.FromBuffer(v, tensor.Shape(shape).Clone())
	case tensor.Int32:
		v := make([]int32, n)
		for i := range v {
			v[i] = int32(i*7919) + math.MinInt32 + 5
		}
		return core.FromBuffer(v, tensor.Shape(shape).Clone())
	case tensor.Int64:
		v := make([]int64, n)
		for i := range v {
			v[i] = int64(i)*1<<40 - 1<<62
		}
		return core.FromBuffer(v, tensor.Shape(shape).Clone())
	case tensor.Bool:
		v := make([]bool, n)
		for i := range v {
			v[i] = i%3 == 0
		}
		return core.FromBuffer(v, tensor.Shape(shape).Clone())
	case tensor.Uint8:
		v := make([]uint8, n)
		for i := range v {
			v[i] = uint8(i*37 + 200)
		}
		return core.FromBuffer(v, tensor.Shape(shape).Clone())
	case tensor.BFloat16, tensor.Float16:
		// Raw bit patterns: NaN, +Inf, -0, a subnormal, then varied bits.
		bits := make([]uint16, n)
		special := []uint16{0x7fc1, 0x7f80, 0x8000, 0x0003}
		if dt == tensor.Float16 {
			special = []uint16{0x7e01, 0x7c00, 0x8000, 0x0003}
		}
		for i := range bits {
			bits[i] = uint16(i*7919 + 0x1234)
			if i < len(special) {
				bits[i] = special[i]
			}
		}
		if dt == tensor.BFloat16 {
			v := make([]tensor.BF16, n)
			for i, b := range bits {
				v[i] = tensor.BF16(b)
			}
			return core.FromBuffer(v, tensor.Shape(shape).Clone())
		}
		v := make([]tensor.F16, n)
		for i, b := range bits {
			v[i] = tensor.F16(b)
		}
		return core.FromBuffer(v, tensor.Shape(shape).Clone())
	}
	panic("bad dtype")
}

var allDTypes = []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Bool, tensor.Uint8, tensor.BFloat16, tensor.Float16}

var allShapes = [][]int{{}, {0}, {1}, {5}, {2, 3}, {2, 0, 3}, {1, 1, 1, 4}}

// sampleParams is one tensor of every dtype and shape above.
func sampleParams() []Param {
	var ps []Param
	for _, dt := range allDTypes {
		for _, s := range allShapes {
			ps = append(ps, Param{Name: fmt.Sprintf("%v.%v", dt, s), Tensor: sampleTensor(dt, s...)})
		}
	}
	return ps
}

// sameTensor compares shape, dtype and exact bits.
func sameTensor(a, b *tensor.Tensor) bool {
	return a.Shape().Equal(b.Shape()) && len(a.Shape()) == len(b.Shape()) && a.DType() == b.DType() &&
		bytes.Equal(encodeLE(a), encodeLE(b))
}

func checkSameParams(t *testing.T, got, want []Param) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d tensors %v, want %d %v", len(got), Names(got), len(want), Names(want))
	}
	for i := range want {
		if got[i].Name != want[i].Name {
			t.Errorf("tensor %d: name %q, want %q", i, got[i].Name, want[i].Name)
			continue
		}
		if !sameTensor(got[i].Tensor, want[i].Tensor) {
			t.Errorf("tensor %q: got %v %v %v, want %v %v %v", want[i].Name,
				got[i].Tensor.Shape(), got[i].Tensor.DType(), got[i].Tensor.Float64s(),
				want[i].Tensor.Shape(), want[i].Tensor.DType(), want[i].Tensor.Float64s())
		}
	}
}

// wantFormatError checks that err is a *FormatError whose message contains
// every fragment.
func wantFormatError(t *testing.T, err error, fragments ...string) {
	t.Helper()
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("got error %v (%T), want *FormatError", err, err)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not mention %q", err, f)
		}
	}
}

func le64(n uint64) []byte { return binary.LittleEndian.AppendUint64(nil, n) }
