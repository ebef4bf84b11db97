package npy

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/sporeml/spore/tensor"
)

// Float16 tensors travel as NumPy's float16 ('<f2', and '>f2' on reading),
// bit for bit; BFloat16 ones, which NumPy cannot hold, are refused with an
// error that says so and how to keep the values; opaque 16-bit types
// (ml_dtypes writes bfloat16 as '<V2') stay refused.
func TestHalfNPY(t *testing.T) {
	bits := []tensor.F16{0x3c00, 0xc100, 0x7e01, 0x7c00, 0x8000, 0x0001} // 1, -2.5, NaN, +Inf, -0, smallest subnormal
	x := tensor.FromSlice(bits, 2, 3)
	var buf bytes.Buffer
	if err := Write(&buf, x); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "'descr': '<f2'") {
		t.Errorf("header %q does not declare '<f2'", buf.String()[:64])
	}
	got, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if got.DType() != tensor.Float16 || !reflect.DeepEqual(got.Data(), bits) {
		t.Errorf("round trip gave %v %v, want Float16 %v", got.DType(), got.Data(), bits)
	}

	be := npyBytes(1, "{'descr': '>f2', 'fortran_order': False, 'shape': (2,), }\n", []byte{0x3c, 0x00, 0xc1, 0x00})
	got, err = Read(bytes.NewReader(be))
	if err != nil {
		t.Fatal(err)
	}
	if want := []tensor.F16{0x3c00, 0xc100}; !reflect.DeepEqual(got.Data(), want) {
		t.Errorf("big-endian float16 read as %v, want %v", got.Data(), want)
	}

	err = Write(&bytes.Buffer{}, tensor.FromSlice([]tensor.BF16{0x3f80}))
	if err == nil || !strings.Contains(err.Error(), "BFloat16") || !strings.Contains(err.Error(), "Float32") {
		t.Errorf("writing BFloat16: error %v, want one naming BFloat16 and suggesting Float32", err)
	}

	v2 := npyBytes(1, "{'descr': '<V2', 'fortran_order': False, 'shape': (1,), }\n", []byte{1, 0})
	if _, err := Read(bytes.NewReader(v2)); err == nil || !strings.Contains(err.Error(), `"<V2" is not supported`) {
		t.Errorf("reading '<V2' (ml_dtypes' bfloat16): error %v, want it refused", err)
	}
}
