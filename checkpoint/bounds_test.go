package checkpoint

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/tensor"
)

// TestParseAllocationBound checks that what a file claims (sizes, lengths,
// counts) is never trusted beyond the bytes present: each malformed file
// below fails with a clear error, and no file, malformed or not, makes a
// parse allocate more than allocBound of its size, including files of many
// tiny entries, where per-entry bookkeeping dominates.
func TestParseAllocationBound(t *testing.T) {
	pad := func(b []byte, n int) []byte { return append(b, make([]byte, n-len(b))...) }
	var scalars []Param
	for i := range 20000 {
		scalars = append(scalars, Param{Name: fmt.Sprint(i), Tensor: tensor.Scalar(i%2 == 0)})
	}
	manyST, err := MarshalSafetensors(scalars, nil)
	if err != nil {
		t.Fatal(err)
	}
	manyCkpt, err := MarshalCkpt(scalars, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	padCkpt := func(b []byte, n int) []byte { // with an unknown field, which readers skip
		return concat(b, pbLen(15, make([]byte, n-len(b)-2)))
	}
	tests := []struct {
		name   string
		format string
		file   []byte
		want   []string // fragments of the error; nil when the file is valid
	}{
		{"1e12 elements in 100 bytes", "safetensors",
			pad(stFile(`{"a":{"dtype":"F32","shape":[1000000,1000000],"data_offsets":[0,4000000000000]}}`, nil), 100),
			[]string{`"a"`, "data_offsets [0, 4000000000000] run past the 12-byte data region"}},
		{"99 MB header claimed in 100 bytes", "safetensors", pad(le64(99_000_000), 100), []string{"header length 99000000 runs past the end of the 100-byte file"}},
		{"many tiny entries", "safetensors", manyST, nil},
		{"1e12 elements in 100 bytes", "ckpt",
			padCkpt(pbValue("a", pbTensor("Float32", []byte{1, 2, 3, 4}, 1e6, 1e6)), 100),
			[]string{`"a"`, "need 4000000000000 bytes but tensor_content holds 4"}},
		{"1 TB entry claimed in 100 bytes", "ckpt", pad(concat(pbKey(1, 2), pbVarint(1<<40)), 100), []string{"length 1099511627776 at byte 1 runs past the end"}},
		{"many tiny entries", "ckpt", manyCkpt, nil},
		{"100000 dims", "ckpt", pbValue("a", concat(bytes.Repeat([]byte{0x08, 0x01}, 100000), pbLen(2, []byte("UInt8")), pbLen(3, []byte{1, 2}))),
			[]string{`"a"`, "dims [1 1 1 1 1 1 1 1 ... (100000 dims)] of UInt8 need 1 bytes but tensor_content holds 2"}},
	}
	for _, tc := range tests {
		t.Run(tc.format+"/"+tc.name, func(t *testing.T) {
			unmarshal := UnmarshalSafetensors
			if tc.format == "ckpt" {
				unmarshal = UnmarshalCkpt
			}
			var ps []Param
			bound := allocBound(len(tc.file))
			got := testkit.AllocatedBy(func() { ps, _, err = unmarshal(tc.file) }, bound)
			switch {
			case tc.want == nil && err != nil:
				t.Fatal(err)
			case tc.want == nil && len(ps) != len(scalars):
				t.Fatalf("loaded %d tensors, want %d", len(ps), len(scalars))
			case tc.want != nil:
				wantFormatError(t, err, tc.want...)
			}
			if got > bound {
				t.Errorf("allocated %d bytes (%.0f× the file) for a %d-byte file; want at most %d", got, float64(got)/float64(len(tc.file)), len(tc.file), bound)
			}
		})
	}
}
