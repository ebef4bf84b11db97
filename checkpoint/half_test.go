package checkpoint

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/sporeml/spore/tensor"
)

// BFloat16 and Float16 tensors are stored as their raw bits, little-endian,
// under safetensors' "BF16" and "F16" and MindSpore's "BFloat16" and
// "Float16". The bit patterns are PyTorch's (torch.bfloat16) and NumPy's
// (np.float16) roundings of 1, -2.5, 0.1 and 3e38 (70000 for Float16,
// which overflows to +Inf).
func TestHalfCheckpointBytes(t *testing.T) {
	for _, c := range []struct {
		dt       tensor.DType
		st, ckpt string
		bits     []uint16
		vals     []float32
	}{
		{tensor.BFloat16, "BF16", "BFloat16", []uint16{0x3f80, 0xc020, 0x3dcd, 0x7f62}, []float32{1, -2.5, 0.1, 3e38}},
		{tensor.Float16, "F16", "Float16", []uint16{0x3c00, 0xc100, 0x2e66, 0x7c00}, []float32{1, -2.5, 0.1, 70000}},
	} {
		x := halfTensor(c.dt, c.vals)
		var data []byte
		for _, b := range c.bits {
			data = binary.LittleEndian.AppendUint16(data, b)
		}
		if got := encodeLE(x); !bytes.Equal(got, data) {
			t.Errorf("%v: bytes % x, want % x", c.dt, got, data)
		}
		ps := []Param{{Name: "w", Tensor: x}}
		st, err := MarshalSafetensors(ps, nil)
		if err != nil {
			t.Fatal(err)
		}
		hdr := `{"w":{"dtype":"` + c.st + `","shape":[4],"data_offsets":[0,8]}}`
		if !bytes.Contains(st, []byte(hdr)) || !bytes.HasSuffix(st, data) {
			t.Errorf("%v: safetensors file %q lacks header %s or data % x", c.dt, st, hdr, data)
		}
		ck, err := MarshalCkpt(ps, nil, &CkptOptions{NoCRC: true})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(ck, []byte(c.ckpt)) || !bytes.Contains(ck, data) {
			t.Errorf("%v: ckpt file lacks type %q or data % x", c.dt, c.ckpt, data)
		}
		for name, load := range map[string]func() ([]Param, error){
			"safetensors": func() ([]Param, error) { p, _, err := UnmarshalSafetensors(st); return p, err },
			"ckpt":        func() ([]Param, error) { p, _, err := UnmarshalCkpt(ck); return p, err },
		} {
			got, err := load()
			if err != nil {
				t.Fatalf("%v %s: %v", c.dt, name, err)
			}
			checkSameParams(t, got, ps)
		}
	}
}

// halfTensor rounds vals to the 16-bit float type dt.
func halfTensor(dt tensor.DType, vals []float32) *tensor.Tensor {
	if dt == tensor.BFloat16 {
		h := make([]tensor.BF16, len(vals))
		for i, v := range vals {
			h[i] = tensor.BF16From(v)
		}
		return tensor.FromSlice(h)
	}
	h := make([]tensor.F16, len(vals))
	for i, v := range vals {
		h[i] = tensor.F16From(v)
	}
	return tensor.FromSlice(h)
}
