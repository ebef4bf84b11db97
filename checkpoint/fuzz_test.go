package checkpoint

import (
	"testing"

	"github.com/sporeml/spore/tensor"
)

func fuzzSeeds(f *testing.F, marshal func([]Param, map[string]string) ([]byte, error)) {
	for _, ps := range [][]Param{nil, sampleParams()[:4], sampleParams(), {{"s", tensor.Scalar(true)}}} {
		b, err := marshal(ps, map[string]string{"k": "v"})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		if len(b) > 20 {
			f.Add(b[:len(b)-5])
		}
	}
}

// FuzzLoadSafetensors checks that no input panics, and that whatever loads
// saves and loads back to the same tensors.
func FuzzLoadSafetensors(f *testing.F) {
	fuzzSeeds(f, MarshalSafetensors)
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, md, err := UnmarshalSafetensors(data)
		if err != nil {
			return
		}
		b, err := MarshalSafetensors(ps, md)
		if err != nil {
			return // e.g. an empty name: readable, but not writable
		}
		ps2, _, err := UnmarshalSafetensors(b)
		if err != nil {
			t.Fatalf("re-encoded file does not load: %v", err)
		}
		checkSameParams(t, ps2, stOrder(ps))
	})
}

// FuzzLoadCkpt checks that no input panics, and that whatever loads saves
// and loads back to the same tensors.
func FuzzLoadCkpt(f *testing.F) {
	fuzzSeeds(f, func(ps []Param, md map[string]string) ([]byte, error) { return MarshalCkpt(ps, md, nil) })
	f.Add(pbValue("p", append(pbLen(1, pbVarint(2), pbVarint(3)), pbTensor("Float32", make([]byte, 24))...)))
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, md, err := UnmarshalCkpt(data)
		if err != nil {
			return
		}
		b, err := MarshalCkpt(ps, md, nil)
		if err != nil {
			return
		}
		ps2, _, err := UnmarshalCkpt(b)
		if err != nil {
			t.Fatalf("re-encoded file does not load: %v", err)
		}
		checkSameParams(t, ps2, ps)
	})
}
